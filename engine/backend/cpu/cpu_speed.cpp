// engine/backend/cpu/cpu_speed.cpp — measuring and caching the CPU's speed (cpu_speed.h).
#include "engine/backend/cpu/cpu_speed.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <system_error>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "engine/core/device_info_json.h"
#include "kernels/cpu/bandwidth.h"
#include "kernels/cpu/isa.h"
#include "kernels/cpu/matmul_probe.h"

namespace strata::backend {

namespace fs = std::filesystem;

namespace {

// Every weight type a GGUF model of ours may hold. Q8_0 stands for the prompt-shaped FLOP rate:
// the cost model has one compute rate per device, and prompt products of the common types are
// within a small factor of it.
constexpr kernels::DType kMeasured[] = {
    kernels::DType::F32,  kernels::DType::F16,  kernels::DType::BF16, kernels::DType::Q8_0, kernels::DType::Q4_0,
    kernels::DType::Q4_1, kernels::DType::Q5_0, kernels::DType::Q5_1, kernels::DType::Q2_K, kernels::DType::Q3_K,
    kernels::DType::Q4_K, kernels::DType::Q5_K, kernels::DType::Q6_K};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

CpuSpeed measure_cpu_speed(kernels::ThreadPool& pool) {
  CpuSpeed s;
  s.bandwidth_gbps = kernels::measure_read_bandwidth_gbps(pool, int64_t{128} << 20);
  kernels::MatvecSpeed q8_0;
  for (kernels::DType t : kMeasured) {
    const kernels::MatvecSpeed m = kernels::measure_matvec(pool, t, int64_t{64} << 20);
    if (m.gbps > 0) s.matvec_gbps.push_back(MatvecRate{t, m.gbps, m.row_ns});
    if (t == kernels::DType::Q8_0) q8_0 = m;
  }
  s.matvec_call_us = kernels::measure_matvec_call_us(pool, q8_0);
  s.tflops = kernels::measure_matmul_tflops(pool, kernels::DType::Q8_0, 64);
  return s;
}

fs::path default_cpu_speed_cache() {
  if (const char* p = env("STRATA_CPU_SPEED_CACHE")) return fs::path(p);
  if (const char* x = env("XDG_CACHE_HOME")) return fs::path(x) / "strata" / "cpu-speed.json";
  const char* home = env("HOME");
  return fs::path(home ? home : ".") / ".cache" / "strata" / "cpu-speed.json";
}

std::string cpu_speed_key(int threads) {
  const bool amx = kernels::active_isa() == kernels::Isa::Avx512 && kernels::amx_active();
  return kernels::cpu_description() + "; " + kernels::isa_name(kernels::active_isa()) + (amx ? "+amx" : "") + "; " +
         std::to_string(threads) + " threads";
}

Expected<CpuSpeed> load_cpu_speed(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  if (!in) return Error{Code::NotFound, "no CPU speed cache at " + file.string()};
  nlohmann::json j;
  try {
    in >> j;
    for (const nlohmann::json& e : j.at("entries")) {
      if (e.at("key").get<std::string>() != key) continue;
      CpuSpeed s;
      s.bandwidth_gbps = e.at("bandwidth_gbps").get<double>();
      s.tflops = e.at("tflops").get<double>();
      STRATA_ASSIGN_OR_RETURN(s.matvec_gbps, matvec_from_json(e.at("matvec_gbps")));
      // A cache written before the per-row and per-call times existed lacks them: measure again.
      if (!e.contains("matvec_row_ns") || !e.contains("matvec_call_us"))
        return Error{Code::NotFound, file.string() + ": '" + key + "' has no matvec_row_ns / matvec_call_us (measured by an older build)"};
      STRATA_RETURN_IF_ERROR(matvec_row_ns_from_json(e.at("matvec_row_ns"), s.matvec_gbps));
      if (!e.at("matvec_call_us").is_number() || e.at("matvec_call_us").get<double>() < 0)
        return Error{Code::Corrupt, file.string() + ": matvec_call_us of '" + key + "' is not a time in microseconds"};
      s.matvec_call_us = e.at("matvec_call_us").get<double>();
      if (s.bandwidth_gbps <= 0) return Error{Code::Corrupt, file.string() + ": bandwidth_gbps of '" + key + "' is not positive"};
      return s;
    }
  } catch (const std::exception& e) {
    return Error{Code::Corrupt, file.string() + ": " + e.what()};
  }
  return Error{Code::NotFound, file.string() + " has no entry for '" + key + "'"};
}

Status save_cpu_speed(const fs::path& file, const std::string& key, const CpuSpeed& speed) {
  nlohmann::json j = {{"entries", nlohmann::json::array()}};
  {
    std::ifstream in(file);
    nlohmann::json old;
    if (in) {
      try {
        in >> old;
        for (const nlohmann::json& e : old.at("entries"))
          if (e.value("key", std::string()) != key) j["entries"].push_back(e);
      } catch (const std::exception&) {
        // An unreadable cache is replaced.
      }
    }
  }
  const auto now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch());
  j["entries"].push_back({{"key", key},
                          {"measured_at", static_cast<int64_t>(now.count())},
                          {"bandwidth_gbps", speed.bandwidth_gbps},
                          {"tflops", speed.tflops},
                          {"matvec_gbps", matvec_json(speed.matvec_gbps)},
                          {"matvec_row_ns", matvec_row_ns_json(speed.matvec_gbps)},
                          {"matvec_call_us", speed.matvec_call_us}});
  std::error_code ec;
  if (file.has_parent_path()) fs::create_directories(file.parent_path(), ec);
  if (ec) return Error{Code::Io, "cannot create " + file.parent_path().string() + ": " + ec.message()};
  // A name of this process's own: engines measuring at once (parallel tests) do not write one file.
  const fs::path tmp = file.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return Error{Code::Io, "cannot write " + tmp.string()};
    out << j.dump(2) << "\n";
    if (!out) return Error{Code::Io, "cannot write " + tmp.string()};
  }
  fs::rename(tmp, file, ec);
  if (ec) return Error{Code::Io, "cannot rename " + tmp.string() + " to " + file.string() + ": " + ec.message()};
  return {};
}

CpuSpeedResult cpu_speed(int threads, bool refresh, const fs::path& file) {
  CpuSpeedResult r;
  const std::string key = cpu_speed_key(threads);
  std::string why;
  if (!refresh) {
    auto cached = load_cpu_speed(file, key);
    if (cached.ok()) {
      r.speed = std::move(*cached);
      r.note = "from " + file.string();
      return r;
    }
    if (cached.error().code != Code::NotFound) why = " (" + cached.error().message + ")";
  }
  kernels::ThreadPool pool(threads);
  r.speed = measure_cpu_speed(pool);
  r.measured_now = true;
  const Status saved = save_cpu_speed(file, key, r.speed);
  r.note = saved.ok() ? "measured now, saved to " + file.string() + why
                      : "measured now; not saved: " + saved.error().message + why;
  return r;
}

}  // namespace strata::backend
