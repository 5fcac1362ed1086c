// engine/serve/response_format.h — OpenAI "response_format": text, json_object and json_schema,
// the last two by constrained decoding (a JSON grammar over the vocabulary, json_constraint.h).
// No HTTP types.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "engine/exec/scheduler.h"
#include "engine/serve/api_json.h"
#include "engine/serve/engine_host.h"
#include "engine/serve/tool_calls.h"

namespace strata::serve {

// Reads "response_format". make is set to a factory of fresh constraints (one per choice) for
// json_object / json_schema, and left empty for text. body_text: the raw body, re-read in order
// for the schema (properties are written in the client's order). A 400 for a bad or unsupported format or
// schema (the message names the keyword).
std::optional<ApiError> parse_response_format(const Json& body, const std::string& body_text, const LoadedModel& model,
                                              std::function<std::shared_ptr<exec::TokenConstraint>()>& make);

// A factory of constraints to one (ordered) JSON Schema; InvalidArgument when it cannot be compiled.
Status constraint_for_schema(const nlohmann::ordered_json& schema, const LoadedModel& model,
                             std::function<std::shared_ptr<exec::TokenConstraint>()>& make);

// A factory of ToolCallConstraints (json_constraint.h) for the calls `tools` allows (each
// function's parameters as its arguments' schema, or any object where that schema is outside the
// subset): trigger "" for a forced call, "<tool_call>" for tool_choice "auto". OutOfRange when the
// schemas together pass the compile budget (one mask over it, timed here, on the caller's thread).
Status tool_call_constraint(std::string trigger, const ToolMode& tools, const LoadedModel& model,
                            std::function<std::shared_ptr<exec::TokenConstraint>()>& make);

}  // namespace strata::serve
