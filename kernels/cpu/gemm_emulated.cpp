// kernels/cpu/gemm_emulated.cpp — the packed-tile kernels of gemm.h in plain C++ (no ISA flags):
// the AVX-512 VNNI algorithm of gemm_avx512.cpp, instruction by instruction, on the same bytes
// (gemm_layout.h). A 512-bit register is an array of 16 lanes and each vector instruction the
// tile uses is a function that does, lane by lane, what the instruction does (vpdpbusd: four
// u8 x s8 byte products summed into an int32 lane, wrapping; vfmadd: one rounding). Integer
// sums are therefore the same, and float operations are the same operations in the same order,
// so on a CPU with VNNI the outputs are bit-identical to gemm_avx512.cpp's (test_gemm checks it).
//
// What it is for: checking the packed-tile algorithm (layouts, offsets of signed weights, scale
// order) against the scalar reference on CPUs without AVX-512 VNNI, where the AVX-512 kernels
// cannot run. It is slow (a scalar loop per lane) and never used by matmul: gemm_kernels() does
// not return it; tests reach it through detail::emulated_gemm(). Activations are quantized with
// the scalar reference quantizer (the same bits as every ISA's, test_quant). No engine types.
#include <cmath>
#include <cstring>

#include "kernels/cpu/blocks.h"
#include "kernels/cpu/fp16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/gemm_layout.h"
#include "kernels/cpu/ref_kernels.h"

