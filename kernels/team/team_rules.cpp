// The host-side rules of team construction and teardown (kernels/team.h): plain C++, tested without a GPU.
#include <algorithm>
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
