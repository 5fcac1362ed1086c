// kernels/cpu/ref_kquants.cpp — scalar reference kernels of the K-quants (Q2_K, Q3_K, Q4_K,
// Q5_K, Q6_K) and their activation type Q8_K: dequantize, quantize (with a scale search), vec_dot.
// Baseline x86-64; no engine types.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/dot_order.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/ref_kernels.h"

namespace strata::kernels::ref {
namespace {

// One super-block unpacked: q[256] integer levels, per-group integer scale and min.
// Value of element e in group g = e / group: d * sc[g] * q[e] - dmin * m[g].
struct Unpacked {
  int8_t q[kQKK];
  int sc[16];
  int m[16];
  int groups;  // 8 (groups of 32) or 16 (groups of 16)
  float d, dmin;
};

void unpack(const BlockQ2_K& b, Unpacked& u) {
  u.groups = 16;
  u.d = fp16_to_f32(b.d);
  u.dmin = fp16_to_f32(b.dmin);
  for (int g = 0; g < 16; ++g) { u.sc[g] = b.scales[g] & 0xF; u.m[g] = b.scales[g] >> 4; }
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) u.q[n * 128 + j * 32 + l] = (b.qs[n * 32 + l] >> (2 * j)) & 3;
}

void unpack(const BlockQ3_K& b, Unpacked& u) {
  u.groups = 16;
  u.d = fp16_to_f32(b.d);
  u.dmin = 0.f;
  for (int g = 0; g < 16; ++g) { u.sc[g] = q3k_scale(g, b.scales); u.m[g] = 0; }
  for (int n = 0; n < 2; ++n)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) {
        const int low = (b.qs[n * 32 + l] >> (2 * j)) & 3;
        const bool high = (b.hmask[l] >> (4 * n + j)) & 1;
        u.q[n * 128 + j * 32 + l] = static_cast<int8_t>(low - (high ? 0 : 4));
      }
}

// Q4_K / Q5_K: 8 groups of 32 with 6-bit scales and mins; qh (Q5_K only) adds bit 4.
void unpack_k45(uint16_t d, uint16_t dmin, const uint8_t* scales, const uint8_t* qs,
                const uint8_t* qh, Unpacked& u) {
  u.groups = 8;
  u.d = fp16_to_f32(d);
  u.dmin = fp16_to_f32(dmin);
  for (int g = 0; g < 8; ++g) {
    uint8_t sc, m;
    k4_scale_min(g, scales, &sc, &m);
    u.sc[g] = sc;
    u.m[g] = m;
  }
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      int lo = qs[j * 32 + l] & 0xF, hi = qs[j * 32 + l] >> 4;
      if (qh) {
        lo |= ((qh[l] >> (2 * j)) & 1) << 4;
        hi |= ((qh[l] >> (2 * j + 1)) & 1) << 4;
      }
      u.q[j * 64 + l] = static_cast<int8_t>(lo);
      u.q[j * 64 + 32 + l] = static_cast<int8_t>(hi);
    }
}
void unpack(const BlockQ4_K& b, Unpacked& u) { unpack_k45(b.d, b.dmin, b.scales, b.qs, nullptr, u); }
void unpack(const BlockQ5_K& b, Unpacked& u) { unpack_k45(b.d, b.dmin, b.scales, b.qs, b.qh, u); }

void unpack(const BlockQ6_K& b, Unpacked& u) {
  u.groups = 16;
  u.d = fp16_to_f32(b.d);
  u.dmin = 0.f;
  for (int g = 0; g < 16; ++g) { u.sc[g] = b.scales[g]; u.m[g] = 0; }
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* ql = b.ql + n * 64;
      const uint8_t qh = b.qh[n * 32 + l];
      int8_t* q = u.q + n * 128;
      q[l] = static_cast<int8_t>(((ql[l] & 0xF) | ((qh & 3) << 4)) - 32);
      q[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh >> 2) & 3) << 4)) - 32);
      q[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh >> 4) & 3) << 4)) - 32);
      q[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh >> 6) & 3) << 4)) - 32);
    }
}

template <typename B>
void dequantize_k(const void* src, float* dst, int64_t n) {
  const B* b = static_cast<const B*>(src);
  Unpacked u;
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK) {
    unpack(b[i], u);
    const int gsize = kQKK / u.groups;
    for (int g = 0; g < u.groups; ++g) {
      // Formula fixed as (d*sc)*q - dmin*m so SIMD variants can match it bit-exactly.
      const float dl = u.d * static_cast<float>(u.sc[g]);
      const float ml = u.dmin * static_cast<float>(u.m[g]);
      for (int e = g * gsize; e < (g + 1) * gsize; ++e)
        dst[e] = dl * static_cast<float>(u.q[e]) - ml;
    }
  }
}

