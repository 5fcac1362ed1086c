// app/engine_cli/cmd_run.cpp — `strata-engine run`: prompt in, text out on stdout and nothing
// else there (statistics go to stderr with --stats).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "app/engine_cli/draft_cli.h"
#include "app/engine_cli/placement_cli.h"
#include "engine/exec/generate.h"
#include "engine/exec/session.h"

namespace strata::cli {

namespace {
struct RunOptions {
  ModelOptions model;
  DeviceOptions devices;
  DraftOptions draft;
  sample::SamplerParams sampling;
  std::string prompt;
  int64_t max_tokens = 256;
  std::vector<std::string> stop;
  bool no_echo = false;
  bool stats = false;
  std::string dump_logits;  // float32 logits after the prompt, for reference checks
};

int run(const RunOptions& o) {
  auto model = load_model(o.model);
  if (!model.ok()) return report(model.error());
  const model::Model& m = **model;
  auto runtime = build_runtime(m, o.model, o.devices, 1);
  if (!runtime.ok()) return report(runtime.error());
  Runtime& rt = *runtime;
  exec::Session session(*rt.pipeline, 0);
  auto draft = load_draft(o.draft, m, rt);
  if (!draft.ok()) return report(draft.error());

  std::vector<int32_t> prompt;
  {
    trace::Span span;
    if (rt.recorder) span = rt.recorder->span(rt.host_lane, trace::EventKind::Tokenize);
    prompt = m.tokenizer().encode(o.prompt, /*add_special=*/true, /*parse_special=*/true);
  }
  if (!o.dump_logits.empty()) {
    auto logits = session.eval(prompt);
    if (!logits.ok()) return report(logits.error());
    std::FILE* f = std::fopen(o.dump_logits.c_str(), "wb");
    if (!f) return report(Error{Code::Io, "cannot write " + o.dump_logits});
    const size_t n = static_cast<size_t>(m.config().n_vocab);
    const bool written = std::fwrite(*logits, sizeof(float), n, f) == n;
    std::fclose(f);
    if (!written) return report(Error{Code::Io, "short write to " + o.dump_logits});
  }
  exec::GenerateOptions g;
  g.max_tokens = o.max_tokens;
  g.sampling = o.sampling;
  g.stop = o.stop;
  g.echo_prompt = !o.no_echo;
  g.recorder = rt.recorder.get();
  g.host_lane = rt.host_lane;
  g.on_prompt_progress = prompt_progress_printer();  // long prompts: "prompt 512/4096 tokens" on a terminal
  g.prompt_chunk = o.devices.max_batch;
  g.speculative = draft->params;
  g.draft = draft->drafter.get();
  auto result = exec::generate(session, prompt, g, [](std::string_view piece) {
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
    return true;
  });
  if (!result.ok()) return report(result.error());
  if (isatty(STDOUT_FILENO)) std::fputc('\n', stdout);
  finish_trace(rt, o.devices);
  if (o.stats) {
    const auto& r = *result;
    std::fprintf(stderr, "prompt %lld tokens in %.1f ms (%.1f tok/s); generated %zu tokens in %.1f ms (%.1f tok/s); finish %s\n",
                 static_cast<long long>(r.n_prompt), r.prompt_ms, r.n_prompt * 1000.0 / std::max(r.prompt_ms, 1e-9),
                 r.tokens.size(), r.generate_ms, r.tokens.size() * 1000.0 / std::max(r.generate_ms, 1e-9),
                 exec::finish_reason_name(r.finish));
    if (r.n_drafted > 0 || g.speculative.mode != exec::DraftMode::Off)
      std::fprintf(stderr, "speculative (%s): %lld passes for %zu tokens; %lld drafted, %lld accepted (%.0f%%)\n",
                   exec::draft_mode_name(g.speculative.mode), static_cast<long long>(r.target_passes), r.tokens.size(),
                   static_cast<long long>(r.n_drafted), static_cast<long long>(r.n_draft_accepted),
                   r.n_drafted > 0 ? 100.0 * r.n_draft_accepted / r.n_drafted : 0.0);
  }
  return 0;
}
}  // namespace

Command add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run", "complete a prompt; the text goes to stdout");
  add_model_options(*cmd, o->model);
  add_sampling_options(*cmd, o->sampling);
  add_device_options(*cmd, o->devices);
  add_draft_options(*cmd, o->draft);
  cmd->add_option("-p,--prompt", o->prompt, "prompt text (special tokens such as <|im_start|> are parsed)");
  cmd->add_option("-n,--max-tokens", o->max_tokens, "tokens to generate at most")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  cmd->add_option("--stop", o->stop, "stop string (repeatable); not printed");
  cmd->add_flag("--no-echo", o->no_echo, "do not print the prompt before the continuation");
  cmd->add_flag("--stats", o->stats, "print timing to stderr");
  cmd->add_option("--dump-logits", o->dump_logits, "write the float32 logits after the prompt to this file");
  return [o] { return run(*o); };
}

}  // namespace strata::cli
