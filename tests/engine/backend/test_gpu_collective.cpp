// tests/engine/backend/test_gpu_collective.cpp — the all-reduce of a tensor-parallel group of CUDA
// devices ordered on the devices' own queues (Communicator::all_reduce_sum_queued, NCCL with events):
// ops queued before it on each member's stream write its inputs, ops queued after it read its sum,
// and nothing in between waits on the host. Rounds of scale -> all-reduce -> add run with no
// synchronize until the end; every value is a small integer, so the check is exact. On the emulated
// GPUs (tests/cuda_emu) each stream is its own worker thread, so a missing event would show as a
// wrong sum. And NCCL's own device memory is charged to each member's accounting while the
// communicator lives, so a device whose memory is promised elsewhere refuses the communicator,
// naming NCCL. Labelled "gpu"; skips where there are fewer than two CUDA devices.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/communicator.h"
#include "engine/backend/device.h"
#include "engine/backend/ops.h"
#include "engine/backend/registry/registry.h"

namespace strata {
namespace {

struct Member {
  std::unique_ptr<backend::Device> device;
  std::unique_ptr<backend::Buffer> scores, data, bias;
  std::unique_ptr<backend::Ops> ops;
};

void put(backend::Device& d, backend::Buffer& dst, const std::vector<float>& v) {
  backend::Copy2D c;
  c.src = v.data();
  c.src_pitch = v.size() * sizeof(float);
  c.dst = dst.data();
  c.dst_pitch = c.src_pitch;
  c.width = c.src_pitch;
  c.height = 1;
  Status s = d.copy_from_host(c);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
}

TEST(GpuCollective, QueuedAllReduceIsOrderedBetweenEachMembersOps) {
  backend::Backend* cuda = backend::find_backend("cuda");
  if (cuda->device_count() < 2) GTEST_SKIP() << "needs two CUDA devices: " << cuda->describe();
  auto opened = backend::make_devices("cuda:0,cuda:1", 1, 0);
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  ASSERT_EQ(opened->size(), 2u);

  const int64_t n = 3 * 4096 + 5;  // several blocks of every kernel, a ragged end
  std::vector<Member> m(2);
  std::vector<std::vector<float>> want(2), bias(2);
  for (size_t i = 0; i < 2; ++i) {
    m[i].device = std::move((*opened)[i]);
    auto alloc = [&](size_t bytes) {
      auto b = m[i].device->allocate(bytes, backend::BufferUse::Scratch);
      EXPECT_TRUE(b.ok()) << b.error().to_string();
      return b.ok() ? std::move(*b) : nullptr;
    };
    m[i].scores = alloc(64 * sizeof(float));
    m[i].data = alloc(static_cast<size_t>(n) * sizeof(float));
    m[i].bias = alloc(static_cast<size_t>(n) * sizeof(float));
    ASSERT_TRUE(m[i].scores && m[i].data && m[i].bias);
    backend::OpsWorkspace ws;
    ws.scores = m[i].scores->floats();
    ws.scores_per_thread = 64;
    ws.max_ctx = 64;
    ws.max_tokens = 8;
    auto ops = m[i].device->create_ops(ws);
    ASSERT_TRUE(ops.ok()) << ops.error().to_string();
    m[i].ops = std::move(*ops);
    want[i].resize(static_cast<size_t>(n));
    bias[i].resize(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      want[i][static_cast<size_t>(j)] = static_cast<float>((j * 7 + static_cast<int64_t>(i) * 3) % 11);
      bias[i][static_cast<size_t>(j)] = static_cast<float>((j + static_cast<int64_t>(i) * 5) % 4 + 1);
    }
    put(*m[i].device, *m[i].data, want[i]);
    put(*m[i].device, *m[i].bias, bias[i]);
  }
  auto comm = cuda->make_communicator({m[0].device.get(), m[1].device.get()});
  ASSERT_TRUE(comm.ok()) << comm.error().to_string();
  EXPECT_TRUE((*comm)->queues_on_devices());

  std::vector<backend::Ops*> ops = {m[0].ops.get(), m[1].ops.get()};
  std::vector<float*> buffers = {m[0].data->floats(), m[1].data->floats()};
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < 2; ++i) {
      // Before the sum, on member i's stream: x *= 2.
      Status s = m[i].ops->scale(buffers[i], 2.0f, n);
      ASSERT_TRUE(s.ok()) << s.error().to_string();
      for (float& v : want[i]) v *= 2.0f;
    }
    Status s = (*comm)->all_reduce_sum_queued(ops, buffers, static_cast<size_t>(n));
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    for (int64_t j = 0; j < n; ++j) {
      const float sum = want[0][static_cast<size_t>(j)] + want[1][static_cast<size_t>(j)];
      want[0][static_cast<size_t>(j)] = want[1][static_cast<size_t>(j)] = sum;
    }
    for (size_t i = 0; i < 2; ++i) {
      // After the sum, on member i's stream: x += bias_i (the members differ again).
      Status a = m[i].ops->add(buffers[i], m[i].bias->floats(), n);
      ASSERT_TRUE(a.ok()) << a.error().to_string();
      for (int64_t j = 0; j < n; ++j) want[i][static_cast<size_t>(j)] += bias[i][static_cast<size_t>(j)];
    }
  }
  for (size_t i = 0; i < 2; ++i) {
    std::vector<float> got(static_cast<size_t>(n));
    Status s = m[i].ops->to_host(buffers[i], got.data(), got.size() * sizeof(float));
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(got[static_cast<size_t>(j)], want[i][static_cast<size_t>(j)])
          << "member " << i << " element " << j << " after 3 rounds of scale, all-reduce, add";
  }
}

