// engine/serve/openai_routes.cpp — GET /v1/models, POST /v1/chat/completions, POST /v1/completions:
// request parsing and validation, prompt building, OpenAI response and stream-chunk shapes.
// Generation runs on the scheduler thread; handlers (HTTP worker threads) wait on a channel.
#include <chrono>
#include <condition_variable>
#include <random>

#include "engine/serve/server_context.h"

namespace strata::serve {

namespace {

using Clock = std::chrono::steady_clock;

// What the scheduler thread hands to the HTTP worker of one request. on_text/on_done run on the
// scheduler thread; the worker waits on cv. `gone` is set by the worker when the client left,
// which makes the next on_text return false (the stop protocol of the scheduler).
struct Channel {
  std::mutex mutex;
  std::condition_variable cv;
  std::string pending;              // streamed text not yet written
  int64_t prompt_done = -1, prompt_total = 0;  // "return_progress": the latest, not yet written when >= 0
  bool done = false;
  exec::GenerationResult result;
  std::atomic<bool> gone{false};
  // Worker-side state of a stream (touched only by the content provider).
  bool sent_head = false;
  bool finished = false;
  Clock::time_point last_write = Clock::now();
};

struct Parsed {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool return_progress = false;     // streamed prompt-processing progress (llama.cpp's name)
  int64_t max_tokens = -1;          // -1: the rest of the context
  std::string model;
  exec::GenerationRequest gen;
};

#define STRATA_API_TRY(expr)          \
  do {                                \
    if (auto strata_e_ = (expr)) return strata_e_; \
  } while (0)

std::optional<ApiError> read_float(const Json& body, const char* key, double lo, double hi, float& out) {
  double v = out;
  STRATA_API_TRY(read_number(body, key, lo, hi, v));
  out = static_cast<float>(v);
  return std::nullopt;
}

std::optional<ApiError> parse_fields(const Json& body, Parsed& p) {
  STRATA_API_TRY(read_string(body, "model", p.model));
  sample::SamplerParams& s = p.gen.sampling;
  STRATA_API_TRY(read_float(body, "temperature", 0.0, 100.0, s.temperature));
  STRATA_API_TRY(read_float(body, "top_p", 0.0, 1.0, s.top_p));
  STRATA_API_TRY(read_float(body, "min_p", 0.0, 1.0, s.min_p));
  STRATA_API_TRY(read_float(body, "frequency_penalty", -2.0, 2.0, s.frequency_penalty));
  STRATA_API_TRY(read_float(body, "presence_penalty", -2.0, 2.0, s.presence_penalty));
  STRATA_API_TRY(read_float(body, "repeat_penalty", 0.0, 10.0, s.repeat_penalty));
  int64_t top_k = s.top_k;
  STRATA_API_TRY(read_int(body, "top_k", 0, int64_t{1} << 24, top_k));
  s.top_k = static_cast<int32_t>(top_k);
  int64_t seed = -1;
  STRATA_API_TRY(read_int(body, "seed", INT64_MIN, INT64_MAX, seed));
  s.seed = body.contains("seed") && !body["seed"].is_null() ? static_cast<uint64_t>(seed) : std::random_device{}();
  STRATA_API_TRY(read_int(body, "max_tokens", 0, int64_t{1} << 24, p.max_tokens));
  STRATA_API_TRY(read_int(body, "max_completion_tokens", 0, int64_t{1} << 24, p.max_tokens));
  int64_t n = 1;
  STRATA_API_TRY(read_int(body, "n", 1, 1, n));
  STRATA_API_TRY(read_bool(body, "stream", p.stream));
  STRATA_API_TRY(read_bool(body, "return_progress", p.return_progress));
  STRATA_API_TRY(read_bool(body, "ignore_eos", p.gen.ignore_eog));
  STRATA_API_TRY(read_string_list(body, "stop", 16, p.gen.stop));
  auto so = body.find("stream_options");
  if (so != body.end() && !so->is_null()) {
    if (!so->is_object()) return bad_request("'stream_options' must be an object", "stream_options");
    STRATA_API_TRY(read_bool(*so, "include_usage", p.include_usage));
  }
  return std::nullopt;
}

bool names_model(const LoadedModel& m, const std::string& name) {
  return name == m.id || name == m.model->path().filename().string() || name == m.model->path().string();
}

// The chat messages as the template sees them: content parts joined into one string.
std::optional<ApiError> normalize_messages(const Json& body, nlohmann::ordered_json& out) {
  auto it = body.find("messages");
  if (it == body.end() || it->is_null()) return bad_request("'messages' is required", "messages");
  if (!it->is_array() || it->empty()) return bad_request("'messages' must be a non-empty array", "messages");
  out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& m = (*it)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return bad_request(where + " must be an object", "messages");
    if (!m.contains("role") || !m["role"].is_string()) return bad_request(where + ".role must be a string", "messages");
    nlohmann::ordered_json msg = nlohmann::ordered_json::parse(m.dump());
    const Json& content = m.contains("content") ? m["content"] : Json(nullptr);
    if (content.is_array()) {
      std::string text;
      for (const Json& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          return bad_request(where + ".content: only {\"type\":\"text\",\"text\":...} parts are supported", "messages");
        text += part["text"].get<std::string>();
      }
      msg["content"] = text;
    } else if (!content.is_string() && !content.is_null()) {
      return bad_request(where + ".content must be a string, an array of text parts or null", "messages");
    }
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

std::optional<ApiError> build_prompt(const LoadedModel& m, const Json& body, bool chat, std::vector<int32_t>& prompt) {
  const tokenizer::Tokenizer& tok = m.model->tokenizer();
  if (!chat) {
    auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) return bad_request("'prompt' is required", "prompt");
    if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
      prompt = tok.encode((*it)[0].get<std::string>(), true, true);
    } else if (it->is_string()) {
      prompt = tok.encode(it->get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
    } else if (it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), [](const Json& v) { return v.is_number_integer(); })) {
      for (const Json& v : *it) {
        const int64_t id = v.get<int64_t>();
        if (id < 0 || id >= tok.n_tokens())
          return bad_request("'prompt' token id " + std::to_string(id) + " outside [0, " + std::to_string(tok.n_tokens()) + ")", "prompt");
        prompt.push_back(static_cast<int32_t>(id));
      }
    } else {
      return bad_request("'prompt' must be a string, an array of one string, or an array of token ids", "prompt");
    }
    if (prompt.empty()) return bad_request("'prompt' gives no tokens", "prompt");
    return std::nullopt;
  }
  nlohmann::ordered_json messages;
  STRATA_API_TRY(normalize_messages(body, messages));
  if (!m.tmpl) {
    ApiError e;
    e.status = 500;
    e.type = "server_error";
    e.message = "the model's chat template cannot be used: " + m.template_error;
    return e;
  }
  chat::ChatTemplateOptions opts;
  const tokenizer::Vocab& v = tok.vocab();
  if (v.bos_id >= 0) opts.bos_token = v.tokens[static_cast<size_t>(v.bos_id)];
  if (v.eos_id >= 0) opts.eos_token = v.tokens[static_cast<size_t>(v.eos_id)];
  auto text = m.tmpl->render_json(messages, opts);
  if (!text.ok()) return bad_request("chat template: " + text.error().message, "messages");
  if (!m.own_template) {
    // The "completion" template: the text is a plain prompt, tokenized as `run` does.
    prompt = tok.encode(*text, /*add_special=*/true, /*parse_special=*/true);
  } else {
    // The model's template writes BOS itself when it wants one; add it only when it did not.
    prompt = tok.encode(*text, /*add_special=*/false, /*parse_special=*/true);
    if (v.add_bos && v.bos_id >= 0 && (prompt.empty() || prompt.front() != v.bos_id)) prompt.insert(prompt.begin(), v.bos_id);
  }
  if (prompt.empty()) return bad_request("the messages give an empty prompt", "messages");
  return std::nullopt;
}

