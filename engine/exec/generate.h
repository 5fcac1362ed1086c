// engine/exec/generate.h — the generation loop: evaluate the prompt, then sample, stream text
// and evaluate one token at a time until a limit, a stop string or an end-of-generation token.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/exec/session.h"
#include "engine/exec/speculative.h"
#include "engine/sample/sampler.h"
#include "engine/trace/recorder.h"

namespace strata::exec {

enum class FinishReason { Length, Stop, EndOfGeneration, Cancelled, ContextFull };
const char* finish_reason_name(FinishReason reason);  // "length", "stop", ...

struct GenerateOptions {
  int64_t max_tokens = 256;               // generated tokens at most
  sample::SamplerParams sampling;
  std::vector<std::string> stop;          // stop strings (not included in the text)
  bool echo_prompt = false;               // stream the prompt's text first (llama2.c / llama-simple)
  bool ignore_eog = false;                // keep going past end-of-generation tokens (benchmarks)
  trace::Recorder* recorder = nullptr;    // optional: sampling / detokenizing spans on host_lane
  int32_t host_lane = -1;
  // Optional: the prompt is then evaluated in chunks of prompt_chunk tokens, and after each this is
  // called with the prompt tokens in the cache (reused ones included) and the prompt's length.
  std::function<void(int64_t done, int64_t total)> on_prompt_progress;
  int64_t prompt_chunk = 256;
  // Speculative decoding (speculative.h): same text, fewer target passes. DraftMode::Model needs
  // `draft` (its sequence 0 follows this session).
  SpeculativeParams speculative;
  DraftModel* draft = nullptr;
};

struct GenerateResult {
  std::vector<int32_t> tokens;  // generated ids (the end-of-generation token is not included)
  std::string text;             // what was streamed, prompt echo excluded
  FinishReason finish = FinishReason::Length;
  int64_t n_prompt = 0;         // prompt tokens
  int64_t n_prompt_evaluated = 0;  // prompt tokens not already in the cache
  double prompt_ms = 0;         // evaluating the prompt (time to first token, minus sampling)
  double generate_ms = 0;       // from the first sampled token to the end
  int64_t target_passes = 0;    // forward passes of the model after the prompt
  int64_t n_drafted = 0;        // tokens guessed for speculative steps
  int64_t n_draft_accepted = 0; // of those, tokens the model sampled too
};

// on_text: called on the calling thread with each piece of valid UTF-8, in order; return false
// to stop (finish = Cancelled). May be empty.
using TextCallback = std::function<bool(std::string_view)>;

Status validate(const GenerateOptions& options);

Expected<GenerateResult> generate(Session& session, std::span<const int32_t> prompt, const GenerateOptions& options,
                                  const TextCallback& on_text);

}  // namespace strata::exec