TEST(GpuCollective, NcclMemoryIsChargedToEachMember) {
  backend::Backend* cuda = backend::find_backend("cuda");
  if (cuda->device_count() < 2) GTEST_SKIP() << "needs two CUDA devices: " << cuda->describe();
  auto opened = backend::make_devices("cuda:0,cuda:1", 1, 0);
  ASSERT_TRUE(opened.ok()) << opened.error().to_string();
  std::vector<backend::Device*> members = {(*opened)[0].get(), (*opened)[1].get()};
  const uint64_t before0 = members[0]->memory_use().overhead, before1 = members[1]->memory_use().overhead;
  {
    auto comm = cuda->make_communicator(members);
    ASSERT_TRUE(comm.ok()) << comm.error().to_string();
    // NCCL allocates its buffers on every member (the emulated NCCL: STRATA_CUDA_EMU_NCCL_MIB, 64 MiB).
    EXPECT_GE(members[0]->memory_use().overhead, before0 + (uint64_t{1} << 20)) << "NCCL's memory on cuda:0 not charged";
    EXPECT_GE(members[1]->memory_use().overhead, before1 + (uint64_t{1} << 20)) << "NCCL's memory on cuda:1 not charged";
  }
  EXPECT_EQ(members[0]->memory_use().overhead, before0) << "the charge outlived the communicator";
  EXPECT_EQ(members[1]->memory_use().overhead, before1) << "the charge outlived the communicator";

  // cuda:1's memory promised elsewhere, all but 1 MiB: the communicator is refused, naming NCCL.
  const uint64_t free1 = members[1]->bytes_free();
  ASSERT_GT(free1, uint64_t{1} << 20);
  auto promised = members[1]->adopt(nullptr, free1 - (uint64_t{1} << 20), backend::BufferUse::Weights);
  ASSERT_TRUE(promised.ok()) << promised.error().to_string();
  auto refused = cuda->make_communicator(members);
  ASSERT_FALSE(refused.ok()) << "a communicator on a device with 1 MiB left was made";
  EXPECT_EQ(refused.error().code, Code::OutOfMemory) << refused.error().to_string();
  EXPECT_NE(refused.error().message.find("NCCL"), std::string::npos) << refused.error().message;
}

}  // namespace
}  // namespace strata
