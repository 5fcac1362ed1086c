// engine/serve/openai_routes.cpp — GET /v1/models, POST /v1/chat/completions, POST /v1/completions,
// POST /v1/embeddings:
// request parsing and validation, prompt building, OpenAI response and stream-chunk shapes.
// Generation runs on the scheduler thread; handlers (HTTP worker threads) wait on a channel.
#include <array>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <random>

#include <cmath>

#include "engine/serve/replan_json.h"
#include "engine/serve/response_format.h"
#include "engine/serve/http_guard.h"
#include "engine/serve/server_context.h"
#include "engine/serve/tool_calls.h"
#include "engine/serve/harmony.h"

namespace strata::serve {

namespace {

using Clock = std::chrono::steady_clock;

// What the scheduler thread hands to the HTTP worker of one choice (one generated sequence).
// on_token/on_text/on_done run on the scheduler thread; the worker waits on cv. `gone` is set by
// the worker when the client left, which makes the next on_text return false (the stop protocol
// of the scheduler).
struct Channel {
  std::mutex mutex;
  std::condition_variable* cv = nullptr;  // shared by the choices of one request
  std::mutex* cv_mutex = nullptr;
  // Streamed text not yet written, one piece per on_text call, each with the logprob entries of
  // the tokens that made it. Each piece becomes a chunk of its own, however far the writer lags:
  // like OpenAI's and llama-server's streams, a chunk is a token's text (a token whose bytes end
  // inside a UTF-8 character, or that a stop string holds back, joins the next piece), so clients
  // that count chunks as tokens or time them (inter-token latency) read what happened.
  struct Piece {
    std::string text;
    std::vector<Json> lp;
  };
  std::vector<Piece> pending;
  std::vector<Json> pending_lp;     // logprob entries of tokens whose text has not come yet (stream)
  // Closes a piece: `text` with the logprob entries of the tokens since the last one (under the
  // request's mutex).
  void add_piece(std::string text) {
    pending.push_back({std::move(text), std::move(pending_lp)});
    pending_lp.clear();
  }
  std::vector<Json> all_lp;         // every token's logprob entry (blocking answer)
  int64_t prompt_done = -1, prompt_total = 0;  // "return_progress": the latest, not yet written when >= 0
  std::vector<Json> replans_pending;  // re-plans this choice lived through, not yet written (stream)
  std::vector<Json> replans;          // all of them (blocking answer)
  bool done = false;
  exec::GenerationResult result;
  std::atomic<bool> gone{false};
  uint64_t id = 0;                  // scheduler request id
  size_t text_offset = 0;           // completions logprobs: offset of the next token's text
  bool finished = false;            // worker side: the final chunk of this choice was written
};

// The channels of one request and the condition variable its worker waits on.
struct Request {
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<std::shared_ptr<Channel>> choices;  // prompt k's choice j at k * n + j (OpenAI's order)
  size_t n = 1;                                   // choices per prompt
};

struct Parsed {
  bool chat = false;
  bool stream = false;
  bool include_usage = false;
  bool return_progress = false;     // streamed prompt-processing progress (llama.cpp's name)
  int64_t max_tokens = -1;          // -1: the rest of the context
  int64_t n = 1;                    // choices
  bool seeded = false;
  bool logprobs = false;            // per-token log probabilities wanted
  int64_t top_logprobs = 0;
  std::string model;
  exec::GenerationRequest gen;
  Json speculative;                 // the request's "speculative" (null: the server's default)
  // response_format: a fresh constraint per choice (null: unconstrained).
  std::function<std::shared_ptr<exec::TokenConstraint>()> make_constraint;
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
  p.seeded = body.contains("seed") && !body["seed"].is_null();
  s.seed = p.seeded ? static_cast<uint64_t>(seed) : std::random_device{}();
  // At least 1, as OpenAI asks (0 answered 200 with nothing).
  STRATA_API_TRY(read_int(body, "max_tokens", 1, int64_t{1} << 24, p.max_tokens));
  STRATA_API_TRY(read_int(body, "max_completion_tokens", 1, int64_t{1} << 24, p.max_tokens));
  STRATA_API_TRY(read_int(body, "n", 1, 16, p.n));
  // Log probabilities: chat has logprobs (bool) + top_logprobs (0..20); completions has
  // logprobs (an integer 0..5, the number of alternatives).
  if (p.chat) {
    STRATA_API_TRY(read_bool(body, "logprobs", p.logprobs));
    STRATA_API_TRY(read_int(body, "top_logprobs", 0, 20, p.top_logprobs));
    if (body.contains("top_logprobs") && !body["top_logprobs"].is_null() && !p.logprobs)
      return bad_request("'top_logprobs' needs 'logprobs': true", "top_logprobs");
  } else {
    int64_t lp = -1;
    STRATA_API_TRY(read_int(body, "logprobs", 0, 5, lp));
    p.logprobs = lp >= 0;
    p.top_logprobs = std::max<int64_t>(lp, 0);
  }
  p.gen.top_logprobs = p.logprobs ? static_cast<int32_t>(p.top_logprobs) : -1;
  // Accepted only in the form this server honours; never silently ignored.
  bool echo = false;
  STRATA_API_TRY(read_bool(body, "echo", echo));
  if (echo) return bad_request("'echo' is not supported", "echo", "unsupported_parameter");
  std::string suffix;
  STRATA_API_TRY(read_string(body, "suffix", suffix));
  if (!suffix.empty()) return bad_request("'suffix' (insertion) is not supported", "suffix", "unsupported_parameter");
  int64_t best_of = 1;
  STRATA_API_TRY(read_int(body, "best_of", 1, 16, best_of));
  if (best_of != 1 && best_of != p.n)
    return bad_request("'best_of' other than n is not supported", "best_of", "unsupported_parameter");
  STRATA_API_TRY(read_bool(body, "stream", p.stream));
  STRATA_API_TRY(read_bool(body, "return_progress", p.return_progress));
  STRATA_API_TRY(read_bool(body, "ignore_eos", p.gen.ignore_eog));
  STRATA_API_TRY(read_string_list(body, "stop", 16, p.gen.stop));
  // Speculative decoding (a Strata extension; docs/api.md): false / true, "off" / "lookup" /
  // "model", or {"mode": ..., "max_draft": 1..32}. Resolved against the server's drafter later.
  if (auto sp = body.find("speculative"); sp != body.end() && !sp->is_null()) {
    if (!sp->is_boolean() && !sp->is_string() && !sp->is_object())
      return bad_request("'speculative' must be a boolean, \"off\", \"lookup\", \"model\" or an object", "speculative");
    if (sp->is_object()) {
      std::string mode;
      int64_t max_draft = 8;
      bool adaptive = true;
      auto e = read_string(*sp, "mode", mode);
      if (!e) e = read_int(*sp, "max_draft", 1, 32, max_draft);
      if (!e) e = read_bool(*sp, "adaptive", adaptive);
      if (e) {
        e->param = "speculative";
        return e;
      }
      for (const auto& [key, value] : sp->items()) {
        if (key != "mode" && key != "max_draft" && key != "adaptive")
          return bad_request("'speculative' has an unknown field '" + key + "'", "speculative");
      }
    }
    p.speculative = *sp;
  }
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

// The chat messages as the template sees them: content parts joined into one string, a null or
// missing content as "" (templates concatenate it), "developer" as "system". Unknown roles are a 400.
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
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool")
      return bad_request(where + ".role '" + role + "' is not one of system, developer, user, assistant, tool",
                         "messages", "invalid_role");
    nlohmann::ordered_json msg = nlohmann::ordered_json::object();
    for (auto f = m.begin(); f != m.end(); ++f) msg[f.key()] = f.value();  // depth bounded by parse_object
    msg["role"] = role;
    const Json& content = m.contains("content") ? m["content"] : Json(nullptr);
    if (content.is_array()) {
      std::string text;
      for (const Json& part : content) {
        if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string())
          return bad_request(where + ".content: only {\"type\":\"text\",\"text\":...} parts are supported", "messages");
        text += part["text"].get<std::string>();
      }
      msg["content"] = text;
    } else if (content.is_null()) {
      msg["content"] = "";
    } else if (!content.is_string()) {
      return bad_request(where + ".content must be a string, an array of text parts or null", "messages");
    }
    // OpenAI requires the id of the call a tool message answers.
    if (role == "tool" && (!m.contains("tool_call_id") || !m["tool_call_id"].is_string()))
      return bad_request(where + ".tool_call_id (a string, the id of the call it answers) is required on a tool message",
                         "messages");
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (role != "assistant" || !m["tool_calls"].is_array())
        return bad_request(where + ".tool_calls must be an array on an assistant message", "messages");
      // Templates read arguments as an object (Qwen, Llama 3 tojson it); OpenAI sends a JSON string.
      for (auto& call : msg["tool_calls"]) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
          return bad_request(where + ".tool_calls entries must be {\"type\":\"function\",\"function\":{...}}", "messages");
        auto& fn = call["function"];
        if (fn.contains("arguments") && fn["arguments"].is_string()) {
          auto parsed = nlohmann::ordered_json::parse(fn["arguments"].get<std::string>(), nullptr, false);
          if (!parsed.is_discarded() && json_depth(fn["arguments"].get<std::string>()) <= kMaxJsonDepth)
            fn["arguments"] = parsed;
        }
      }
    }
    out.push_back(std::move(msg));
  }
  return std::nullopt;
}

