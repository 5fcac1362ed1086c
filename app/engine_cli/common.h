// app/engine_cli/common.h — options shared by the strata-engine subcommands, and the one way
// they report errors (one line on stderr, non-zero exit).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/model/model.h"
#include "engine/sample/sampler.h"
#include "kernels/cpu/thread_pool.h"

namespace strata::cli {

struct ModelOptions {
  std::string model;        // "" -> default_model()
  int threads = 0;          // 0 -> hardware threads
  int64_t ctx = 0;          // 0 -> the model's training context
};

void add_model_options(CLI::App& cmd, ModelOptions& o, bool with_ctx = true);
void add_sampling_options(CLI::App& cmd, sample::SamplerParams& p);

// Resolves --model (or the default), loads it, remembers it as the last model used.
Expected<std::unique_ptr<model::Model>> load_model(const ModelOptions& o, bool remember = true);
Expected<std::filesystem::path> resolve_model_path(const std::string& given);

int resolve_threads(int requested);

// Prompt-processing progress for GenerateOptions::on_prompt_progress: "prompt 512/4096 tokens" on
// stderr, rewritten in place and cleared at the end — only when stderr is a terminal, so that pipes
// and logs get the text alone.
std::function<void(int64_t, int64_t)> prompt_progress_printer();

// Prints "error: <message>" on stderr; returns the process exit code for it.
int report(const Error& error);

}  // namespace strata::cli
