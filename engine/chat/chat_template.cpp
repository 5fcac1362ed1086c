// engine/chat/chat_template.cpp — the public chat-template API over the Jinja interpreter: builds the
// render context (messages, bos/eos, generation prompt, extras) and turns JinjaError into Error.
#include "engine/chat/chat_template.h"

#include <exception>
#include <new>

#include "engine/chat/jinja_eval.h"
#include "engine/chat/jinja_parser.h"

namespace strata::chat {

struct ChatTemplate::Program {
  std::string source;
  jinja::Body body;
};

namespace {

Error to_error(const jinja::JinjaError& e) {
  if (e.raised_by_template) return make_error(Code::InvalidArgument, e.message);
  std::string where = e.line > 0 ? "chat template line " + std::to_string(e.line) + " column " + std::to_string(e.column) + ": "
                                 : "chat template: ";
  return make_error(Code::InvalidArgument, where + e.message);
}

}  // namespace

Expected<ChatTemplate> ChatTemplate::parse(std::string_view source) {
  try {
    auto program = std::make_shared<Program>();
    program->source = std::string(source);
    program->body = jinja::parse_template(source);
    return ChatTemplate(std::move(program));
  } catch (const jinja::JinjaError& e) {
    return to_error(e);
  } catch (const std::bad_alloc&) {
    return make_error(Code::OutOfMemory, "chat template: out of memory while parsing");
  } catch (const std::exception& e) {
    return make_error(Code::Internal, std::string("chat template: ") + e.what());
  }
}

const std::string& ChatTemplate::source() const {
  static const std::string empty;
  return program_ ? program_->source : empty;
}

Expected<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages, const ChatTemplateOptions& options) const {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) {
    nlohmann::ordered_json obj = nlohmann::ordered_json::object();
    obj["role"] = m.role;
    obj["content"] = m.content;
    if (m.extra.is_object()) {
      for (const auto& [k, v] : m.extra.items()) obj[k] = v;
    }
    list.push_back(std::move(obj));
  }
  return render_json(list, options);
}

Expected<std::string> ChatTemplate::render_json(const nlohmann::ordered_json& messages, const ChatTemplateOptions& options) const {
  if (!program_) return make_error(Code::InvalidArgument, "chat template: none loaded (default-constructed ChatTemplate)");
  if (!messages.is_array()) return make_error(Code::InvalidArgument, "chat messages must be a JSON array");
  if (!options.extra_context.is_object() && !options.extra_context.is_null())
    return make_error(Code::InvalidArgument, "chat template extra_context must be a JSON object");
  try {
    std::vector<std::pair<std::string, jinja::Value>> context;
    context.emplace_back("messages", jinja::from_json(messages));
    context.emplace_back("add_generation_prompt", jinja::Value(options.add_generation_prompt));
    context.emplace_back("bos_token", jinja::Value(options.bos_token));
    context.emplace_back("eos_token", jinja::Value(options.eos_token));
    if (options.extra_context.is_object()) {
      for (const auto& [k, v] : options.extra_context.items()) context.emplace_back(k, jinja::from_json(v));
    }
    jinja::GlobalOptions globals;
    globals.fixed_time = options.now;
    return jinja::render_program(program_->body, context, globals);
  } catch (const jinja::JinjaError& e) {
    return to_error(e);
  } catch (const std::bad_alloc&) {
    return make_error(Code::OutOfMemory, "chat template: out of memory while rendering");
  } catch (const std::exception& e) {
    return make_error(Code::Internal, std::string("chat template: ") + e.what());
  }
}

Expected<ChatTemplate> template_for_model(std::string_view model_chat_template) {
  if (!model_chat_template.empty()) return ChatTemplate::parse(model_chat_template);
  STRATA_ASSIGN_OR_RETURN(std::string source, builtin_template_source("completion"));
  return ChatTemplate::parse(source);
}

}  // namespace strata::chat
