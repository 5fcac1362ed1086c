// app/engine_cli/cmd_chat.cpp — `strata-engine chat`: an interactive terminal chat using the
// model's chat template (plain completion when it has none). Commands: /reset, /exit.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include "app/engine_cli/commands.h"
#include "app/engine_cli/common.h"
#include "app/engine_cli/draft_cli.h"
#include "app/engine_cli/placement_cli.h"
#include "engine/chat/chat_template.h"
#include "engine/exec/generate.h"
#include "engine/exec/session.h"

namespace strata::cli {

namespace {
struct ChatOptions {
  ModelOptions model;
  DeviceOptions devices;
  DraftOptions draft;
  sample::SamplerParams sampling;
  std::string system;
  std::string template_name;  // a built-in template instead of the model's
  int64_t max_tokens = 1024;
};

int chat(const ChatOptions& o) {
  auto loaded = load_model(o.model);
  if (!loaded.ok()) return report(loaded.error());
  const model::Model& m = **loaded;
  const tokenizer::Tokenizer& tok = m.tokenizer();
  auto runtime = build_runtime(m, o.model, o.devices, 1);
  if (!runtime.ok()) return report(runtime.error());
  auto session = std::make_unique<exec::Session>(*runtime->pipeline, 0);
  auto draft = load_draft(o.draft, m, *runtime);
  if (!draft.ok()) return report(draft.error());

  std::string source = m.chat_template();
  if (!o.template_name.empty()) {
    auto builtin = chat::builtin_template_source(o.template_name);
    if (!builtin.ok()) return report(builtin.error());
    source = *builtin;
  }
  std::optional<chat::ChatTemplate> tmpl;
  if (!source.empty()) {
    auto parsed = chat::ChatTemplate::parse(source);
    if (!parsed.ok()) return report(parsed.error());
    tmpl = std::move(*parsed);
  }
  chat::ChatTemplateOptions topts;
  const auto& v = tok.vocab();
  if (v.bos_id >= 0) topts.bos_token = v.tokens[static_cast<size_t>(v.bos_id)];
  if (v.eos_id >= 0) topts.eos_token = v.tokens[static_cast<size_t>(v.eos_id)];

  const bool interactive = isatty(STDIN_FILENO);
  std::fprintf(stderr, "strata chat: %s (%s, %lld layers, ctx %lld)%s. /reset clears, /exit or Ctrl-D quits.\n",
               m.config().name.c_str(), model::arch_name(m.config().arch), (long long)m.config().n_layers,
               (long long)session->n_ctx(), tmpl ? "" : " — no chat template: plain completion");

  std::vector<chat::ChatMessage> messages;
  if (!o.system.empty()) messages.push_back({"system", o.system});
  std::string transcript;  // plain-completion mode: the running text
  std::string line;
  while (true) {
    if (interactive) std::fputs("\n> ", stdout), std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == "/exit" || line == "/quit") break;
    if (line == "/reset") {
      messages.resize(o.system.empty() ? 0 : 1);
      transcript.clear();
      session->reset();
      continue;
    }
    if (line.empty()) continue;

    std::vector<int32_t> prompt;
    if (tmpl) {
      messages.push_back({"user", line});
      auto text = tmpl->render(messages, topts);
      if (!text.ok()) return report(text.error());
      // The template writes BOS itself when the model wants it.
      prompt = tok.encode(*text, /*add_special=*/false, /*parse_special=*/true);
    } else {
      transcript += (transcript.empty() ? "" : "\n") + line;
      prompt = tok.encode(transcript, /*add_special=*/true, /*parse_special=*/true);
    }
    exec::GenerateOptions g;
    g.max_tokens = o.max_tokens;
    g.sampling = o.sampling;
    g.on_prompt_progress = prompt_progress_printer();
    g.prompt_chunk = o.devices.max_batch;
    g.speculative = draft->params;
    g.draft = draft->drafter.get();
    auto result = exec::generate(*session, prompt, g, [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
      return true;
    });
    std::fputc('\n', stdout);
    if (!result.ok()) {
      report(result.error());
      if (result.error().code == Code::OutOfRange) {
        std::fprintf(stderr, "the conversation no longer fits in the context: /reset to start over\n");
        if (tmpl) messages.pop_back();
        continue;
      }
      return 1;
    }
    if (tmpl) {
      messages.push_back({"assistant", result->text});
    } else {
      transcript += result->text;
    }
  }
  return 0;
}
}  // namespace

Command add_chat_command(CLI::App& app) {
  auto o = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand("chat", "chat in the terminal with the model's chat template");
  add_model_options(*cmd, o->model);
  add_sampling_options(*cmd, o->sampling);
  add_device_options(*cmd, o->devices, /*with_trace=*/false);
  add_draft_options(*cmd, o->draft);
  cmd->add_option("--system", o->system, "system prompt");
  cmd->add_option("--chat-template", o->template_name, "use a built-in template: chatml llama2 llama3 mistral gemma phi3 deepseek-r1");
  cmd->add_option("-n,--max-tokens", o->max_tokens, "tokens per reply at most")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 24));
  return [o] { return chat(*o); };
}

}  // namespace strata::cli
