// NCCL all-gather: every rank contributes `count` elements and receives count * nranks (rank order).
#include "kernels/nccl_collective_strategy.h"
#include "kernels/nccl_collectives.h"
#include "kernels/strategy_support.h"
#include "model/bus_factor.h"

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
const StrategyDescriptor nccl_all_gather_strategy{
    strategy::kNccl,
    Collective::AllGather,
    {DType::BF16, DType::FP16, DType::FP32},
    {},
    {FusionOp::None},
    /*needs_team=*/false,
    /*needs_nccl=*/true,
    [](const StrategyContext& ctx, const StrategyCase& c) { detail::validate_nccl_collective(kOps, ctx, c); },
    [](const StrategyCase&) -> std::int64_t { return 0; },
    // nccl-tests: all-gather size = bytes received per rank.
    [](const StrategyCase& c) -> std::int64_t { return c.count * c.nranks * dtype_bytes(c.dtype); },
    [](int nranks) { return bus_factor(Collective::AllGather, nranks); },
    [](const StrategyContext& ctx, const StrategyCase& c) { return detail::init_nccl_collective(kOps, ctx, c); },
    detail::run_nccl_collective,
    detail::check_nccl_collective,
};

}  // namespace arfit::kernels
