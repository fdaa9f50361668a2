// NCCL all-reduce; with a fusion op, the unfused baseline: ncclAllReduce followed by the separate
// residual + RMSNorm (+ e4m3) kernel, so that "NCCL with fusion" is timed fairly against the fused kernels.
#include <cuda_runtime_api.h>

#include <utility>

#include "kernels/device/cuda_check.h"
#include "kernels/strategies/nccl_collective_strategy.h"
#include "kernels/strategies/nccl_collectives.h"
#include "kernels/strategies/strategy_support.h"

namespace arfit::kernels {

extern const StrategyDescriptor nccl_all_reduce_strategy;

namespace {

using detail::DeviceBuffer;

struct NcclAllReduceState : StrategyState {
  StrategyContext ctx;
  StrategyCase c;
  DeviceBuffer input, output, reduced, residual_in, residual_out, gamma, fp8_out, scale_out;
  AllReduceBuffers buffers;
};

bool fused(const StrategyCase& c) { return c.fusion != FusionOp::None; }

// Every fusion: the unfused epilogue kernel (residual_rms_norm) implements each one after the all-reduce.
const std::vector<FusionOp> kFusions = all_fusion_ops();

// What does not depend on the communicator: count, and for the fused epilogue the row shape and scalars.
void validate_shape(const StrategyCase& c) {
  detail::require_positive_count("NCCL all-reduce", c);
  if (fused(c)) {
    // The buffers are checked when the epilogue runs.
    validate_residual_rms_norm_shape(c.dtype, c.fusion, c.count, c.hidden, c.rms_eps, c.fp8_scale);
  }
}

void validate_case(const StrategyCase& c, const StrategyLimits& limits) {
  detail::validate_nccl_case(Collective::AllReduce, kFusions, c, limits);
  validate_shape(c);
}

void validate(const StrategyContext& ctx, const StrategyCase& c) {
  detail::validate_nccl_all_reduce_context("NCCL", kFusions, ctx, c);
  validate_shape(c);
}

void load_inputs(NcclAllReduceState& s) {
  const StrategyCase& c = s.c;
  detail::upload_seeded(s.input, c.dtype, c.count, s.ctx.seed, InputRole::Data, s.ctx.first_rank);
  if (!c.in_place) s.output.fill(detail::kPoisonByte);
  if (fused(c)) {
    detail::upload_seeded(s.residual_in, c.dtype, c.count, s.ctx.seed, InputRole::Residual, 0);
    detail::upload_seeded(s.gamma, c.dtype, c.hidden, s.ctx.seed, InputRole::Gamma, 0);
    s.residual_out.fill(detail::kPoisonByte);
    if (quant_out_bytes(c.fusion, c.count) > 0) s.fp8_out.fill(detail::kPoisonByte);
    if (scale_out_bytes(c.fusion, c.count, c.hidden) > 0) s.scale_out.fill(detail::kPoisonByte);
  }
}

std::unique_ptr<StrategyState> init(const StrategyContext& ctx, const StrategyCase& c) {
  validate(ctx, c);
  ARFIT_CUDA_CHECK(cudaSetDevice(ctx.device));
  auto s = std::make_unique<NcclAllReduceState>();
  s->ctx = ctx;
  s->c = c;
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  s->input = DeviceBuffer(bytes);
  s->output = DeviceBuffer(c.in_place ? 0 : bytes);
  s->buffers.input = s->input.get();
  s->buffers.output = c.in_place ? s->input.get() : s->output.get();
  if (fused(c)) {
    s->reduced = DeviceBuffer(bytes);
    s->residual_in = DeviceBuffer(bytes);
    s->residual_out = DeviceBuffer(bytes);
    s->gamma = DeviceBuffer(static_cast<std::size_t>(c.hidden * dtype_bytes(c.dtype)));
    s->buffers.residual_in = s->residual_in.get();
    s->buffers.residual_out = s->residual_out.get();
    s->buffers.gamma = s->gamma.get();
    if (quant_out_bytes(c.fusion, c.count) > 0) {
      s->fp8_out = DeviceBuffer(static_cast<std::size_t>(quant_out_bytes(c.fusion, c.count)));
      s->buffers.fp8_out = s->fp8_out.get();
    }
    if (scale_out_bytes(c.fusion, c.count, c.hidden) > 0) {
      s->scale_out = DeviceBuffer(static_cast<std::size_t>(scale_out_bytes(c.fusion, c.count, c.hidden)));
      s->buffers.scale_out = s->scale_out.get();
    }
  }
  load_inputs(*s);
  // cudaMemset is asynchronous: finish the uploads and poisoning before the caller runs on its own stream.
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  return s;
}

void run(StrategyState& state, void* stream) {
  auto& s = static_cast<NcclAllReduceState&>(state);
  auto comm = static_cast<ncclComm_t>(s.ctx.nccl_comm);
  if (!fused(s.c)) {
    nccl_all_reduce(s.buffers.input, s.buffers.output, s.c.count, s.c.dtype, comm, static_cast<cudaStream_t>(stream));
  } else {
    nccl_all_reduce_then_residual_rms_norm(s.c.dtype, s.c.fusion, s.c.count, s.c.hidden, static_cast<float>(s.c.rms_eps),
                                           s.c.fp8_scale, s.reduced.get(), s.buffers, comm,
                                           static_cast<cudaStream_t>(stream));
  }
}

CheckResult check(StrategyState& state) {
  auto& s = static_cast<NcclAllReduceState&>(state);
  const StrategyCase& c = s.c;
  ARFIT_CUDA_CHECK(cudaSetDevice(s.ctx.device));
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  load_inputs(s);
  run(s, nullptr);
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  RankOutputs o;
  o.rank = s.ctx.first_rank;
  o.output = detail::download(c.in_place ? s.input : s.output, bytes);
  if (fused(c)) o.residual_out = detail::download(s.residual_out, bytes);
  if (quant_out_bytes(c.fusion, c.count) > 0) {
    o.fp8_out = detail::download(s.fp8_out, static_cast<std::size_t>(quant_out_bytes(c.fusion, c.count)));
  }
  if (scale_out_bytes(c.fusion, c.count, c.hidden) > 0) {
    o.scale_out = detail::download(s.scale_out, static_cast<std::size_t>(scale_out_bytes(c.fusion, c.count, c.hidden)));
  }
  return detail::check_nccl_all_reduce_outputs(c, s.ctx.seed, std::move(o));
}

}  // namespace

const StrategyDescriptor nccl_all_reduce_strategy = detail::nccl_descriptor(
    Collective::AllReduce, strategy::kNccl, kFusions, {validate_case, validate, init, run, check});

}  // namespace arfit::kernels