const char* finish_name(exec::FinishReason f) {
  return f == exec::FinishReason::Length || f == exec::FinishReason::ContextFull ? "length" : "stop";
}

Json usage_json(const exec::GenerationResult& r) {
  return {{"prompt_tokens", r.n_prompt}, {"completion_tokens", r.n_generated}, {"total_tokens", r.n_prompt + r.n_generated}};
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }
std::string sse(const Json& j) { return "data: " + dump(j) + "\n\n"; }

// The error of a finished generation, if it did not finish normally.
std::optional<ApiError> result_error(const exec::GenerationResult& r) {
  if (!r.status.ok()) {
    ApiError e = from_engine_error(r.status.error());
    if (e.status < 500) e.status = 500, e.type = "server_error";
    e.message = "generation failed: " + e.message;
    return e;
  }
  if (r.finish == exec::FinishReason::Cancelled) {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.message = "generation cancelled: the model was unloaded or the server is stopping";
    return e;
  }
  return std::nullopt;
}

struct Envelope {
  std::string id, model;
  int64_t created = 0;
  bool chat = true;
};

Json chunk(const Envelope& env, const Json& choice) {
  return {{"id", env.id},
          {"object", env.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", env.created},
          {"model", env.model},
          {"choices", Json::array({choice})}};
}

Json text_choice(const Envelope& env, const std::string& text, const char* finish) {
  Json choice = {{"index", 0}};
  if (env.chat) {
    choice["delta"] = text.empty() && finish ? Json::object() : Json{{"content", text}};
  } else {
    choice["text"] = text;
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finish ? Json(finish) : Json(nullptr);
  return choice;
}

void answer_blocking(ServerContext& ctx, httplib::Response& res, const std::shared_ptr<Channel>& ch, const Envelope& env) {
  {
    std::unique_lock<std::mutex> lock(ch->mutex);
    ch->cv.wait(lock, [&] { return ch->done; });
  }
  const exec::GenerationResult& r = ch->result;
  if (auto e = result_error(r)) return send_error(res, *e);
  Json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_name(r.finish)}};
  if (env.chat) {
    choice["message"] = {{"role", "assistant"}, {"content", r.text}};
  } else {
    choice["text"] = r.text;
  }
  Json body = {{"id", env.id},
               {"object", env.chat ? "chat.completion" : "text_completion"},
               {"created", env.created},
               {"model", env.model},
               {"choices", Json::array({choice})},
               {"usage", usage_json(r)}};
  send_json(res, body);
}