namespace strata::kernels::gemm_emulated {
namespace {

using namespace gemm_layout;

// ---- one 512-bit register and the instructions the tiles use --------------------------------

// zmm as 16 x 32-bit lanes (integer lanes kept as their bits: vector integer adds wrap).
struct VecI {
  uint32_t l[16];
};
struct VecF {
  float l[16];
};

VecI zero_i() { return VecI{}; }
VecF zero_f() { return VecF{}; }

// vmovdqa32 / vmovaps from 64 bytes (little-endian lanes).
VecI load_i(const uint8_t* p) {
  VecI v;
  std::memcpy(v.l, p, 64);
  return v;
}
VecF load_f(const uint8_t* p) {
  VecF v;
  std::memcpy(v.l, p, 64);
  return v;
}
// vpbroadcastd of the 4 bytes at p.
VecI bcast32(const uint8_t* p) {
  uint32_t x;
  std::memcpy(&x, p, 4);
  VecI v;
  for (uint32_t& e : v.l) e = x;
  return v;
}
// The kStep bytes of one step (gemm_avx512.cpp's bcast_step: vpbroadcastd / vpbroadcastq /
// vbroadcasti32x4 / vbroadcasti64x4): lane l gets bytes [4 (l mod kStep / 4), + 4) of p.
template <int kStep>
VecI bcast_step(const uint8_t* p) {
  uint32_t x[kStep / 4];
  std::memcpy(x, p, kStep);
  VecI v;
  for (int l = 0; l < 16; ++l) v.l[l] = x[l % (kStep / 4)];
  return v;
}
// vbroadcastss.
VecF set1_f(float x) {
  VecF v;
  for (float& e : v.l) e = x;
  return v;
}
float loadf(const uint8_t* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

// Byte i (0..3) of a lane as unsigned / signed, 16-bit half h (0..1) as signed.
uint32_t byte_u(uint32_t lane, int i) { return (lane >> (8 * i)) & 0xFFu; }
int32_t byte_s(uint32_t lane, int i) { return static_cast<int8_t>(static_cast<uint8_t>(lane >> (8 * i))); }
int32_t half_s(uint32_t lane, int h) { return static_cast<int16_t>(static_cast<uint16_t>(lane >> (16 * h))); }

// vpdpbusd acc, u, s: acc += u8(u.byte 4l+i) * s8(s.byte 4l+i) for i = 0..3, per lane l. The four
// products (each in [-32640, 32385]) sum without overflow; the add to acc wraps (no saturation).
VecI dpbusd(VecI acc, const VecI& u, const VecI& s) {
  for (int l = 0; l < 16; ++l) {
    int32_t p = 0;
    for (int i = 0; i < 4; ++i) p += static_cast<int32_t>(byte_u(u.l[l], i)) * byte_s(s.l[l], i);
    acc.l[l] += static_cast<uint32_t>(p);
  }
  return acc;
}
// vpdpwssd acc, a, b: acc += s16(a.lo) * s16(b.lo) + s16(a.hi) * s16(b.hi) per lane, wrapping.
VecI dpwssd(VecI acc, const VecI& a, const VecI& b) {
  for (int l = 0; l < 16; ++l) {
    const int64_t p = int64_t{half_s(a.l[l], 0)} * half_s(b.l[l], 0) + int64_t{half_s(a.l[l], 1)} * half_s(b.l[l], 1);
    acc.l[l] += static_cast<uint32_t>(p);
  }
  return acc;
}
// vpaddd (wrapping).
VecI add_i(VecI a, const VecI& b) {
  for (int l = 0; l < 16; ++l) a.l[l] += b.l[l];
  return a;
}
// vpmulld: the low 32 bits of the product (the same bits for signed and unsigned lanes).
VecI mullo(VecI a, const VecI& b) {
  for (int l = 0; l < 16; ++l) a.l[l] *= b.l[l];
  return a;
}
// vcvtdq2ps: int32 -> float, round to nearest even (the default rounding of both).
VecF cvt(const VecI& a) {
  VecF f;
  for (int l = 0; l < 16; ++l) f.l[l] = static_cast<float>(static_cast<int32_t>(a.l[l]));
  return f;
}
// vmulps.
VecF mul_f(VecF a, const VecF& b) {
  for (int l = 0; l < 16; ++l) a.l[l] *= b.l[l];
  return a;
}
// vfmadd: a * b + c with one rounding; std::fma is exactly that (not the two roundings of
// a * b + c, which -ffp-contract=off keeps as written elsewhere).
VecF fmadd(const VecF& a, const VecF& b, VecF c) {
  for (int l = 0; l < 16; ++l) c.l[l] = std::fma(a.l[l], b.l[l], c.l[l]);
  return c;
}
// vfnmadd: -(a * b) + c with one rounding (negating a is exact).
VecF fnmadd(const VecF& a, const VecF& b, VecF c) {
  for (int l = 0; l < 16; ++l) c.l[l] = std::fma(-a.l[l], b.l[l], c.l[l]);
  return c;
}

// A token's kLanes adjacent lanes of layout L each get the sum of all of them (int32, wrapping:
// exact); gemm_avx512.cpp's token_sums (vpshufd / vshufi32x4 and vpaddd). Taken on every block's
// integer sums before the float step, so the float steps of a token are those of the wide layout's
// one lane (dot_order.h): the same bits in every layout. The wide layout's lanes are left as they are.
template <class L>
VecI token_sums(const VecI& v) {
  constexpr int n = L::kLanes;
  if constexpr (n == 1) {
    return v;
  } else {
    VecI s;
    for (int l = 0; l < 16; ++l) {
      uint32_t t = 0;
      for (int i = 0; i < n; ++i) t += v.l[l / n * n + i];
      s.l[l] = t;
    }
    return s;
  }
}

// Writes a tile of one group of layout L: token t is the first of its lanes [kLanes t, kLanes t +
// kLanes) of acc[r] (they all hold its sum; Q4_1 / Q5_1's min term is in the first only) ->
// y[t * ys + r] for r < nr, t < nt.
template <class L>
void store_tile(const VecF (&acc)[kR], int64_t nr, int64_t nt, float* y, int64_t ys) {
  for (int64_t t = 0; t < L::kTokens && t < nt; ++t)
    for (int64_t r = 0; r < nr; ++r) y[t * ys + r] = acc[r].l[L::kLanes * t];
}

void put16(uint8_t* p, int16_t v) { std::memcpy(p, &v, 2); }

// ---- activations --------------------------------------------------------------------------

template <class L>
void pack_group_q8_0(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_0<L>(&ref::quantize_q8_0, x, cols, n_tokens, group, dst);
}
template <class L>
void pack_group_q8_1(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_1<L>(&ref::quantize_q8_1, x, cols, n_tokens, group, dst);
}
template <class L>
void pack_group_q8_k(const float* x, int64_t cols, int64_t n_tokens, int64_t group, uint8_t* dst) {
  pack_act_q8_k<L>(&ref::quantize_q8_k, x, cols, n_tokens, group, dst);
}

// ---- weight unpacking: the bytes gemm_avx512.cpp's pack_w80 / pack_w45 / pack_w6 write -------

// Block k of a Q8_0 / Q4_0 / Q5_0 row as 32 u8 = (signed value) + 128, and its scale.
template <DType T>
void unpack_s8_plus128(const uint8_t* row, int64_t k, uint8_t* q, float* d) {
  if constexpr (T == DType::Q8_0) {
    const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[k];
    *d = fp16_to_f32(b.d);
    for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(static_cast<uint8_t>(b.qs[j]) ^ 0x80u);
  } else if constexpr (T == DType::Q4_0) {
    const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[k];
    *d = fp16_to_f32(b.d);
    // elements 0..15: low nibbles, 16..31: high nibbles; (q - 8) + 128.
    for (int j = 0; j < 16; ++j) {
      q[j] = static_cast<uint8_t>((b.qs[j] & 0x0F) + 120);
      q[j + 16] = static_cast<uint8_t>((b.qs[j] >> 4) + 120);
    }
  } else {  // Q5_0: fifth bit of element j is bit j of qh (little-endian u32); (q - 16) + 128.
    const BlockQ5_0& b = reinterpret_cast<const BlockQ5_0*>(row)[k];
    *d = fp16_to_f32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < 32; ++j) {
      const int nib = j < 16 ? (b.qs[j] & 0x0F) : (b.qs[j - 16] >> 4);
      q[j] = static_cast<uint8_t>((nib | static_cast<int>((qh >> j) & 1u) << 4) + 112);
    }
  }
}

template <DType T>
void pack_w80(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  for (int64_t k = 0; k < nb; ++k) {
    uint8_t* o = ws + k * kW80Block;
    for (int r = 0; r < kR; ++r) {
      float d = 0.f;
      uint8_t* q = o + kW80Q + 32 * r;
      if (r < nr) unpack_s8_plus128<T>(w + r * wrb, k, q, &d);
      else std::memset(q, 0, 32);
      putf(o + kW80D + 4 * r, d);
    }
  }
}

// Block k of a Q4_1 / Q5_1 row as 32 u8 = q (0..15 / 0..31), its scale and min.
template <DType T>
void pack_w81(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  for (int64_t k = 0; k < nb; ++k) {
    uint8_t* o = ws + k * kW81Block;
    for (int r = 0; r < kR; ++r) {
      float d = 0.f, m = 0.f;
      uint8_t q[32] = {};
      if (r < nr) {
        const uint8_t* qs;
        uint32_t qh = 0;
        if constexpr (T == DType::Q4_1) {
          const BlockQ4_1& b = reinterpret_cast<const BlockQ4_1*>(w + r * wrb)[k];
          d = fp16_to_f32(b.d), m = fp16_to_f32(b.m), qs = b.qs;
        } else {
          const BlockQ5_1& b = reinterpret_cast<const BlockQ5_1*>(w + r * wrb)[k];
          d = fp16_to_f32(b.d), m = fp16_to_f32(b.m), qs = b.qs;
          std::memcpy(&qh, b.qh, 4);
        }
        // elements 0..15: low nibbles, 16..31: high nibbles; Q5_1's fifth bit of element j is bit j of qh.
        for (int j = 0; j < 16; ++j) {
          q[j] = static_cast<uint8_t>((qs[j] & 0x0F) | (((qh >> j) & 1u) << 4));
          q[j + 16] = static_cast<uint8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1u) << 4));
        }
      }
      putf(o + kW81D + 4 * r, d);
      putf(o + kW81M + 4 * r, m);
      std::memcpy(o + kW81Q + 32 * r, q, 32);
    }
  }
}

