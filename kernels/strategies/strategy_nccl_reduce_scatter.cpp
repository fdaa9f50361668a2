// NCCL reduce-scatter: every rank contributes count * nranks elements and receives the sum of its slice.
#include <algorithm>

#include "kernels/strategies/nccl_collective_strategy.h"
#include "kernels/strategies/nccl_collectives.h"
#include "kernels/strategies/strategy_support.h"

namespace arfit::kernels {
namespace {

const detail::NcclCollectiveOps kOps{
    "NCCL reduce-scatter",
    Collective::ReduceScatter,
    [](const StrategyCase& c, int) { return c.count * c.nranks; },
    [](const StrategyCase& c, int) { return c.count; },
    [](const StrategyCase& c) {
      if (c.count <= 0) throw KernelError("NCCL reduce-scatter: count must be positive, got " + std::to_string(c.count));
    },
    [](const StrategyCase& c, int, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream) {
      nccl_reduce_scatter(send, recv, c.count, c.dtype, comm, stream);
    },
    [](const StrategyCase& c, int rank, std::uint64_t seed, const std::vector<unsigned char>& recv, CheckResult& r) {
      std::vector<std::vector<unsigned char>> inputs;
      std::vector<const void*> slices;
      const std::size_t element = static_cast<std::size_t>(dtype_bytes(c.dtype));
      for (int p = 0; p < c.nranks; ++p) {
        inputs.push_back(detail::seeded_host(c.dtype, c.count * c.nranks, seed, InputRole::Data, p));
        slices.push_back(inputs.back().data() + static_cast<std::size_t>(rank * c.count) * element);
      }
      const ReducedReference ref = reference_all_reduce(c.dtype, slices, c.count);
      // NCCL rounds to the element type after every reduction step.
      detail::compare_elements(r, c.dtype, recv, ref.sum, ref.magnitude,
                               relative_tolerance(c.dtype) * std::max(1, c.nranks - 1),
                               "rank " + std::to_string(rank) + " output");
    },
};

}  // namespace

extern const StrategyDescriptor nccl_reduce_scatter_strategy;
const StrategyDescriptor nccl_reduce_scatter_strategy = detail::nccl_collective_descriptor(kOps);

}  // namespace arfit::kernels
