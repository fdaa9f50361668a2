// NCCL all-gather: every rank contributes `count` elements and receives count * nranks (rank order).
#include "kernels/strategies/nccl_collective_strategy.h"
#include "kernels/strategies/nccl_collectives.h"
#include "kernels/strategies/strategy_support.h"

namespace arfit::kernels {
namespace {

const detail::NcclCollectiveOps kOps{
    "NCCL all-gather",
    Collective::AllGather,
    [](const StrategyCase& c, int) { return c.count; },
    [](const StrategyCase& c, int) { return c.count * c.nranks; },
    [](const StrategyCase& c) {
      if (c.count <= 0) throw KernelError("NCCL all-gather: count must be positive, got " + std::to_string(c.count));
    },
    [](const StrategyCase& c, int, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
      nccl_all_gather(send, recv, c.count, c.dtype, comm, stream);
    },
    [](const StrategyCase& c, int rank, std::uint64_t seed, const std::vector<unsigned char>& recv, CheckResult& r) {
      for (int p = 0; p < c.nranks; ++p) {
        const auto expected = detail::seeded_host(c.dtype, c.count, seed, InputRole::Data, p);
        detail::compare_exact(r, c.dtype, recv, p * c.count, expected, 0, c.count,
                              "rank " + std::to_string(rank) + " output");
      }
    },
};

}  // namespace

extern const StrategyDescriptor nccl_all_gather_strategy;
const StrategyDescriptor nccl_all_gather_strategy = detail::nccl_collective_descriptor(kOps);

}  // namespace arfit::kernels
