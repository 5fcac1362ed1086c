// tests/engine/comm/test_group_transport.cpp — the all-reduce each tensor group gets, from its
// members' collectives (DeviceCaps::collective) and ranks (comm/group_transport.h): the backend's
// collective (NCCL) only when every member has the same one and this process runs it, across ranks
// or within one; the host sum (and MPI between ranks) otherwise. Pure: runs without a GPU and
// without MPI.
#include <gtest/gtest.h>

#include <vector>

#include "engine/comm/group_transport.h"

namespace strata::comm {
namespace {

// The caps.collective of a CUDA GPU, and of the CPU and simulated devices (none of their own).
const char* const kCuda = "nccl";
const char* const kCpu = "";
const char* const kSim = "";

struct Case {
  const char* name;
  std::vector<GroupMember> members;
  bool nccl_built;
  GroupTransport want;
};

class GroupTransportTest : public ::testing::TestWithParam<Case> {};

TEST_P(GroupTransportTest, ChoosesFromKindsAndRanks) {
  const Case& c = GetParam();
  const GroupChoice got = choose_group_transport(c.members, [&](const std::string& name) {
    return c.nccl_built && name == "nccl";
  });
  EXPECT_EQ(static_cast<int>(got.transport), static_cast<int>(c.want));
  const bool collective = c.want == GroupTransport::Collective || c.want == GroupTransport::CollectiveAcrossRanks;
  EXPECT_EQ(got.collective, collective ? "nccl" : "");
}

INSTANTIATE_TEST_SUITE_P(
    Groups, GroupTransportTest,
    ::testing::Values(
        // One process.
        Case{"two_gpus_one_rank", {{0, kCuda}, {0, kCuda}}, true, GroupTransport::Collective},
        Case{"two_gpus_one_rank_no_nccl_build", {{0, kCuda}, {0, kCuda}}, false, GroupTransport::Host},
        Case{"gpu_and_cpu_one_rank", {{0, kCuda}, {0, kCpu}}, true, GroupTransport::Host},
        Case{"two_sims_one_rank", {{0, kSim}, {0, kSim}}, true, GroupTransport::Host},
        Case{"one_gpu", {{0, kCuda}}, true, GroupTransport::Host},
        Case{"no_member", {}, true, GroupTransport::Host},
        // A worker's view of a group all on rank 2 is still one process's group.
        Case{"two_gpus_rank2", {{2, kCuda}, {2, kCuda}}, true, GroupTransport::Collective},
        // Across ranks.
        Case{"gpu_per_rank", {{0, kCuda}, {1, kCuda}}, true, GroupTransport::CollectiveAcrossRanks},
        Case{"two_gpus_rank1_one_rank0", {{1, kCuda}, {1, kCuda}, {0, kCuda}}, true, GroupTransport::CollectiveAcrossRanks},
        Case{"workers_only", {{1, kCuda}, {2, kCuda}}, true, GroupTransport::CollectiveAcrossRanks},
        Case{"gpu_per_rank_no_nccl_build", {{0, kCuda}, {1, kCuda}}, false, GroupTransport::HostAndMpi},
        Case{"cpu_per_rank", {{0, kCpu}, {1, kCpu}}, true, GroupTransport::HostAndMpi},
        Case{"gpu_and_remote_cpu", {{0, kCuda}, {1, kCpu}}, true, GroupTransport::HostAndMpi},
        Case{"gpus_and_one_sim", {{0, kCuda}, {1, kCuda}, {1, kSim}}, true, GroupTransport::HostAndMpi}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(GroupTransport, NamesAreTheCommunicatorKinds) {
  // The names match Communicator::kind() of what each choice builds ("mpi": RankCommunicator).
  EXPECT_EQ((GroupChoice{GroupTransport::Host, ""}.name()), "host");
  EXPECT_EQ((GroupChoice{GroupTransport::Collective, "nccl"}.name()), "nccl");
  EXPECT_EQ((GroupChoice{GroupTransport::HostAndMpi, ""}.name()), "mpi");
  EXPECT_EQ((GroupChoice{GroupTransport::CollectiveAcrossRanks, "nccl"}.name()), "nccl-ranks");
}

// Members with different collectives (two backends' GPUs) share none: the host reduces.
TEST(GroupTransport, DifferentCollectivesTakeTheHost) {
  const std::vector<GroupMember> mixed = {{0, "nccl"}, {0, "rccl"}};
  EXPECT_EQ(choose_group_transport(mixed, [](const std::string&) { return true; }).transport, GroupTransport::Host);
  const std::vector<GroupMember> ranks = {{0, "nccl"}, {1, "rccl"}};
  EXPECT_EQ(choose_group_transport(ranks, [](const std::string&) { return true; }).transport,
            GroupTransport::HostAndMpi);
}

}  // namespace
}  // namespace strata::comm
