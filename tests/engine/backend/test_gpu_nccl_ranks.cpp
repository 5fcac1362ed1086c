// tests/engine/backend/test_gpu_nccl_ranks.cpp — the NCCL communicator of a tensor group spanning
// mpirun ranks (the CUDA backend's make_rank_communicator), as far as one process can check it:
// unique ids (no GPU needed), refusals of bad parts, and on a CUDA device a one-member group's
// non-blocking init, all-reduce and teardown (the sum over one member is the buffer itself, bit for
// bit). Two ranks need two GPUs (NCCL refuses two ranks on one GPU), so the cross-process case is
// not here (docs/backends.md). Labelled "gpu"; the GPU cases skip without a CUDA device, and the
// whole file skips where the CUDA module is not there.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_device.h"
#include "engine/backend/device.h"
#include "engine/backend/registry/registry.h"

namespace strata {
namespace {

backend::Backend& cuda() { return *backend::find_backend("cuda"); }

// The module must be there in a build that makes it: a missing one is a failure, not a skip.
#ifdef STRATA_BUILDS_CUDA_MODULE
#define REQUIRE_CUDA_BUILD() ASSERT_TRUE(cuda().present()) << cuda().describe()
#else
#define REQUIRE_CUDA_BUILD() \
  if (!cuda().present()) GTEST_SKIP() << cuda().describe()
#endif
#define REQUIRE_CUDA()            \
  REQUIRE_CUDA_BUILD();           \
  if (cuda().device_count() == 0) \
  GTEST_SKIP() << "no CUDA device: " << cuda().describe()

Expected<std::unique_ptr<backend::Device>> open_cuda0() {
  STRATA_ASSIGN_OR_RETURN(auto devices, backend::make_devices("cuda:0", 1, 0));
  return std::move(devices.front());
}

TEST(NcclRanks, UniqueIdsAreNcclSizedAndDistinct) {
  REQUIRE_CUDA_BUILD();
  auto a = cuda().collective_unique_id();
  auto b = cuda().collective_unique_id();
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(a->size(), 128u);  // NCCL_UNIQUE_ID_BYTES
  EXPECT_NE(*a, *b);
}

TEST(NcclRanks, AMemberThatIsNotACudaDeviceIsRefused) {
  REQUIRE_CUDA_BUILD();
  backend::CpuDevice cpu(1, uint64_t{1} << 20, 10.0);
  auto id = cuda().collective_unique_id();
  ASSERT_TRUE(id.ok()) << id.error().message;
  auto comm = cuda().make_rank_communicator({&cpu}, {*id, 2, {0}, nullptr});
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.error().code, Code::InvalidArgument);
  EXPECT_NE(comm.error().message.find("is not a CUDA device"), std::string::npos) << comm.error().message;
}

TEST(NcclRanks, BadPartsAreRefusedBeforeNcclIsAsked) {
  REQUIRE_CUDA();
  auto dev = open_cuda0();
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  auto id = cuda().collective_unique_id();
  ASSERT_TRUE(id.ok()) << id.error().message;
  // An index outside the group, a short id, an index per local member missing.
  auto outside = cuda().make_rank_communicator({dev->get()}, {*id, 2, {2}, nullptr});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("member index 2 outside a group of 2"), std::string::npos)
      << outside.error().message;
  auto short_id = cuda().make_rank_communicator({dev->get()}, {std::vector<uint8_t>(16), 1, {0}, nullptr});
  ASSERT_FALSE(short_id.ok());
  EXPECT_NE(short_id.error().message.find("nccl unique id of 16 bytes"), std::string::npos) << short_id.error().message;
  auto missing = cuda().make_rank_communicator({dev->get()}, {*id, 1, {}, nullptr});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, Code::InvalidArgument);
}

// One member: NCCL initializes a one-rank communicator (non-blocking, polled), the all-reduce over
// it leaves every float as it was, and the communicator is finalized and destroyed cleanly.
TEST(NcclRanks, OneMemberGroupInitializesAllReducesAndEnds) {
  REQUIRE_CUDA();
  auto dev = open_cuda0();
  ASSERT_TRUE(dev.ok()) << dev.error().message;
  backend::Device& d = **dev;
  constexpr size_t n = 4096;
  std::vector<float> in(n), out(n, 0.0f);
  for (size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i) * 0.25f - 300.0f;
  auto buffer = d.allocate(n * sizeof(float), backend::BufferUse::Scratch);
  ASSERT_TRUE(buffer.ok()) << buffer.error().message;
  float* data = reinterpret_cast<float*>((*buffer)->data());
  const size_t bytes = n * sizeof(float);
  ASSERT_TRUE(d.copy_from_host({in.data(), bytes, data, bytes, bytes, 1}).ok());
  {
    auto id = cuda().collective_unique_id();
    ASSERT_TRUE(id.ok()) << id.error().message;
    auto comm = cuda().make_rank_communicator({&d}, {*id, 1, {0}, [] { return std::string(); }});
    ASSERT_TRUE(comm.ok()) << comm.error().message;
    EXPECT_STREQ((*comm)->kind(), "nccl");
    float* buffers[] = {data};
    Status s = (*comm)->all_reduce_sum(buffers, n);
    ASSERT_TRUE(s.ok()) << s.error().message;
  }
  ASSERT_TRUE(d.copy_to_host({data, bytes, out.data(), bytes, bytes, 1}).ok());
  EXPECT_EQ(std::memcmp(in.data(), out.data(), bytes), 0);
}

}  // namespace
}  // namespace strata
