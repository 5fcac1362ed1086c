// kernels/cpu/isa.h — which x86 SIMD level the CPU kernels use, detected once by cpuid.
// Depends on nothing; thread-safe (atomics).
#pragma once

namespace strata::kernels {

enum class Isa { Scalar, Avx2, Avx512 };

bool isa_supported(Isa isa);  // Avx2: AVX2+FMA+F16C; Avx512: F/BW/VL/DQ/VNNI plus the AVX2 set
Isa best_isa();               // the highest supported level
const char* isa_name(Isa isa);  // "scalar", "avx2", "avx512"
// Use this ISA in matmul from now on (tests, benchmarks). Ignored if not supported.
void force_isa(Isa isa);
Isa active_isa();  // what matmul uses now: the forced one, else best_isa()

}  // namespace strata::kernels
