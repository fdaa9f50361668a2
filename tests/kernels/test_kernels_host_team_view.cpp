// The team rules a HostTeamView is built under (kernels/team/team_rules.cpp): every field of a HostTeamSpec a
// caller can get wrong is refused, naming the field, before a launch reads it. Runs everywhere (no GPU): the
// workspaces are fake addresses, the rules only look at their values.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>

#include "kernels/all_reduce.h"
#include "kernels/team.h"
#include "kernels/team/host_team.h"

namespace arfit::kernels {
namespace {

constexpr std::int64_t kMaxBytes = 1 << 20;
const std::int64_t kWorkspaceBytes = workspace_allocation_bytes(kMaxBytes);
const std::uint32_t* const kAbortWord = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{0x7000});

void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }
std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// A virtual node of `nranks` ranks whose workspaces are 256 MiB apart: what the rules accept.
HostTeamSpec good_spec(int nranks = 4) {
  HostTeamSpec s;
  for (int r = 0; r < nranks; ++r) s.workspaces.push_back({fake(0x10000000u * (r + 1u)), kWorkspaceBytes});
  s.first_rank = 0;
  s.local_ranks = nranks;
  s.max_bytes = kMaxBytes;
  s.max_blocks_per_rank = 2;
  s.abort_flag = kAbortWord;
  return s;
}

struct Refusal {
  std::string message;
  KernelParam parameter = KernelParam::None;
  bool refused = false;
};

Refusal refusal_of(const std::function<void(HostTeamSpec&)>& change) {
  HostTeamSpec s = good_spec();
  change(s);
  try {
    HostTeamView view("test team", s);
  } catch (const KernelError& e) {
    return {e.what(), e.parameter(), true};
  }
  return {};
}

// Asserts that `change` is refused with `parameter` and a message that starts with the team's name and holds
// `needle` (the field).
void expect_refused(const std::function<void(HostTeamSpec&)>& change, KernelParam parameter, const std::string& needle) {
  const Refusal r = refusal_of(change);
  ASSERT_TRUE(r.refused) << "accepted; expected a refusal naming " << needle;
  EXPECT_EQ(r.parameter, parameter) << r.message;
  EXPECT_EQ(r.message.rfind("test team", 0), 0u) << r.message;
  EXPECT_NE(r.message.find(needle), std::string::npos) << r.message;
}

TEST(HostTeamView, AcceptsAWellFormedSpecAndBuildsTheTableFromIt) {
  for (int nranks : {2, 4, 8}) {
    for (int first : {0, nranks - 1}) {
      HostTeamSpec s = good_spec(nranks);
      s.first_rank = first;
      s.local_ranks = first == 0 ? nranks : 1;
      const HostTeamView view("test team", s);
      EXPECT_EQ(view.shape().nranks, nranks);
      EXPECT_EQ(view.shape().local_ranks, s.local_ranks);
      EXPECT_EQ(view.shape().max_bytes, kMaxBytes);
      EXPECT_EQ(view.max_blocks_per_rank(), 2);
      EXPECT_EQ(view.table().first_rank, first);
      EXPECT_EQ(view.table().abort_flag, kAbortWord);
      for (int r = 0; r < nranks; ++r) {
        const std::uintptr_t base = address_of(s.workspaces[static_cast<std::size_t>(r)].base);
        EXPECT_EQ(address_of(view.table().signals[r]), base);
        EXPECT_EQ(address_of(view.table().staging[r]), base + sizeof(RankSignals));
        EXPECT_EQ(address_of(view.table().scratch[r]), base + sizeof(RankSignals) + kMaxBytes);
      }
    }
  }
  // A larger region than needed, and no abort word, are fine.
  EXPECT_FALSE(refusal_of([](HostTeamSpec& s) { s.workspaces[1].bytes += 4096; }).refused);
  EXPECT_FALSE(refusal_of([](HostTeamSpec& s) { s.abort_flag = nullptr; }).refused);
}

// The team's size is the number of workspaces: 3 is a size no kernel is instantiated for, 9 would have written past
// the pointer table's kMaxRanks entries.
TEST(HostTeamView, RefusesAWorkspaceCountTheKernelsAreNotBuiltFor) {
  for (int n : {0, 1, 3, 9}) {
    expect_refused([n](HostTeamSpec& s) {
      s = good_spec(n == 9 ? 8 : n);
      if (n == 9) s.workspaces.push_back({fake(0x90000000u), kWorkspaceBytes});
      s.local_ranks = 1;
    }, KernelParam::Ranks, "workspaces per rank): unsupported rank count " + std::to_string(n));
  }
}

// first_rank and local_ranks must name ranks of the team: the kernels index every table by first_rank + k.
TEST(HostTeamView, RefusesLocalRanksOutsideTheTeam) {
  expect_refused([](HostTeamSpec& s) { s.first_rank = 4; s.local_ranks = 1; }, KernelParam::LocalRanks, "first_rank 4");
  expect_refused([](HostTeamSpec& s) { s.first_rank = -1; s.local_ranks = 1; }, KernelParam::LocalRanks, "first_rank -1");
  expect_refused([](HostTeamSpec& s) { s.first_rank = 1; }, KernelParam::LocalRanks, "local_ranks 4");
  expect_refused([](HostTeamSpec& s) { s.local_ranks = 0; }, KernelParam::LocalRanks, "local_ranks 0");
  expect_refused([](HostTeamSpec& s) { s.local_ranks = 5; }, KernelParam::LocalRanks, "local_ranks 5");
}

