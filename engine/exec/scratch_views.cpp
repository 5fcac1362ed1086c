// engine/exec/scratch_views.cpp — the scratch buffer cut into views, in ScratchLayout's order.
#include "engine/exec/scratch_views.h"

namespace strata::exec {

using arch::ScratchViews;

ScratchViews carve_scratch(float* base, const plan::ScratchLayout& l, int threads) {
  ScratchViews s;
  float* p = base;
  // Each view 16-byte aligned when base is (ScratchLayout::padded: floats() counts the padding).
  auto take = [&p](int64_t n) {
    float* out = n > 0 ? p : nullptr;
    p += plan::ScratchLayout::padded(n);
    return out;
  };
  s.hidden = take(l.hidden);
  s.norm = take(l.norm);
  s.q = take(l.q);
  s.k = take(l.k);
  s.v = take(l.v);
  s.attn_out = take(l.attn_out);
  s.proj = take(l.proj);
  s.gate = take(l.gate);
  s.up = take(l.up);
  s.scores = take(l.scores);
  s.logits = take(l.logits);
  s.router = take(l.router);
  s.moe_x = take(l.moe_x);
  s.moe_y = take(l.moe_y);
  s.mla = take(l.mla);
  s.scores_per_thread = threads > 0 ? l.scores / threads : 0;
  return s;
}

}  // namespace strata::exec
