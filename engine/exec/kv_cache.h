// engine/exec/kv_cache.h — keys and values of past positions, per layer, in float32.
// Owned by one sequence; written and read by the thread that runs that sequence's layers.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/status.h"

namespace strata::exec {

class KvCache {
 public:
  // Reserves [n_layers][n_ctx][kv_dim] floats for K and for V. OutOfMemory with the bytes asked
  // when the allocation fails.
  static Expected<KvCache> create(int64_t n_layers, int64_t n_ctx, int64_t kv_dim);

  static uint64_t bytes_for(int64_t n_layers, int64_t n_ctx, int64_t kv_dim) {
    return 2ull * static_cast<uint64_t>(n_layers) * static_cast<uint64_t>(n_ctx) * static_cast<uint64_t>(kv_dim) *
           sizeof(float);
  }

  int64_t n_ctx() const { return n_ctx_; }
  int64_t kv_dim() const { return kv_dim_; }
  uint64_t n_bytes() const { return bytes_for(static_cast<int64_t>(k_.size()), n_ctx_, kv_dim_); }

  float* k(int64_t layer, int64_t pos) { return k_[static_cast<size_t>(layer)].data() + pos * kv_dim_; }
  float* v(int64_t layer, int64_t pos) { return v_[static_cast<size_t>(layer)].data() + pos * kv_dim_; }

 private:
  int64_t n_ctx_ = 0;
  int64_t kv_dim_ = 0;
  std::vector<std::vector<float>> k_;  // [n_layers][n_ctx * kv_dim]
  std::vector<std::vector<float>> v_;
};

}  // namespace strata::exec
