// The host-side rules of team construction and teardown (kernels/team.h): plain C++, tested without a GPU.
#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernels/team.h"

namespace arfit::kernels {

int co_resident_blocks_per_rank(int active_blocks_per_sm, int sms, int local_ranks) {
  const long long resident = static_cast<long long>(std::max(0, active_blocks_per_sm)) * std::max(0, sms);
  const long long per_rank = resident / std::max(1, local_ranks);
  if (per_rank < 1) {
    throw KernelError("Team: " + std::to_string(sms) + " SMs holding " + std::to_string(active_blocks_per_sm) +
                          " all-reduce block(s) each cannot keep one block of each of the " +
                          std::to_string(local_ranks) +
                          " virtual ranks resident at once (the barriers would wait for blocks that never start)",
                      KernelParam::Device);
  }
  return static_cast<int>(std::min<long long>(per_rank, kMaxBlocksPerRank));
}

void check_team_ranks(const std::string& who, int nranks) {
  if (!custom_all_reduce_supports_ranks(nranks)) {
    throw KernelError(who + ": unsupported rank count " + std::to_string(nranks) +
                          " (the custom kernels are instantiated for 2, 4 or 8 ranks)",
                      KernelParam::Ranks);
  }
}

void check_blocks_per_rank(const std::string& who, int blocks) {
  if (blocks < 1 || blocks > kMaxBlocksPerRank) {
    throw KernelError(who + ": blocks per rank must be in 1.." + std::to_string(kMaxBlocksPerRank) + ", got " +
                          std::to_string(blocks),
                      KernelParam::Device);
  }
}

std::int64_t team_max_bytes(const std::string& who, std::int64_t max_bytes) {
  constexpr std::int64_t kAlign = 128;
  // The largest multiple of 128 whose workspace (signals + staging + scratch slots) fits in an int64.
  constexpr std::int64_t kLargest =
      (std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(sizeof(RankSignals))) /
      (1 + kScratchSlots) / kAlign * kAlign;
  if (max_bytes <= 0 || max_bytes > kLargest) {
    throw KernelError(who + ": max_bytes must be in 1.." + std::to_string(kLargest) + ", got " + std::to_string(max_bytes),
                      KernelParam::Workspace);
  }
  return (max_bytes + kAlign - 1) / kAlign * kAlign;
}

namespace {

// The bytes of rank r's workspace the kernels touch, [begin, end), once its base and size were checked.
struct WorkspaceExtent {
  std::uintptr_t begin, end;
};

std::string workspace_name(std::size_t r) { return "workspaces[" + std::to_string(r) + "]"; }

// One rank's workspace: present, aligned as RankSignals (the flags sit at its start; staging and scratch follow at
// multiples of 128), and holding signals + staging + scratch slots for max_bytes without wrapping the address space.
WorkspaceExtent checked_workspace(const std::string& who, std::size_t r, const WorkspaceRegion& region,
                                  std::int64_t max_bytes) {
  const std::string name = who + ": " + workspace_name(r);
  const auto begin = reinterpret_cast<std::uintptr_t>(region.base);
  if (!region.base) throw KernelError(name + ".base is null", KernelParam::Workspace);
  if (begin % alignof(RankSignals) != 0) {
    throw KernelError(name + ".base " + address_text(region.base) + " is not " + std::to_string(alignof(RankSignals)) +
                          "-byte aligned (the signal area's alignment; staging and scratch follow it)",
                      KernelParam::Workspace);
  }
  const std::int64_t needed = workspace_allocation_bytes(max_bytes);
  if (region.bytes < needed || begin > std::numeric_limits<std::uintptr_t>::max() - static_cast<std::uintptr_t>(needed)) {
    throw KernelError(name + ".bytes " + std::to_string(region.bytes) + " at " + address_text(region.base) +
                          " cannot hold the " + std::to_string(needed) + " bytes of a workspace for max_bytes " +
                          std::to_string(max_bytes) + " (signals, staging and " + std::to_string(kScratchSlots) +
                          " scratch slots)",
                      KernelParam::Workspace);
  }
  return {begin, begin + static_cast<std::uintptr_t>(needed)};
}

// Every rank needs its own signals, staging and scratch: two ranks on the same (or overlapping) memory would
// overwrite each other's flags and staged inputs.
void require_disjoint_workspaces(const std::string& who, const std::vector<WorkspaceExtent>& extents) {
  for (std::size_t a = 0; a < extents.size(); ++a) {
    for (std::size_t b = a + 1; b < extents.size(); ++b) {
      if (extents[a].begin >= extents[b].end || extents[b].begin >= extents[a].end) continue;
      throw KernelError(who + ": " + workspace_name(a) + " " + byte_range_text(extents[a].begin, extents[a].end) +
                            " overlaps " + workspace_name(b) + " " + byte_range_text(extents[b].begin, extents[b].end) +
                            " (every rank needs its own workspace)",
                        KernelParam::Workspace);
    }
  }
}

}  // namespace

HostTeamView::HostTeamView(const std::string& who, const HostTeamSpec& spec) {
  const std::size_t entries = spec.workspaces.size();
  const auto nranks = static_cast<int>(std::min<std::size_t>(entries, std::numeric_limits<int>::max()));
  check_team_ranks(who + " (one entry of workspaces per rank)", nranks);
  if (spec.local_ranks < 1 || spec.first_rank < 0 || spec.first_rank > nranks - spec.local_ranks) {
    throw KernelError(who + ": first_rank " + std::to_string(spec.first_rank) + " and local_ranks " +
                          std::to_string(spec.local_ranks) + " must name ranks of the team's " + std::to_string(nranks) +
                          " (0 <= first_rank, 1 <= local_ranks, first_rank + local_ranks <= " + std::to_string(nranks) +
                          ")",
                      KernelParam::LocalRanks);
  }
  if (team_max_bytes(who, spec.max_bytes) != spec.max_bytes) {
    throw KernelError(who + ": max_bytes " + std::to_string(spec.max_bytes) +
                          " is not a multiple of 128 (the staging and scratch slots it separates must stay aligned: pass "
                          "the limit team_max_bytes returned, which the workspaces were laid out with)",
                      KernelParam::Workspace);
  }
  check_blocks_per_rank(who + " max_blocks_per_rank", spec.max_blocks_per_rank);
  if (reinterpret_cast<std::uintptr_t>(spec.abort_flag) % alignof(std::uint32_t) != 0) {
    throw KernelError(who + ": abort_flag " + address_text(spec.abort_flag) +
                      " is not " + std::to_string(alignof(std::uint32_t)) +
                      "-byte aligned (the barrier waits load it atomically)");
  }
  std::vector<WorkspaceExtent> extents;
  std::vector<void*> bases;
  for (std::size_t r = 0; r < entries; ++r) {
    extents.push_back(checked_workspace(who, r, spec.workspaces[r], spec.max_bytes));
    bases.push_back(spec.workspaces[r].base);
  }
  require_disjoint_workspaces(who, extents);
  shape_ = TeamShape{nranks, spec.local_ranks, spec.max_bytes};
  table_ = team_pointers(bases.data(), nranks, spec.first_rank, spec.local_ranks, spec.max_bytes, 1, spec.abort_flag,
                         spec.barrier_timeout_ns);
  max_blocks_per_rank_ = spec.max_blocks_per_rank;
}

std::optional<std::pair<int, int>> ranks_sharing_a_device(const std::vector<std::string>& device_ids) {
  for (std::size_t a = 0; a < device_ids.size(); ++a) {
    for (std::size_t b = a + 1; b < device_ids.size(); ++b) {
      if (device_ids[a] == device_ids[b]) return std::make_pair(static_cast<int>(a), static_cast<int>(b));
    }
  }
  return std::nullopt;
}

void ipc_teardown(HandleExchange& exchange, const std::function<void()>& close_imports,
                  const std::function<void()>& free_own) {
  close_imports();
  exchange.barrier();  // every rank has closed its mappings of the memory freed below
  free_own();
}

}  // namespace arfit::kernels
