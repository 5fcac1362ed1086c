// engine/chat/chat_template.h — turns a conversation into a prompt with the model's chat template
// (tokenizer.chat_template, Hugging Face Jinja) or a built-in one. Depends on core/status.h and
// nlohmann-json only; no tokenizer, no model. Renders byte for byte as transformers does.
#pragma once

#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace strata::chat {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;
  // Further fields the template sees on the message (tool_calls, tool_call_id, name, reasoning_content).
  // A "content": null here makes content none, as OpenAI assistant tool-call messages have.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

struct ChatTemplateOptions {
  bool add_generation_prompt = true;
  std::string bos_token, eos_token;  // from the vocabulary
  // Further template variables (tools, documents, enable_thinking, date_string, ...), added after the
  // standard ones and winning over them. A plain nlohmann::json converts implicitly; ordered_json
  // keeps the key order a client sent, which tojson reproduces.
  nlohmann::ordered_json extra_context = nlohmann::ordered_json::object();
  std::optional<std::tm> now;  // the clock of strftime_now(); unset: the local time at render
};

class ChatTemplate {
 public:
  ChatTemplate() = default;  // holds no template: render() returns an error until assigned a parsed one
  // Syntax errors come back as InvalidArgument naming line and column: "chat template line 3 column 12: ...".
  static Expected<ChatTemplate> parse(std::string_view source);

  // The prompt text. A template's raise_exception('...') becomes InvalidArgument with exactly that
  // text; other failures name the line and column of the template.
  Expected<std::string> render(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options) const;
  // Same, with messages as a JSON array of objects (an OpenAI request's "messages", all fields kept).
  Expected<std::string> render_json(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options) const;

  const std::string& source() const;

 private:
  struct Program;
  explicit ChatTemplate(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const Program> program_;  // immutable: copies share it, render is thread-safe
};

// Jinja sources of the built-in formats: "chatml", "llama2", "llama3", "mistral", "gemma", "phi3",
// "deepseek-r1", and "completion" (message contents joined by blank lines, for models without a template).
Expected<std::string> builtin_template_source(std::string_view name);
std::vector<std::string> builtin_template_names();

// The model's own template, or "completion" when the model has none (empty metadata string).
Expected<ChatTemplate> template_for_model(std::string_view model_chat_template);

}  // namespace strata::chat
