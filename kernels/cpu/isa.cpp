// kernels/cpu/isa.cpp — cpuid detection and the process-wide ISA choice.
#include "kernels/cpu/isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

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
std::atomic<int> g_amx_forced{-1};  // -1: as STRATA_ISA says; 0 / 1: force_amx

// cpuid.7.0: EDX bit 24 AMX-TILE, bit 25 AMX-INT8; XCR0 bits 17 / 18: the OS saves the tile
// config and data; then Linux's per-process permission for the tile data (XFEATURE 18).
bool detect_amx() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if (!(d & (1u << 24)) || !(d & (1u << 25))) return false;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE: xgetbv works
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr long kArchGetXcompPerm = 0x1022, kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long perm = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &perm) != 0) return false;
  return (perm & (1ul << kXfeatureXtiledata)) != 0;
#else
  return false;
#endif
}

}  // namespace

bool isa_supported(Isa isa) {
  static const bool s[3] = {true, detect(Isa::Avx2), detect(Isa::Avx512)};
  return s[static_cast<int>(isa)];
}

namespace {
// STRATA_ISA=scalar|avx2|avx512|amx caps best_isa() (read once; anything else, or unset: no cap).
// "amx" is the Avx512 level with AMX; "avx512" and below leave AMX off.
const char* isa_env() {
  static const char* v = std::getenv("STRATA_ISA");
  return v;
}
Isa isa_cap() {
  static const Isa cap = [] {
    Isa named = Isa::Avx512;
    const char* v = isa_env();
    if (v != nullptr && std::strcmp(v, "amx") != 0) isa_from_name(v, &named);
    return named;
  }();
  return cap;
}
}  // namespace

bool amx_supported() {
  static const bool s = isa_supported(Isa::Avx512) && detect_amx();
  return s;
}

bool amx_active() {
  if (!amx_supported()) return false;
  const int f = g_amx_forced.load(std::memory_order_relaxed);
  if (f >= 0) return f == 1;
  // STRATA_ISA is read once: matmul asks on every product
  static const bool env_allows = [] {
    const char* v = isa_env();
    return v == nullptr || std::strcmp(v, "amx") == 0 || !isa_from_name(v, nullptr);
  }();
  return env_allows;
}

void force_amx(bool on) { g_amx_forced.store(on ? 1 : 0, std::memory_order_relaxed); }

bool force_isa_by_name(const char* name) {
  const bool amx = std::strcmp(name, "amx") == 0;
  Isa isa = Isa::Avx512;
  if (!amx && !isa_from_name(name, &isa)) return false;
  if (!isa_supported(isa) || (amx && !amx_supported())) return false;
  force_isa(isa);
  force_amx(amx);
  return true;
}

Isa best_isa() {
  const Isa cap = isa_cap();
  if (cap == Isa::Avx512 && isa_supported(Isa::Avx512)) return Isa::Avx512;
  if (cap != Isa::Scalar && isa_supported(Isa::Avx2)) return Isa::Avx2;
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

bool isa_from_name(const char* name, Isa* isa) {
  for (Isa i : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (std::strcmp(name, isa_name(i)) == 0) {
      if (isa != nullptr) *isa = i;
      return true;
    }
  return false;
}

void force_isa(Isa isa) {
  if (isa_supported(isa)) g_forced.store(static_cast<int>(isa), std::memory_order_relaxed);
}

std::string cpu_description() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  char vendor[13] = {};
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
  }
  char brand[49] = {};
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext >= 0x80000004u) {
    for (unsigned i = 0; i < 3; ++i) {
      unsigned r[4] = {};
      __get_cpuid(0x80000002u + i, &r[0], &r[1], &r[2], &r[3]);
      std::memcpy(brand + 16 * i, r, 16);
    }
  }
  std::string name(brand);
  while (!name.empty() && name.back() == ' ') name.pop_back();
  while (!name.empty() && name.front() == ' ') name.erase(name.begin());
  if (name.empty()) name = "unknown CPU";
  int family = 0, model = 0, stepping = 0;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    // Display family / model: the extended fields count when the base family is 15 (and for
    // Intel family 6).
    const int base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
    family = base_family == 15 ? base_family + ((a >> 20) & 0xFF) : base_family;
    model = base_family == 15 || base_family == 6 ? base_model | (((a >> 16) & 0xF) << 4) : base_model;
    stepping = a & 0xF;
  }
  std::string ext;
  auto add = [&ext](bool have, const char* what) {
    if (!have) return;
    if (!ext.empty()) ext += ' ';
    ext += what;
  };
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("f16c"), "f16c");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(__builtin_cpu_supports("avx512vnni"), "avx512vnni");
  add(__builtin_cpu_supports("avx512bf16"), "avx512bf16");
  unsigned a7 = 0, b7 = 0, c7 = 0, d7 = 0;
  add(__get_cpuid_count(7, 0, &a7, &b7, &c7, &d7) && (d7 & (1u << 25)) != 0, "amx-int8");
  return name + " (" + vendor + " family " + std::to_string(family) + " model " + std::to_string(model) +
         " stepping " + std::to_string(stepping) + "; " + (ext.empty() ? "no avx2" : ext) + ")";
}

Isa active_isa() {
  const int f = g_forced.load(std::memory_order_relaxed);
  return f < 0 ? best_isa() : static_cast<Isa>(f);
}

}  // namespace strata::kernels
