#include "kernels/strategies/nccl_collective_strategy.h"

#include <algorithm>
#include <utility>

#include "kernels/device/cuda_check.h"
#include "kernels/strategies/strategy_support.h"

namespace arfit::kernels::detail {
namespace {

struct NcclCollectiveState : StrategyState {
  const NcclCollectiveOps* ops = nullptr;
  StrategyContext ctx;
  StrategyCase c;
  DeviceBuffer send, recv;
  std::int64_t send_count = 0, recv_count = 0;
};

void load_inputs(NcclCollectiveState& s) {
  upload_seeded(s.send, s.c.dtype, s.send_count, s.ctx.seed, InputRole::Data, s.ctx.first_rank);
  s.recv.fill(kPoisonByte);
}

}  // namespace

std::vector<std::int64_t> exclusive_prefix_sum(const std::vector<std::int64_t>& counts) {
  std::vector<std::int64_t> offsets(counts.size(), 0);
  for (std::size_t i = 1; i < counts.size(); ++i) offsets[i] = offsets[i - 1] + counts[i - 1];
  return offsets;
}

void validate_nccl_collective(const NcclCollectiveOps& ops, const StrategyContext& ctx, const StrategyCase& c) {
  require_collective(ops.what, c, ops.collective);
  require_nccl_context(ops.what, ctx);
  if (c.nranks != ctx.nranks) {
    throw KernelError(std::string(ops.what) + ": case asks for " + std::to_string(c.nranks) +
                      " ranks but the communicator has " + std::to_string(ctx.nranks));
  }
  if (c.fusion != FusionOp::None) {
    throw KernelError(std::string(ops.what) + ": fusion " + to_string(c.fusion) + " with dtype " + to_string(c.dtype) +
                      " is only defined for all-reduce");
  }
  if (c.in_place) throw KernelError(std::string(ops.what) + ": in-place runs are only supported for all-reduce");
  ops.validate_shape(c);
}

std::unique_ptr<StrategyState> init_nccl_collective(const NcclCollectiveOps& ops, const StrategyContext& ctx,
                                                    const StrategyCase& c) {
  validate_nccl_collective(ops, ctx, c);
  ARFIT_CUDA_CHECK(cudaSetDevice(ctx.device));
  auto s = std::make_unique<NcclCollectiveState>();
  s->ops = &ops;
  s->ctx = ctx;
  s->c = c;
  s->send_count = ops.send_count(c, ctx.first_rank);
  s->recv_count = ops.recv_count(c, ctx.first_rank);
  s->send = DeviceBuffer(static_cast<std::size_t>(s->send_count * dtype_bytes(c.dtype)));
  s->recv = DeviceBuffer(static_cast<std::size_t>(s->recv_count * dtype_bytes(c.dtype)));
  load_inputs(*s);
  // cudaMemset is asynchronous: finish the uploads and poisoning before the caller runs on its own stream.
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  return s;
}

void run_nccl_collective(StrategyState& state, void* stream) {
  auto& s = static_cast<NcclCollectiveState&>(state);
  s.ops->launch(s.c, s.ctx.first_rank, s.send.get(), s.recv.get(), static_cast<ncclComm_t>(s.ctx.nccl_comm),
                static_cast<cudaStream_t>(stream));
}

CheckResult check_nccl_collective(StrategyState& state) {
  auto& s = static_cast<NcclCollectiveState&>(state);
  ARFIT_CUDA_CHECK(cudaSetDevice(s.ctx.device));
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  load_inputs(s);
  run_nccl_collective(s, nullptr);
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  CheckResult result;
  s.ops->check(s.c, s.ctx.first_rank, s.ctx.seed,
               download(s.recv, static_cast<std::size_t>(s.recv_count * dtype_bytes(s.c.dtype))), result);
  return result;
}

void validate_nccl_case(Collective collective, const std::vector<FusionOp>& fusions, const StrategyCase& c,
                        const StrategyLimits& limits) {
  const std::string who = "NCCL " + to_string(collective);
  if (limits.virtual_ranks) {
    throw KernelError(who + " drives one rank per process (NCCL allows one rank per GPU); virtual ranks are only for the "
                            "custom kernels",
                      KernelParam::LocalRanks);
  }
  require_collective(who.c_str(), c, collective);
  require_fusion_listed(who.c_str(), fusions, c);
}

StrategyDescriptor nccl_descriptor(Collective collective, const std::string& strategy, std::vector<FusionOp> fusions,
                                   NcclStrategyFunctions functions) {
  StrategyDescriptor d;
  d.backend = "nccl";
  d.collective = collective;
  d.strategy = strategy;
  d.fusions = std::move(fusions);
  d.dtypes = {"bf16", "fp16", "fp32"};
  d.needs_nccl = true;
  d.byte_counts = [collective](std::int64_t count, int elem, int nranks) {
    return collective_byte_counts(collective, count, elem, nranks);
  };
  d.workspace = [](const StrategyCase&) -> std::int64_t { return 0; };
  d.validate_case = std::move(functions.validate_case);
  d.validate_context = std::move(functions.validate_context);
  d.init = std::move(functions.init);
  d.run = std::move(functions.run);
  d.check = std::move(functions.check);
  return d;
}

StrategyDescriptor nccl_collective_descriptor(const NcclCollectiveOps& ops) {
  const Collective collective = ops.collective;
  const NcclCollectiveOps* o = &ops;
  NcclStrategyFunctions f;
  f.validate_case = [o, collective](const StrategyCase& c, const StrategyLimits& limits) {
    validate_nccl_case(collective, {FusionOp::None}, c, limits);
    o->validate_shape(c);
  };
  f.validate_context = [o](const StrategyContext& ctx, const StrategyCase& c) { validate_nccl_collective(*o, ctx, c); };
  f.init = [o](const StrategyContext& ctx, const StrategyCase& c) { return init_nccl_collective(*o, ctx, c); };
  f.run = run_nccl_collective;
  f.check = check_nccl_collective;
  return nccl_descriptor(collective, strategy::kNccl, {FusionOp::None}, std::move(f));
}

void require_positive_count(const char* who, const StrategyCase& c) {
  if (c.count <= 0) {
    throw KernelError(std::string(who) + ": count must be positive, got " + std::to_string(c.count), KernelParam::Count);
  }
}

void validate_nccl_all_reduce_context(const char* who, const std::vector<FusionOp>& fusions, const StrategyContext& ctx,
                                      const StrategyCase& c) {
  require_collective(who, c, Collective::AllReduce);
  require_nccl_context(who, ctx);
  require_fusion_listed(who, fusions, c);
}

CheckResult check_nccl_all_reduce_outputs(const StrategyCase& c, std::uint64_t seed, RankOutputs outputs) {
  AllReduceExpectation e = expectation_for(c, seed);
  e.tolerance_factor = std::max(1, c.nranks - 1);
  return check_all_reduce_outputs(e, {std::move(outputs)}, /*identical=*/false);
}

}  // namespace arfit::kernels::detail
