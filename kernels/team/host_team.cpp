#include "kernels/team/host_team.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/team.h"

namespace arfit::kernels {

HostTeam::HostTeam(int nranks, std::int64_t max_bytes, int max_blocks_per_rank)
    : nranks_(nranks), max_blocks_per_rank_(max_blocks_per_rank) {
  // The team rules HostTeamView checks again, here before anything is allocated.
  check_team_ranks("HostTeam", nranks);
  max_bytes_ = team_max_bytes("HostTeam", max_bytes);
  check_blocks_per_rank("HostTeam", max_blocks_per_rank);
  const auto bytes = static_cast<std::size_t>(workspace_allocation_bytes(max_bytes_));
  for (int r = 0; r < nranks; ++r) {
    buffers_.emplace_back(bytes);
    std::memset(static_cast<char*>(buffers_.back().data()) + sizeof(RankSignals), 0xff, bytes - sizeof(RankSignals));
  }
  reset_signals();
  view_ = HostTeamView("HostTeam", spec());
}

HostTeam::~HostTeam() = default;

HostTeamSpec HostTeam::spec() const {
  HostTeamSpec s;
  for (const PageAlignedBuffer& b : buffers_) s.workspaces.push_back({b.data(), static_cast<std::int64_t>(b.size())});
  s.first_rank = 0;
  s.local_ranks = nranks_;
  s.max_bytes = max_bytes_;
  s.max_blocks_per_rank = max_blocks_per_rank_;
  s.abort_flag = &abort_word_;
  s.barrier_timeout_ns = barrier_timeout_ns_;
  return s;
}

void HostTeam::set_barrier_timeout_ns(std::uint64_t ns) {
  barrier_timeout_ns_ = ns;
  view_ = HostTeamView("HostTeam", spec());
}

void HostTeam::reset_signals() {
  for (const PageAlignedBuffer& b : buffers_) std::memset(b.data(), 0, sizeof(RankSignals));
}

void HostTeam::request_abort() { __atomic_store_n(&abort_word_, 1u, __ATOMIC_RELAXED); }
void HostTeam::clear_abort() { __atomic_store_n(&abort_word_, 0u, __ATOMIC_RELAXED); }

}  // namespace arfit::kernels
