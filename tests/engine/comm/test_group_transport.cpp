// tests/engine/comm/test_group_transport.cpp — the all-reduce each tensor group gets, from its
// members' kinds and ranks (comm/group_transport.h): NCCL only when every member is a CUDA GPU and
// the build has NCCL, across ranks or within one; the host sum (and MPI between ranks) otherwise.
// Pure: runs without a GPU and without MPI.
#include <gtest/gtest.h>

#include <vector>

#include "engine/comm/group_transport.h"

namespace strata::comm {
namespace {

constexpr DeviceKind kCuda = DeviceKind::Cuda, kCpu = DeviceKind::Cpu, kSim = DeviceKind::Simulated;

struct Case {
  const char* name;
  std::vector<GroupMember> members;
  bool nccl_built;
  GroupTransport want;
};

class GroupTransportTest : public ::testing::TestWithParam<Case> {};

TEST_P(GroupTransportTest, ChoosesFromKindsAndRanks) {
  const Case& c = GetParam();
  EXPECT_EQ(group_transport_name(choose_group_transport(c.members, c.nccl_built)), group_transport_name(c.want));
}

INSTANTIATE_TEST_SUITE_P(
    Groups, GroupTransportTest,
    ::testing::Values(
        // One process.
        Case{"two_gpus_one_rank", {{0, kCuda}, {0, kCuda}}, true, GroupTransport::Nccl},
        Case{"two_gpus_one_rank_no_nccl_build", {{0, kCuda}, {0, kCuda}}, false, GroupTransport::Host},
        Case{"gpu_and_cpu_one_rank", {{0, kCuda}, {0, kCpu}}, true, GroupTransport::Host},
        Case{"two_sims_one_rank", {{0, kSim}, {0, kSim}}, true, GroupTransport::Host},
        Case{"one_gpu", {{0, kCuda}}, true, GroupTransport::Host},
        Case{"no_member", {}, true, GroupTransport::Host},
        // A worker's view of a group all on rank 2 is still one process's group.
        Case{"two_gpus_rank2", {{2, kCuda}, {2, kCuda}}, true, GroupTransport::Nccl},
        // Across ranks.
        Case{"gpu_per_rank", {{0, kCuda}, {1, kCuda}}, true, GroupTransport::NcclAcrossRanks},
        Case{"two_gpus_rank1_one_rank0", {{1, kCuda}, {1, kCuda}, {0, kCuda}}, true, GroupTransport::NcclAcrossRanks},
        Case{"workers_only", {{1, kCuda}, {2, kCuda}}, true, GroupTransport::NcclAcrossRanks},
        Case{"gpu_per_rank_no_nccl_build", {{0, kCuda}, {1, kCuda}}, false, GroupTransport::HostAndMpi},
        Case{"cpu_per_rank", {{0, kCpu}, {1, kCpu}}, true, GroupTransport::HostAndMpi},
        Case{"gpu_and_remote_cpu", {{0, kCuda}, {1, kCpu}}, true, GroupTransport::HostAndMpi},
        Case{"gpus_and_one_sim", {{0, kCuda}, {1, kCuda}, {1, kSim}}, true, GroupTransport::HostAndMpi}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(GroupTransport, NamesAreTheCommunicatorKinds) {
  // The names match Communicator::kind() of what each choice builds ("mpi": RankCommunicator).
  EXPECT_STREQ(group_transport_name(GroupTransport::Host), "host");
  EXPECT_STREQ(group_transport_name(GroupTransport::Nccl), "nccl");
  EXPECT_STREQ(group_transport_name(GroupTransport::HostAndMpi), "mpi");
}

}  // namespace
}  // namespace strata::comm