template <typename B>
void vec_dot_k(int64_t n, const void* w, const void* a, float* out) {
  const B* x = static_cast<const B*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  Unpacked u;
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    unpack(x[i], u);
    const int gsize = kQKK / u.groups;
    int isum = 0, msum = 0;
    for (int g = 0; g < u.groups; ++g) {
      int s = 0;
      for (int e = g * gsize; e < (g + 1) * gsize; ++e) s += u.q[e] * y[i].qs[e];
      isum += u.sc[g] * s;
      const int bsum = gsize == 16 ? y[i].bsums[g] : y[i].bsums[2 * g] + y[i].bsums[2 * g + 1];
      msum += u.m[g] * bsum;
    }
    // dot_order.h: Q2_K takes its min term first, Q4_K / Q5_K after the scales, Q3_K / Q6_K have none.
    if constexpr (std::is_same_v<B, BlockQ2_K>) sum = dot_order::k2(sum, isum, msum, y[i].d * u.d, y[i].d * u.dmin);
    else if constexpr (std::is_same_v<B, BlockQ4_K> || std::is_same_v<B, BlockQ5_K>)
      sum = dot_order::k45(sum, isum, msum, y[i].d * u.d, y[i].d * u.dmin);
    else sum = dot_order::block(sum, isum, y[i].d * u.d);
  }
  *out = sum;
}

// ---- scale search -----------------------------------------------------------------------

// Symmetric levels L in [-nmax, nmax - 1] for x[0..n) minimizing sum w (x - s L)^2 over a few
// candidate inverse scales around -nmax / max (max = the signed value of largest magnitude).
// Returns s; L written as signed levels.
float make_qx(int n, int nmax, const float* x, const float* w, int8_t* L) {
  float amax = 0.f, max = 0.f;
  for (int i = 0; i < n; ++i)
    if (std::fabs(x[i]) > amax) { amax = std::fabs(x[i]); max = x[i]; }
  if (amax < 1e-30f) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.f;
  }
  float best_s = 0.f, best_q = -1.f;  // maximize sumlx^2 / suml2 == minimize the error
  int8_t tmp[32];
  for (int is = -9; is <= 9; ++is) {
    const float iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
    float sumlx = 0.f, suml2 = 0.f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
      tmp[i] = static_cast<int8_t>(l);
      sumlx += w[i] * x[i] * static_cast<float>(l);
      suml2 += w[i] * static_cast<float>(l * l);
    }
    if (suml2 > 0.f && sumlx * sumlx / suml2 > best_q) {
      best_q = sumlx * sumlx / suml2;
      best_s = sumlx / suml2;
      std::copy(tmp, tmp + n, L);
    }
  }
  return best_s;
}

// Levels L in [0, nmax] with x ~ s L - m (m >= 0) minimizing sum w (x - s L + m)^2: tries a
// range of inverse scales and fits (s, m) by weighted least squares for each. Returns s, sets m.
float make_qkx(int n, int nmax, const float* x, const float* w, uint8_t* L, float* m_out) {
  float mn = x[0], mx = x[0];
  for (int i = 1; i < n; ++i) { mn = std::min(mn, x[i]); mx = std::max(mx, x[i]); }
  if (mn > 0.f) mn = 0.f;
  if (mx <= mn) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *m_out = -mn;
    return 0.f;
  }
  float sum_w = 0.f, sum_x = 0.f;
  for (int i = 0; i < n; ++i) { sum_w += w[i]; sum_x += w[i] * x[i]; }
  // Start: the plain min/max mapping.
  float best_s = (mx - mn) / static_cast<float>(nmax), best_b = mn, best_err = 0.f;
  for (int i = 0; i < n; ++i) {
    const int l = std::clamp(nearest_int((x[i] - mn) / best_s), 0, nmax);
    L[i] = static_cast<uint8_t>(l);
    const float diff = best_s * static_cast<float>(l) + best_b - x[i];
    best_err += w[i] * diff * diff;
  }
  uint8_t tmp[32];
  for (int is = 0; is <= 20; ++is) {
    const float iscale = (static_cast<float>(nmax) - 1.f + 0.1f * static_cast<float>(is)) / (mx - mn);
    float sum_l = 0.f, sum_l2 = 0.f, sum_xl = 0.f;
    for (int i = 0; i < n; ++i) {
      const int l = std::clamp(nearest_int(iscale * (x[i] - mn)), 0, nmax);
      tmp[i] = static_cast<uint8_t>(l);
      const float fl = static_cast<float>(l);
      sum_l += w[i] * fl;
      sum_l2 += w[i] * fl * fl;
      sum_xl += w[i] * fl * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (det <= 0.f) continue;
    float s = (sum_w * sum_xl - sum_x * sum_l) / det;
    float b = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (b > 0.f) {  // the offset must be <= 0 (it is stored as a non-negative min)
      b = 0.f;
      s = sum_xl / sum_l2;
    }
    float err = 0.f;
    for (int i = 0; i < n; ++i) {
      const float diff = s * static_cast<float>(tmp[i]) + b - x[i];
      err += w[i] * diff * diff;
    }
    if (err < best_err) {
      best_err = err;
      best_s = s;
      best_b = b;
      std::copy(tmp, tmp + n, L);
    }
  }
  *m_out = -best_b;
  return best_s;
}

