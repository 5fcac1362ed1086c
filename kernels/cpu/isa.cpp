// kernels/cpu/isa.cpp — cpuid detection and the process-wide ISA choice.
#include "kernels/cpu/isa.h"

#include <atomic>

namespace strata::kernels {
namespace {

bool detect(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("f16c");
    case Isa::Avx512:
      return detect(Isa::Avx2) && __builtin_cpu_supports("avx512f") &&
             __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
  }
  return false;
}

std::atomic<int> g_forced{-1};

}  // namespace

bool isa_supported(Isa isa) {
  static const bool s[3] = {true, detect(Isa::Avx2), detect(Isa::Avx512)};
  return s[static_cast<int>(isa)];
}

Isa best_isa() {
  if (isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (isa_supported(Isa::Avx2)) return Isa::Avx2;
  return Isa::Scalar;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

void force_isa(Isa isa) {
  if (isa_supported(isa)) g_forced.store(static_cast<int>(isa), std::memory_order_relaxed);
}

Isa active_isa() {
  const int f = g_forced.load(std::memory_order_relaxed);
  return f < 0 ? best_isa() : static_cast<Isa>(f);
}

}  // namespace strata::kernels
