#include "kernels/strategies/custom_all_reduce_strategy.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "kernels/device/cuda_check.h"
#include "kernels/strategies/strategy_support.h"
#include "kernels/team.h"

namespace arfit::kernels::detail {
namespace {

struct CustomAllReduceState : StrategyState {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::OneShot;
  StrategyContext ctx;
  StrategyCase c;
  // Per local rank.
  std::vector<DeviceBuffer> input, output, residual_in, residual_out, gamma, fp8_out, scale_out;
  AllReduceParams params;
};

bool fused(const StrategyCase& c) { return c.fusion != FusionOp::None; }

void load_inputs(CustomAllReduceState& s) {
  const StrategyCase& c = s.c;
  for (int k = 0; k < s.ctx.local_ranks; ++k) {
    const int rank = s.ctx.first_rank + k;
    const auto kk = static_cast<std::size_t>(k);
    upload_seeded(s.input[kk], c.dtype, c.count, s.ctx.seed, data_role(to_string(s.algorithm)), rank);
    if (!c.in_place) s.output[kk].fill(kPoisonByte);
    if (fused(c)) {
      upload_seeded(s.residual_in[kk], c.dtype, c.count, s.ctx.seed, InputRole::Residual, kReplicatedRank);
      upload_seeded(s.gamma[kk], c.dtype, c.hidden, s.ctx.seed, InputRole::Gamma, kReplicatedRank);
      s.residual_out[kk].fill(kPoisonByte);
      if (quant_out_bytes(c.fusion, c.count) > 0) s.fp8_out[kk].fill(kPoisonByte);
      if (scale_out_bytes(c.fusion, c.count, c.hidden) > 0) s.scale_out[kk].fill(kPoisonByte);
    }
  }
}

}  // namespace

std::int64_t custom_all_reduce_workspace(const StrategyCase& c) { return c.count * dtype_bytes(c.dtype); }

void validate_custom_all_reduce_case(AllReduceAlgorithm algorithm, const StrategyCase& c, const StrategyLimits& limits) {
  const std::string who = to_string(algorithm);
  require_collective(who.c_str(), c, Collective::AllReduce);
  const TeamShape shape{c.nranks, limits.virtual_ranks ? c.nranks : 1, limits.workspace};
  validate_all_reduce_shape(algorithm, shape, c.dtype, c.fusion, c.count, c.hidden);
  validate_epilogue_scalars(who, c.fusion, c.rms_eps, c.fp8_scale);
}

void validate_custom_all_reduce(AllReduceAlgorithm algorithm, const StrategyContext& ctx, const StrategyCase& c) {
  const std::string who = to_string(algorithm);
  require_collective(who.c_str(), c, Collective::AllReduce);
  if (!ctx.team) {
    throw KernelError(who + " needs a registered team (StrategyContext::team; kernels/team.h Team::create_ipc or "
                            "Team::create_virtual)");
  }
  if (ctx.team->nranks() != c.nranks || ctx.nranks != c.nranks) {
    throw KernelError(who + ": case asks for " + std::to_string(c.nranks) + " ranks but the team has " +
                          std::to_string(ctx.team->nranks()),
                      KernelParam::Ranks);
  }
  if (ctx.team->local_ranks() != ctx.local_ranks || ctx.team->first_rank() != ctx.first_rank) {
    throw KernelError(who + ": context and team disagree on the ranks this process drives", KernelParam::LocalRanks);
  }
  validate_all_reduce_shape(algorithm, ctx.team->shape(), c.dtype, c.fusion, c.count, c.hidden);
  validate_epilogue_scalars(who, c.fusion, c.rms_eps, c.fp8_scale);
  // Before anything is allocated: no multicast on this GPU or team is a KernelError naming Device (arbench: --device).
  if (is_multimem(algorithm)) validate_multicast_team(algorithm, *ctx.team);
}

std::unique_ptr<StrategyState> init_custom_all_reduce(AllReduceAlgorithm algorithm, const StrategyContext& ctx,
                                                      const StrategyCase& c) {
  validate_custom_all_reduce(algorithm, ctx, c);
  ARFIT_CUDA_CHECK(cudaSetDevice(ctx.device));
  auto s = std::make_unique<CustomAllReduceState>();
  s->algorithm = algorithm;
  s->ctx = ctx;
  s->c = c;
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  s->params.dtype = c.dtype;
  s->params.fusion = c.fusion;
  s->params.count = c.count;
  s->params.hidden = c.hidden;
  s->params.rms_eps = static_cast<float>(c.rms_eps);
  s->params.fp8_scale = c.fp8_scale;
  for (int k = 0; k < ctx.local_ranks; ++k) {
    s->input.emplace_back(bytes);
    s->output.emplace_back(c.in_place ? 0 : bytes);
    AllReduceBuffers b;
    b.input = s->input.back().get();
    b.output = c.in_place ? s->input.back().get() : s->output.back().get();
    if (fused(c)) {
      s->residual_in.emplace_back(bytes);
      s->residual_out.emplace_back(bytes);
      s->gamma.emplace_back(static_cast<std::size_t>(c.hidden * dtype_bytes(c.dtype)));
      b.residual_in = s->residual_in.back().get();
      b.residual_out = s->residual_out.back().get();
      b.gamma = s->gamma.back().get();
      if (quant_out_bytes(c.fusion, c.count) > 0) {
        s->fp8_out.emplace_back(static_cast<std::size_t>(quant_out_bytes(c.fusion, c.count)));
        b.fp8_out = s->fp8_out.back().get();
      }
      if (scale_out_bytes(c.fusion, c.count, c.hidden) > 0) {
        s->scale_out.emplace_back(static_cast<std::size_t>(scale_out_bytes(c.fusion, c.count, c.hidden)));
        b.scale_out = s->scale_out.back().get();
      }
    }
    s->params.buffers.push_back(b);
  }
  load_inputs(*s);
  validate_all_reduce(algorithm, ctx.team->shape(), s->params);
  // cudaMemset is asynchronous: finish the uploads and poisoning before the caller runs on its own stream.
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  return s;
}

void run_custom_all_reduce(StrategyState& state, void* stream) {
  auto& s = static_cast<CustomAllReduceState&>(state);
  all_reduce(s.algorithm, *s.ctx.team, s.params, stream);
}

CheckResult check_custom_all_reduce(StrategyState& state) {
  auto& s = static_cast<CustomAllReduceState&>(state);
  const StrategyCase& c = s.c;
  ARFIT_CUDA_CHECK(cudaSetDevice(s.ctx.device));
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  // Fresh inputs and poisoned outputs, one run: the check does not depend on how many timed runs came before
  // (in-place runs overwrite their input).
  load_inputs(s);
  all_reduce(s.algorithm, *s.ctx.team, s.params, nullptr);
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());