// Quantize non-negative values v[0..k) to integers in [0, levels] with one scale: returns d.
float quantize_positive(const float* v, int k, int levels, uint8_t* out) {
  float mx = 0.f;
  for (int i = 0; i < k; ++i) mx = std::max(mx, v[i]);
  const float d = mx / static_cast<float>(levels);
  const float id = d > 0.f ? 1.f / d : 0.f;
  for (int i = 0; i < k; ++i) out[i] = static_cast<uint8_t>(std::clamp(nearest_int(v[i] * id), 0, levels));
  return d;
}

// Final levels for x ~ (d*sc) L - dmin*m given the quantized scale and min.
void requantize(const float* x, int n, float dl, float ml, int lo, int hi, int* L) {
  const float id = dl != 0.f ? 1.f / dl : 0.f;
  for (int i = 0; i < n; ++i) L[i] = std::clamp(nearest_int((x[i] + ml) * id), lo, hi);
}

// Q4_K / Q5_K share the scale handling: 8 groups of 32, 6-bit scales and mins.
void quantize_k45_scales(const float* x, int nmax, int* L, uint16_t* d_out, uint16_t* dmin_out,
                         uint8_t* packed) {
  float sum_x2 = 0.f;
  for (int i = 0; i < kQKK; ++i) sum_x2 += x[i] * x[i];
  const float av_x = std::sqrt(sum_x2 / kQKK);
  float w[32], scales[8], mins[8];
  uint8_t Lg[32];
  for (int g = 0; g < 8; ++g) {
    for (int i = 0; i < 32; ++i) w[i] = av_x + std::fabs(x[g * 32 + i]);
    scales[g] = make_qkx(32, nmax, x + g * 32, w, Lg, &mins[g]);
  }
  uint8_t ls[8], lm[8];
  const float d = quantize_positive(scales, 8, 63, ls);
  const float dmin = quantize_positive(mins, 8, 63, lm);
  *d_out = f32_to_fp16(d);
  *dmin_out = f32_to_fp16(dmin);
  for (int g = 0; g < 8; ++g) {
    if (g < 4) {
      packed[g] = ls[g];
      packed[g + 4] = lm[g];
    } else {
      packed[g + 4] = static_cast<uint8_t>((ls[g] & 0xF) | ((lm[g] & 0xF) << 4));
      packed[g - 4] |= static_cast<uint8_t>((ls[g] >> 4) << 6);
      packed[g] |= static_cast<uint8_t>((lm[g] >> 4) << 6);
    }
  }
  // Levels with the scales as stored (fp16 d, 6-bit integers).
  const float dq = fp16_to_f32(*d_out), dminq = fp16_to_f32(*dmin_out);
  for (int g = 0; g < 8; ++g)
    requantize(x + g * 32, 32, dq * ls[g], dminq * lm[g], 0, nmax, L + g * 32);
}

}  // namespace

// ---- Q2_K -------------------------------------------------------------------------------

