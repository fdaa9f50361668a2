#include "kernels/team/host_team.h"

#include <cstdlib>
#include <cstring>
#include <new>

#include "kernels/team.h"

namespace arfit::kernels {

HostTeam::HostTeam(int nranks, std::int64_t max_bytes, int max_blocks_per_rank)
    : nranks_(nranks), max_blocks_per_rank_(max_blocks_per_rank) {
  if (!custom_all_reduce_supports_ranks(nranks)) {
    throw KernelError("HostTeam: unsupported rank count " + std::to_string(nranks) + " (2, 4 or 8)", KernelParam::Ranks);
  }
  max_bytes_ = team_max_bytes("HostTeam", max_bytes);
  if (max_blocks_per_rank < 1 || max_blocks_per_rank > kMaxBlocksPerRank) {
    throw KernelError("HostTeam: blocks per rank must be in 1.." + std::to_string(kMaxBlocksPerRank), KernelParam::Device);
  }
  const auto bytes = static_cast<std::size_t>(workspace_allocation_bytes(max_bytes_));
  for (int r = 0; r < nranks; ++r) {
    buffers_.emplace_back(bytes);
    workspace_.push_back(buffers_.back().data());
    std::memset(static_cast<char*>(workspace_.back()) + sizeof(RankSignals), 0xff, bytes - sizeof(RankSignals));
  }
  reset_signals();
}

HostTeam::~HostTeam() = default;

HostTeamView HostTeam::view() const {
  HostTeamView v;
  v.shape = TeamShape{nranks_, nranks_, max_bytes_};
  v.table = team_pointers(workspace_.data(), nranks_, 0, nranks_, max_bytes_, 1, &abort_word_, barrier_timeout_ns_);
  v.max_blocks_per_rank = max_blocks_per_rank_;
  return v;
}

void HostTeam::reset_signals() {
  for (void* p : workspace_) std::memset(p, 0, sizeof(RankSignals));
}

void HostTeam::request_abort() { __atomic_store_n(&abort_word_, 1u, __ATOMIC_RELAXED); }
void HostTeam::clear_abort() { __atomic_store_n(&abort_word_, 0u, __ATOMIC_RELAXED); }

}  // namespace arfit::kernels