  // Every local rank's outputs are compared with the reference and must be bitwise identical (fixed
  // reduction order; one owner per slice).
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  std::vector<RankOutputs> outputs;
  for (int k = 0; k < s.ctx.local_ranks; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    RankOutputs o;
    o.rank = s.ctx.first_rank + k;
    o.output = download(c.in_place ? s.input[kk] : s.output[kk], bytes);
    if (fused(c)) o.residual_out = download(s.residual_out[kk], bytes);
    if (quant_out_bytes(c.fusion, c.count) > 0) {
      o.fp8_out = download(s.fp8_out[kk], static_cast<std::size_t>(quant_out_bytes(c.fusion, c.count)));
    }
    if (scale_out_bytes(c.fusion, c.count, c.hidden) > 0) {
      o.scale_out = download(s.scale_out[kk], static_cast<std::size_t>(scale_out_bytes(c.fusion, c.count, c.hidden)));
    }
    outputs.push_back(std::move(o));
  }
  AllReduceExpectation expectation = expectation_for(c, s.ctx.seed);
  expectation.low_precision = s.algorithm == AllReduceAlgorithm::LowPrecision;  // its bound, not the tolerance
  // Except the multimem one-shot on a GPU: the switch's ld_reduce has no fixed order across ranks (PyTorch's note
  // [multimem_one_shot_all_reduce]); each rank's result is still checked against the reference.
  const bool identical = s.algorithm != AllReduceAlgorithm::MultimemOneShot;
  CheckResult result = check_all_reduce_outputs(expectation, outputs, identical);
  return result;
}

}  // namespace arfit::kernels::detail

namespace arfit::kernels::detail {

StrategyDescriptor custom_all_reduce_descriptor(AllReduceAlgorithm algorithm) {
  StrategyDescriptor d;
  d.backend = "custom";
  d.collective = Collective::AllReduce;
  d.strategy = to_string(algorithm);
  d.fusions = all_reduce_fusions(algorithm);  // the epilogues the algorithm's kernels instantiate
  d.dtypes = {"bf16", "fp16", "fp32"};
  d.rank_counts = custom_all_reduce_rank_counts();
  d.uses_workspace = true;
  d.byte_counts = [](std::int64_t count, int elem, int nranks) {
    return collective_byte_counts(Collective::AllReduce, count, elem, nranks);
  };
  d.validate_case = [algorithm](const StrategyCase& c, const StrategyLimits& limits) {
    validate_custom_all_reduce_case(algorithm, c, limits);
  };
  d.validate_context = [algorithm](const StrategyContext& ctx, const StrategyCase& c) {
    validate_custom_all_reduce(algorithm, ctx, c);
  };
  // The staging buffer holds the whole message (the team's max_bytes must be at least this).
  d.workspace = custom_all_reduce_workspace;
  d.init = [algorithm](const StrategyContext& ctx, const StrategyCase& c) { return init_custom_all_reduce(algorithm, ctx, c); };
  d.run = run_custom_all_reduce;
  d.check = check_custom_all_reduce;
  return d;
}

}  // namespace arfit::kernels::detail
