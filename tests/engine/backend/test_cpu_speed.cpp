// tests/engine/backend/test_cpu_speed.cpp — the CPU speed cache (engine/backend/cpu/cpu_speed.h):
// entries by key round-trip, other keys survive a save, a broken file is named, and a cached entry
// is used without measuring. The measurement itself is checked for plausibility only (positive
// rates, every weight type); its accuracy is a benchmark (bench/predict_vs_bench.py), not a test.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>

#include "engine/backend/cpu/cpu_device.h"
#include "engine/backend/cpu/cpu_speed.h"
#include "engine/core/device_info_json.h"

namespace strata::backend {
namespace {

namespace fs = std::filesystem;

fs::path temp_file(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("strata_cpu_speed_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

CpuSpeed sample(double bw) {
  CpuSpeed s(bw);
  s.tflops = 0.25;
  s.matvec_gbps = {MatvecRate{kernels::DType::Q4_K, 6.5, 12.5}, MatvecRate{kernels::DType::Q8_0, 9.25, 0}};
  s.matvec_call_us = 2.75;
  return s;
}

TEST(CpuSpeed, CacheRoundTripsByKey) {
  const fs::path f = temp_file("roundtrip.json");
  fs::remove(f);
  EXPECT_EQ(load_cpu_speed(f, "a").error().code, Code::NotFound);
  ASSERT_TRUE(save_cpu_speed(f, "a", sample(17)).ok());
  ASSERT_TRUE(save_cpu_speed(f, "b", sample(30)).ok());
  ASSERT_TRUE(save_cpu_speed(f, "a", sample(18)).ok());  // replaces a, keeps b
  auto a = load_cpu_speed(f, "a");
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(a->bandwidth_gbps, 18);
  EXPECT_EQ(a->tflops, 0.25);
  ASSERT_EQ(a->matvec_gbps.size(), 2u);
  EXPECT_EQ(a->matvec_gbps[0].type, kernels::DType::Q4_K);  // json objects sort by name: q4_k < q8_0
  EXPECT_EQ(a->matvec_gbps[0].gbps, 6.5);
  EXPECT_EQ(a->matvec_gbps[1].gbps, 9.25);
  EXPECT_EQ(a->matvec_gbps[0].row_ns, 12.5);
  EXPECT_EQ(a->matvec_gbps[1].row_ns, 0);
  EXPECT_EQ(a->matvec_call_us, 2.75);
  EXPECT_EQ(load_cpu_speed(f, "b")->bandwidth_gbps, 30);
  EXPECT_EQ(load_cpu_speed(f, "c").error().code, Code::NotFound);
}

TEST(CpuSpeed, BrokenCacheIsNamedAndReplaced) {
  const fs::path f = temp_file("broken.json");
  std::ofstream(f) << R"({"entries": [{"key": "k", "bandwidth_gbps": 10, "tflops": 1, "matvec_gbps": {"q9_z": 3}}]})";
  auto e = load_cpu_speed(f, "k");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, Code::Corrupt);
  EXPECT_NE(e.error().message.find("q9_z"), std::string::npos) << e.error().message;
  // An entry an older build wrote (no per-row times) is not used: NotFound, so it is measured again.
  std::ofstream(f) << R"({"entries": [{"key": "k", "bandwidth_gbps": 10, "tflops": 1, "matvec_gbps": {"q8_0": 3}}]})";
  EXPECT_EQ(load_cpu_speed(f, "k").error().code, Code::NotFound);
  std::ofstream(f) << R"({"entries": [{"key": "k", "bandwidth_gbps": 10, "tflops": 1, "matvec_gbps": {"q8_0": 3},
                          "matvec_row_ns": {"q4_k": 2}, "matvec_call_us": 1}]})";
  EXPECT_EQ(load_cpu_speed(f, "k").error().code, Code::Corrupt);  // a time for a type with no rate
  std::ofstream(f) << "not json";
  EXPECT_EQ(load_cpu_speed(f, "k").error().code, Code::Corrupt);
  ASSERT_TRUE(save_cpu_speed(f, "k", sample(12)).ok());
  EXPECT_EQ(load_cpu_speed(f, "k")->bandwidth_gbps, 12);
}

TEST(CpuSpeed, CachedEntryIsUsedWithoutMeasuring) {
  const fs::path f = temp_file("cached.json");
  fs::remove(f);
  ASSERT_TRUE(save_cpu_speed(f, cpu_speed_key(1), sample(123)).ok());
  const CpuSpeedResult r = cpu_speed(1, /*refresh=*/false, f);
  EXPECT_FALSE(r.measured_now);
  EXPECT_EQ(r.speed.bandwidth_gbps, 123);  // no machine reads 123 GB/s with one thread: the cached figure
  EXPECT_NE(r.note.find(f.string()), std::string::npos);
  // The device reports it: the cost model reads DeviceInfo.
  CpuDevice cpu(1, uint64_t{1} << 30, r.speed);
  const DeviceInfo info = cpu.info();
  EXPECT_EQ(info.bandwidth_gbps, 123);
  EXPECT_EQ(info.tflops, 0.25);
  ASSERT_EQ(info.matvec_gbps.size(), 2u);
  // And it travels in the device JSON (the HTTP API, the ranks' handshake).
  auto back = device_info_from_json(device_info_json(info));
  ASSERT_TRUE(back.ok()) << back.error().message;
  ASSERT_EQ(back->matvec_gbps.size(), 2u);
  EXPECT_EQ(back->matvec_gbps[1].gbps, 9.25);
  EXPECT_EQ(back->matvec_gbps[0].row_ns, 12.5);
  EXPECT_EQ(back->matvec_call_us, 2.75);
}

TEST(CpuSpeed, RefreshMeasuresEveryWeightType) {
  const fs::path f = temp_file("measured.json");
  fs::remove(f);
  const CpuSpeedResult r = cpu_speed(1, /*refresh=*/true, f);
  EXPECT_TRUE(r.measured_now);
  EXPECT_GT(r.speed.bandwidth_gbps, 0);
  EXPECT_GT(r.speed.tflops, 0);
  EXPECT_EQ(r.speed.matvec_gbps.size(), 13u);
  for (const MatvecRate& m : r.speed.matvec_gbps) {
    EXPECT_GT(m.gbps, 0) << kernels::dtype_name(m.type);
    EXPECT_GE(m.row_ns, 0) << kernels::dtype_name(m.type);
  }
  // The fixed time of a call: under load the measured remainder can round to nothing (it is
  // clamped at 0). No upper bound: it is a wall-clock figure, and CI's load moves it.
  EXPECT_GE(r.speed.matvec_call_us, 0);
  auto saved = load_cpu_speed(f, cpu_speed_key(1));
  ASSERT_TRUE(saved.ok()) << saved.error().message;
  EXPECT_EQ(saved->bandwidth_gbps, r.speed.bandwidth_gbps);
  EXPECT_EQ(saved->matvec_call_us, r.speed.matvec_call_us);  // the call time is kept with the rest
  ASSERT_EQ(saved->matvec_gbps.size(), r.speed.matvec_gbps.size());
  for (const MatvecRate& m : r.speed.matvec_gbps) {  // the file keeps the types in name order
    const auto it = std::find_if(saved->matvec_gbps.begin(), saved->matvec_gbps.end(),
                                 [&](const MatvecRate& k) { return k.type == m.type; });
    ASSERT_NE(it, saved->matvec_gbps.end()) << kernels::dtype_name(m.type);
    EXPECT_EQ(it->row_ns, m.row_ns) << kernels::dtype_name(m.type);
  }
}

}  // namespace
}  // namespace strata::backend
