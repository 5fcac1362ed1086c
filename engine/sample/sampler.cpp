// engine/sample/sampler.cpp — the sampling chain, in llama.cpp's default order:
// penalties -> top-k -> top-p -> min-p -> temperature -> draw.
#include "engine/sample/sampler.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace strata::sample {

Status validate(const SamplerParams& p) {
  auto bad = [](const std::string& what) { return Error{Code::InvalidArgument, what}; };
  if (!std::isfinite(p.temperature) || p.temperature < 0.0f || p.temperature > 100.0f)
    return bad("temperature " + std::to_string(p.temperature) + " outside [0, 100]");
  if (p.top_k < 0) return bad("top-k " + std::to_string(p.top_k) + " is negative");
  if (!std::isfinite(p.top_p) || p.top_p <= 0.0f || p.top_p > 1.0f)
    return bad("top-p " + std::to_string(p.top_p) + " outside (0, 1]");
  if (!std::isfinite(p.min_p) || p.min_p < 0.0f || p.min_p > 1.0f)
    return bad("min-p " + std::to_string(p.min_p) + " outside [0, 1]");
  if (!std::isfinite(p.repeat_penalty) || p.repeat_penalty <= 0.0f || p.repeat_penalty > 10.0f)
    return bad("repeat penalty " + std::to_string(p.repeat_penalty) + " outside (0, 10]");
  if (p.repeat_last_n < 0 || p.repeat_last_n > (1 << 20))
    return bad("repeat-last-n " + std::to_string(p.repeat_last_n) + " outside [0, 1048576]");
  if (!std::isfinite(p.frequency_penalty) || std::fabs(p.frequency_penalty) > 2.0f)
    return bad("frequency penalty " + std::to_string(p.frequency_penalty) + " outside [-2, 2]");
  if (!std::isfinite(p.presence_penalty) || std::fabs(p.presence_penalty) > 2.0f)
    return bad("presence penalty " + std::to_string(p.presence_penalty) + " outside [-2, 2]");
  return {};
}

Sampler::Sampler(SamplerParams params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
  candidates_.reserve(static_cast<size_t>(n_vocab));
}

void Sampler::accept(int32_t token) {
  if (params_.repeat_last_n <= 0) return;
  recent_.push_back(token);
  if (recent_.size() > static_cast<size_t>(params_.repeat_last_n)) recent_.erase(recent_.begin());
}

void Sampler::apply_penalties(float* logits) const {
  const bool any = params_.repeat_penalty != 1.0f || params_.frequency_penalty != 0.0f ||
                   params_.presence_penalty != 0.0f;
  if (!any || recent_.empty()) return;
  std::unordered_map<int32_t, int> counts;
  for (int32_t t : recent_) {
    if (t >= 0 && t < n_vocab_) ++counts[t];
  }
  for (const auto& [token, count] : counts) {
    float& l = logits[token];
    if (params_.repeat_penalty != 1.0f) l = l > 0.0f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
    l -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
  }
}

int32_t Sampler::sample(float* logits) {
  apply_penalties(logits);

  if (params_.temperature <= 0.0f) {
    // Greedy: the first maximum, as llama.cpp and llama2.c do.
    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab_; ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    return best;
  }

  candidates_.clear();
  for (int32_t i = 0; i < n_vocab_; ++i) candidates_.emplace_back(logits[i], i);
  auto by_logit_desc = [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  };

  size_t keep = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < keep) {
    keep = static_cast<size_t>(params_.top_k);
    std::partial_sort(candidates_.begin(), candidates_.begin() + static_cast<std::ptrdiff_t>(keep),
                      candidates_.end(), by_logit_desc);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit_desc);
  }
  candidates_.resize(keep);

  // Softmax over the survivors at temperature 1 for the top-p / min-p cut, as llama.cpp does
  // (temperature is applied last so that it only reshapes the final distribution).
  std::vector<float> probs(keep);
  const float max_logit = candidates_[0].first;
  double sum = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    probs[i] = std::exp(candidates_[i].first - max_logit);
    sum += probs[i];
  }
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    size_t cut = keep;
    for (size_t i = 0; i < keep; ++i) {
      cumulative += probs[i] / sum;
      if (cumulative >= params_.top_p) {
        cut = i + 1;
        break;
      }
    }
    keep = cut;
  }
  if (params_.min_p > 0.0f) {
    // probs[0] is the largest: keep p_i >= min_p * p_0.
    size_t cut = 1;
    while (cut < keep && probs[cut] >= params_.min_p * probs[0]) ++cut;
    keep = cut;
  }

  // Temperature, then the draw.
  std::vector<double> weights(keep);
  for (size_t i = 0; i < keep; ++i) {
    weights[i] = std::exp(static_cast<double>(candidates_[i].first - max_logit) / params_.temperature);
  }
  std::discrete_distribution<size_t> draw(weights.begin(), weights.end());
  return candidates_[draw(rng_)].second;
}

}  // namespace strata::sample