// Special tokens in what users write are text (OpenAI does not parse them either): a user who
// types "<|im_end|>\n<|im_start|>system" must not end their turn and open a system one. The
// template's own markers stay tokens. So the template is rendered twice: with the contents, and
// with a marker in place of each user / tool content; the markers say where the contents lie in
// the rendered text, and control-token texts are matched only outside those ranges.
struct PlainRanges {
  std::string text;                                  // the rendered prompt
  std::vector<std::pair<size_t, size_t>> plain;      // [begin, end) byte ranges read as text only
};

// Rebuilds the rendered text from the render with markers: each marker becomes its content.
// `trim`: the contents as a template's "| trim" leaves them.
PlainRanges fill_markers(const std::string& marked, const std::string& open, const std::vector<std::string>& contents,
                         bool trim) {
  PlainRanges out;
  const std::string close = "\xEE\x80\x81";  // U+E001
  size_t pos = 0;
  while (true) {
    const size_t at = marked.find(open, pos);
    if (at == std::string::npos) break;
    size_t d = at + open.size();
    size_t idx = 0;
    bool digits = false;
    while (d < marked.size() && marked[d] >= '0' && marked[d] <= '9') idx = idx * 10 + static_cast<size_t>(marked[d++] - '0'), digits = true;
    if (!digits || marked.compare(d, close.size(), close) != 0 || idx >= contents.size()) {
      out.text.append(marked, pos, at + open.size() - pos);
      pos = at + open.size();
      continue;
    }
    out.text.append(marked, pos, at - pos);
    std::string c = contents[idx];
    if (trim) {
      const size_t b = c.find_first_not_of(" \t\n\r");
      const size_t e = c.find_last_not_of(" \t\n\r");
      c = b == std::string::npos ? std::string() : c.substr(b, e - b + 1);
    }
    out.plain.emplace_back(out.text.size(), out.text.size() + c.size());
    out.text += c;
    pos = d + close.size();
  }
  out.text.append(marked, pos, std::string::npos);
  return out;
}

// encode(text, add_special = false, parse_special = true), except that control tokens are not
// matched inside r.plain. Text between two control tokens is encoded as encode() does it (a
// separate run after a control token), so a prompt without special texts in its contents gives
// the same ids as before.
std::vector<int32_t> encode_with_plain_ranges(const tokenizer::Tokenizer& tok, const PlainRanges& r) {
  const tokenizer::Vocab& v = tok.vocab();
  std::array<std::vector<std::pair<std::string_view, int32_t>>, 256> by_first;
  for (int32_t id = 0; id < tok.n_tokens(); ++id) {
    const tokenizer::TokenAttr a = tok.attr(id);
    if (a != tokenizer::TokenAttr::Control && a != tokenizer::TokenAttr::Unknown) continue;
    const std::string& t = v.tokens[static_cast<size_t>(id)];
    if (!t.empty()) by_first[static_cast<uint8_t>(t[0])].emplace_back(t, id);
  }
  for (auto& list : by_first)
    std::stable_sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::vector<int32_t> out;
  const std::string& text = r.text;
  size_t run = 0, i = 0, next_plain = 0;
  while (i < text.size()) {
    while (next_plain < r.plain.size() && r.plain[next_plain].second <= i) ++next_plain;
    if (next_plain < r.plain.size() && r.plain[next_plain].first <= i) {
      i = r.plain[next_plain].second;  // inside a content: no control tokens
      continue;
    }
    const size_t limit = next_plain < r.plain.size() ? r.plain[next_plain].first : text.size();
    int32_t match = -1;
    size_t len = 0;
    for (const auto& [t, id] : by_first[static_cast<uint8_t>(text[i])]) {
      if (i + t.size() <= limit && text.compare(i, t.size(), t) == 0) {
        match = id;
        len = t.size();
        break;
      }
    }
    if (match < 0) {
      ++i;
      continue;
    }
    if (run < i) {
      const auto ids = tok.encode(std::string_view(text).substr(run, i - run), false, false);
      out.insert(out.end(), ids.begin(), ids.end());
    }
    out.push_back(match);
    i += len;
    run = i;
  }
  if (run < text.size()) {
    const auto ids = tok.encode(std::string_view(text).substr(run), false, false);
    out.insert(out.end(), ids.begin(), ids.end());
  }
  return out;
}

// A list of prompts in /v1/completions (OpenAI: strings, or arrays of token ids): each gets its
// own choices. More than this many is a 400.
constexpr size_t kMaxPrompts = 32;