template <bool kFive>
void pack_w45(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  for (int64_t k = 0; k < nb; ++k) {
    uint8_t* o = ws + k * kW45Block;
    for (int r = 0; r < kR; ++r) {
      uint8_t* q = o + kW45Q + 256 * r;
      if (r >= nr) {
        putf(o + kW45D + 4 * r, 0.f);
        putf(o + kW45Dmin + 4 * r, 0.f);
        std::memset(o + kW45Sc + 32 * r, 0, 32);
        std::memset(o + kW45Mp + 16 * r, 0, 16);
        std::memset(q, 0, 256);
        continue;
      }
      const uint8_t *qs, *qh = nullptr, *scales;
      uint16_t d, dmin;
      if constexpr (kFive) {
        const BlockQ5_K& b = reinterpret_cast<const BlockQ5_K*>(w + r * wrb)[k];
        qs = b.qs; qh = b.qh; scales = b.scales; d = b.d; dmin = b.dmin;
      } else {
        const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(w + r * wrb)[k];
        qs = b.qs; scales = b.scales; d = b.d; dmin = b.dmin;
      }
      putf(o + kW45D + 4 * r, fp16_to_f32(d));
      putf(o + kW45Dmin + 4 * r, fp16_to_f32(dmin));
      // 8 scales as int32, 8 mins as int16 (the pairs vpdpwssd reads), both 0..63.
      for (int j = 0; j < 8; ++j) {
        uint8_t sc, mn;
        k4_scale_min(j, scales, &sc, &mn);
        put32(o + kW45Sc + 32 * r + 4 * j, sc);
        put16(o + kW45Mp + 16 * r + 2 * j, mn);
      }
      // Element 64c + i (i < 32): low nibble of qs[32c + i]; 64c + 32 + i: its high nibble; Q5_K
      // adds bit 2c / 2c + 1 of qh[i] as bit 4.
      for (int c = 0; c < 4; ++c)
        for (int i = 0; i < 32; ++i) {
          int lo = qs[32 * c + i] & 0x0F, hi = qs[32 * c + i] >> 4;
          if constexpr (kFive) {
            lo |= ((qh[i] >> (2 * c)) & 1) << 4;
            hi |= ((qh[i] >> (2 * c + 1)) & 1) << 4;
          }
          q[64 * c + i] = static_cast<uint8_t>(lo);
          q[64 * c + 32 + i] = static_cast<uint8_t>(hi);
        }
    }
  }
}

