// app/engine_cli/draft_cli.cpp — speculative-decoding options and the draft model's loading.
#include "app/engine_cli/draft_cli.h"

namespace strata::cli {

void add_draft_options(CLI::App& cmd, DraftOptions& o) {
  cmd.add_option("--speculative", o.mode,
                 "speculative decoding: off, lookup (prompt lookup: n-grams of the context), model (--draft); "
                 "the text is the same, greedy or seeded (default: model with --draft, else off)")
      ->check(CLI::IsMember({"off", "lookup", "model"}));
  cmd.add_option("--draft-max", o.max_draft, "tokens guessed per speculative step at most")
      ->check(CLI::Range(1, 32));
  cmd.add_flag("--draft-fixed", o.fixed,
               "always guess --draft-max tokens (default: as many as pay off, from measured pass times and "
               "how many guesses the model took)");
  cmd.add_option("--draft", o.model, "draft model for speculative decoding (a GGUF with the model's vocabulary)");
  cmd.add_option("--draft-device", o.device, "device the draft model runs on (one of --devices)");
}

Expected<exec::SpeculativeParams> speculative_params(const DraftOptions& o) {
  exec::SpeculativeParams p;
  const std::string mode = o.mode.empty() ? (o.model.empty() ? "off" : "model") : o.mode;
  STRATA_ASSIGN_OR_RETURN(p.mode, exec::parse_draft_mode(mode));
  p.max_draft = o.max_draft;
  p.adaptive = !o.fixed;
  STRATA_RETURN_IF_ERROR(exec::validate(p));
  if (p.mode == exec::DraftMode::Model && o.model.empty())
    return Error{Code::InvalidArgument, "--speculative model needs a draft model (--draft FILE)"};
  return p;
}

Expected<DraftRuntime> load_draft(const DraftOptions& o, const model::Model& target, Runtime& rt) {
  DraftRuntime d;
  STRATA_ASSIGN_OR_RETURN(d.params, speculative_params(o));
  if (o.model.empty()) return d;
  STRATA_ASSIGN_OR_RETURN(std::filesystem::path path, resolve_model_path(o.model));
  const plan::Placement& p = rt.pipeline->placement();
  STRATA_ASSIGN_OR_RETURN(exec::LoadedDraft loaded, exec::load_draft_model(path, target, rt.devices, o.device, p.n_seq, p.n_ctx));
  d.model = std::move(loaded.model);
  d.drafter = std::move(loaded.drafter);
  return d;
}

}  // namespace strata::cli
