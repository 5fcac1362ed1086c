// kernels/cpu/ref_simple.cpp — scalar reference kernels of the float types and the 32-element
// block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1): dequantize, quantize, vec_dot.
// Baseline x86-64; no engine types.
#include <algorithm>
#include <cmath>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/dot_order.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/ref_kernels.h"

namespace strata::kernels::ref {
namespace {

template <typename Load>
float dot_f32_acts(int64_t n, const float* a, Load load) {
  float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int k = 0; k < 8; ++k) s[k] += load(i + k) * a[i + k];
  for (; i < n; ++i) s[0] += load(i) * a[i];
  return ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Q8_0 / Q8_1 quantization of one block: d = amax / 127, q = round(x * 127 / amax).
// Returns the sum of q (for Q8_1).
int quantize_block_q8(const float* x, float* d_out, int8_t* q) {
  float amax = 0.f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.f;
  const float id = amax != 0.f ? 127.f / amax : 0.f;
  int sum = 0;
  for (int j = 0; j < kQK; ++j) {
    q[j] = static_cast<int8_t>(nearest_int(x[j] * id));
    sum += q[j];
  }
  *d_out = d;
  return sum;
}

}  // namespace

// ---- F32 / F16 / BF16 -------------------------------------------------------------------

void dequantize_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, n * 4); }
void quantize_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, n * 4); }
void vec_dot_f32(int64_t n, const void* w, const void* a, float* out) {
  const float* x = static_cast<const float*>(w);
  *out = dot_f32_acts(n, static_cast<const float*>(a), [x](int64_t i) { return x[i]; });
}

void dequantize_f16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}
void quantize_f16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}
void vec_dot_f16(int64_t n, const void* w, const void* a, float* out) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  *out = dot_f32_acts(n, static_cast<const float*>(a), [h](int64_t i) { return fp16_to_f32(h[i]); });
}

void dequantize_bf16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}
void quantize_bf16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}
void vec_dot_bf16(int64_t n, const void* w, const void* a, float* out) {
  const uint16_t* h = static_cast<const uint16_t*>(w);
  *out = dot_f32_acts(n, static_cast<const float*>(a), [h](int64_t i) { return bf16_to_f32(h[i]); });
}

// ---- Q4_0 / Q4_1 ------------------------------------------------------------------------

void dequantize_q4_0(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* b = static_cast<const BlockQ4_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>((b[i].qs[j] & 0xF) - 8);
      dst[j + 16] = d * static_cast<float>((b[i].qs[j] >> 4) - 8);
    }
  }
}
void quantize_q4_0(const float* src, void* dst, int64_t n) {
  BlockQ4_0* b = static_cast<BlockQ4_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    // The value of largest magnitude maps to -8, the side with one more level.
    float amax = 0.f, max = 0.f;
    for (int j = 0; j < kQK; ++j)
      if (std::fabs(src[j]) > amax) { amax = std::fabs(src[j]); max = src[j]; }
    const float d = max / -8.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    b[i].d = f32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::clamp(nearest_int(src[j] * id) + 8, 0, 15);
      const int q1 = std::clamp(nearest_int(src[j + 16] * id) + 8, 0, 15);
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}
void vec_dot_q4_0(int64_t n, const void* w, const void* a, float* out) {
  const BlockQ4_0* x = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int j = 0; j < 16; ++j)
      s += ((x[i].qs[j] & 0xF) - 8) * y[i].qs[j] + ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + 16];
    sum = dot_order::block(sum, s, fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d));
  }
  *out = sum;
}

void dequantize_q4_1(const void* src, float* dst, int64_t n) {
  const BlockQ4_1* b = static_cast<const BlockQ4_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    for (int j = 0; j < 16; ++j) {
      dst[j] = d * static_cast<float>(b[i].qs[j] & 0xF) + m;
      dst[j + 16] = d * static_cast<float>(b[i].qs[j] >> 4) + m;
    }
  }
}
void quantize_q4_1(const float* src, void* dst, int64_t n) {
  BlockQ4_1* b = static_cast<BlockQ4_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float mn = src[0], mx = src[0];
    for (int j = 1; j < kQK; ++j) { mn = std::min(mn, src[j]); mx = std::max(mx, src[j]); }
    const float d = (mx - mn) / 15.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(mn);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::clamp(nearest_int((src[j] - mn) * id), 0, 15);
      const int q1 = std::clamp(nearest_int((src[j + 16] - mn) * id), 0, 15);
      b[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}
void vec_dot_q4_1(int64_t n, const void* w, const void* a, float* out) {
  const BlockQ4_1* x = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int j = 0; j < 16; ++j)
      s += (x[i].qs[j] & 0xF) * y[i].qs[j] + (x[i].qs[j] >> 4) * y[i].qs[j + 16];
    sum = dot_order::block_min(sum, s, fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d), fp16_to_f32(y[i].s),
                               fp16_to_f32(x[i].m));
  }
  *out = sum;
}

// ---- Q5_0 / Q5_1 ------------------------------------------------------------------------

namespace {
// The 32 5-bit values of a Q5 block, 0..31.
void unpack_q5(const uint8_t* qh4, const uint8_t* qs, int* q) {
  const uint32_t qh = load_u32(qh4);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0xF) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}