// The Q6_K layout's frame, shared by Q6_K, Q3_K and Q2_K: block k of rows [0, nr) of a quad goes
// through fill(block, o = that block's scratch, r, q = row r's levels), which writes row r's d,
// dmin, scales, offsets and levels; rows past nr are zeros.
template <typename Block, typename Fill>
inline void pack_w6_rows(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws, Fill fill) {
  for (int64_t k = 0; k < nb; ++k) {
    uint8_t* o = ws + k * kW6Block;
    for (int r = 0; r < kR; ++r) {
      uint8_t* q = o + kW6Q + 256 * r;
      if (r >= nr) {
        putf(o + kW6D + 4 * r, 0.f);
        putf(o + kW6Dmin + 4 * r, 0.f);
        std::memset(o + kW6Sc + 64 * r, 0, 64);
        std::memset(o + kW6Op + 32 * r, 0, 32);
        std::memset(q, 0, 256);
        continue;
      }
      fill(reinterpret_cast<const Block*>(w + r * wrb)[k], o, r, q);
    }
  }
}

void pack_w6(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  pack_w6_rows<BlockQ6_K>(w, wrb, nr, nb, ws, [&](const BlockQ6_K& b, uint8_t* o, int r, uint8_t* q) {
    putf(o + kW6D + 4 * r, fp16_to_f32(b.d));
    putf(o + kW6Dmin + 4 * r, 0.f);
    // 16 int8 scales as int32, and as int16 offsets -32 * scale (in [-4064, 4096]).
    for (int j = 0; j < 16; ++j) {
      put32(o + kW6Sc + 64 * r + 4 * j, b.scales[j]);
      put16(o + kW6Op + 32 * r + 2 * j, static_cast<int16_t>(-32 * b.scales[j]));
    }
    // Half n (128 elements): element 32m + i = nibble m / 2 of ql[64n + 32(m & 1) + i] with
    // bits 2m, 2m + 1 of qh[32n + i] as bits 4, 5 (0..63).
    for (int n = 0; n < 2; ++n)
      for (int m = 0; m < 4; ++m)
        for (int i = 0; i < 32; ++i) {
          const uint8_t l = b.ql[64 * n + 32 * (m & 1) + i];
          const int nib = m < 2 ? (l & 0x0F) : (l >> 4);
          q[128 * n + 32 * m + i] = static_cast<uint8_t>(nib | ((b.qh[32 * n + i] >> (2 * m)) & 3) << 4);
        }
  });
}

