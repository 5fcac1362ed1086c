// engine/serve/api_json.cpp — error bodies and field readers (no HTTP types here).
#include "engine/serve/api_json.h"

#include <algorithm>
#include <cmath>

namespace strata::serve {

Json error_body(const ApiError& e) {
  Json err = {{"message", e.message}, {"type", e.type}};
  err["param"] = e.param.empty() ? Json(nullptr) : Json(e.param);
  err["code"] = e.code.empty() ? Json(nullptr) : Json(e.code);
  return Json{{"error", err}};
}

ApiError bad_request(std::string message, std::string param, std::string code) {
  ApiError e;
  e.status = 400;
  e.message = std::move(message);
  e.param = std::move(param);
  e.code = std::move(code);
  return e;
}

ApiError from_engine_error(const Error& error, std::string param) {
  ApiError e;
  e.message = error.message;
  e.param = std::move(param);
  switch (error.code) {
    case Code::InvalidArgument:
    case Code::OutOfRange:
    case Code::OutOfMemory:
    case Code::Unsupported:
      e.status = 400;
      break;
    case Code::NotFound:
      e.status = 404;
      e.code = "not_found";
      break;
    case Code::Cancelled:
      e.status = 503;
      e.type = "server_error";
      break;
    default:
      e.status = 500;
      e.type = "server_error";
      e.message = std::string(code_name(error.code)) + ": " + error.message;
      break;
  }
  return e;
}

ApiError error_for_status(int status, size_t max_body) {
  ApiError e;
  e.status = status;
  switch (status) {
    case 404:
      e.message = "no such route";
      e.code = "not_found";
      break;
    case 405:
      e.message = "method not allowed on this route";
      break;
    case 413:
      e.message = "request body larger than the limit of " + std::to_string(max_body) + " bytes";
      e.code = "request_too_large";
      break;
    case 400:
      e.message = "bad request";
      break;
    default:
      e.message = "HTTP status " + std::to_string(status);
      if (status >= 500) e.type = "server_error";
      break;
  }
  return e;
}

size_t json_depth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<ApiError> parse_object(const std::string& body, Json& out) {
  // Checked on the text, before parsing: nothing below (parser, dump, templates) recurses deeper.
  if (json_depth(body) > kMaxJsonDepth)
    return bad_request("the JSON body nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) + " levels",
                       "", "invalid_json");
  try {
    out = Json::parse(body);
  } catch (const Json::parse_error& ex) {
    return bad_request(std::string("malformed JSON body: ") + ex.what(), "", "invalid_json");
  } catch (const Json::exception& ex) {
    // e.g. out_of_range.406: a number such as 1e400 that no double holds.
    return bad_request(std::string("malformed JSON body: ") + ex.what(), "", "invalid_json");
  }
  if (!out.is_object()) return bad_request("the request body must be a JSON object", "", "invalid_json");
  return std::nullopt;
}

namespace {
std::string range_text(double lo, double hi) {
  auto num = [](double v) {
    Json j = v;
    if (std::floor(v) == v && std::abs(v) < 1e15) j = static_cast<int64_t>(v);
    return j.dump();
  };
  return "[" + num(lo) + ", " + num(hi) + "]";
}
}  // namespace

std::optional<ApiError> read_number(const Json& obj, const char* key, double lo, double hi, double& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return bad_request(std::string("'") + key + "' must be a number", key);
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi)
    return bad_request(std::string("'") + key + "' is " + it->dump() + ", outside " + range_text(lo, hi), key);
  out = v;
  return std::nullopt;
}

std::optional<ApiError> read_int(const Json& obj, const char* key, int64_t lo, int64_t hi, int64_t& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_number() || std::floor(it->get<double>()) != it->get<double>())
    return bad_request(std::string("'") + key + "' must be an integer", key);
  // Compared as integers where the JSON holds one (a double cannot tell 2^63 - 1 from 2^63); the
  // bounds are printed as integers. Codes as OpenAI's (integer_below_min_value, ...above_max...).
  int below = 0;  // -1 below lo, +1 above hi
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    if (hi < 0 || u > static_cast<uint64_t>(hi)) below = 1;
    else if (lo >= 0 && u < static_cast<uint64_t>(lo)) below = -1;
    else out = static_cast<int64_t>(u);
  } else if (it->is_number_integer()) {
    const int64_t v = it->get<int64_t>();
    if (v < lo) below = -1;
    else if (v > hi) below = 1;
    else out = v;
  } else {
    const double d = it->get<double>();  // 16.0 counts as 16, as other languages' JSON writers send it
    // 2^63 as a double is past every int64_t; lo and hi as doubles may round outward.
    if (d < static_cast<double>(lo) || d >= 9223372036854775808.0) below = d < 0 ? -1 : 1;
    else if (static_cast<int64_t>(d) < lo) below = -1;
    else if (static_cast<int64_t>(d) > hi) below = 1;
    else out = static_cast<int64_t>(d);
  }
  if (below == 0) return std::nullopt;
  return bad_request(std::string("'") + key + "' is " + it->dump() + ", outside [" + std::to_string(lo) + ", " +
                         std::to_string(hi) + "]",
                     key, below < 0 ? "integer_below_min_value" : "integer_above_max_value");
}

std::optional<ApiError> read_bool(const Json& obj, const char* key, bool& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return bad_request(std::string("'") + key + "' must be true or false", key);
  out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> read_string(const Json& obj, const char* key, std::string& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return bad_request(std::string("'") + key + "' must be a string", key);
  out = it->get<std::string>();
  return std::nullopt;
}

std::optional<ApiError> read_string_list(const Json& obj, const char* key, size_t max_items,
                                         std::vector<std::string>& out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return std::nullopt;
  out.clear();
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array()) {
    for (const Json& v : *it) {
      if (!v.is_string()) return bad_request(std::string("'") + key + "' must be a string or an array of strings", key);
      out.push_back(v.get<std::string>());
    }
  } else {
    return bad_request(std::string("'") + key + "' must be a string or an array of strings", key);
  }
  if (out.size() > max_items)
    return bad_request(std::string("'") + key + "' has " + std::to_string(out.size()) + " entries, at most " +
                           std::to_string(max_items) + " are allowed",
                       key);
  for (const std::string& s : out) {
    if (s.empty()) return bad_request(std::string("'") + key + "' contains an empty string", key);
  }
  return std::nullopt;
}

std::string prometheus_escape(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace strata::serve
