// engine/serve/response_format.cpp — response_format parsing and the per-model vocabulary trie
// (see response_format.h).
#include "engine/serve/response_format.h"

#include <chrono>
#include <mutex>
#include <vector>

#include "engine/serve/json_constraint.h"

namespace strata::serve {

namespace {

struct VocabIndex {
  std::shared_ptr<const std::vector<std::string>> pieces;
  std::shared_ptr<const TokenTrie> trie;
};

// The token texts and their trie for a loaded model, built once per load (the last model's is kept).
VocabIndex vocab_index(const LoadedModel& model) {
  static std::mutex mutex;
  static const LoadedModel* key = nullptr;
  static std::chrono::system_clock::time_point key_time;
  static VocabIndex cached;
  std::lock_guard<std::mutex> lock(mutex);
  if (key == &model && key_time == model.loaded_at && cached.trie) return cached;
  const tokenizer::Tokenizer& tok = model.model->tokenizer();
  auto pieces = std::make_shared<std::vector<std::string>>();
  pieces->reserve(static_cast<size_t>(tok.n_tokens()));
  for (int32_t id = 0; id < tok.n_tokens(); ++id) pieces->push_back(tok.is_eog(id) ? std::string() : tok.token_to_piece(id));
  cached.trie = std::make_shared<TokenTrie>(*pieces);
  cached.pieces = std::move(pieces);
  key = &model;
  key_time = model.loaded_at;
  return cached;
}

}  // namespace

std::optional<ApiError> parse_response_format(const Json& body, const std::string& body_text, const LoadedModel& model,
                                              std::function<std::shared_ptr<exec::TokenConstraint>()>& make) {
  make = nullptr;
  auto it = body.find("response_format");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
    return bad_request("'response_format' must be {\"type\": \"text\" | \"json_object\" | \"json_schema\", ...}",
                       "response_format");
  const std::string type = (*it)["type"].get<std::string>();
  if (type == "text") return std::nullopt;
  CompiledSchema schema;
  if (type == "json_object") {
    schema = any_object_schema();
  } else if (type == "json_schema") {
    auto js = it->find("json_schema");
    if (js == it->end() || !js->is_object() || !js->contains("schema") || !(*js)["schema"].is_object())
      return bad_request("'response_format.json_schema.schema' must be a JSON Schema object", "response_format");
    // Depth is bounded (parse_object checked this text); the ordered parse keeps property order.
    const auto ordered = nlohmann::ordered_json::parse(body_text, nullptr, false);
    if (ordered.is_discarded()) return bad_request("malformed JSON body", "", "invalid_json");
    auto compiled = compile_schema(ordered["response_format"]["json_schema"]["schema"]);
    if (!compiled.ok())
      return bad_request("'response_format.json_schema.schema': " + compiled.error().message, "response_format",
                         compiled.error().code == Code::OutOfRange ? "schema_too_large" : "unsupported_schema");
    schema = std::move(*compiled);
  } else {
    return bad_request("'response_format' type '" + type + "' is not one of text, json_object, json_schema",
                       "response_format");
  }
  auto shared = std::make_shared<const CompiledSchema>(std::move(schema));
  VocabIndex index = vocab_index(model);
  const int32_t eos = model.model->tokenizer().vocab().eos_id;
  make = [shared, index, eos]() -> std::shared_ptr<exec::TokenConstraint> {
    return std::make_shared<JsonConstraint>(shared, index.trie, index.pieces, eos);
  };
  // The time budget: one mask here, on the request's thread, not on the scheduler's.
  std::vector<float> logits(static_cast<size_t>(model.model->tokenizer().n_tokens()), 0.0f);
  const auto t0 = std::chrono::steady_clock::now();
  make()->mask(logits.data());
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  if (ms > kMaxMaskMs) {
    make = nullptr;
    return bad_request("'response_format.json_schema.schema': one token's constraint took " + std::to_string(ms) +
                           " ms, over the limit of " + std::to_string(kMaxMaskMs) + " ms",
                       "response_format", "schema_too_large");
  }
  return std::nullopt;
}

Status constraint_for_schema(const nlohmann::ordered_json& schema, const LoadedModel& model,
                             std::function<std::shared_ptr<exec::TokenConstraint>()>& make) {
  STRATA_ASSIGN_OR_RETURN(CompiledSchema compiled, compile_schema(schema));
  auto shared = std::make_shared<const CompiledSchema>(std::move(compiled));
  VocabIndex index = vocab_index(model);
  const int32_t eos = model.model->tokenizer().vocab().eos_id;
  make = [shared, index, eos]() -> std::shared_ptr<exec::TokenConstraint> {
    return std::make_shared<JsonConstraint>(shared, index.trie, index.pieces, eos);
  };
  return {};
}

}  // namespace strata::serve