void answer_stream(ServerContext& ctx, httplib::Response& res, const std::shared_ptr<Channel>& ch, const Envelope& env,
                   std::shared_ptr<exec::Scheduler> scheduler, uint64_t id, bool include_usage) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  ServerContext* c = &ctx;
  // Called repeatedly on this request's HTTP worker until sink.done() or a false return.
  auto provider = [ch, env, scheduler, id, include_usage](size_t, httplib::DataSink& sink) -> bool {
    auto write = [&](const std::string& s) {
      if (sink.write(s.data(), s.size())) {
        ch->last_write = Clock::now();
        return true;
      }
      ch->gone = true;          // the client left: on_text returns false from now on
      scheduler->cancel(id);
      return false;
    };
    if (ch->finished) return false;
    if (!ch->sent_head) {
      ch->sent_head = true;
      if (env.chat) {
        Json choice = {{"index", 0}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                       {"finish_reason", nullptr}};
        if (!write(sse(chunk(env, choice)))) return false;
      }
    }
    std::string text;
    bool done = false;
    std::pair<int64_t, int64_t> progress{-1, 0};
    {
      std::unique_lock<std::mutex> lock(ch->mutex);
      ch->cv.wait_for(lock, std::chrono::milliseconds(200),
                      [&] { return !ch->pending.empty() || ch->done || ch->prompt_done >= 0; });
      text.swap(ch->pending);
      done = ch->done;
      progress = {ch->prompt_done, ch->prompt_total};
      ch->prompt_done = -1;
    }
    if (progress.first >= 0) {  // an empty delta carrying "prompt_progress", before the text
      Json c = chunk(env, text_choice(env, "", nullptr));
      c["prompt_progress"] = {{"processed", progress.first}, {"total", progress.second}};
      if (!write(sse(c))) return false;
    }
    if (!text.empty() && !write(sse(chunk(env, text_choice(env, text, nullptr))))) return false;
    if (!done) {
      // Nothing for a while (queued): a comment line finds out whether the client is still there.
      if (Clock::now() - ch->last_write > std::chrono::seconds(2)) return write(": waiting\n\n");
      return true;
    }
    ch->finished = true;
    const exec::GenerationResult& r = ch->result;
    if (auto e = result_error(r)) {
      if (!write(sse(error_body(*e)))) return false;
    } else {
      if (!write(sse(chunk(env, text_choice(env, "", finish_name(r.finish)))))) return false;
      if (include_usage) {
        Json u = chunk(env, Json::object());
        u["choices"] = Json::array();
        u["usage"] = usage_json(r);
        if (!write(sse(u))) return false;
      }
    }
    if (!write("data: [DONE]\n\n")) return false;
    sink.done();
    return true;
  };
  // Runs when the response is destroyed, whether or not the stream completed.
  auto releaser = [c, scheduler, id](bool) {
    scheduler->cancel(id);
    release_stream(*c);
  };
  res.set_chunked_content_provider("text/event-stream", provider, releaser);
}