// Q3_K in the Q6_K layout (gemm_layout.h): levels q + 4 (0..7) in element order, offsets -4 * scale.
void pack_w3(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  pack_w6_rows<BlockQ3_K>(w, wrb, nr, nb, ws, [&](const BlockQ3_K& b, uint8_t* o, int r, uint8_t* q) {
    putf(o + kW6D + 4 * r, fp16_to_f32(b.d));
    putf(o + kW6Dmin + 4 * r, 0.f);
    for (int j = 0; j < 16; ++j) {
      const int sc = q3k_scale(j, b.scales);
      put32(o + kW6Sc + 64 * r + 4 * j, sc);
      put16(o + kW6Op + 32 * r + 2 * j, static_cast<int16_t>(-4 * sc));
    }
    // Element 128h + 32j + l: bits 2j, 2j + 1 of qs[32h + l]; bit 4h + j of hmask[l] as bit 2.
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l)
          q[128 * h + 32 * j + l] = static_cast<uint8_t>(((b.qs[32 * h + l] >> (2 * j)) & 3) |
                                                         (((b.hmask[l] >> (4 * h + j)) & 1) << 2));
  });
}

// Q2_K in the Q6_K layout (gemm_layout.h): levels 0..3 in element order, 4-bit scales, the 4-bit
// mins in place of the offsets, dmin.
void pack_w2(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws) {
  pack_w6_rows<BlockQ2_K>(w, wrb, nr, nb, ws, [&](const BlockQ2_K& b, uint8_t* o, int r, uint8_t* q) {
    putf(o + kW6D + 4 * r, fp16_to_f32(b.d));
    putf(o + kW6Dmin + 4 * r, fp16_to_f32(b.dmin));
    for (int j = 0; j < 16; ++j) {
      put32(o + kW6Sc + 64 * r + 4 * j, b.scales[j] & 0x0F);
      put16(o + kW6Op + 32 * r + 2 * j, static_cast<int16_t>(b.scales[j] >> 4));
    }
    // Element 128h + 32j + l: bits 2j, 2j + 1 of qs[32h + l].
    for (int h = 0; h < 2; ++h)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l) q[128 * h + 32 * j + l] = static_cast<uint8_t>((b.qs[32 * h + l] >> (2 * j)) & 3);
  });
}

// ---- tiles: 4 weight rows x one group (of layout L) over all nb blocks ----------------------
// (gemm_avx512.cpp runs two groups per tile to reuse each weight broadcast; every lane's
// operations are the same either way.)

// Blocks of 32. Without kMin (Q8_0, Q4_0, Q5_0: u8 = w + 128): (w + 128) . a - 128 * sum(a) =
// w . a, then * (d_a * d_w) into the float sum. With kMin (Q4_1, Q5_1: u8 = q): q . a * (d_a *
// d_w), then + s_a * m_w (s_a = d_a * sum(a) from the Q8_1 block).
template <bool kMin, class L>
void tile_w8(const uint8_t* ws, int64_t nb, const uint8_t* act, VecF (&facc)[kR]) {
  constexpr int kStep = L::kStepElems;
  constexpr int64_t kBlock = kMin ? kW81Block : kW80Block, kQ = kMin ? kW81Q : kW80Q, kD = kMin ? kW81D : kW80D;
  for (VecF& f : facc) f = zero_f();
  for (int64_t k = 0; k < nb; ++k) {
    const uint8_t* wb = ws + k * kBlock;
    const uint8_t* ab = act + k * L::k80Block;
    VecI acc[kR];
    for (VecI& a : acc) a = zero_i();
    for (int j = 0; j < 32 / kStep; ++j) {
      const VecI a = load_i(ab + L::k80Q + 64 * j);
      for (int r = 0; r < kR; ++r) acc[r] = dpbusd(acc[r], bcast_step<kStep>(wb + kQ + 32 * r + kStep * j), a);
    }
    const VecF da = load_f(ab + L::k80D);
    for (int r = 0; r < kR; ++r) {
      const VecF dd = mul_f(da, set1_f(loadf(wb + kD + 4 * r)));
      if constexpr (kMin) {
        facc[r] = fmadd(cvt(token_sums<L>(acc[r])), dd, facc[r]);
        facc[r] = fmadd(load_f(ab + L::k80Corr), set1_f(loadf(wb + kW81M + 4 * r)), facc[r]);
      } else {
        facc[r] = fmadd(cvt(token_sums<L>(add_i(acc[r], load_i(ab + L::k80Corr)))), dd, facc[r]);
      }
    }
  }
}

