// engine/serve/tool_calls.cpp — tools in, tool calls out (see tool_calls.h).
#include "engine/serve/tool_calls.h"

#include <random>
#include <set>

namespace strata::serve {

namespace {

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string call_id() {
  static thread_local std::mt19937_64 rng(std::random_device{}());
  static const char* alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += alnum[rng() % 62];
  return id;
}

std::set<std::string> tool_names(const ToolMode& mode) {
  std::set<std::string> names;
  for (const auto& t : mode.tools) names.insert(t["function"]["name"].get<std::string>());
  return names;
}

// {"name": N, "arguments"|"parameters": {...}} with N among the tools: the OpenAI call, or null.
Json call_from(const Json& obj, const std::set<std::string>& names) {
  if (!obj.is_object() || !obj.contains("name") || !obj["name"].is_string()) return nullptr;
  const std::string name = obj["name"].get<std::string>();
  if (!names.count(name)) return nullptr;
  Json args = Json::object();
  if (obj.contains("arguments")) {
    args = obj["arguments"];
  } else if (obj.contains("parameters")) {
    args = obj["parameters"];
  }
  // OpenAI sends arguments as JSON text; a model may have written a string already.
  std::string text = args.is_string() ? args.get<std::string>() : args.dump(-1, ' ', false, Json::error_handler_t::replace);
  return Json{{"id", call_id()}, {"type", "function"}, {"function", {{"name", name}, {"arguments", text}}}};
}

Json parse_json(std::string_view s) {
  if (json_depth(s) > kMaxJsonDepth) return Json(Json::value_t::discarded);
  return Json::parse(s.begin(), s.end(), nullptr, false);
}

// Hermes / Qwen: every <tool_call>...</tool_call> block (the last may lack its closing tag).
bool parse_hermes(std::string_view text, const std::set<std::string>& names, ParsedToolCalls& out) {
  const std::string open = "<tool_call>", close = "</tool_call>";
  std::string content;
  Json calls = Json::array();
  size_t pos = 0;
  while (true) {
    const size_t at = text.find(open, pos);
    if (at == std::string_view::npos) {
      content += text.substr(pos);
      break;
    }
    content += text.substr(pos, at - pos);
    const size_t body = at + open.size();
    size_t end = text.find(close, body);
    const std::string_view inner = text.substr(body, end == std::string_view::npos ? std::string_view::npos : end - body);
    Json call = call_from(parse_json(trim(inner)), names);
    if (call.is_null()) return false;  // not a call we can read: leave everything as content
    calls.push_back(call);
    if (end == std::string_view::npos) break;
    pos = end + close.size();
  }
  if (calls.empty()) return false;
  out.content = trim(content);
  out.calls = calls;
  return true;
}

// Llama 3.x: the whole reply is one call object (optionally after <|python_tag|>), or several
// separated by ';' or new lines.
bool parse_llama3(std::string_view text, const std::set<std::string>& names, ParsedToolCalls& out) {
  std::string s = trim(text);
  const std::string tag = "<|python_tag|>";
  if (s.rfind(tag, 0) == 0) s = trim(std::string_view(s).substr(tag.size()));
  if (s.empty() || s.front() != '{') return false;
  Json calls = Json::array();
  Json whole = parse_json(s);
  if (!whole.is_discarded()) {
    Json call = call_from(whole, names);
    if (call.is_null()) return false;
    calls.push_back(call);
  } else {
    size_t start = 0;
    for (size_t i = 0; i <= s.size(); ++i) {
      if (i < s.size() && s[i] != ';' && s[i] != '\n') continue;
      const std::string part = trim(std::string_view(s).substr(start, i - start));
      start = i + 1;
      if (part.empty()) continue;
      Json call = call_from(parse_json(part), names);
      if (call.is_null()) return false;
      calls.push_back(call);
    }
  }
  if (calls.empty()) return false;
  out.content.clear();
  out.calls = calls;
  return true;
}

}  // namespace

std::optional<ApiError> parse_tools(const Json& body, ToolMode& out) {
  out = ToolMode{};
  if ((body.contains("functions") && !body["functions"].is_null()) ||
      (body.contains("function_call") && !body["function_call"].is_null()))
    return bad_request("'functions' and 'function_call' are not supported: use 'tools'", "functions",
                       "unsupported_parameter");
  bool parallel = true;
  if (auto e = read_bool(body, "parallel_tool_calls", parallel)) return e;
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) {
    if (body.contains("tool_choice") && !body["tool_choice"].is_null() && body["tool_choice"] != "none" &&
        body["tool_choice"] != "auto")
      return bad_request("'tool_choice' needs 'tools'", "tool_choice");
    return std::nullopt;
  }
  if (!it->is_array()) return bad_request("'tools' must be an array", "tools");
  if (it->size() > 128) return bad_request("'tools' has more than 128 entries", "tools");
  std::set<std::string> names;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    const std::string where = "tools[" + std::to_string(i) + "]";
    if (!t.is_object() || t.value("type", "") != "function" || !t.contains("function") || !t["function"].is_object())
      return bad_request(where + " must be {\"type\":\"function\",\"function\":{...}}", "tools");
    const Json& f = t["function"];
    if (!f.contains("name") || !f["name"].is_string() || f["name"].get<std::string>().empty())
      return bad_request(where + ".function.name must be a non-empty string", "tools");
    if (f.contains("parameters") && !f["parameters"].is_null() && !f["parameters"].is_object())
      return bad_request(where + ".function.parameters must be a JSON Schema object", "tools");
    if (!names.insert(f["name"].get<std::string>()).second)
      return bad_request(where + ".function.name '" + f["name"].get<std::string>() + "' is given twice", "tools");
  }
  std::string choice = "auto";
  if (body.contains("tool_choice") && !body["tool_choice"].is_null()) {
    const Json& c = body["tool_choice"];
    if (c.is_string()) {
      choice = c.get<std::string>();
      if (choice != "auto" && choice != "none" && choice != "required")
        return bad_request("'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}",
                           "tool_choice");
    } else if (c.is_object() && c.value("type", "") == "function" && c.contains("function") && c["function"].is_object() &&
               c["function"].contains("name") && c["function"]["name"].is_string()) {
      choice = "named";
      out.forced_name = c["function"]["name"].get<std::string>();
      if (!names.count(out.forced_name))
        return bad_request("'tool_choice' names '" + out.forced_name + "', which is not among the tools", "tool_choice");
    } else {
      return bad_request("'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\":\"function\",\"function\":{\"name\":...}}",
                         "tool_choice");
    }
  }
  if (choice == "none") {
    out.forced_name.clear();
    return std::nullopt;
  }
  out.forced = choice == "required" || choice == "named";
  out.enabled = true;
  out.tools = nlohmann::ordered_json::parse(it->dump());  // depth already bounded by parse_object
  return std::nullopt;
}

