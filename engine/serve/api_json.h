// engine/serve/api_json.h — OpenAI-style error bodies and typed field readers for request JSON.
// Depends on nlohmann-json and core/status.h only; no HTTP library, no engine state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/status.h"

namespace strata::serve {

using Json = nlohmann::json;

// An error answered to a client: HTTP status plus OpenAI's {"error":{message,type,param,code}}.
struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";  // authentication_error, rate_limit_error, server_error, ...
  std::string param;                           // "" -> null
  std::string code;                            // "" -> null
};

Json error_body(const ApiError& error);
ApiError bad_request(std::string message, std::string param = "", std::string code = "");
// An engine Error as an ApiError: InvalidArgument/OutOfRange 400, NotFound 404, OutOfMemory 400
// (a placement that does not fit), Cancelled 503, others 500.
ApiError from_engine_error(const Error& error, std::string param = "");
// The error for a status httplib produced itself (404 unknown route, 413 body too large, ...).
ApiError error_for_status(int status, size_t max_body);

// Deepest nesting of arrays and objects in JSON text (strings skipped), found without recursion.
size_t json_depth(std::string_view text);
constexpr size_t kMaxJsonDepth = 64;

// Parses a request body: 400 "malformed JSON ..." (with the parser's byte offset), a number out
// of range (1e400), nesting deeper than kMaxJsonDepth, or a non-object top level.
std::optional<ApiError> parse_object(const std::string& body, Json& out);

// Optional fields: absent or null leaves `out` unchanged; the wrong type or a value outside
// [lo, hi] is a 400 naming the field (param = key).
std::optional<ApiError> read_number(const Json& obj, const char* key, double lo, double hi, double& out);
std::optional<ApiError> read_int(const Json& obj, const char* key, int64_t lo, int64_t hi, int64_t& out);
std::optional<ApiError> read_bool(const Json& obj, const char* key, bool& out);
std::optional<ApiError> read_string(const Json& obj, const char* key, std::string& out);
// A string or an array of strings (OpenAI's "stop"); at most max_items.
std::optional<ApiError> read_string_list(const Json& obj, const char* key, size_t max_items,
                                         std::vector<std::string>& out);

// Prometheus label value escaping (backslash, quote, newline).
std::string prometheus_escape(const std::string& value);

}  // namespace strata::serve