// Integer sums of kSteps steps (of layout L) from step s0: acc[r] = sum of vpdpbusd over them.
template <class L, int kSteps>
void dp_steps(const uint8_t* wq, const uint8_t* aq, int s0, VecI (&acc)[kR]) {
  constexpr int kStep = L::kStepElems;
  for (VecI& a : acc) a = zero_i();
  for (int s = s0; s < s0 + kSteps; ++s) {
    const VecI a = load_i(aq + 64 * s);
    for (int r = 0; r < kR; ++r) acc[r] = dpbusd(acc[r], bcast_step<kStep>(wq + 256 * r + kStep * s), a);
  }
}

template <class L>
void tile_w45(const uint8_t* ws, int64_t nb, const uint8_t* act, VecF (&facc)[kR]) {
  constexpr int kStep = L::kStepElems;
  for (VecF& f : facc) f = zero_f();
  for (int64_t k = 0; k < nb; ++k) {
    const uint8_t* wb = ws + k * kW45Block;
    const uint8_t* ab = act + k * L::k8KBlock;
    VecI isum[kR], acc[kR];
    for (VecI& s : isum) s = zero_i();
    // 8 groups of 32 (32 / kStep steps each), each times its 6-bit scale.
    for (int grp = 0; grp < 8; ++grp) {
      dp_steps<L, 32 / kStep>(wb + kW45Q, ab + L::k8KQ, 32 / kStep * grp, acc);
      for (int r = 0; r < kR; ++r) isum[r] = add_i(isum[r], mullo(acc[r], bcast32(wb + kW45Sc + 32 * r + 4 * grp)));
    }
    // mins: sum over groups of m * (sum of the group's activations), two groups per vpdpwssd lane.
    for (VecI& a : acc) a = zero_i();
    for (int p = 0; p < 16 / kStep; ++p) {
      const VecI bs = load_i(ab + L::k8KBs32 + 64 * p);
      for (int r = 0; r < kR; ++r) acc[r] = dpwssd(acc[r], bs, bcast_step<kStep>(wb + kW45Mp + 16 * r + kStep * p));
    }
    const VecF da = load_f(ab + L::k8KD);
    for (int r = 0; r < kR; ++r) {
      const VecF dd = mul_f(da, set1_f(loadf(wb + kW45D + 4 * r)));
      const VecF dm = mul_f(da, set1_f(loadf(wb + kW45Dmin + 4 * r)));
      facc[r] = fmadd(cvt(token_sums<L>(isum[r])), dd, facc[r]);
      facc[r] = fnmadd(cvt(token_sums<L>(acc[r])), dm, facc[r]);
    }
  }
}

