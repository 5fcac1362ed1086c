// app/engine_cli/common.cpp — shared option definitions, model resolution, error reporting.
#include "app/engine_cli/common.h"

#include <unistd.h>

#include <cstdio>
#include <thread>

#include "app/engine_cli/ranks.h"
#include "engine/model/model_locator.h"

namespace strata::cli {

void add_model_options(CLI::App& cmd, ModelOptions& o, bool with_ctx) {
  register_model_options(cmd, &o);
  cmd.add_option("-m,--model", o.model, "GGUF model file (default: last used, else one found on this machine)");
  cmd.add_option("-t,--threads", o.threads, "CPU threads (default: all cores)")->check(CLI::Range(0, 1024));
  if (with_ctx)
    cmd.add_option("-c,--ctx", o.ctx, "context length in tokens (default: the model's)")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
}

void add_sampling_options(CLI::App& cmd, sample::SamplerParams& p) {
  cmd.add_option("--temperature,--temp", p.temperature, "0 = greedy")->check(CLI::Range(0.0f, 100.0f));
  cmd.add_option("--top-k", p.top_k, "0 = off")->check(CLI::Range(0, 1 << 24));
  cmd.add_option("--top-p", p.top_p, "1 = off")->check(CLI::Range(0.0f, 1.0f));
  cmd.add_option("--min-p", p.min_p, "0 = off")->check(CLI::Range(0.0f, 1.0f));
  cmd.add_option("--repeat-penalty", p.repeat_penalty, "1 = off")->check(CLI::Range(0.0f, 10.0f));
  cmd.add_option("--repeat-last-n", p.repeat_last_n, "tokens the penalties look back")->check(CLI::Range(0, 1 << 20));
  cmd.add_option("--frequency-penalty", p.frequency_penalty)->check(CLI::Range(-2.0f, 2.0f));
  cmd.add_option("--presence-penalty", p.presence_penalty)->check(CLI::Range(-2.0f, 2.0f));
  cmd.add_option("-s,--seed", p.seed, "random seed");
}

Expected<std::filesystem::path> resolve_model_path(const std::string& given) {
  if (!given.empty()) return std::filesystem::path(given);
  std::vector<std::filesystem::path> bundled;
  bundled.emplace_back("../shared/models/stories260K.gguf");
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    // build/app/strata-engine -> <checkout>/../shared/models
    bundled.push_back(exe.parent_path() / "../../../shared/models/stories260K.gguf");
    bundled.push_back(exe.parent_path() / "../../shared/models/stories260K.gguf");
  }
  return model::default_model(bundled);
}

Expected<std::unique_ptr<model::Model>> load_model(const ModelOptions& o, bool remember) {
  STRATA_ASSIGN_OR_RETURN(std::filesystem::path path, resolve_model_path(o.model));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<model::Model> m, model::Model::load(path));
  if (remember) (void)model::write_last_model(path);  // best effort: a read-only home is fine
  return m;
}

int resolve_threads(int requested) {
  if (requested > 0) return requested;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

std::function<void(int64_t, int64_t)> prompt_progress_printer() {
  if (!isatty(STDERR_FILENO)) return {};
  return [](int64_t done, int64_t total) {
    if (done >= total) std::fprintf(stderr, "\r\033[K");
    else std::fprintf(stderr, "\rprompt %lld/%lld tokens", static_cast<long long>(done), static_cast<long long>(total));
    std::fflush(stderr);
  };
}

int report(const Error& error) {
  std::string msg = error.message;
  for (char& c : msg) {
    if (c == '\n') c = ' ';
  }
  std::fprintf(stderr, "error: %s\n", msg.c_str());
  return 1;
}

}  // namespace strata::cli