std::vector<nlohmann::ordered_json> call_schemas(const ToolMode& mode) {
  using OJ = nlohmann::ordered_json;
  std::vector<OJ> out;
  for (const auto& t : mode.tools) {
    const auto& f = t["function"];
    const std::string name = f["name"].get<std::string>();
    if (!mode.forced_name.empty() && name != mode.forced_name) continue;
    OJ props = OJ::object();
    props["name"] = OJ{{"const", name}};
    if (!f.contains("parameters") || f["parameters"].is_null() || !f["parameters"].is_object())
      props["arguments"] = OJ{{"type", "object"}, {"properties", OJ::object()}};
    else
      props["arguments"] = f["parameters"];
    OJ call = OJ{{"type", "object"}, {"properties", props}};
    // The parameters' definitions move to the call's root, where their "#/$defs/X" refs look.
    for (const char* defs : {"$defs", "definitions"}) {
      if (props["arguments"].contains(defs)) call[defs] = props["arguments"][defs];
    }
    out.push_back(std::move(call));
  }
  return out;
}

nlohmann::ordered_json call_schema_any_arguments(const std::string& name) {
  using OJ = nlohmann::ordered_json;
  OJ props = OJ::object();
  props["name"] = OJ{{"const", name}};
  props["arguments"] = OJ{{"type", "object"}};
  return OJ{{"type", "object"}, {"properties", props}};
}

