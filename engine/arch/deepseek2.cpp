// engine/arch/deepseek2.cpp — deepseek2's block: multi-head latent attention (MLA) in llama.cpp's
// absorbed form, and a dense FFN on the leading layers, routed experts plus shared experts after.
//
// MLA per token, n_heads = H heads, latent L = kv_lora_rank, R = rope dims, N = key_length_mla - R,
// V = value_length_mla; the cache row (head_dim) is L + R:
//   q      = q_b(rms_norm(q_a(x)))  (or attn_q(x))        [H][N + R]: per head q_nope, then q_pe
//   kv     = kv_a_mqa(x)                                  [L + R]: the latent, then the shared k_pe
//   K row  = [rms_norm(kv[:L]), rope(kv[L:])]             [L + R], stored in the cache (one KV head)
//   Q row  = [k_b[h] q_nope[h], rope(q_pe[h])]            [H][L + R]: the query absorbed into the latent
//   o[h]   = sum_j p_hj K_j[:L]                           attention over the latent (V = K's first L)
//   out    = wo · [v_b[h] o[h] for h]                     [H][V] -> [n_embd]
// The score q_nope · (k_b^T c) + q_pe · k_pe is the original model's; the cache holds L + R floats
// per position and layer instead of H (N + R + V).
//
// Attention runs with V = K (the whole row), so each head's output is [L + R] and its first L are
// the latent attention; the last R are never read. The per-head products (k_b, v_b) gather each
// head's rows into a head-major block (gather_rows over R-, L-, N- or V-wide units), run one
// product per head, and add the results back token-major into a zeroed buffer (scale_add_rows with
// weight 1: 0 + 1 x = x exactly), so every backend runs them with its existing ops.
#include <numeric>

#include "engine/arch/block_forward.h"