std::optional<ApiError> build_prompt(const LoadedModel& m, const Json& body, bool chat, ToolMode& tools,
                                     bool parse_special, std::vector<int32_t>& prompt,
                                     std::vector<std::vector<int32_t>>* more_prompts = nullptr) {
  const tokenizer::Tokenizer& tok = m.model->tokenizer();
  if (!chat) {
    auto it = body.find("prompt");
    if (it == body.end() || it->is_null()) return bad_request("'prompt' is required", "prompt");
    auto token_ids = [&](const Json& list, std::vector<int32_t>& out) -> std::optional<ApiError> {
      for (const Json& v : list) {
        const int64_t id = v.get<int64_t>();
        if (id < 0 || id >= tok.n_tokens())
          return bad_request("'prompt' token id " + std::to_string(id) + " outside [0, " + std::to_string(tok.n_tokens()) + ")", "prompt");
        out.push_back(static_cast<int32_t>(id));
      }
      return std::nullopt;
    };
    auto is_ids = [](const Json& v) {
      return v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), [](const Json& x) { return x.is_number_integer(); });
    };
    const bool list_of_strings = it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), [](const Json& v) { return v.is_string(); });
    const bool list_of_id_lists = it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), is_ids);
    if ((list_of_strings || list_of_id_lists) && it->size() > 1) {
      if (!more_prompts) return bad_request("'prompt' must be one prompt here", "prompt");
      if (it->size() > kMaxPrompts)
        return bad_request("'prompt' lists " + std::to_string(it->size()) + " prompts, more than " + std::to_string(kMaxPrompts),
                           "prompt");
      for (size_t k = 0; k < it->size(); ++k) {
        std::vector<int32_t> one;
        if (list_of_strings) {
          one = tok.encode((*it)[k].get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
        } else {
          STRATA_API_TRY(token_ids((*it)[k], one));
        }
        if (one.empty()) return bad_request("'prompt' " + std::to_string(k) + " gives no tokens", "prompt");
        if (k == 0) prompt = std::move(one);
        else more_prompts->push_back(std::move(one));
      }
      return std::nullopt;
    }
    if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
      prompt = tok.encode((*it)[0].get<std::string>(), true, true);
    } else if (list_of_id_lists) {  // [[ids]]: one prompt
      STRATA_API_TRY(token_ids((*it)[0], prompt));
    } else if (it->is_string()) {
      prompt = tok.encode(it->get<std::string>(), /*add_special=*/true, /*parse_special=*/true);
    } else if (is_ids(*it)) {
      STRATA_API_TRY(token_ids(*it, prompt));
    } else {
      return bad_request("'prompt' must be a string, an array of strings, an array of token ids, or an array of "
                         "arrays of token ids", "prompt");
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
  if (tools.enabled) {
    // The template writes the tool definitions the way its model was trained on. A template that
    // never mentions tools would drop them silently: the tools then go into a generic system
    // message instead, and calls are asked for as <tool_call> blocks.
    if (!m.own_template || m.tmpl->source().find("tools") == std::string::npos) {
      tools.generic_prompt = true;
      messages = with_generic_tool_prompt(messages, tools);
    } else {
      opts.extra_context["tools"] = tools.tools;
    }
  }
  const tokenizer::Vocab& v = tok.vocab();
  if (v.bos_id >= 0) opts.bos_token = v.tokens[static_cast<size_t>(v.bos_id)];
  if (v.eos_id >= 0) opts.eos_token = v.tokens[static_cast<size_t>(v.eos_id)];
  auto text = m.tmpl->render_json(messages, opts);
  if (!text.ok()) {
    // A template's own raise_exception('...') text is meant for the user; an evaluation error
    // ("chat template line 3 column 12: ...") is the template's inside, not the request's fault
    // in a way the client can act on.
    const std::string& msg = text.error().message;
    if (msg.rfind("chat template", 0) == 0)
      return bad_request("the model's chat template cannot render these messages", "messages", "template_error");
    return bad_request("the model's chat template refused these messages: " + msg, "messages", "template_error");
  }
  // Where the user and tool contents lie in the rendered text (unless --parse-special).
  PlainRanges ranges{*text, {}};
  if (!parse_special) {
    // U+E000, then a nonce no content guesses (digits: they survive a template's case filters).
    std::string nonce = random_id("");
    for (char& ch : nonce) ch = static_cast<char>('0' + (static_cast<unsigned char>(ch) % 10));
    const std::string open = "\xEE\x80\x80" + nonce + ":";
    nlohmann::ordered_json marked = messages;
    std::vector<std::string> contents;
    for (size_t i = 0; i < marked.size(); ++i) {
      auto& msg = marked[i];
      const std::string role = msg.value("role", "");
      if ((role != "user" && role != "tool") || !msg["content"].is_string() || msg["content"].get<std::string>().empty())
        continue;
      contents.push_back(msg["content"].get<std::string>());
      msg["content"] = open + std::to_string(contents.size() - 1) + "\xEE\x80\x81";
    }
    if (!contents.empty()) {
      auto with_markers = m.tmpl->render_json(marked, opts);
      if (!with_markers.ok()) return bad_request("the model's chat template cannot render these messages", "messages", "template_error");
      ranges = fill_markers(*with_markers, open, contents, false);
      if (ranges.text != *text) {
        PlainRanges trimmed = fill_markers(*with_markers, open, contents, true);
        if (trimmed.text == *text) {
          ranges = std::move(trimmed);
        } else {
          // A template that transforms contents in other ways (case, escaping): the text it
          // rendered is kept, and each content is protected where it appears in it as sent
          // (in order); a transformed content no longer holds the special texts it was sent with.
          PlainRanges found{*text, {}};
          size_t at = 0;
          for (const std::string& c : contents) {
            const size_t p = text->find(c, at);
            if (p == std::string::npos) continue;
            found.plain.emplace_back(p, p + c.size());
            at = p + c.size();
          }
          ranges = std::move(found);
        }
      }
    }
  }
  if (!m.own_template) {
    // The "completion" template: the text is a plain prompt, tokenized as `run` does.
    prompt = encode_with_plain_ranges(tok, ranges);
    if (v.add_bos && v.bos_id >= 0) prompt.insert(prompt.begin(), v.bos_id);
    if (v.add_eos && v.eos_id >= 0) prompt.push_back(v.eos_id);
  } else {
    // The model's template writes BOS itself when it wants one; add it only when it did not.
    prompt = encode_with_plain_ranges(tok, ranges);
    if (v.add_bos && v.bos_id >= 0 && (prompt.empty() || prompt.front() != v.bos_id)) prompt.insert(prompt.begin(), v.bos_id);
  }
  if (prompt.empty()) return bad_request("the messages give an empty prompt", "messages");
  return std::nullopt;
}

const char* finish_name(exec::FinishReason f) {
  return f == exec::FinishReason::Length || f == exec::FinishReason::ContextFull ? "length" : "stop";
}

// What a choice reports of a re-plan it lived through (a Strata extension, "replan"): the lost
// devices, the token it had reached, the devices it runs on now and how long re-planning took.
Json replan_note(const exec::ReplanReport& r, int64_t generated) {
  Json j = replan_json(r);
  j["at_token"] = generated;
  return j;
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }
std::string sse(const Json& j) { return "data: " + dump(j) + "\n\n"; }

// The error of a finished generation, if it did not finish normally.
std::optional<ApiError> result_error(const exec::GenerationResult& r) {
  if (!r.status.ok()) {
    ApiError e = from_engine_error(r.status.error());
    if (e.status < 500) e.status = 500, e.type = "server_error";
    e.message = "generation failed: " + e.message;
    if (e.code.empty()) e.code = "generation_failed";
    return e;
  }
  if (r.finish == exec::FinishReason::Cancelled) {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = "generation_cancelled";
    e.message = "generation cancelled: the model was unloaded or the server is stopping";
    return e;
  }
  return std::nullopt;
}

struct Envelope {
  std::string id, model;
  int64_t created = 0;
  bool chat = true;
  bool logprobs = false;
  ToolMode tools;             // tools offered: the output is parsed for tool calls
  // The model writes OpenAI's harmony format (gpt-oss): its analysis channel is answered as
  // "reasoning_content", its final channel as "content", the markers left out (serve/harmony.h).
  bool harmony = false;
};

