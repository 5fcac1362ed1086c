// app/engine_cli/draft_cli.h — the speculative-decoding options shared by `run`, `serve` and
// `bench`: which drafter, how many guesses a step, and the draft model and its device.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "app/engine_cli/common.h"
#include "app/engine_cli/placement_cli.h"
#include "engine/exec/speculative.h"

namespace strata::cli {

struct DraftOptions {
  std::string mode;            // "" -> "model" with --draft, else "off"
  int32_t max_draft = 8;
  bool fixed = false;          // --draft-fixed: always max_draft guesses, not what pays
  std::string model;           // --draft: a GGUF with the target's vocabulary
  std::string device = "cpu";  // where the draft model runs: one of --devices
};
void add_draft_options(CLI::App& cmd, DraftOptions& o);

// The speculative parameters the options give (--speculative defaults to model with --draft, else
// off); InvalidArgument for model without --draft.
Expected<exec::SpeculativeParams> speculative_params(const DraftOptions& o);

// The draft model, loaded and placed (null when none was asked for), and the default speculative
// parameters the options give.
struct DraftRuntime {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<exec::DraftModel> drafter;
  exec::SpeculativeParams params;
};
// n_seq / n_ctx: the target pipeline's. The draft runs on the runtime's device named by
// --draft-device and shares its memory with the target's blocks there.
Expected<DraftRuntime> load_draft(const DraftOptions& o, const model::Model& target, Runtime& rt);

}  // namespace strata::cli
