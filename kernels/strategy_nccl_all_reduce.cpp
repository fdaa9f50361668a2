// NCCL all-reduce; with a fusion op, the unfused baseline: ncclAllReduce followed by the separate
// residual + RMSNorm (+ e4m3) kernel, so that "NCCL with fusion" is timed fairly against the fused kernels.
#include <cuda_runtime_api.h>

#include <algorithm>

#include "kernels/cuda_check.h"
#include "kernels/nccl_collectives.h"
#include "kernels/strategy_support.h"
#include "model/bus_factor.h"

namespace arfit::kernels {

extern const StrategyDescriptor nccl_all_reduce_strategy;

namespace {

using detail::DeviceBuffer;

struct NcclAllReduceState : StrategyState {
  StrategyContext ctx;
  StrategyCase c;
  DeviceBuffer input, output, reduced, residual_in, residual_out, gamma, fp8_out;
  AllReduceBuffers buffers;
};

bool fused(const StrategyCase& c) { return c.fusion != FusionOp::None; }

void validate(const StrategyContext& ctx, const StrategyCase& c) {
  detail::require_collective("NCCL", c, Collective::AllReduce);
  detail::require_nccl_context("NCCL", ctx);
  detail::require_dtype_listed("NCCL", nccl_all_reduce_strategy, c);
  if (c.count <= 0) throw KernelError("NCCL all-reduce: count must be positive, got " + std::to_string(c.count));
  if (fused(c)) {
    // Shape checks only (the real pointers are checked again when the epilogue runs): stand-in aligned pointers.
    alignas(16) static unsigned char stand_in[16] = {};
    AllReduceBuffers fake;
    fake.input = fake.residual_in = fake.gamma = stand_in;
    fake.output = fake.residual_out = fake.fp8_out = stand_in;
    validate_residual_rms_norm(c.dtype, c.fusion, c.count, c.hidden, c.fp8_scale, stand_in, fake);
  }
}

void load_inputs(NcclAllReduceState& s) {
  const StrategyCase& c = s.c;
  detail::upload_seeded(s.input, c.dtype, c.count, s.ctx.seed, InputRole::Data, s.ctx.first_rank);
  if (!c.in_place) s.output.fill(detail::kPoisonByte);
  if (fused(c)) {
    detail::upload_seeded(s.residual_in, c.dtype, c.count, s.ctx.seed, InputRole::Residual, 0);
    detail::upload_seeded(s.gamma, c.dtype, c.hidden, s.ctx.seed, InputRole::Gamma, 0);
    s.residual_out.fill(detail::kPoisonByte);
    if (c.fusion == FusionOp::ResidualRmsNormQuantFp8) s.fp8_out.fill(detail::kPoisonByte);
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
    if (c.fusion == FusionOp::ResidualRmsNormQuantFp8) {
      s->fp8_out = DeviceBuffer(static_cast<std::size_t>(c.count));
      s->buffers.fp8_out = s->fp8_out.get();
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
  std::vector<std::vector<unsigned char>> inputs;
  std::vector<const void*> pointers;
  for (int r = 0; r < c.nranks; ++r) {
    inputs.push_back(detail::seeded_host(c.dtype, c.count, s.ctx.seed, InputRole::Data, r));
    pointers.push_back(inputs.back().data());
  }
  const ReducedReference reduced = reference_all_reduce(c.dtype, pointers, c.count);
  // NCCL rounds to the element type after every reduction step (ring/tree), up to nranks - 1 roundings.
  const double tolerance = relative_tolerance(c.dtype) * std::max(1, c.nranks - 1);
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  const std::string rank = "rank " + std::to_string(s.ctx.first_rank) + " ";
  CheckResult result;
  if (!fused(c)) {
    detail::compare_elements(result, c.dtype, detail::download(c.in_place ? s.input : s.output, bytes), reduced.sum,
                             reduced.magnitude, tolerance, rank + "output");
    return result;
  }
  const auto residual = detail::seeded_host(c.dtype, c.count, s.ctx.seed, InputRole::Residual, 0);
  const auto gamma = detail::seeded_host(c.dtype, c.hidden, s.ctx.seed, InputRole::Gamma, 0);
  const NormReference norm = reference_residual_rms_norm(reduced, c.dtype, residual.data(), gamma.data(), c.hidden,
                                                         c.rms_eps, c.fp8_scale,
                                                         c.fusion == FusionOp::ResidualRmsNormQuantFp8);
  detail::compare_elements(result, c.dtype, detail::download(c.in_place ? s.input : s.output, bytes), norm.out,
                           norm.out_scale, tolerance, rank + "output");
  detail::compare_elements(result, c.dtype, detail::download(s.residual_out, bytes), norm.residual_out,
                           norm.residual_scale, tolerance, rank + "residual_out");
  if (c.fusion == FusionOp::ResidualRmsNormQuantFp8) {
    const auto fp8 = detail::download(s.fp8_out, static_cast<std::size_t>(c.count));
    for (std::size_t i = 0; i < fp8.size(); ++i) {
      const bool ok = e4m3_within_tolerance(fp8[i], norm.fp8[i], tolerance * norm.out_scale[i] / c.fp8_scale);
      detail::record(result, ok, 0.0, rank + "fp8_out[" + std::to_string(i) + "]", e4m3_bits_to_float(fp8[i]),
                     norm.fp8[i]);
    }
  }
  return result;
}

}  // namespace

const StrategyDescriptor nccl_all_reduce_strategy{
    strategy::kNccl,
    Collective::AllReduce,
    {DType::BF16, DType::FP16, DType::FP32},
    {},
    {FusionOp::None, FusionOp::ResidualRmsNorm, FusionOp::ResidualRmsNormQuantFp8},
    /*needs_team=*/false,
    /*needs_nccl=*/true,
    validate,
    [](const StrategyCase&) -> std::int64_t { return 0; },
    [](const StrategyCase& c) -> std::int64_t { return c.count * dtype_bytes(c.dtype); },
    [](int nranks) { return bus_factor(Collective::AllReduce, nranks); },
    init,
    run,
    check,
};

}  // namespace arfit::kernels
