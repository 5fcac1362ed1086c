// engine/serve/tool_calls.h — OpenAI "tools" on the way in (validated, handed to the chat
// template as its `tools` variable) and tool calls on the way out (parsed from the model's text:
// Hermes / Qwen 2.5 / Qwen 3 `<tool_call>{json}</tool_call>`, Llama 3.x `{"name":..,"parameters":..}`
// with or without `<|python_tag|>`). Depends on nlohmann-json only: no HTTP, no engine state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/serve/api_json.h"

namespace strata::serve {

enum class ToolFormat { Hermes, Llama3, Any };

struct ToolMode {
  bool enabled = false;                // tools offered (and tool_choice is not "none")
  nlohmann::ordered_json tools;        // the request's "tools", as sent
  ToolFormat format = ToolFormat::Any; // how the model writes calls (from its chat template)
  // tool_choice "required" or {"type":"function","function":{"name":N}}: the reply must be a call.
  bool forced = false;
  std::string forced_name;             // the named function; "" for "required" (any offered tool)
  // The model's template never mentions tools: the prompt describes them in a generic system
  // message and asks for <tool_call> blocks (what llama-server does for such templates).
  bool generic_prompt = false;
};

// For a template without tools: the messages with a system message describing the tools (added to
// the first system message, or put before the others), assistant tool_calls written as
// <tool_call>{"name","arguments"}</tool_call> text and tool results as user messages in
// <tool_response> blocks (their contents stay text).
nlohmann::ordered_json with_generic_tool_prompt(const nlohmann::ordered_json& messages, const ToolMode& mode);

// The JSON Schemas of a call, one per function the reply may call (the forced one, or every
// offered one): {"name": {"const": N}, "arguments": <N's parameters>} (parameters absent: an object
// without properties). For constrained decoding, where each is tried and a call only has to fit one
// of them (parse_tool_calls reads it back in either format).
std::vector<nlohmann::ordered_json> call_schemas(const ToolMode& mode);
// The same call with any object as arguments: for a function whose parameters are outside the
// supported schema subset.
nlohmann::ordered_json call_schema_any_arguments(const std::string& name);

// Reads "tools", "tool_choice" (auto, none, required, or a named function), "parallel_tool_calls";
// refuses "functions" / "function_call" and unknown tool names with a 400.
std::optional<ApiError> parse_tools(const Json& body, ToolMode& out);

// The call format a chat template writes, judged from its source.
ToolFormat tool_format_of_template(std::string_view template_source);

struct ParsedToolCalls {
  std::string content;  // the text outside the calls, trimmed
  Json calls = Json::array();  // [{"id","type":"function","function":{"name","arguments": JSON text}}]
};

// Tool calls in a model's output. Only names among the offered tools count; anything else stays
// content. Never throws.
ParsedToolCalls parse_tool_calls(std::string_view text, const ToolMode& mode);

// The OpenAI form of one call, {"id","type":"function","function":{"name","arguments"}}, when
// `name` is among the offered tools; null otherwise (formats that mark calls themselves: harmony).
Json offered_tool_call(const ToolMode& mode, const std::string& name, const std::string& arguments);

}  // namespace strata::serve