namespace strata::arch {
namespace {

// Rows of `unit` floats: element e of token t's row (width `row` floats) is unit row
// (t * row + e) / unit. Appends, for token t of n and head h of heads, the unit rows of the
// `width` elements at offset + h * head_stride, head-major (h outer, t inner) when head_major.
void unit_rows(std::vector<int32_t>& out, int64_t n, int64_t heads, int64_t row, int64_t head_stride, int64_t offset,
               int64_t width, int64_t unit, bool head_major) {
  out.clear();
  const int64_t per = width / unit;
  auto push = [&](int64_t t, int64_t h) {
    const int64_t first = (t * row + h * head_stride + offset) / unit;
    for (int64_t j = 0; j < per; ++j) out.push_back(static_cast<int32_t>(first + j));
  };
  if (head_major) {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < n; ++t) push(t, h);
  } else {
    for (int64_t t = 0; t < n; ++t)
      for (int64_t h = 0; h < heads; ++h) push(t, h);
  }
}

// dst (token-major rows of `row` floats, zeroed by the caller where written) <- src's `rows`.
Status scatter(BlockForward& b, float* dst, int64_t dst_floats, const float* src, const std::vector<int32_t>& rows,
               int64_t unit) {
  const auto count = static_cast<int64_t>(rows.size());
  return b.ops().scale_add_rows(dst, dst_floats / unit, unit, src, rows.data(), b.host_ones(rows.size()), count);
}

Status mla_attention(BlockForward& b, const ShardWeights& w, int64_t layer, const float* hidden, int64_t n,
                     std::span<const SeqRows> seqs, float* out) {
  const model::ModelConfig& c = b.config();
  const ScratchViews& s = b.scratch();
  backend::Ops& ops = b.ops();
  const int64_t H = c.n_heads, L = c.kv_lora_rank, R = c.rope_dims, N = c.head_dim_k_mla - R, V = c.head_dim_v_mla;
  const int64_t row = L + R;  // the latent cache row, c.head_dim
  const int64_t kq = N + R;   // a projected query head
  if (w.n_heads != H)
    return Error{Code::InvalidArgument, "mla_attention: a shard of " + std::to_string(w.n_heads) + " of " +
                                            std::to_string(H) + " heads (MLA layers are not cut)"};
  if (!s.mla) return Error{Code::InvalidArgument, "mla_attention: the device's scratch has no MLA buffer"};
  // The widest unit that tiles every slice: rows of gather_rows / scale_add_rows.
  const int64_t unit = std::gcd(std::gcd(L, R), std::gcd(N, V));
  std::vector<int32_t>& rows = b.host_rows(0);

  // Queries [n][H][N + R] into attn_out.
  STRATA_RETURN_IF_ERROR(b.input_norm(w.attn_norm, hidden, n));
  float* q_proj = s.attn_out;
  if (w.wq_a.present()) {
    STRATA_RETURN_IF_ERROR(ops.matmul(matrix(w.wq_a), s.norm, n, s.q));
    STRATA_RETURN_IF_ERROR(ops.rms_norm(s.q, f32(w.q_a_norm), s.q, n, c.q_lora_rank, c.rms_eps));
    STRATA_RETURN_IF_ERROR(ops.matmul(matrix(w.wq_b), s.q, n, q_proj));
  } else {
    STRATA_RETURN_IF_ERROR(ops.matmul(matrix(w.wq), s.norm, n, q_proj));
  }
  // Absorb: q_nope of every head gathered head-major into mla[H*n*L ..] ([H][n][N]), each head's
  // k_b product into mla[0 ..] ([H][n][L]), added token-major into q ([n][H][L + R], zeroed).
  float* nope = s.mla + H * n * L;
  float* absorbed = s.mla;
  unit_rows(rows, n, H, H * kq, kq, 0, N, unit, true);
  STRATA_RETURN_IF_ERROR(ops.gather_rows(q_proj, n * H * kq / unit, unit, rows.data(), static_cast<int64_t>(rows.size()), nope));
  for (int64_t h = 0; h < H; ++h)
    STRATA_RETURN_IF_ERROR(ops.matmul(matrix(w.wk_b, h), nope + h * n * N, n, absorbed + h * n * L));
  STRATA_RETURN_IF_ERROR(ops.zero(s.q, n * H * row));
  unit_rows(rows, n, H, H * row, row, 0, L, unit, true);
  STRATA_RETURN_IF_ERROR(scatter(b, s.q, n * H * row, absorbed, rows, unit));
  // q_pe of every head (token-major) into the last R of each absorbed row.
  unit_rows(rows, n, H, H * kq, kq, N, R, unit, false);
  STRATA_RETURN_IF_ERROR(ops.gather_rows(q_proj, n * H * kq / unit, unit, rows.data(), static_cast<int64_t>(rows.size()), nope));
  unit_rows(rows, n, H, H * row, row, L, R, unit, false);
  STRATA_RETURN_IF_ERROR(scatter(b, s.q, n * H * row, nope, rows, unit));

  // Keys: kv_a_mqa into k ([n][L + R]); the latent normalised in v ([n][L]); the row rebuilt in
  // attn_out (free now) as [latent, k_pe] and copied back into k.
  STRATA_RETURN_IF_ERROR(ops.matmul(matrix(w.wkv_a), s.norm, n, s.k));
  unit_rows(rows, n, 1, row, 0, 0, L, unit, false);
  STRATA_RETURN_IF_ERROR(ops.gather_rows(s.k, n * row / unit, unit, rows.data(), static_cast<int64_t>(rows.size()), s.v));
  STRATA_RETURN_IF_ERROR(ops.rms_norm(s.v, f32(w.kv_a_norm), s.v, n, L, c.rms_eps));
  float* k_row = s.attn_out;
  STRATA_RETURN_IF_ERROR(ops.zero(k_row, n * row));
  STRATA_RETURN_IF_ERROR(scatter(b, k_row, n * row, s.v, rows, unit));
  unit_rows(rows, n, 1, row, 0, L, R, unit, false);
  STRATA_RETURN_IF_ERROR(ops.gather_rows(s.k, n * row / unit, unit, rows.data(), static_cast<int64_t>(rows.size()), nope));
  STRATA_RETURN_IF_ERROR(scatter(b, k_row, n * row, nope, rows, unit));
  STRATA_RETURN_IF_ERROR(ops.copy(k_row, s.k, static_cast<size_t>(n * row) * sizeof(float)));

  // Per sequence: RoPE of the last R of every query head and of the key row (heads of `row`
  // floats, rotating from element L), then one attention call over the latent cache.
  const model::LayerAttention la = c.layer_attention(layer);
  const backend::RopeParams rope = b.rope_params(layer);
  std::vector<backend::AttentionArgs>& args = b.attention_args();
  args.clear();
  for (const SeqRows& sr : seqs) {
    float* q = s.q + sr.row0 * H * row;
    float* k = s.k + sr.row0 * row;
    if (la.rope) {
      STRATA_RETURN_IF_ERROR(ops.rope(q + L, sr.n, H, row, sr.pos0, rope));
      STRATA_RETURN_IF_ERROR(ops.rope(k + L, sr.n, 1, row, sr.pos0, rope));
    }
    backend::AttentionArgs a = b.sequence_attention(sr, layer);
    a.q = q;
    a.k = k;
    a.v = k;  // the values are the keys' latent: one cache plane (kv_view's v is its k)
    a.n_heads = H;
    a.n_kv_heads = 1;
    a.head_dim = row;
    a.out = s.attn_out + sr.row0 * H * row;
    args.push_back(a);
  }
  STRATA_RETURN_IF_ERROR(b.attend(args));

  // Each head's latent output gathered head-major into mla ([H][n][L]), through its v_b into
  // q ([H][n][V]), added token-major into attn_out ([n][H][V], zeroed), then the output projection.
  unit_rows(rows, n, H, H * row, row, 0, L, unit, true);
  STRATA_RETURN_IF_ERROR(
      ops.gather_rows(s.attn_out, n * H * row / unit, unit, rows.data(), static_cast<int64_t>(rows.size()), s.mla));
  for (int64_t h = 0; h < H; ++h)
    STRATA_RETURN_IF_ERROR(ops.matmul(matrix(w.wv_b, h), s.mla + h * n * L, n, s.q + h * n * V));
  STRATA_RETURN_IF_ERROR(ops.zero(s.attn_out, n * H * V));
  unit_rows(rows, n, H, H * V, V, 0, V, unit, true);
  STRATA_RETURN_IF_ERROR(scatter(b, s.attn_out, n * H * V, s.q, rows, unit));
  return ops.matmul(matrix(w.wo), s.attn_out, n, out);
}

}  // namespace

extern const ArchForward kDeepseek2Forward{mla_attention, gated_ffn_or_experts};

}  // namespace strata::arch
