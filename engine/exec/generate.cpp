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
  STRATA_RETURN_IF_ERROR(validate(o.speculative));
  if (o.speculative.mode == DraftMode::Model && !o.draft)
    return Error{Code::InvalidArgument, "speculative decoding with a draft model was asked for, but no draft model is loaded"};
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
  // One token sampled from `row`, the logits after `position` cached tokens: its outcome applied to
  // the result. False when generation ends with it.
  int32_t next = -1;
  auto take = [&](const float* row, int64_t position) -> bool {
    work.assign(row, row + n_vocab);
    const TokenOutcome out = token_step(work.data(), n_vocab, tok, rules, state, scratch,
                                        {options.recorder, options.host_lane, session.seq(), position});
    if (out.end) {
      result.finish = FinishReason::EndOfGeneration;
      return false;
    }
    result.tokens.push_back(out.info.token);
    emit(out.text, true);
    if (out.stopped) {
      result.finish = FinishReason::Stop;
      return false;
    }
    if (cancelled) {
      result.finish = FinishReason::Cancelled;
      return false;
    }
    if (static_cast<int64_t>(result.tokens.size()) >= options.max_tokens) return false;
    if (position >= session.n_ctx()) {
      result.finish = FinishReason::ContextFull;
      return false;
    }
    next = out.info.token;
    return true;
  };
  std::vector<int32_t> draft, step, context;
  DraftPacer pacer;
  PassCosts costs;  // this session's pass times by rows: what a guess costs here
  auto timed_ms = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  };
  bool going = options.max_tokens > 0 && take(logits, session.position());
  while (going) {
    // Rows past the last token or the context would be evaluated for nothing.
    const int64_t room = std::min<int64_t>(options.max_tokens - static_cast<int64_t>(result.tokens.size()) - 1,
                                           session.n_ctx() - session.position() - 1);
    draft.clear();
    // The head on another rank gives no logits of every position: plain steps (the text is the same).
    const DraftMode mode = session.pipeline().all_logits_supported() ? options.speculative.mode : DraftMode::Off;
    // The drafters' context: the cache's tokens and the sampled one.
    auto make_context = [&] {
      context = session.history();
      context.push_back(next);
    };
    if (mode == DraftMode::Lookup) {
      make_context();
      draft = paced_lookup(context, options.speculative, room, pacer, costs);
    } else if (mode == DraftMode::Model) {
      if (const int32_t k = paced_length(options.speculative, room, pacer, costs, 0, options.draft->guess_ms()); k > 0) {
        make_context();
        const DraftModel::Ask ask{0, context, k, &draft};
        if (!options.draft->propose(std::span<const DraftModel::Ask>(&ask, 1)).ok()) draft.clear();
      }
    }
    ++result.target_passes;
    const auto t_pass = std::chrono::steady_clock::now();
    if (draft.empty()) {
      STRATA_ASSIGN_OR_RETURN(logits, session.eval(std::span<const int32_t>(&next, 1)));
      costs.observe(1, timed_ms(t_pass));
      going = take(logits, session.position());
      continue;
    }
    step.assign(1, next);
    step.insert(step.end(), draft.begin(), draft.end());
    const int64_t base = session.position();
    STRATA_ASSIGN_OR_RETURN(const float* rows, session.eval_all(step));
    costs.observe(static_cast<int64_t>(step.size()), timed_ms(t_pass));
    // Row i follows base + 1 + i cached tokens, as a one-token step there would.
    const VerifyResult v = verify_draft(draft, [&](size_t i) -> int32_t {
      return take(rows + i * static_cast<size_t>(n_vocab), base + 1 + static_cast<int64_t>(i)) ? next : -1;
    });
    // Keys and values past the accepted guesses belong to tokens the model did not take.
    session.truncate(base + 1 + v.accepted);
    going = !v.ended;
    pacer.record(static_cast<int64_t>(draft.size()), v.accepted);
    result.n_drafted += static_cast<int64_t>(draft.size());
    result.n_draft_accepted += v.accepted;
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