// max_bytes is the workspace's layout: team_max_bytes' range, and a multiple of 128 (a scratch slot at staging +
// 1000 bytes would misalign every 16-byte vector in it).
TEST(HostTeamView, RefusesAMaxBytesTheWorkspacesCannotBeLaidOutWith) {
  expect_refused([](HostTeamSpec& s) { s.max_bytes = 1000; }, KernelParam::Workspace, "max_bytes 1000 is not a multiple of 128");
  expect_refused([](HostTeamSpec& s) { s.max_bytes = 0; }, KernelParam::Workspace, "max_bytes must be in 1..");
  expect_refused([](HostTeamSpec& s) { s.max_bytes = std::int64_t{1} << 62; }, KernelParam::Workspace,
                 "max_bytes must be in 1..");
}

// The signal area has flags for kMaxBlocksPerRank blocks: a launch with more would write past them.
TEST(HostTeamView, RefusesBlocksPerRankTheSignalsHaveNoRoomFor) {
  for (int blocks : {0, -1, kMaxBlocksPerRank + 1}) {
    expect_refused([blocks](HostTeamSpec& s) { s.max_blocks_per_rank = blocks; }, KernelParam::Device,
                   "max_blocks_per_rank: blocks per rank must be in 1..64, got " + std::to_string(blocks));
  }
}

TEST(HostTeamView, RefusesAMisalignedAbortWord) {
  expect_refused([](HostTeamSpec& s) { s.abort_flag = reinterpret_cast<const std::uint32_t*>(std::uintptr_t{0x7002}); },
                 KernelParam::None, "abort_flag 0x7002 is not 4-byte aligned");
}

TEST(HostTeamView, RefusesAMissingMisalignedOrShortWorkspace) {
  expect_refused([](HostTeamSpec& s) { s.workspaces[2].base = nullptr; }, KernelParam::Workspace,
                 "workspaces[2].base is null");
  expect_refused([](HostTeamSpec& s) { s.workspaces[1].base = fake(0x20000040); }, KernelParam::Workspace,
                 "workspaces[1].base 0x20000040 is not 128-byte aligned");
  expect_refused([](HostTeamSpec& s) { s.workspaces[3].bytes = kWorkspaceBytes - 1; }, KernelParam::Workspace,
                 "workspaces[3].bytes " + std::to_string(kWorkspaceBytes - 1));
  expect_refused([](HostTeamSpec& s) { s.workspaces[3].bytes = -1; }, KernelParam::Workspace, "workspaces[3].bytes -1");
  // A region that would run past the end of the address space (its end wraps to a small address).
  expect_refused([](HostTeamSpec& s) { s.workspaces[0].base = fake(std::numeric_limits<std::uintptr_t>::max() - 127); },
                 KernelParam::Workspace, "workspaces[0].bytes");
}

// Two ranks on the same memory (a duplicated pointer) or on overlapping memory overwrite each other's flags and
// staged inputs: a wrong sum or a barrier that never completes, instead of a refusal.
TEST(HostTeamView, RefusesSharedOrOverlappingWorkspaces) {
  expect_refused([](HostTeamSpec& s) { s.workspaces[3].base = s.workspaces[1].base; }, KernelParam::Workspace,
                 "workspaces[1] [0x20000000, +" + std::to_string(kWorkspaceBytes) + " bytes) overlaps workspaces[3]");
  expect_refused([](HostTeamSpec& s) {
    s.workspaces[2].base = fake(address_of(s.workspaces[1].base) + static_cast<std::uintptr_t>(kWorkspaceBytes) - 128);
  }, KernelParam::Workspace, "workspaces[1] [0x20000000");
  // Only the bytes the kernels touch count: a region reported larger than needed may reach the next one.
  EXPECT_FALSE(refusal_of([](HostTeamSpec& s) { s.workspaces[0].bytes = 0x20000000; }).refused);
}

// HostTeam checks the same rules before it allocates, and its own view passes them.
TEST(HostTeamView, HostTeamSharesTheRules) {
  EXPECT_THROW(HostTeam(3, kMaxBytes, 1), KernelError);
  EXPECT_THROW(HostTeam(2, kMaxBytes, 0), KernelError);
  EXPECT_THROW(HostTeam(2, kMaxBytes, kMaxBlocksPerRank + 1), KernelError);
  HostTeam team(2, 1000, 3);
  EXPECT_EQ(team.view().shape().max_bytes, 1024);
  EXPECT_EQ(team.view().max_blocks_per_rank(), 3);
  team.set_barrier_timeout_ns(12345);
  EXPECT_EQ(team.view().table().barrier_timeout_ns, 12345u);
}

}  // namespace
}  // namespace arfit::kernels