// The calls of a harmony reply as OpenAI tool_calls: those to offered tools; any other call's
// arguments stay in parts.content (nothing the model wrote is dropped).
Json harmony_calls(const Envelope& env, HarmonyParts& parts) {
  Json calls = Json::array();
  for (const HarmonyCall& c : parts.calls) {
    Json call = env.tools.enabled ? offered_tool_call(env.tools, c.name, c.arguments) : Json(nullptr);
    if (call.is_null()) {
      parts.content += c.arguments;
    } else {
      calls.push_back(std::move(call));
    }
  }
  parts.calls.clear();
  return calls;
}

// One token's logprob entry in the chat shape ({token, logprob, bytes, top_logprobs}); made on
// the scheduler thread, where the tokenizer is alive.
Json token_entry(const tokenizer::Tokenizer& tok, int32_t id, float logprob) {
  const std::string piece = tok.token_to_piece(id, /*special=*/true);
  Json bytes = Json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return {{"token", piece}, {"logprob", logprob}, {"bytes", bytes}};
}
Json logprob_entry(const tokenizer::Tokenizer& tok, const exec::TokenInfo& info) {
  Json e = token_entry(tok, info.token, info.logprob);
  Json top = Json::array();
  for (const exec::TokenLogprob& t : info.top) top.push_back(token_entry(tok, t.token, t.logprob));
  e["top_logprobs"] = top;
  return e;
}

