// NCCL all-to-all (grouped send/recv): every rank sends count / nranks elements to each rank.
#include "kernels/strategies/nccl_collective_strategy.h"
#include "kernels/strategies/nccl_collectives.h"
#include "kernels/strategies/strategy_support.h"

namespace arfit::kernels {
namespace {

const detail::NcclCollectiveOps kOps{
    "NCCL all-to-all",
    Collective::AllToAll,
    [](const StrategyCase& c, int) { return c.count; },
    [](const StrategyCase& c, int) { return c.count; },
    [](const StrategyCase& c) {
      if (c.count <= 0 || c.count % c.nranks != 0) {
        throw KernelError("NCCL all-to-all: count " + std::to_string(c.count) + " must be a positive multiple of nranks " +
                          std::to_string(c.nranks));
      }
    },
    [](const StrategyCase& c, int, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
      nccl_all_to_all(send, recv, c.count / c.nranks, c.dtype, comm, stream);
    },
    [](const StrategyCase& c, int rank, std::uint64_t seed, const std::vector<unsigned char>& recv, CheckResult& r) {
      const std::int64_t chunk = c.count / c.nranks;
      for (int p = 0; p < c.nranks; ++p) {
        const auto sent = detail::seeded_host(c.dtype, c.count, seed, InputRole::Data, p);
        detail::compare_exact(r, c.dtype, recv, p * chunk, sent, rank * chunk, chunk,
                              "rank " + std::to_string(rank) + " output");
      }
    },
};

}  // namespace

extern const StrategyDescriptor nccl_all_to_all_strategy;
const StrategyDescriptor nccl_all_to_all_strategy = detail::nccl_collective_descriptor(kOps);

}  // namespace arfit::kernels
