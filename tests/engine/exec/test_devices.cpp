// tests/engine/exec/test_devices.cpp — device declarations (--devices), sizes, and the memory
// accounting of host devices: an allocation past capacity fails with the device, the bytes
// asked and the bytes free, and freed buffers return their bytes.
#include <gtest/gtest.h>

#include "engine/core/device_info_json.h"
#include "engine/backend/device.h"
#include "engine/core/units.h"
#include "engine/backend/registry/registry.h"
#include "engine/backend/sim/sim_device.h"

namespace strata::exec {
namespace {

class ParseBytes : public ::testing::TestWithParam<std::pair<std::string, uint64_t>> {};

TEST_P(ParseBytes, Value) {
  auto v = parse_bytes(GetParam().first);
  ASSERT_TRUE(v.ok()) << v.error().to_string();
  EXPECT_EQ(*v, GetParam().second);
}

INSTANTIATE_TEST_SUITE_P(Sizes, ParseBytes,
                         ::testing::Values(std::make_pair("24GiB", 24ull << 30), std::make_pair("512MiB", 512ull << 20),
                                           std::make_pair("1.5GB", 1500000000ull), std::make_pair("100KiB", 102400ull),
                                           std::make_pair("4096", 4096ull), std::make_pair("2tib", 2ull << 40)));

TEST(ParseBytesErrors, RejectsZeroNegativeAndUnknownUnits) {
  for (const char* bad : {"0GiB", "-1GiB", "12parsecs", "GiB", "", "1e30"}) {
    auto v = parse_bytes(bad);
    EXPECT_FALSE(v.ok()) << bad;
  }
}

// Issue 49 (minor): a 32 MiB simulated device was named "sim-gpu0 0.0312 GiB (simulated)".
TEST(FormatCapacity, LargestUnitAtLeastOne) {
  EXPECT_EQ(format_capacity(32ull << 20), "32 MiB");
  EXPECT_EQ(format_capacity(1ull << 30), "1 GiB");
  EXPECT_EQ(format_capacity(3ull << 29), "1.5 GiB");
  EXPECT_EQ(format_capacity(24ull << 30), "24 GiB");
  EXPECT_EQ(format_capacity(512), "512 B");
  auto d = backend::make_devices("sim:gpu0:32MiB", 1, 0.0);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  EXPECT_EQ((*d)[0]->info().name, "sim-gpu0 32 MiB (simulated)");
}

TEST(MakeDevices, ParsesCpuAndSimulatedWithOptions) {
  auto d = backend::make_devices("cpu,sim:gpu0:24GiB:bw=900GB/s:tflops=80:link=25GB/s:threads=1,sim:gpu1:12GiB", 2, 40.0);
  ASSERT_TRUE(d.ok()) << d.error().to_string();
  ASSERT_EQ(d->size(), 3u);
  const DeviceInfo cpu = (*d)[0]->info();
  EXPECT_EQ(cpu.backend, "cpu");
  EXPECT_TRUE(cpu.caps.host_cpu);
  EXPECT_TRUE(cpu.caps.reads_weights_in_place);
  EXPECT_TRUE(cpu.caps.host_memory);
  EXPECT_FALSE(cpu.simulated);
  EXPECT_EQ(cpu.threads, 2);
  EXPECT_EQ(cpu.bandwidth_gbps, 40.0);
  const DeviceInfo g0 = (*d)[1]->info();
  EXPECT_EQ(g0.id, "gpu0");
  EXPECT_TRUE(g0.simulated);
  EXPECT_NE(g0.name.find("simulated"), std::string::npos);
  EXPECT_EQ(g0.bytes_total, 24ull << 30);
  EXPECT_EQ(g0.bandwidth_gbps, 900.0);
  EXPECT_EQ(g0.tflops, 80.0);
  EXPECT_EQ(g0.link_gbps, 25.0);
  EXPECT_EQ((*d)[2]->info().bytes_total, 12ull << 30);
}

TEST(MakeDevices, ErrorsNameTheEntry) {
  struct Case {
    const char* spec;
    const char* word;
    Code code;
  };
  for (const Case& c : {Case{"sim:gpu0:0GiB", "gpu0", Code::InvalidArgument},
                        Case{"sim:gpu0:1GiB,sim:gpu0:2GiB", "gpu0", Code::InvalidArgument},
                        Case{"sim:gpu0", "gpu0", Code::InvalidArgument},
                        Case{"sim:gpu0:1GiB:warp=9", "warp", Code::InvalidArgument},
                        Case{"tpu:0", "tpu", Code::InvalidArgument},
                        Case{"cpu,,sim:g:1GiB", "empty", Code::InvalidArgument},
                        Case{"cpu,cpu", "listed twice", Code::InvalidArgument},
                        Case{"sim:cpu:1GiB", "CPU's", Code::InvalidArgument}}) {
    auto d = backend::make_devices(c.spec, 1, 10.0);
    ASSERT_FALSE(d.ok()) << c.spec;
    EXPECT_EQ(d.error().code, c.code) << c.spec;
    EXPECT_NE(d.error().message.find(c.word), std::string::npos) << c.spec << ": " << d.error().message;
  }
}

// A CUDA device that is not there: NotCompiled in a build without CUDA, NotFound (with the
// runtime's own account, e.g. "no CUDA driver") in a CUDA build on a machine without that device.
TEST(DeviceInfoJson, RoundTripsEveryFieldAndNamesWhatIsWrong) {
  DeviceInfo i;
  i.id = "r1:cuda:0";
  i.backend = "cuda";
  i.caps.host_memory = false;
  i.caps.kv_types = {kernels::DType::F32, kernels::DType::F16};
  i.caps.weight_types = {kernels::DType::Q4_K, kernels::DType::Q8_0};
  i.caps.peer_access = true;
  i.caps.collective = "nccl";
  i.name = "NVIDIA H200";
  i.bytes_total = 150'000'000'000;
  i.bytes_free = 149'000'000'000;
  i.bandwidth_gbps = 4800;
  i.tflops = 989.5;
  i.link_gbps = 0.46;
  i.link_latency_us = 15.6;
  i.runtime_overhead_bytes = 536'870'912;
  i.threads = 1;
  i.caps.max_head_dim = 256;
  i.compute_capability = "9.0";
  i.ordinal = 0;
  i.peers = {"r1:cuda:1"};
  i.failed = true;
  i.failure = "sticky error";
  i.rank = 1;
  i.host = "node2";
  const nlohmann::json j = device_info_json(i);
  EXPECT_EQ(j["kind"], "cuda");
  auto back = device_info_from_json(j);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back->id, i.id);
  EXPECT_EQ(back->backend, i.backend);
  EXPECT_EQ(back->caps.host_memory, false);
  EXPECT_EQ(back->caps.kv_types, i.caps.kv_types);
  EXPECT_EQ(back->caps.weight_types, i.caps.weight_types);
  EXPECT_TRUE(back->caps.peer_access);
  EXPECT_EQ(back->caps.collective, "nccl");
  EXPECT_EQ(back->caps.max_head_dim, 256);
  EXPECT_EQ(back->bytes_total, i.bytes_total);
  EXPECT_EQ(back->runtime_overhead_bytes, i.runtime_overhead_bytes);
  EXPECT_EQ(back->link_latency_us, i.link_latency_us);
  EXPECT_EQ(back->peers, i.peers);
  EXPECT_EQ(back->failure, "sticky error");
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->host, "node2");
  // A failure text without failed is not sent.
  i.failed = false;
  EXPECT_EQ(device_info_json(i)["failure"], "");
  nlohmann::json bad = j;
  bad["caps"]["kv_types"] = {"f16", "q9_z"};
  ASSERT_FALSE(device_info_from_json(bad).ok());
  EXPECT_NE(device_info_from_json(bad).error().message.find("'q9_z'"), std::string::npos);
  bad = j;
  bad["caps"].erase("collective");
  ASSERT_FALSE(device_info_from_json(bad).ok());
  EXPECT_EQ(device_info_from_json(bad).error().code, Code::Corrupt);
  bad = j;
  bad.erase("bytes_free");
  ASSERT_FALSE(device_info_from_json(bad).ok());
  EXPECT_EQ(device_info_from_json(bad).error().code, Code::Corrupt);
}

