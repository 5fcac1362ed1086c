// engine/exec/kv_cache.cpp — allocation of the float32 KV cache.
#include "engine/exec/kv_cache.h"

#include <new>

namespace strata::exec {

Expected<KvCache> KvCache::create(int64_t n_layers, int64_t n_ctx, int64_t kv_dim) {
  if (n_layers <= 0 || n_ctx <= 0 || kv_dim <= 0)
    return Error{Code::InvalidArgument, "KV cache of " + std::to_string(n_layers) + " layers x " +
                                            std::to_string(n_ctx) + " positions x " + std::to_string(kv_dim)};
  KvCache c;
  c.n_ctx_ = n_ctx;
  c.kv_dim_ = kv_dim;
  try {
    c.k_.resize(static_cast<size_t>(n_layers));
    c.v_.resize(static_cast<size_t>(n_layers));
    for (int64_t l = 0; l < n_layers; ++l) {
      c.k_[static_cast<size_t>(l)].assign(static_cast<size_t>(n_ctx * kv_dim), 0.0f);
      c.v_[static_cast<size_t>(l)].assign(static_cast<size_t>(n_ctx * kv_dim), 0.0f);
    }
  } catch (const std::bad_alloc&) {
    return Error{Code::OutOfMemory, "KV cache: cannot allocate " + std::to_string(bytes_for(n_layers, n_ctx, kv_dim)) +
                                        " bytes for " + std::to_string(n_ctx) + " positions"};
  }
  return c;
}

}  // namespace strata::exec