// The "logprobs" of a choice: chat {"content": [...]}, completions {tokens, token_logprobs,
// top_logprobs, text_offset}. offset: the text offset of the first entry (advanced).
Json logprobs_json(const Envelope& env, const std::vector<Json>& entries, size_t& offset) {
  if (!env.logprobs) return nullptr;
  if (env.chat) return {{"content", entries}, {"refusal", nullptr}};
  Json tokens = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  for (const Json& e : entries) {
    tokens.push_back(e["token"]);
    lps.push_back(e["logprob"]);
    Json top = Json::object();
    for (const Json& t : e["top_logprobs"]) top[t["token"].get<std::string>()] = t["logprob"];
    tops.push_back(top);
    offsets.push_back(offset);
    offset += e["token"].get<std::string>().size();
  }
  return {{"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

Json chunk(const Envelope& env, const Json& choice) {
  return {{"id", env.id},
          {"object", env.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", env.created},
          {"model", env.model},
          {"choices", Json::array({choice})}};
}

Json usage_json(const std::vector<std::shared_ptr<Channel>>& choices, size_t n) {
  // Each prompt counts once (its first choice), as OpenAI counts a list of prompts.
  int64_t prompt = 0, cached = 0;
  for (size_t k = 0; k < choices.size(); k += std::max<size_t>(1, n)) {
    prompt += choices[k]->result.n_prompt;
    cached += choices[k]->result.n_prompt_cached;
  }
  int64_t completion = 0;
  int64_t evaluated = 0;
  int64_t drafted = 0, accepted = 0;
  for (const auto& c : choices) {
    completion += c->result.n_generated;
    evaluated += c->result.n_prompt - c->result.n_prompt_cached;
    drafted += c->result.n_drafted;
    accepted += c->result.n_draft_accepted;
  }
  // cached_tokens: OpenAI's prefix-cache hit of the request (each prompt's first choice). Strata adds
  // the prompt tokens the model actually read for all choices together: n choices share one reading.
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion},
          {"prompt_tokens_details", {{"cached_tokens", cached}}},
          // OpenAI's names for a predicted output's tokens: here speculative decoding's guesses.
          {"completion_tokens_details",
           {{"accepted_prediction_tokens", accepted}, {"rejected_prediction_tokens", drafted - accepted}}},
          {"prompt_tokens_evaluated", evaluated}};
}

void answer_blocking(httplib::Response& res, const std::shared_ptr<Request>& rq, const Envelope& env,
                     const std::shared_ptr<exec::Scheduler>& scheduler) {
  {
    // A client that hangs up no longer wants the answer: its choices are cancelled, queued or
    // running, so abandoned requests do not hold slots and the queue. Looked at every 100 ms.
    auto all_done = [&] {
      return std::all_of(rq->choices.begin(), rq->choices.end(), [](const auto& c) { return c->done; });
    };
    std::unique_lock<std::mutex> lock(rq->mutex);
    bool cancelled = false;
    while (!rq->cv.wait_for(lock, std::chrono::milliseconds(100), all_done)) {
      if (cancelled || !client_gone()) continue;
      cancelled = true;
      std::vector<uint64_t> ids;
      for (const auto& ch : rq->choices) ids.push_back(ch->id);
      lock.unlock();  // the scheduler's callbacks take rq->mutex
      for (const uint64_t id : ids) scheduler->cancel(id);
      lock.lock();
    }
    if (cancelled) {
      ApiError e;
      e.status = 499;
      e.type = "invalid_request_error";
      e.code = "client_disconnected";
      e.message = "the client closed the connection before the answer was ready";
      return send_error(res, e);
    }
  }
  for (const auto& ch : rq->choices) {
    if (auto e = result_error(ch->result)) return send_error(res, *e);
  }
  Json choices = Json::array();
  for (size_t i = 0; i < rq->choices.size(); ++i) {
    Channel& ch = *rq->choices[i];
    const exec::GenerationResult& r = ch.result;
    size_t offset = 0;
    Json choice = {{"index", i}, {"logprobs", logprobs_json(env, ch.all_lp, offset)}, {"finish_reason", finish_name(r.finish)}};
    if (!ch.replans.empty()) choice["replans"] = ch.replans;
    if (env.chat) {
      std::string text = r.text;
      Json message = {{"role", "assistant"}, {"content", text}};
      if (env.harmony) {
        HarmonyParts parts = split_harmony(r.text);
        Json calls = harmony_calls(env, parts);
        message["content"] = parts.content;
        if (!parts.reasoning.empty()) message["reasoning_content"] = parts.reasoning;
        if (!calls.empty()) {
          if (parts.content.empty()) message["content"] = nullptr;
          message["tool_calls"] = calls;
          choice["finish_reason"] = "tool_calls";
        }
      } else if (env.tools.enabled) {
        ParsedToolCalls calls = parse_tool_calls(text, env.tools);
        if (!calls.calls.empty()) {
          message["content"] = calls.content.empty() ? Json(nullptr) : Json(calls.content);
          message["tool_calls"] = calls.calls;
          choice["finish_reason"] = "tool_calls";
        }
      }
      choice["message"] = message;
    } else {
      choice["text"] = r.text;
    }
    choices.push_back(choice);
  }
  Json body = {{"id", env.id},
               {"object", env.chat ? "chat.completion" : "text_completion"},
               {"created", env.created},
               {"model", env.model},
               {"choices", choices},
               {"usage", usage_json(rq->choices, rq->n)}};
  send_json(res, body);
}

// Worker-side state of one stream (touched only by its content provider).
struct StreamState {
  bool sent_head = false;
  bool finished = false;
  std::vector<std::string> held;  // with tools: each choice's text, parsed at its end
  std::vector<HarmonySplitter> harmony;  // env.harmony: each choice's channels (serve/harmony.h)
  std::vector<HarmonyParts> harmony_calls;  // ... and its calls, sent when the choice ends
  Clock::time_point last_write = Clock::now();
};

void answer_stream(ServerContext& ctx, httplib::Response& res, const std::shared_ptr<Request>& rq, const Envelope& env,
                   std::shared_ptr<exec::Scheduler> scheduler, bool include_usage) {
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  ServerContext* c = &ctx;
  auto st = std::make_shared<StreamState>();
  st->held.resize(rq->choices.size());
  st->harmony.resize(rq->choices.size());
  st->harmony_calls.resize(rq->choices.size());
  // Called repeatedly on this request's HTTP worker until sink.done() or a false return.
  auto provider = [rq, env, scheduler, include_usage, st](size_t, httplib::DataSink& sink) -> bool {
    auto write = [&](const std::string& s) {
      if (sink.write(s.data(), s.size())) {
        st->last_write = Clock::now();
        return true;
      }
      for (const auto& ch : rq->choices) {
        ch->gone = true;  // the client left: on_text returns false from now on
        scheduler->cancel(ch->id);
      }
      return false;
    };
    if (st->finished) return false;
    const size_t n = rq->choices.size();
    if (!st->sent_head) {
      st->sent_head = true;
      if (env.chat) {
        for (size_t i = 0; i < n; ++i) {
          Json choice = {{"index", i}, {"delta", {{"role", "assistant"}, {"content", ""}}}, {"logprobs", nullptr},
                         {"finish_reason", nullptr}};
          if (!write(sse(chunk(env, choice)))) return false;
        }
      }
    }
    std::vector<std::vector<Channel::Piece>> pieces(n);
    std::vector<bool> ended(n, false);
    std::vector<std::vector<Json>> replans(n);
    std::pair<int64_t, int64_t> progress{-1, 0};
    {
      std::unique_lock<std::mutex> lock(rq->mutex);
      rq->cv.wait_for(lock, std::chrono::milliseconds(200), [&] {
        for (const auto& ch : rq->choices) {
          if (!ch->pending.empty() || !ch->replans_pending.empty() ||
              (ch->done && !ch->finished) || ch->prompt_done >= 0)
            return true;
        }
        return false;
      });
      // "return_progress": the prompt is shared by the choices; the first one reports it.
      progress = {rq->choices[0]->prompt_done, rq->choices[0]->prompt_total};
      rq->choices[0]->prompt_done = -1;
      for (size_t i = 0; i < n; ++i) {
        Channel& ch = *rq->choices[i];
        pieces[i].swap(ch.pending);
        replans[i].swap(ch.replans_pending);
        if (ch.done && !ch.finished) {
          ch.finished = true;
          ended[i] = true;
        }
      }
    }
    if (progress.first >= 0) {  // an empty delta carrying "prompt_progress", before the text
      Json choice = {{"index", 0}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
      if (env.chat) {
        choice["delta"] = {{"content", ""}};
      } else {
        choice["text"] = "";
      }
      Json c = chunk(env, choice);
      c["prompt_progress"] = {{"processed", progress.first}, {"total", progress.second}};
      if (!write(sse(c))) return false;
    }
    bool wrote = false;
    // A re-plan this choice lived through: an empty delta carrying "replan", before the text that
    // came after it.
    for (size_t i = 0; i < n; ++i) {
      for (Json& note : replans[i]) {
        Json choice = {{"index", i}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
        if (env.chat) {
          choice["delta"] = {{"content", ""}};
        } else {
          choice["text"] = "";
        }
        Json c = chunk(env, choice);
        c["replan"] = std::move(note);
        if (!write(sse(c))) return false;
        wrote = true;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      Channel& ch = *rq->choices[i];
      for (Channel::Piece& piece : pieces[i]) {
        std::string reasoning;
        if (env.harmony) {  // channels split as they come; a marker cut in two waits for its rest
          HarmonyParts parts = st->harmony[i].feed(piece.text);
          piece.text = std::move(parts.content);
          reasoning = std::move(parts.reasoning);
          for (HarmonyCall& c : parts.calls) st->harmony_calls[i].calls.push_back(std::move(c));
        }
        if (env.tools.enabled) {  // the text is held back until the choice ends, to parse the calls
          st->held[i] += piece.text;
          piece.text.clear();
        }
        if (piece.text.empty() && reasoning.empty() && piece.lp.empty()) continue;
        Json choice = {{"index", i}, {"logprobs", logprobs_json(env, piece.lp, ch.text_offset)}, {"finish_reason", nullptr}};
        if (env.chat) {
          choice["delta"] = {{"content", piece.text}};
          if (!reasoning.empty()) choice["delta"]["reasoning_content"] = reasoning;
        } else {
          choice["text"] = piece.text;
        }
        if (!write(sse(chunk(env, choice)))) return false;
        wrote = true;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (!ended[i]) continue;
      wrote = true;
      const exec::GenerationResult& r = rq->choices[i]->result;
      if (auto e = result_error(r)) {
        if (!write(sse(error_body(*e)))) return false;
        continue;
      }
      const char* finish = finish_name(r.finish);
      if (env.harmony) {
        // What the splitter held back when the reply ended inside a marker, and the calls: to
        // offered tools as tool_calls, any other's arguments as content.
        HarmonyParts rest = st->harmony[i].finish();
        HarmonyParts& pending = st->harmony_calls[i];
        for (HarmonyCall& c : rest.calls) pending.calls.push_back(std::move(c));
        Json calls = harmony_calls(env, pending);
        rest.content = (env.tools.enabled ? st->held[i] : std::string()) + rest.content + pending.content;
        Json delta = Json::object();
        if (!rest.content.empty()) delta["content"] = rest.content;
        if (!rest.reasoning.empty()) delta["reasoning_content"] = rest.reasoning;
        if (!calls.empty()) {
          for (size_t k = 0; k < calls.size(); ++k) calls[k]["index"] = k;
          delta["tool_calls"] = calls;
          finish = "tool_calls";
        }
        if (!delta.empty()) {
          Json choice = {{"index", i}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
          if (!write(sse(chunk(env, choice)))) return false;
        }
      } else if (env.tools.enabled) {
        ParsedToolCalls calls = parse_tool_calls(st->held[i], env.tools);
        Json delta = Json::object();
        if (!calls.content.empty()) delta["content"] = calls.content;
        if (!calls.calls.empty()) {
          Json tc = calls.calls;
          for (size_t k = 0; k < tc.size(); ++k) tc[k]["index"] = k;
          delta["tool_calls"] = tc;
          finish = "tool_calls";
        }
        if (!delta.empty()) {
          Json choice = {{"index", i}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", nullptr}};
          if (!write(sse(chunk(env, choice)))) return false;
        }
      }
      Json choice = {{"index", i}, {"logprobs", nullptr}, {"finish_reason", finish}};
      if (env.chat) {
        choice["delta"] = Json::object();
      } else {
        choice["text"] = "";
      }
      if (!write(sse(chunk(env, choice)))) return false;
    }
    const bool all = std::all_of(rq->choices.begin(), rq->choices.end(), [](const auto& ch) { return ch->finished; });
    if (!all) {
      // Nothing for a while (queued): a comment line finds out whether the client is still there.
      if (!wrote && Clock::now() - st->last_write > std::chrono::seconds(2)) return write(": waiting\n\n");
      return true;
    }
    st->finished = true;
    const bool failed = std::any_of(rq->choices.begin(), rq->choices.end(),
                                    [](const auto& ch) { return result_error(ch->result).has_value(); });
    if (include_usage && !failed) {
      Json u = chunk(env, Json::object());
      u["choices"] = Json::array();
      u["usage"] = usage_json(rq->choices, rq->n);
      if (!write(sse(u))) return false;
    }
    if (!write("data: [DONE]\n\n")) return false;
    sink.done();
    return true;
  };
  // Runs when the response is destroyed, whether or not the stream completed.
  auto releaser = [c, scheduler, rq](bool) {
    for (const auto& ch : rq->choices) scheduler->cancel(ch->id);
    release_stream(*c);
  };
  res.set_chunked_content_provider("text/event-stream", provider, releaser);
}

// logit_bias: {"token id": bias in [-100, 100]}, ids inside the vocabulary.
// A request's speculative decoding: its "speculative" (checked by parse_fields) over the server's
// default. true (or an object without "mode"): the default mode, or the draft model when there is
// one, else prompt lookup. A server default of "model" for a model its draft does not fit is off.
std::optional<ApiError> resolve_speculative(const Json& asked, const LoadedModel& loaded,
                                            const exec::SpeculativeParams& server, exec::SpeculativeParams& out) {
  out = server;
  if (out.mode == exec::DraftMode::Model && !loaded.drafter) out.mode = exec::DraftMode::Off;
  if (asked.is_null()) return std::nullopt;
  const exec::DraftMode on = server.mode != exec::DraftMode::Off && out.mode != exec::DraftMode::Off
                                 ? out.mode
                                 : (loaded.drafter ? exec::DraftMode::Model : exec::DraftMode::Lookup);
  std::string mode;
  if (asked.is_boolean()) {
    out.mode = asked.get<bool>() ? on : exec::DraftMode::Off;
    return std::nullopt;
  }
  if (asked.is_string()) {
    mode = asked.get<std::string>();
    if (mode.empty()) return bad_request("'speculative' is an empty string: off, lookup or model", "speculative");
  } else {
    mode = asked.value("mode", std::string());
    if (asked.contains("max_draft")) out.max_draft = asked["max_draft"].get<int32_t>();
    if (asked.contains("adaptive")) out.adaptive = asked["adaptive"].get<bool>();
  }
  if (mode.empty()) {
    out.mode = on;
  } else {
    auto m = exec::parse_draft_mode(mode);
    if (!m.ok()) return bad_request(m.error().message, "speculative");
    out.mode = *m;
  }
  if (out.mode == exec::DraftMode::Model && !loaded.drafter)
    return bad_request("speculative mode \"model\" needs a draft model, and this server has none for '" + loaded.id +
                           "'" + (loaded.draft_error.empty() ? " (start it with --draft FILE)" : ": " + loaded.draft_error),
                       "speculative");
  return std::nullopt;
}

std::optional<ApiError> parse_logit_bias(const Json& body, int32_t n_vocab, std::vector<std::pair<int32_t, float>>& out) {
  auto it = body.find("logit_bias");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return bad_request("'logit_bias' must be an object of token id -> bias", "logit_bias");
  if (it->size() > 1024) return bad_request("'logit_bias' has more than 1024 entries", "logit_bias");
  for (auto e = it->begin(); e != it->end(); ++e) {
    const std::string& k = e.key();
    const bool digits = !k.empty() && k.size() <= 9 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
    const long id = digits ? std::stol(k) : -1;
    if (id < 0 || id >= n_vocab)
      return bad_request("'logit_bias' key '" + k + "' is not a token id in [0, " + std::to_string(n_vocab) + ")",
                         "logit_bias");
    if (!e.value().is_number() || !std::isfinite(e.value().get<double>()) || e.value().get<double>() < -100 ||
        e.value().get<double>() > 100)
      return bad_request("'logit_bias' value of token " + k + " must be a number in [-100, 100]", "logit_bias");
    out.emplace_back(static_cast<int32_t>(id), e.value().get<float>());
  }
  return std::nullopt;
}

void handle_completion(ServerContext& ctx, const httplib::Request& req, httplib::Response& res, bool chat) {
  const Clock::time_point arrived = Clock::now();
  Json body;
  if (auto e = parse_object(req.body, body)) return send_error(res, *e);
  Parsed p;
  p.chat = chat;
  if (auto e = parse_fields(body, p)) return send_error(res, *e);
  ToolMode tools;
  if (chat) {
    if (auto e = parse_tools(body, tools)) return send_error(res, *e);
  }
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
  const tokenizer::Tokenizer* tok = &loaded->model->tokenizer();
  if (auto e = parse_logit_bias(body, tok->n_tokens(), p.gen.logit_bias)) return send_error(res, *e);
  if (auto e = resolve_speculative(p.speculative, *loaded, ctx.host.options().speculative, p.gen.speculative))
    return send_error(res, *e);
  if (auto e = parse_response_format(body, req.body, *loaded, p.make_constraint)) return send_error(res, *e);
  if (tools.forced) {
    // The reply must be a call: constrained to a bare call object (a function it may call, and
    // that function's parameters as arguments when that schema is in the supported subset, else
    // any object).
    if (p.make_constraint)
      return send_error(res, bad_request("a forced 'tool_choice' cannot be combined with 'response_format'",
                                         "tool_choice", "unsupported_parameter"));
    Status s = tool_call_constraint("", tools, *loaded, p.make_constraint);
    if (!s.ok())
      return send_error(res, bad_request(s.error().message, "tool_choice",
                                         s.error().code == Code::OutOfRange ? "schema_too_large" : ""));
  }
  std::vector<int32_t> prompt;
  std::vector<std::vector<int32_t>> more_prompts;  // /v1/completions with a list of prompts: the 2nd on
  if (auto e = build_prompt(*loaded, body, chat, tools, ctx.options.parse_special, prompt, chat ? nullptr : &more_prompts))
    return send_error(res, *e);
  if (tools.enabled) tools.format = tools.generic_prompt ? ToolFormat::Hermes : tool_format_of_template(loaded->tmpl->source());
  if (tools.enabled && !tools.forced && !p.make_constraint && tools.format == ToolFormat::Hermes) {
    // tool_choice "auto" with <tool_call> blocks: the model writes freely, and once it opens a
    // block the call inside is constrained to an offered name and that function's arguments
    // (without this a small model copies the prompt's example, "<function name>", which is no call).
    // Tools whose schemas pass the compile budget are still offered, unconstrained, as before.
    if (!tool_call_constraint("<tool_call>", tools, *loaded, p.make_constraint).ok()) p.make_constraint = nullptr;
  }
  const int64_t n_ctx = loaded->pipeline->n_ctx();
  std::vector<std::vector<int32_t>> prompts;
  prompts.push_back(std::move(prompt));
  for (auto& extra : more_prompts) prompts.push_back(std::move(extra));
  if (static_cast<int64_t>(prompts.size()) * p.n > 64)
    return send_error(res, bad_request(std::to_string(prompts.size()) + " prompts x n " + std::to_string(p.n) +
                                           " choices is more than 64", "prompt"));
  for (const auto& one : prompts) {
    const int64_t n_prompt = static_cast<int64_t>(one.size());
    if (n_prompt > n_ctx)
      return send_error(res, bad_request("prompt of " + std::to_string(n_prompt) + " tokens exceeds the context length " +
                                             std::to_string(n_ctx),
                                         chat ? "messages" : "prompt", "context_length_exceeded"));
  }

  if (p.stream && !acquire_stream(ctx, res)) return;
  std::shared_ptr<Metrics> metrics = ctx.metrics;
  const bool stream = p.stream;
  const bool want_lp = p.logprobs;
  auto rq = std::make_shared<Request>();
  rq->n = static_cast<size_t>(p.n);
  std::vector<exec::GenerationRequest> gens;
  for (int64_t all = 0; all < static_cast<int64_t>(prompts.size()) * p.n; ++all) {
    const int64_t i = all % p.n;  // the choice of its prompt
    const std::vector<int32_t>& its_prompt = prompts[static_cast<size_t>(all / p.n)];
    auto ch = std::make_shared<Channel>();
    rq->choices.push_back(ch);
    exec::GenerationRequest g = p.gen;
    g.prompt = its_prompt;  // copied per choice
    g.max_tokens = p.max_tokens >= 0 ? p.max_tokens
                                     : std::max<int64_t>(1, n_ctx - static_cast<int64_t>(its_prompt.size()));
    if (p.make_constraint) g.constraint = p.make_constraint();
    g.sampling.seed = p.gen.sampling.seed + static_cast<uint64_t>(i);
    Channel* chp = ch.get();
    Request* rqp = rq.get();
    // The token clock of this choice (scheduler thread only).
    auto last = std::make_shared<Clock::time_point>();
    g.on_token = [rq, chp, rqp, metrics, arrived, last, want_lp, stream, tok](const exec::TokenInfo& info) {
      const Clock::time_point now = Clock::now();
      metrics->tokens_generated.fetch_add(1);
      if (*last == Clock::time_point{}) {
        metrics->ttft_ms.add(std::chrono::duration<double, std::milli>(now - arrived).count());
      } else {
        metrics->itl_ms.add(std::chrono::duration<double, std::milli>(now - *last).count());
      }
      *last = now;
      if (!want_lp) return;
      Json entry = logprob_entry(*tok, info);
      std::lock_guard<std::mutex> lock(rqp->mutex);
      if (stream) {
        chp->pending_lp.push_back(std::move(entry));
      } else {
        chp->all_lp.push_back(std::move(entry));
      }
    };
    g.on_text = [rq, chp, rqp, stream](std::string_view text) {
      if (chp->gone.load()) return false;
      if (stream) {
        std::lock_guard<std::mutex> lock(rqp->mutex);
        chp->add_piece(std::string(text));
      }
      rqp->cv.notify_all();
      return true;
    };
    g.on_done = [rq, chp, rqp, metrics](const exec::GenerationResult& r) {
      metrics->prompt_tokens += static_cast<uint64_t>(r.n_prompt - r.n_prompt_cached);
      metrics->requests_active.fetch_sub(1);
      {
        std::lock_guard<std::mutex> lock(rqp->mutex);
        // Logprob entries of tokens that gave no text (held back at the end): a chunk of their own.
        if (!chp->pending_lp.empty()) chp->add_piece(std::string());
        chp->result = r;
        chp->done = true;
      }
      rqp->cv.notify_all();
    };
    g.on_replan = [rq, chp, rqp, stream](const exec::ReplanReport& r, int64_t generated) {
      {
        std::lock_guard<std::mutex> lock(rqp->mutex);
        (stream ? chp->replans_pending : chp->replans).push_back(replan_note(r, generated));
      }
      rqp->cv.notify_all();
    };
    if (all == 0 && stream && p.return_progress) {
      g.on_prompt_progress = [rq, chp, rqp](int64_t done, int64_t total) {
        {
          std::lock_guard<std::mutex> lock(rqp->mutex);
          chp->prompt_done = done;
          chp->prompt_total = total;
        }
        rqp->cv.notify_all();
      };
    }
    gens.push_back(std::move(g));
  }
  std::shared_ptr<exec::Scheduler> scheduler = loaded->scheduler;
  Envelope env;
  env.id = random_id(chat ? "chatcmpl-" : "cmpl-");
  env.model = loaded->id;
  env.created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  env.chat = chat;
  env.logprobs = p.logprobs;
  env.tools = tools;
  env.harmony = chat && loaded->tmpl && is_harmony_template(loaded->tmpl->source());
  loaded.reset();  // from here on only the scheduler is needed; an unload must not wait for us

  for (size_t i = 0; i < gens.size(); ++i) {
    metrics->requests_active.fetch_add(1);
    auto id = scheduler->submit(std::move(gens[i]));
    if (!id.ok()) {
      metrics->requests_active.fetch_sub(1);
      // The choices already queued are cancelled, and waited for, before answering.
      for (size_t k = 0; k < i; ++k) scheduler->cancel(rq->choices[k]->id);
      {
        std::unique_lock<std::mutex> lock(rq->mutex);
        rq->cv.wait(lock, [&] {
          for (size_t k = 0; k < i; ++k) {
            if (!rq->choices[k]->done) return false;
          }
          return true;
        });
      }
      if (stream) release_stream(ctx);
      ApiError e = from_engine_error(id.error());
      if (id.error().code == Code::OutOfRange) {
        e.status = 429;
        e.type = "rate_limit_error";
        e.code = "queue_full";
      }
      if (id.error().code == Code::Cancelled) e.code = "server_stopping";
      return send_error(res, e);
    }
    std::lock_guard<std::mutex> lock(rq->mutex);
    rq->choices[i]->id = *id;
  }
  if (stream) return answer_stream(ctx, res, rq, env, scheduler, p.include_usage);
  answer_blocking(res, rq, env, scheduler);
}

// Base64 (RFC 4648, with padding) of bytes: OpenAI's "encoding_format": "base64" embedding.
std::string base64(const uint8_t* data, size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t b0 = data[i], b1 = i + 1 < n ? data[i + 1] : 0, b2 = i + 2 < n ? data[i + 2] : 0;
    const uint32_t v = (b0 << 16) | (b1 << 8) | b2;
    out.push_back(kAlphabet[(v >> 18) & 63]);
    out.push_back(kAlphabet[(v >> 12) & 63]);
    out.push_back(i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=');
    out.push_back(i + 2 < n ? kAlphabet[v & 63] : '=');
  }
  return out;
}

// Inputs of one /v1/embeddings request at most (OpenAI allows 2048; each is a whole eval here).
constexpr size_t kMaxEmbeddingInputs = 256;

void handle_embeddings(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  Json body;
  if (auto e = parse_object(req.body, body)) return send_error(res, *e);
  std::shared_ptr<LoadedModel> loaded = ctx.host.current();
  if (!loaded) {
    ApiError e;
    e.status = 503;
    e.type = "server_error";
    e.code = "model_not_loaded";
    e.message = "no model is loaded (POST /strata/v1/model/load)";
    return send_error(res, e);
  }
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) return send_error(res, bad_request("'model' must be a string", "model"));
    if (!it->get<std::string>().empty() && !names_model(*loaded, it->get<std::string>())) {
      ApiError e;
      e.status = 404;
      e.param = "model";
      e.code = "model_not_found";
      e.message = "model '" + it->get<std::string>() + "' is not loaded; this server serves '" + loaded->id + "'";
      return send_error(res, e);
    }
  }
  bool as_base64 = false;
  if (auto it = body.find("encoding_format"); it != body.end() && !it->is_null()) {
    if (!it->is_string() || (*it != "float" && *it != "base64"))
      return send_error(res, bad_request("'encoding_format' must be \"float\" or \"base64\"", "encoding_format"));
    as_base64 = *it == "base64";
  }
  exec::Pooling pooling = exec::Pooling::Mean;
  if (auto it = body.find("pooling"); it != body.end() && !it->is_null()) {
    if (!it->is_string() || (*it != "mean" && *it != "last"))
      return send_error(res, bad_request("'pooling' must be \"mean\" or \"last\"", "pooling"));
    if (*it == "last") pooling = exec::Pooling::Last;
  }
  const int64_t n_embd = loaded->model->config().n_embd;
  if (auto it = body.find("dimensions"); it != body.end() && !it->is_null()) {
    if (!it->is_number_integer())
      return send_error(res, bad_request("'dimensions' must be an integer", "dimensions"));
    if (it->get<int64_t>() != n_embd)
      return send_error(res, bad_request("'dimensions' " + std::to_string(it->get<int64_t>()) + " is not supported: this "
                                         "model's embeddings have " + std::to_string(n_embd) + " dimensions (a decoder's "
                                         "hidden state cannot be shortened)", "dimensions", "unsupported_parameter"));
  }
  // input: a string, a list of strings, a list of token ids, or a list of token-id lists.
  const tokenizer::Tokenizer& tok = loaded->model->tokenizer();
  auto it = body.find("input");
  if (it == body.end() || it->is_null()) return send_error(res, bad_request("'input' is required", "input"));
  std::vector<std::vector<int32_t>> inputs;
  auto encode = [&](const Json& v, size_t k) -> std::optional<ApiError> {
    const std::string where = it->is_array() ? "'input' " + std::to_string(k) : std::string("'input'");
    std::vector<int32_t> ids;
    if (v.is_string()) {
      if (v.get<std::string>().empty()) return bad_request(where + " is an empty string", "input");
      // As OpenAI reads text: special-token texts are text; BOS when the vocabulary adds one.
      ids = tok.encode(v.get<std::string>(), /*add_special=*/true, /*parse_special=*/false);
    } else if (v.is_array() && !v.empty()) {
      for (const Json& x : v) {
        if (!x.is_number_integer()) return bad_request(where + " must hold token ids (integers)", "input");
        const int64_t id = x.get<int64_t>();
        if (id < 0 || id >= tok.n_tokens())
          return bad_request(where + ": token id " + std::to_string(id) + " outside [0, " +
                             std::to_string(tok.n_tokens()) + ")", "input");
        ids.push_back(static_cast<int32_t>(id));
      }
    } else {
      return bad_request(where + " must be a non-empty string or array of token ids", "input");
    }
    if (ids.empty()) return bad_request(where + " gives no tokens", "input");
    const int64_t n_ctx = loaded->pipeline->n_ctx();
    if (static_cast<int64_t>(ids.size()) > n_ctx) {
      ApiError e = bad_request(where + " has " + std::to_string(ids.size()) + " tokens, more than the context length " +
                               std::to_string(n_ctx), "input", "context_length_exceeded");
      return e;
    }
    inputs.push_back(std::move(ids));
    return std::nullopt;
  };
  if (it->is_string()) {
    if (auto e = encode(*it, 0)) return send_error(res, *e);
  } else if (it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), [](const Json& x) { return x.is_number_integer(); })) {
    if (auto e = encode(*it, 0)) return send_error(res, *e);  // one list of token ids
  } else if (it->is_array() && !it->empty()) {
    if (it->size() > kMaxEmbeddingInputs)
      return send_error(res, bad_request("'input' lists " + std::to_string(it->size()) + " inputs, more than " +
                                         std::to_string(kMaxEmbeddingInputs), "input"));
    for (size_t k = 0; k < it->size(); ++k) {
      if (auto e = encode((*it)[k], k)) return send_error(res, *e);
    }
  } else {
    return send_error(res, bad_request("'input' must be a string, an array of strings, an array of token ids, or an "
                                       "array of arrays of token ids", "input"));
  }
  std::shared_ptr<exec::Scheduler> scheduler = loaded->scheduler;
  Json data = Json::array();
  int64_t n_tokens = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (k > 0 && client_gone()) {  // a client that left wants no more of the list
      ApiError e;
      e.status = 499;
      e.code = "client_disconnected";
      e.message = "the client closed the connection before the answer was ready";
      return send_error(res, e);
    }
    Expected<std::vector<float>> v = scheduler->embedding(inputs[k], pooling);
    if (!v.ok()) {
      ApiError e = from_engine_error(v.error(), "input");
      if (v.error().code == Code::Cancelled) {
        e.status = 503;
        e.type = "server_error";
        e.code = "generation_cancelled";
      }
      return send_error(res, e);
    }
    n_tokens += static_cast<int64_t>(inputs[k].size());
    Json item = {{"object", "embedding"}, {"index", k}};
    if (as_base64) {
      // Little-endian f32, as OpenAI sends it (numpy.frombuffer(..., dtype="float32")).
      std::vector<uint8_t> bytes(v->size() * 4);
      for (size_t i = 0; i < v->size(); ++i) {
        uint32_t bits;
        std::memcpy(&bits, &(*v)[i], 4);
        for (int b = 0; b < 4; ++b) bytes[i * 4 + static_cast<size_t>(b)] = static_cast<uint8_t>(bits >> (8 * b));
      }
      item["embedding"] = base64(bytes.data(), bytes.size());
    } else {
      Json list = Json::array();
      for (float x : *v) list.push_back(static_cast<double>(x));
      item["embedding"] = std::move(list);
    }
    data.push_back(std::move(item));
  }
  send_json(res, {{"object", "list"},
                  {"data", std::move(data)},
                  {"model", loaded->id},
                  {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}});
}

}  // namespace

void register_openai_routes(httplib::Server& http, ServerContext& ctx) {
  auto model_json = [](const LoadedModel& m) {
    const int64_t created = std::chrono::duration_cast<std::chrono::seconds>(m.loaded_at.time_since_epoch()).count();
    return Json{{"id", m.id}, {"object", "model"}, {"created", created}, {"owned_by", "strata"}};
  };
  get_route(http, "/v1/models", ctx, guarded([&ctx, model_json](const httplib::Request&, httplib::Response& res) {
    Json data = Json::array();
    if (auto loaded = ctx.host.current()) data.push_back(model_json(*loaded));
    send_json(res, {{"object", "list"}, {"data", data}});
  }));
  get_route(http, R"(/v1/models/(.+))", ctx, guarded([&ctx, model_json](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches.size() > 1 ? req.matches[1].str() : "";
    auto loaded = ctx.host.current();
    if (loaded && names_model(*loaded, name)) return send_json(res, model_json(*loaded));
    ApiError e;
    e.status = 404;
    e.param = "model";
    e.code = "model_not_found";
    e.message = "model '" + name + "' is not loaded";
    send_error(res, e);
  }), "/v1/models/{id}");
  post_route(http, "/v1/chat/completions", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_completion(ctx, req, res, true);
  }));
  post_route(http, "/v1/completions", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_completion(ctx, req, res, false);
  }));
  post_route(http, "/v1/embeddings", ctx, guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
    handle_embeddings(ctx, req, res);
  }));
}

}  // namespace strata::serve