// The CUDA backend is always listed: loaded from its module (a build with CUDA: the tests' module
// folder holds it), or missing and saying why. Either way a CUDA device that is not there is an
// error that says what the runtime reports, or that the module is not installed.
TEST(MakeDevices, MissingCudaDeviceSaysWhy) {
  const backend::Backend* cuda = backend::find_backend("cuda");
  ASSERT_NE(cuda, nullptr);
  EXPECT_TRUE(cuda->finds_hardware());
#ifdef STRATA_BUILDS_CUDA_MODULE
  EXPECT_TRUE(cuda->present()) << cuda->describe();
#else
  EXPECT_FALSE(cuda->present());
  EXPECT_NE(cuda->describe().find("CUDA module not installed"), std::string::npos) << cuda->describe();
#endif
  if (cuda->device_count() > 0) GTEST_SKIP() << "this machine has a CUDA device";
  for (const char* spec : {"cuda:0", "cuda", "cpu,cuda:3"}) {
    auto d = backend::make_devices(spec, 1, 10.0);
    ASSERT_FALSE(d.ok()) << spec;
    EXPECT_EQ(d.error().code, cuda->present() ? Code::NotFound : Code::NotCompiled) << spec;
    EXPECT_NE(d.error().message.find(cuda->describe()), std::string::npos) << d.error().message;
  }
  EXPECT_EQ(backend::default_devices_spec(), "cpu");
  // Entries the CUDA backend cannot read are named by it when it is here, or refused with the
  // module's absence when it is not.
  for (const char* spec : {"cuda:x", "cuda:0:1"}) {
    auto d = backend::make_devices(spec, 1, 10.0);
    ASSERT_FALSE(d.ok()) << spec;
    EXPECT_EQ(d.error().code, cuda->present() ? Code::InvalidArgument : Code::NotCompiled) << spec;
    EXPECT_NE(d.error().message.find(spec), std::string::npos) << d.error().message;
  }
}

TEST(DeviceMemory, AllocationPastCapacityNamesDeviceAndBytes) {
  backend::SimulatedSpec spec;
  spec.id = "gpu7";
  spec.capacity_bytes = 1000;
  backend::SimulatedDevice dev(spec);
  auto a = dev.allocate(600, backend::BufferUse::Weights);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(dev.memory_use().weights, 600u);
  EXPECT_EQ(dev.bytes_free(), 400u);
  auto b = dev.allocate(500, backend::BufferUse::KvCache);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, Code::OutOfMemory);
  EXPECT_NE(b.error().message.find("gpu7"), std::string::npos);
  EXPECT_NE(b.error().message.find("500 bytes"), std::string::npos) << b.error().message;
  EXPECT_NE(b.error().message.find("400 bytes"), std::string::npos) << b.error().message;
  a->reset();
  EXPECT_EQ(dev.memory_use().total(), 0u);
  auto c = dev.allocate(1000, backend::BufferUse::Scratch);
  EXPECT_TRUE(c.ok());
  EXPECT_EQ(dev.memory_use().scratch, 1000u);
}

}  // namespace
}  // namespace strata::exec