// kMin (Q2_K): the first pass's sums (mins x block sums) come off scaled by dmin, then the scale
// pass starts from zero (gemm_avx512.cpp's order).
template <bool kMin, class L>
void tile_w6(const uint8_t* ws, int64_t nb, const uint8_t* act, VecF (&facc)[kR]) {
  constexpr int kStep = L::kStepElems;
  for (VecF& f : facc) f = zero_f();
  for (int64_t k = 0; k < nb; ++k) {
    const uint8_t* wb = ws + k * kW6Block;
    const uint8_t* ab = act + k * L::k8KBlock;
    VecI isum[kR], acc[kR];
    // q - 32: start from -32 * sum_g sc[g] * bsum16[g], two groups of 16 per vpdpwssd lane.
    for (VecI& s : isum) s = zero_i();
    for (int p = 0; p < 32 / kStep; ++p) {
      const VecI bs = load_i(ab + L::k8KBs16 + 64 * p);
      for (int r = 0; r < kR; ++r) isum[r] = dpwssd(isum[r], bs, bcast_step<kStep>(wb + kW6Op + 32 * r + kStep * p));
    }
    if constexpr (kMin) {
      const VecF da = load_f(ab + L::k8KD);
      for (int r = 0; r < kR; ++r) {
        const VecF dm = mul_f(da, set1_f(loadf(wb + kW6Dmin + 4 * r)));
        facc[r] = fnmadd(cvt(token_sums<L>(isum[r])), dm, facc[r]);
        isum[r] = zero_i();
      }
    }
    // 16 groups of 16 (16 / kStep steps each), each times its int8 scale.
    for (int grp = 0; grp < 16; ++grp) {
      dp_steps<L, 16 / kStep>(wb + kW6Q, ab + L::k8KQ, 16 / kStep * grp, acc);
      for (int r = 0; r < kR; ++r) isum[r] = add_i(isum[r], mullo(acc[r], bcast32(wb + kW6Sc + 64 * r + 4 * grp)));
    }
    const VecF da = load_f(ab + L::k8KD);
    for (int r = 0; r < kR; ++r) {
      const VecF dd = mul_f(da, set1_f(loadf(wb + kW6D + 4 * r)));
      facc[r] = fmadd(cvt(token_sums<L>(isum[r])), dd, facc[r]);
    }
  }
}

// ---- drivers ------------------------------------------------------------------------------

using PackW = void (*)(const uint8_t* w, int64_t wrb, int64_t nr, int64_t nb, uint8_t* ws);
using Tile = void (*)(const uint8_t* ws, int64_t nb, const uint8_t* act, VecF (&facc)[kR]);

// Row quads: unpack 4 weight rows once into scratch, then run them against every token group
// (of layout L). The next rows (next_w / next_nr of GemmKernels::rows) are only a prefetch hint
// there, so they are not read here.
template <PackW kPack, Tile kTile, int64_t kElemsPerBlock, class L>
void rows_driver(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens,
                 float* y, int64_t ys, uint8_t* ws, int64_t gb) {
  const int64_t nb = cols / kElemsPerBlock;
  constexpr int64_t kT = L::kTokens;
  const int64_t n_groups = (n_tokens + kT - 1) / kT;
  for (int64_t r0 = 0; r0 < nr; r0 += kR) {
    const int64_t rq = nr - r0 < kR ? nr - r0 : kR;
    kPack(w + r0 * wrb, wrb, rq, nb, ws);
    for (int64_t g = 0; g < n_groups; ++g) {
      VecF facc[kR];
      kTile(ws, nb, act + g * gb, facc);
      store_tile<L>(facc, rq, n_tokens - g * kT, y + g * kT * ys + r0, ys);
    }
  }
}

template <DType T, class L>
void rows_w80(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t*, int64_t) {
  rows_driver<&pack_w80<T>, &tile_w8<false, L>, 32, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, group_bytes_q8_0(cols));
}
template <DType T, class L>
void rows_w81(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t*, int64_t) {
  rows_driver<&pack_w81<T>, &tile_w8<true, L>, 32, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, group_bytes_q8_0(cols));
}
template <bool kFive, class L>
void rows_w45(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
              int64_t ys, uint8_t* ws, const uint8_t*, int64_t) {
  rows_driver<&pack_w45<kFive>, &tile_w45<L>, 256, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws,
                                                      group_bytes_q8_k(cols));
}
template <auto kPack, bool kMin, class L>
void rows_w6(const uint8_t* w, int64_t wrb, int64_t nr, int64_t cols, const uint8_t* act, int64_t n_tokens, float* y,
             int64_t ys, uint8_t* ws, const uint8_t*, int64_t) {
  rows_driver<kPack, &tile_w6<kMin, L>, 256, L>(w, wrb, nr, cols, act, n_tokens, y, ys, ws, group_bytes_q8_k(cols));
}