nlohmann::ordered_json with_generic_tool_prompt(const nlohmann::ordered_json& messages, const ToolMode& mode) {
  using OJson = nlohmann::ordered_json;
  std::string text =
      "You may call functions to answer. The functions you can call, as JSON:\n" +
      mode.tools.dump(-1, ' ', false, OJson::error_handler_t::replace) +
      "\nTo call one, reply with nothing but one block per call:\n<tool_call>\n"
      "{\"name\": \"<function name>\", \"arguments\": {<the arguments as JSON>}}\n</tool_call>\n"
      "The results come back in <tool_response> blocks. If no function helps, answer normally.";
  OJson out = OJson::array();
  bool placed = false;
  for (const auto& m : messages) {
    OJson msg = m;
    const std::string role = msg.value("role", "");
    if (role == "system" && !placed) {
      const std::string content = msg["content"].is_string() ? msg["content"].get<std::string>() : "";
      msg["content"] = content.empty() ? text : content + "\n\n" + text;
      placed = true;
    } else if (role == "assistant" && msg.contains("tool_calls") && msg["tool_calls"].is_array()) {
      std::string content = msg["content"].is_string() ? msg["content"].get<std::string>() : "";
      for (const auto& call : msg["tool_calls"]) {
        if (!call.contains("function")) continue;
        const auto& fn = call["function"];
        OJson c = {{"name", fn.value("name", "")}, {"arguments", fn.contains("arguments") ? fn["arguments"] : OJson::object()}};
        content += (content.empty() ? "" : "\n") + std::string("<tool_call>\n") +
                   c.dump(-1, ' ', false, OJson::error_handler_t::replace) + "\n</tool_call>";
      }
      msg.erase("tool_calls");
      msg["content"] = content;
    } else if (role == "tool") {
      const std::string content = msg["content"].is_string() ? msg["content"].get<std::string>() : "";
      msg = OJson{{"role", "user"}, {"content", "<tool_response>\n" + content + "\n</tool_response>"}};
    }
    out.push_back(std::move(msg));
  }
  if (!placed) out.insert(out.begin(), OJson{{"role", "system"}, {"content", text}});
  return out;
}

ToolFormat tool_format_of_template(std::string_view src) {
  if (src.find("<tool_call>") != std::string_view::npos) return ToolFormat::Hermes;
  if (src.find("<|python_tag|>") != std::string_view::npos || src.find("ipython") != std::string_view::npos)
    return ToolFormat::Llama3;
  return ToolFormat::Any;
}

Json offered_tool_call(const ToolMode& mode, const std::string& name, const std::string& arguments) {
  if (!tool_names(mode).count(name)) return nullptr;
  return Json{{"id", call_id()}, {"type", "function"}, {"function", {{"name", name}, {"arguments", arguments}}}};
}

ParsedToolCalls parse_tool_calls(std::string_view text, const ToolMode& mode) {
  ParsedToolCalls out;
  out.content = std::string(text);
  if (!mode.enabled) return out;
  try {
    const std::set<std::string> names = tool_names(mode);
    // The template's own format first; a reply that is nothing but a call object naming an
    // offered tool counts in either (Qwen models also answer with bare JSON calls).
    if (mode.format == ToolFormat::Llama3) {
      if (parse_llama3(text, names, out) || parse_hermes(text, names, out)) return out;
    } else {
      if (parse_hermes(text, names, out) || parse_llama3(text, names, out)) return out;
    }
  } catch (...) {
  }
  out = ParsedToolCalls{};
  out.content = std::string(text);
  return out;
}

}  // namespace strata::serve