void dequantize_q2_k(const void* src, float* dst, int64_t n) { dequantize_k<BlockQ2_K>(src, dst, n); }
void vec_dot_q2_k(int64_t n, const void* w, const void* a, float* out) { vec_dot_k<BlockQ2_K>(n, w, a, out); }
void quantize_q2_k(const float* src, void* dst, int64_t n) {
  BlockQ2_K* b = static_cast<BlockQ2_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    float w[16], scales[16], mins[16];
    uint8_t Lg[16];
    for (int g = 0; g < 16; ++g) {
      for (int k = 0; k < 16; ++k) w[k] = std::fabs(src[g * 16 + k]);
      scales[g] = make_qkx(16, 3, src + g * 16, w, Lg, &mins[g]);
    }
    uint8_t ls[16], lm[16];
    const float d = quantize_positive(scales, 16, 15, ls);
    const float dmin = quantize_positive(mins, 16, 15, lm);
    b[i].d = f32_to_fp16(d);
    b[i].dmin = f32_to_fp16(dmin);
    const float dq = fp16_to_f32(b[i].d), dminq = fp16_to_f32(b[i].dmin);
    int L[kQKK];
    for (int g = 0; g < 16; ++g) {
      b[i].scales[g] = static_cast<uint8_t>(ls[g] | (lm[g] << 4));
      requantize(src + g * 16, 16, dq * ls[g], dminq * lm[g], 0, 3, L + g * 16);
    }
    std::memset(b[i].qs, 0, sizeof b[i].qs);
    for (int nh = 0; nh < 2; ++nh)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l)
          b[i].qs[nh * 32 + l] |= static_cast<uint8_t>(L[nh * 128 + j * 32 + l] << (2 * j));
  }
}

// The sixteen 16-value sub-block scales of a 256-value super-block (Q3_K, Q6_K): each from
// make_qx with levels [-nmax, nmax), then quantized to integers in [-scale_max, scale_max)
// against the scale of largest magnitude. ls receives the integers; returns the super-block
// scale d (0 for an all-zero block).
namespace {

float quantize_group_scales(const float* src, int nmax, int scale_max, int ls[16]) {
  float w[16], scales[16];
  int8_t Lg[16];
  float amax = 0.f, max_scale = 0.f;
  for (int g = 0; g < 16; ++g) {
    for (int k = 0; k < 16; ++k) w[k] = src[g * 16 + k] * src[g * 16 + k];
    scales[g] = make_qx(16, nmax, src + g * 16, w, Lg);
    if (std::fabs(scales[g]) > amax) {
      amax = std::fabs(scales[g]);
      max_scale = scales[g];
    }
  }
  if (!(amax > 0.f)) {
    for (int g = 0; g < 16; ++g) ls[g] = 0;
    return 0.f;
  }
  const float iscale = -static_cast<float>(scale_max) / max_scale;
  for (int g = 0; g < 16; ++g) ls[g] = std::clamp(nearest_int(iscale * scales[g]), -scale_max, scale_max - 1);
  return 1.f / iscale;
}

}  // namespace

// ---- Q3_K -------------------------------------------------------------------------------

void dequantize_q3_k(const void* src, float* dst, int64_t n) { dequantize_k<BlockQ3_K>(src, dst, n); }
void vec_dot_q3_k(int64_t n, const void* w, const void* a, float* out) { vec_dot_k<BlockQ3_K>(n, w, a, out); }
void quantize_q3_k(const float* src, void* dst, int64_t n) {
  BlockQ3_K* b = static_cast<BlockQ3_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    int ls[16];
    const float d = quantize_group_scales(src, 4, 32, ls);
    std::memset(b[i].scales, 0, sizeof b[i].scales);
    for (int g = 0; g < 16; ++g) {
      const int u = ls[g] + 32;  // 0..63
      if (g < 8) b[i].scales[g] |= static_cast<uint8_t>(u & 0xF);
      else b[i].scales[g - 8] |= static_cast<uint8_t>((u & 0xF) << 4);
      b[i].scales[8 + (g & 3)] |= static_cast<uint8_t>((u >> 4) << (2 * (g >> 2)));
    }
    b[i].d = f32_to_fp16(d);
    const float dq = fp16_to_f32(b[i].d);
    int L[kQKK];
    for (int g = 0; g < 16; ++g) requantize(src + g * 16, 16, dq * ls[g], 0.f, -4, 3, L + g * 16);
    std::memset(b[i].qs, 0, sizeof b[i].qs);
    std::memset(b[i].hmask, 0, sizeof b[i].hmask);
    for (int nh = 0; nh < 2; ++nh)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) {
          const int u = L[nh * 128 + j * 32 + l] + 4;  // 0..7
          b[i].qs[nh * 32 + l] |= static_cast<uint8_t>((u & 3) << (2 * j));
          if (u & 4) b[i].hmask[l] |= static_cast<uint8_t>(1u << (4 * nh + j));
        }
  }
}

// ---- Q4_K / Q5_K ------------------------------------------------------------------------

