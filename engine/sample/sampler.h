// engine/sample/sampler.h — turns one row of logits into a token id: penalties, temperature,
// top-k, top-p, min-p, seeded random draw. Pure CPU code; no model or tokenizer types.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace strata::sample {

struct SamplerParams {
  float temperature = 0.8f;       // <= 0: greedy (argmax), every other knob is ignored but penalties
  int32_t top_k = 40;             // <= 0: off
  float top_p = 0.95f;            // >= 1: off
  float min_p = 0.05f;            // <= 0: off; keeps tokens with p >= min_p * p_max
  float repeat_penalty = 1.0f;    // 1: off; divides positive logits / multiplies negative ones
  int32_t repeat_last_n = 64;     // window of recent tokens the penalties look at
  float frequency_penalty = 0.0f; // subtracts count * value
  float presence_penalty = 0.0f;  // subtracts value once per token present
  uint64_t seed = 0xC0FFEE;
};

// Returns an error naming the first parameter outside its domain.
Status validate(const SamplerParams& params);

class Sampler {
 public:
  Sampler(SamplerParams params, int32_t n_vocab);

  // logits: [n_vocab], modified in place (penalties, temperature). Called on the thread
  // that drives generation; not thread-safe.
  int32_t sample(float* logits);

  // Records a token (prompt or generated) for the repetition penalties.
  void accept(int32_t token);

  const SamplerParams& params() const { return params_; }

 private:
  void apply_penalties(float* logits) const;

  SamplerParams params_;
  int32_t n_vocab_;
  std::mt19937_64 rng_;
  std::vector<int32_t> recent_;              // last repeat_last_n accepted tokens
  std::vector<std::pair<float, int32_t>> candidates_;  // scratch: (logit, id)
};

}  // namespace strata::sample