void handle_completion(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat) {
  Json body;
  if (auto e = parse_object(req.body, body)) return send_error(res, *e);
  Parsed p;
  p.chat = chat;
  if (auto e = parse_fields(body, p)) return send_error(res, *e);
  std::shared_ptr<LoadedModel> loaded = ctx.host.current();
  if (!loaded) {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = "model_not_loaded";
    e.message = "no model is loaded (POST /strata/v1/model/load)";
    return send_error(res, e);
  }
  if (!p.model.empty() && !names_model(*loaded, p.model)) {
    ApiError e;
    e.status = 404;
    e.param = "model";
    e.code = "model_not_found";
    e.message = "model '" + p.model + "' is not loaded; this server serves '" + loaded->id + "'";
    return send_error(res, e);
  }
  std::vector<int32_t> prompt;
  if (auto e = build_prompt(*loaded, body, chat, prompt)) return send_error(res, *e);
  const int64_t n_ctx = loaded->pipeline->n_ctx();
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt > n_ctx)
    return send_error(res, bad_request("prompt of " + std::to_string(n_prompt) + " tokens exceeds the context length " +
                                           std::to_string(n_ctx),
                                       chat ? "messages" : "prompt", "context_length_exceeded"));
  p.gen.prompt = std::move(prompt);
  p.gen.max_tokens = p.max_tokens >= 0 ? p.max_tokens : std::max<int64_t>(1, n_ctx - n_prompt);

  if (p.stream && !acquire_stream(ctx, res)) return;
  auto ch = std::make_shared<Channel>();
  std::shared_ptr<Metrics> metrics = ctx.metrics;
  const bool stream = p.stream;
  p.gen.on_text = [ch, stream](std::string_view text) {
    if (ch->gone.load()) return false;
    if (stream) {
      std::lock_guard<std::mutex> lock(ch->mutex);
      ch->pending.append(text);
    }
    ch->cv.notify_all();
    return true;
  };
  p.gen.on_done = [ch, metrics](const exec::GenerationResult& r) {
    metrics->tokens_generated += static_cast<uint64_t>(r.n_generated);
    metrics->prompt_tokens += static_cast<uint64_t>(r.n_prompt - r.n_prompt_cached);
    metrics->requests_active.fetch_sub(1);
    {
      std::lock_guard<std::mutex> lock(ch->mutex);
      ch->result = r;
      ch->done = true;
    }
    ch->cv.notify_all();
  };
  if (stream && p.return_progress) {
    p.gen.on_prompt_progress = [ch](int64_t done, int64_t total) {
      {
        std::lock_guard<std::mutex> lock(ch->mutex);
        ch->prompt_done = done;
        ch->prompt_total = total;
      }
      ch->cv.notify_all();
    };
  }
  std::shared_ptr<exec::Scheduler> scheduler = loaded->scheduler;
  Envelope env;
  env.id = random_id(chat ? "chatcmpl-" : "cmpl-");
  env.model = loaded->id;
  env.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  env.chat = chat;
  loaded.reset();  // from here on only the scheduler is needed; an unload must not wait for us

  metrics->requests_active.fetch_add(1);
  auto id = scheduler->submit(std::move(p.gen));
  if (!id.ok()) {
    metrics->requests_active.fetch_sub(1);
    if (stream) release_stream(ctx);
    ApiError e = from_engine_error(id.error());
    if (id.error().code == Code::OutOfRange) {
      e.status = 429;
      e.type = "rate_limit_error";
      e.code = "queue_full";
    }
    return send_error(res, e);
  }
  if (stream) return answer_stream(ctx, res, ch, env, scheduler, *id, p.include_usage);
  answer_blocking(ctx, res, ch, env);
}

}  // namespace

void register_openai_routes(httplib::Server& http, ServerContext& ctx) {
  http.Get("/v1/models", guarded([&ctx](const httplib::Request&, httplib::Response& res) {
    Json data = Json::array();
    if (auto loaded = ctx.host.current()) {
      const int64_t created =
          std::chrono::duration_cast<std::chrono::seconds>(loaded->loaded_at.time_since_epoch()).count();
      data.push_back({{"id", loaded->id}, {"object", "model"}, {"created", created}, {"owned_by", "strata"}});
    }
    send_json(res, {{"object", "list"}, {"data", data}});
  }));
  http.Post("/v1/chat/completions", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_completion(ctx, req, res, true);
  }));
  http.Post("/v1/completions", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_completion(ctx, req, res, false);
  }));
}

}  // namespace strata::serve