void dequantize_q4_k(const void* src, float* dst, int64_t n) { dequantize_k<BlockQ4_K>(src, dst, n); }
void vec_dot_q4_k(int64_t n, const void* w, const void* a, float* out) { vec_dot_k<BlockQ4_K>(n, w, a, out); }
void quantize_q4_k(const float* src, void* dst, int64_t n) {
  BlockQ4_K* b = static_cast<BlockQ4_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    int L[kQKK];
    std::memset(b[i].scales, 0, sizeof b[i].scales);
    quantize_k45_scales(src, 15, L, &b[i].d, &b[i].dmin, b[i].scales);
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l)
        b[i].qs[j * 32 + l] = static_cast<uint8_t>(L[j * 64 + l] | (L[j * 64 + 32 + l] << 4));
  }
}

void dequantize_q5_k(const void* src, float* dst, int64_t n) { dequantize_k<BlockQ5_K>(src, dst, n); }
void vec_dot_q5_k(int64_t n, const void* w, const void* a, float* out) { vec_dot_k<BlockQ5_K>(n, w, a, out); }
void quantize_q5_k(const float* src, void* dst, int64_t n) {
  BlockQ5_K* b = static_cast<BlockQ5_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    int L[kQKK];
    std::memset(b[i].scales, 0, sizeof b[i].scales);
    quantize_k45_scales(src, 31, L, &b[i].d, &b[i].dmin, b[i].scales);
    std::memset(b[i].qh, 0, sizeof b[i].qh);
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l) {
        const int lo = L[j * 64 + l], hi = L[j * 64 + 32 + l];
        b[i].qs[j * 32 + l] = static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
        b[i].qh[l] |= static_cast<uint8_t>(((lo >> 4) << (2 * j)) | ((hi >> 4) << (2 * j + 1)));
      }
  }
}

// ---- Q6_K -------------------------------------------------------------------------------

void dequantize_q6_k(const void* src, float* dst, int64_t n) { dequantize_k<BlockQ6_K>(src, dst, n); }
void vec_dot_q6_k(int64_t n, const void* w, const void* a, float* out) { vec_dot_k<BlockQ6_K>(n, w, a, out); }
void quantize_q6_k(const float* src, void* dst, int64_t n) {
  BlockQ6_K* b = static_cast<BlockQ6_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    int ls[16];
    const float d = quantize_group_scales(src, 32, 128, ls);
    b[i].d = f32_to_fp16(d);
    const float dq = fp16_to_f32(b[i].d);
    int L[kQKK];
    for (int g = 0; g < 16; ++g) {
      b[i].scales[g] = static_cast<int8_t>(ls[g]);
      requantize(src + g * 16, 16, dq * ls[g], 0.f, -32, 31, L + g * 16);
    }
    for (int nh = 0; nh < 2; ++nh) {
      const int* Lh = L + nh * 128;
      uint8_t* ql = b[i].ql + nh * 64;
      uint8_t* qh = b[i].qh + nh * 32;
      for (int l = 0; l < 32; ++l) {
        const int q1 = Lh[l] + 32, q2 = Lh[l + 32] + 32, q3 = Lh[l + 64] + 32, q4 = Lh[l + 96] + 32;
        ql[l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
        ql[l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
        qh[l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

// ---- Q8_K -------------------------------------------------------------------------------

void dequantize_q8_k(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* b = static_cast<const BlockQ8_K*>(src);
  for (int64_t i = 0; i < n / kQKK; ++i, dst += kQKK)
    for (int j = 0; j < kQKK; ++j) dst[j] = b[i].d * static_cast<float>(b[i].qs[j]);
}
void quantize_q8_k(const float* src, void* dst, int64_t n) {
  BlockQ8_K* b = static_cast<BlockQ8_K*>(dst);
  for (int64_t i = 0; i < n / kQKK; ++i, src += kQKK) {
    float amax = 0.f;
    for (int j = 0; j < kQKK; ++j) amax = std::max(amax, std::fabs(src[j]));
    const float id = amax != 0.f ? 127.f / amax : 0.f;
    b[i].d = amax / 127.f;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int k = 0; k < 16; ++k) {
        const int q = nearest_int(src[g * 16 + k] * id);
        b[i].qs[g * 16 + k] = static_cast<int8_t>(q);
        s += q;
      }
      b[i].bsums[g] = static_cast<int16_t>(s);
    }
  }
}
void vec_dot_q8_k(int64_t n, const void* w, const void* a, float* out) {
  const BlockQ8_K* x = static_cast<const BlockQ8_K*>(w);
  const BlockQ8_K* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQKK; ++i) {
    int s = 0;
    for (int j = 0; j < kQKK; ++j) s += x[i].qs[j] * y[i].qs[j];
    sum += static_cast<float>(s) * (x[i].d * y[i].d);
  }
  *out = sum;
}

}  // namespace strata::kernels::ref
