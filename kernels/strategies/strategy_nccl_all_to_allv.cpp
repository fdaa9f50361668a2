// NCCL all-to-allv: grouped ncclSend/ncclRecv with per-peer counts from the case's nranks x nranks matrix
// (row = sender), which arbench fills from its split generators (bench/alltoallv_splits.h: cyclic, even, DLRM
// tables, Zipf routing, hot spot). Zero entries (a rank without tables, a destination nobody routes to) post no
// send or receive, and a rank that sends or receives nothing gets a minimal buffer. Message size: the mean number
// of bytes a rank sends, i.e. the sum-mode effective size of model/alltoallv.h (all-to-all's own size for an
// even split), which is what arbench records in `bytes`.
#include <numeric>

#include "kernels/strategies/nccl_collective_strategy.h"
#include "kernels/strategies/nccl_collectives.h"
#include "kernels/strategies/strategy_support.h"

namespace arfit::kernels {
namespace {

std::vector<std::int64_t> sent_by(const StrategyCase& c, int rank) {
  const auto n = static_cast<std::size_t>(c.nranks);
  return std::vector<std::int64_t>(c.alltoallv_counts.begin() + static_cast<std::ptrdiff_t>(rank * n),
                                   c.alltoallv_counts.begin() + static_cast<std::ptrdiff_t>((rank + 1) * n));
}
std::vector<std::int64_t> received_by(const StrategyCase& c, int rank) {
  std::vector<std::int64_t> counts(static_cast<std::size_t>(c.nranks));
  for (int p = 0; p < c.nranks; ++p) counts[static_cast<std::size_t>(p)] = c.alltoallv_counts[static_cast<std::size_t>(p * c.nranks + rank)];
  return counts;
}
std::int64_t total(const std::vector<std::int64_t>& v) { return std::accumulate(v.begin(), v.end(), std::int64_t{0}); }

const detail::NcclCollectiveOps kOps{
    "NCCL all-to-allv",
    Collective::AllToAllV,
    [](const StrategyCase& c, int rank) { return total(sent_by(c, rank)); },
    [](const StrategyCase& c, int rank) { return total(received_by(c, rank)); },
    [](const StrategyCase& c) {
      const auto expected = static_cast<std::size_t>(c.nranks) * static_cast<std::size_t>(c.nranks);
      if (c.alltoallv_counts.size() != expected) {
        throw KernelError("NCCL all-to-allv: alltoallv_counts has " + std::to_string(c.alltoallv_counts.size()) +
                          " entries, expected nranks * nranks = " + std::to_string(expected));
      }
      for (std::size_t i = 0; i < expected; ++i) {
        if (c.alltoallv_counts[i] < 0) {
          throw KernelError("NCCL all-to-allv: alltoallv_counts[" + std::to_string(i) + "] is negative");
        }
      }
    },
    [](const StrategyCase& c, int rank, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
      const auto send_counts = sent_by(c, rank), recv_counts = received_by(c, rank);
      nccl_all_to_allv(send, send_counts, detail::exclusive_prefix_sum(send_counts), recv, recv_counts,
                       detail::exclusive_prefix_sum(recv_counts), c.dtype, comm, stream);
    },
    [](const StrategyCase& c, int rank, std::uint64_t seed, const std::vector<unsigned char>& recv, CheckResult& r) {
      const auto recv_counts = received_by(c, rank);
      const auto recv_offsets = detail::exclusive_prefix_sum(recv_counts);
      for (int p = 0; p < c.nranks; ++p) {
        const auto peer_counts = sent_by(c, p);
        const auto peer_offsets = detail::exclusive_prefix_sum(peer_counts);
        const auto sent = detail::seeded_host(c.dtype, total(peer_counts), seed, InputRole::Data, p);
        detail::compare_exact(r, c.dtype, recv, recv_offsets[static_cast<std::size_t>(p)], sent,
                              peer_offsets[static_cast<std::size_t>(rank)], recv_counts[static_cast<std::size_t>(p)],
                              "rank " + std::to_string(rank) + " output");
      }
    },
};

}  // namespace

extern const StrategyDescriptor nccl_all_to_allv_strategy;
const StrategyDescriptor nccl_all_to_allv_strategy = detail::nccl_collective_descriptor(kOps);

}  // namespace arfit::kernels