void pack_q5(const int* q, uint8_t* qh4, uint8_t* qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
    qh |= static_cast<uint32_t>(q[j] >> 4) << j;
    qh |= static_cast<uint32_t>(q[j + 16] >> 4) << (j + 16);
  }
  store_u32(qh4, qh);
}
}  // namespace

void dequantize_q5_0(const void* src, float* dst, int64_t n) {
  const BlockQ5_0* b = static_cast<const BlockQ5_0*>(src);
  int q[32];
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    unpack_q5(b[i].qh, b[i].qs, q);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(q[j] - 16);
  }
}
void quantize_q5_0(const float* src, void* dst, int64_t n) {
  BlockQ5_0* b = static_cast<BlockQ5_0*>(dst);
  int q[32];
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float amax = 0.f, max = 0.f;
    for (int j = 0; j < kQK; ++j)
      if (std::fabs(src[j]) > amax) { amax = std::fabs(src[j]); max = src[j]; }
    const float d = max / -16.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    b[i].d = f32_to_fp16(d);
    for (int j = 0; j < kQK; ++j) q[j] = std::clamp(nearest_int(src[j] * id) + 16, 0, 31);
    pack_q5(q, b[i].qh, b[i].qs);
  }
}
void vec_dot_q5_0(int64_t n, const void* w, const void* a, float* out) {
  const BlockQ5_0* x = static_cast<const BlockQ5_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  int q[32];
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    unpack_q5(x[i].qh, x[i].qs, q);
    int s = 0;
    for (int j = 0; j < kQK; ++j) s += (q[j] - 16) * y[i].qs[j];
    sum = dot_order::block(sum, s, fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d));
  }
  *out = sum;
}

void dequantize_q5_1(const void* src, float* dst, int64_t n) {
  const BlockQ5_1* b = static_cast<const BlockQ5_1*>(src);
  int q[32];
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d), m = fp16_to_f32(b[i].m);
    unpack_q5(b[i].qh, b[i].qs, q);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(q[j]) + m;
  }
}
void quantize_q5_1(const float* src, void* dst, int64_t n) {
  BlockQ5_1* b = static_cast<BlockQ5_1*>(dst);
  int q[32];
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float mn = src[0], mx = src[0];
    for (int j = 1; j < kQK; ++j) { mn = std::min(mn, src[j]); mx = std::max(mx, src[j]); }
    const float d = (mx - mn) / 31.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    b[i].d = f32_to_fp16(d);
    b[i].m = f32_to_fp16(mn);
    for (int j = 0; j < kQK; ++j) q[j] = std::clamp(nearest_int((src[j] - mn) * id), 0, 31);
    pack_q5(q, b[i].qh, b[i].qs);
  }
}
void vec_dot_q5_1(int64_t n, const void* w, const void* a, float* out) {
  const BlockQ5_1* x = static_cast<const BlockQ5_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  int q[32];
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    unpack_q5(x[i].qh, x[i].qs, q);
    int s = 0;
    for (int j = 0; j < kQK; ++j) s += q[j] * y[i].qs[j];
    sum = dot_order::block_min(sum, s, fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d), fp16_to_f32(y[i].s),
                               fp16_to_f32(x[i].m));
  }
  *out = sum;
}

// ---- Q8_0 / Q8_1 ------------------------------------------------------------------------

void dequantize_q8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* b = static_cast<const BlockQ8_0*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(b[i].qs[j]);
  }
}
void quantize_q8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* b = static_cast<BlockQ8_0*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float d;
    quantize_block_q8(src, &d, b[i].qs);
    b[i].d = f32_to_fp16(d);
  }
}
void vec_dot_q8_0(int64_t n, const void* w, const void* a, float* out) {
  const BlockQ8_0* x = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* y = static_cast<const BlockQ8_0*>(a);
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int j = 0; j < kQK; ++j) s += x[i].qs[j] * y[i].qs[j];
    sum = dot_order::block(sum, s, fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d));
  }
  *out = sum;
}

void dequantize_q8_1(const void* src, float* dst, int64_t n) {
  const BlockQ8_1* b = static_cast<const BlockQ8_1*>(src);
  for (int64_t i = 0; i < n / kQK; ++i, dst += kQK) {
    const float d = fp16_to_f32(b[i].d);
    for (int j = 0; j < kQK; ++j) dst[j] = d * static_cast<float>(b[i].qs[j]);
  }
}
void quantize_q8_1(const float* src, void* dst, int64_t n) {
  BlockQ8_1* b = static_cast<BlockQ8_1*>(dst);
  for (int64_t i = 0; i < n / kQK; ++i, src += kQK) {
    float d;
    const int sum = quantize_block_q8(src, &d, b[i].qs);
    b[i].d = f32_to_fp16(d);
    b[i].s = f32_to_fp16(d * static_cast<float>(sum));
  }
}
void vec_dot_q8_1(int64_t n, const void* w, const void* a, float* out) {
  const BlockQ8_1* x = static_cast<const BlockQ8_1*>(w);
  const BlockQ8_1* y = static_cast<const BlockQ8_1*>(a);
  float sum = 0.f;
  for (int64_t i = 0; i < n / kQK; ++i) {
    int s = 0;
    for (int j = 0; j < kQK; ++j) s += x[i].qs[j] * y[i].qs[j];
    sum = dot_order::block(sum, s, fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d));
  }
  *out = sum;
}

}  // namespace strata::kernels::ref