// The in-place layouts (gemm_avx512.cpp reads the weights in place there) through the scratch
// tile: the same integer sums and float operations, so the same bits.
template <DType T>
constexpr std::array<GemmKernels::InPlace, kGemmInPlaceLayouts> kInPlace = {{
    {&pack_group_q8_0<Pairs>, &rows_w80<T, Pairs>},
    {&pack_group_q8_0<Quads>, &rows_w80<T, Quads>},
    {&pack_group_q8_0<Octets>, &rows_w80<T, Octets>}}};
template <DType T>
constexpr std::array<GemmKernels::InPlace, kGemmInPlaceLayouts> kInPlaceMin = {{
    {&pack_group_q8_1<Pairs>, &rows_w81<T, Pairs>},
    {&pack_group_q8_1<Quads>, &rows_w81<T, Quads>},
    {&pack_group_q8_1<Octets>, &rows_w81<T, Octets>}}};

// Each table: its wide kernels, then its pairs kernels, then its in-place ones (gemm_avx512.cpp's order).
const GemmKernels kQ8_0{kMinTokensW80, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_w80,
                        &rows_w80<DType::Q8_0, Wide>, &pack_group_q8_0<Pairs>, &rows_w80<DType::Q8_0, Pairs>,
                        kInPlace<DType::Q8_0>};
const GemmKernels kQ4_0{kMinTokensW80, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_w80,
                        &rows_w80<DType::Q4_0, Wide>, &pack_group_q8_0<Pairs>, &rows_w80<DType::Q4_0, Pairs>,
                        kInPlace<DType::Q4_0>};
const GemmKernels kQ5_0{kMinTokensW80, &group_bytes_q8_0, &pack_group_q8_0<Wide>, &scratch_bytes_w80,
                        &rows_w80<DType::Q5_0, Wide>, &pack_group_q8_0<Pairs>, &rows_w80<DType::Q5_0, Pairs>,
                        kInPlace<DType::Q5_0>};
const GemmKernels kQ4_1{kMinTokensW81, &group_bytes_q8_0, &pack_group_q8_1<Wide>, &scratch_bytes_w81,
                        &rows_w81<DType::Q4_1, Wide>, &pack_group_q8_1<Pairs>, &rows_w81<DType::Q4_1, Pairs>,
                        kInPlaceMin<DType::Q4_1>};
const GemmKernels kQ5_1{kMinTokensW81, &group_bytes_q8_0, &pack_group_q8_1<Wide>, &scratch_bytes_w81,
                        &rows_w81<DType::Q5_1, Wide>, &pack_group_q8_1<Pairs>, &rows_w81<DType::Q5_1, Pairs>,
                        kInPlaceMin<DType::Q5_1>};
const GemmKernels kQ4_K{kMinTokensW45, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w45,
                        &rows_w45<false, Wide>, &pack_group_q8_k<Pairs>, &rows_w45<false, Pairs>};
const GemmKernels kQ5_K{kMinTokensW45, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w45,
                        &rows_w45<true, Wide>, &pack_group_q8_k<Pairs>, &rows_w45<true, Pairs>};
const GemmKernels kQ6_K{kMinTokensW6, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w6, false, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w6, false, Pairs>};
const GemmKernels kQ3_K{kMinTokensW3, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w3, false, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w3, false, Pairs>};
const GemmKernels kQ2_K{kMinTokensW2, &group_bytes_q8_k, &pack_group_q8_k<Wide>, &scratch_bytes_w6,
                        &rows_w6<&pack_w2, true, Wide>, &pack_group_q8_k<Pairs>, &rows_w6<&pack_w2, true, Pairs>};

}  // namespace
}  // namespace strata::kernels::gemm_emulated

namespace strata::kernels::detail {
const GemmKernels* emulated_gemm(DType t) {
  using namespace gemm_emulated;
  switch (t) {
    case DType::Q8_0: return &kQ8_0;
    case DType::Q4_0: return &kQ4_0;
    case DType::Q5_0: return &kQ5_0;
    case DType::Q4_1: return &kQ4_1;
    case DType::Q5_1: return &kQ5_1;
    case DType::Q4_K: return &kQ4_K;
    case DType::Q5_K: return &kQ5_K;
    case DType::Q6_K: return &kQ6_K;
    case DType::Q3_K: return &kQ3_K;
    case DType::Q2_K: return &kQ2_K;
    default: return nullptr;
  }
}
}  // namespace strata::kernels::detail
