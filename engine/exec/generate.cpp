// engine/exec/generate.cpp — prompt -> sampled tokens -> streamed, stop-checked UTF-8 text, one
// sequence on the calling thread; each token through token_step (as the Scheduler does).
#include "engine/exec/generate.h"

#include <algorithm>

#include <chrono>

#include "engine/exec/token_step.h"
#include "engine/sample/stop_strings.h"
#include "engine/tokenizer/stream_decoder.h"

namespace strata::exec {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::Length: return "length";
    case FinishReason::Stop: return "stop";
    case FinishReason::EndOfGeneration: return "eog";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::ContextFull: return "context_full";
  }
  return "?";
}

Status validate(const GenerateOptions& o) {
  if (o.max_tokens < 0 || o.max_tokens > (1 << 24))
    return Error{Code::InvalidArgument, "max tokens " + std::to_string(o.max_tokens) + " outside [0, 16777216]"};
  return sample::validate(o.sampling);
}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Expected<GenerateResult> generate(Session& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const TextCallback& on_text) {
  STRATA_RETURN_IF_ERROR(validate(options));
  if (prompt.empty()) return Error{Code::InvalidArgument, "empty prompt: at least one token is needed"};
  const tokenizer::Tokenizer& tok = session.model().tokenizer();
  const int32_t n_vocab = static_cast<int32_t>(session.model().config().n_vocab);
  if (static_cast<int64_t>(prompt.size()) > session.n_ctx())
    return Error{Code::OutOfRange, "prompt of " + std::to_string(prompt.size()) +
                                       " tokens exceeds the context length " + std::to_string(session.n_ctx())};

  GenerateResult result;
  result.n_prompt = static_cast<int64_t>(prompt.size());
  sample::Sampler sampler(options.sampling, n_vocab);
  sample::StopStrings stops(options.stop);
  tokenizer::StreamDecoder decoder(tok);
  bool cancelled = false;
  auto emit = [&](const std::string& text, bool count) {
    if (text.empty() || cancelled) return;
    if (count) result.text += text;
    if (on_text && !on_text(text)) cancelled = true;
  };

  // Prompt: reuse what is already cached, evaluate the rest (at least the last token, whose
  // logits we need).
  const auto t_prompt = std::chrono::steady_clock::now();
  int64_t kept = session.keep_common_prefix(prompt);
  if (kept == result.n_prompt) kept = session.keep_common_prefix(prompt.first(prompt.size() - 1));
  result.n_prompt_evaluated = result.n_prompt - kept;
  const std::span<const int32_t> rest = prompt.subspan(static_cast<size_t>(kept));
  const float* logits = nullptr;
  if (!options.on_prompt_progress) {
    STRATA_ASSIGN_OR_RETURN(logits, session.eval(rest));
  } else {
    const size_t chunk = static_cast<size_t>(std::max<int64_t>(1, options.prompt_chunk));
    for (size_t at = 0; at < rest.size(); at += chunk) {
      const size_t n = std::min(chunk, rest.size() - at);
      STRATA_ASSIGN_OR_RETURN(logits, session.eval(rest.subspan(at, n)));
      options.on_prompt_progress(kept + static_cast<int64_t>(at + n), result.n_prompt);
    }
  }
  for (int32_t t : prompt) {
    sampler.accept(t);
    const std::string piece = decoder.push(t);
    if (options.echo_prompt) emit(piece, false);
  }
  result.prompt_ms = ms_since(t_prompt);

  const auto t_gen = std::chrono::steady_clock::now();
  std::vector<float> work(logits, logits + n_vocab);
  TokenRules rules;
  rules.ignore_eog = options.ignore_eog;
  LogprobScratch scratch;  // unused: generate() asks for no logprobs
  const TokenState state{sampler, stops, decoder};
  result.finish = FinishReason::Length;
  for (int64_t i = 0; i < options.max_tokens; ++i) {
    const TokenOutcome out = token_step(work.data(), n_vocab, tok, rules, state, scratch,
                                        {options.recorder, options.host_lane, session.seq(), session.position()});
    if (out.end) {
      result.finish = FinishReason::EndOfGeneration;
      break;
    }
    result.tokens.push_back(out.info.token);
    emit(out.text, true);
    if (out.stopped) {
      result.finish = FinishReason::Stop;
      break;
    }
    if (cancelled) {
      result.finish = FinishReason::Cancelled;
      break;
    }
    if (i + 1 == options.max_tokens) break;
    if (session.position() >= session.n_ctx()) {
      result.finish = FinishReason::ContextFull;
      break;
    }
    const int32_t next = out.info.token;
    STRATA_ASSIGN_OR_RETURN(logits, session.eval(std::span<const int32_t>(&next, 1)));
    work.assign(logits, logits + n_vocab);
  }
  if (result.finish != FinishReason::Stop && result.finish != FinishReason::Cancelled) {
    bool stopped = false;
    emit(token_flush(state, &stopped), true);
    if (stopped) result.finish = FinishReason::Stop;
  }
  result.generate_ms = ms_since(t_gen);
  return result;
}

}  // namespace strata::exec
