#include "kernels/custom_all_reduce_strategy.h"

#include <cuda_runtime_api.h>

#include <cstring>

#include "kernels/cuda_check.h"
#include "kernels/strategy_support.h"
#include "kernels/team.h"

namespace arfit::kernels::detail {
namespace {

struct CustomAllReduceState : StrategyState {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::OneShot;
  StrategyContext ctx;
  StrategyCase c;
  // Per local rank.
  std::vector<DeviceBuffer> input, output, residual_in, residual_out, gamma, fp8_out;
  AllReduceParams params;
};

bool fused(const StrategyCase& c) { return c.fusion != FusionOp::None; }

// Residual and gamma are the same on every rank (tensor parallelism replicates them): seeded with rank 0.
constexpr int kReplicatedRank = 0;

void load_inputs(CustomAllReduceState& s) {
  const StrategyCase& c = s.c;
  for (int k = 0; k < s.ctx.local_ranks; ++k) {
    const int rank = s.ctx.first_rank + k;
    const auto kk = static_cast<std::size_t>(k);
    upload_seeded(s.input[kk], c.dtype, c.count, s.ctx.seed, InputRole::Data, rank);
    if (!c.in_place) s.output[kk].fill(kPoisonByte);
    if (fused(c)) {
      upload_seeded(s.residual_in[kk], c.dtype, c.count, s.ctx.seed, InputRole::Residual, kReplicatedRank);
      upload_seeded(s.gamma[kk], c.dtype, c.hidden, s.ctx.seed, InputRole::Gamma, kReplicatedRank);
      s.residual_out[kk].fill(kPoisonByte);
      if (c.fusion == FusionOp::ResidualRmsNormQuantFp8) s.fp8_out[kk].fill(kPoisonByte);
    }
  }
}

}  // namespace

std::int64_t custom_all_reduce_message_bytes(const StrategyCase& c) { return c.count * dtype_bytes(c.dtype); }

void validate_custom_all_reduce(AllReduceAlgorithm algorithm, const StrategyContext& ctx, const StrategyCase& c) {
  const std::string who = to_string(algorithm);
  require_collective(who.c_str(), c, Collective::AllReduce);
  if (!ctx.team) {
    throw KernelError(who + " needs a registered team (StrategyContext::team; kernels/team.h Team::create_ipc or "
                            "Team::create_virtual)");
  }
  if (ctx.team->nranks() != c.nranks || ctx.nranks != c.nranks) {
    throw KernelError(who + ": case asks for " + std::to_string(c.nranks) + " ranks but the team has " +
                      std::to_string(ctx.team->nranks()));
  }
  if (ctx.team->local_ranks() != ctx.local_ranks || ctx.team->first_rank() != ctx.first_rank) {
    throw KernelError(who + ": context and team disagree on the ranks this process drives");
  }
  validate_all_reduce_shape(algorithm, ctx.team->shape(), c.dtype, c.fusion, c.count, c.hidden);
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
      if (c.fusion == FusionOp::ResidualRmsNormQuantFp8) {
        s->fp8_out.emplace_back(static_cast<std::size_t>(c.count));
        b.fp8_out = s->fp8_out.back().get();
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

  std::vector<std::vector<unsigned char>> inputs;
  std::vector<const void*> input_pointers;
  for (int r = 0; r < c.nranks; ++r) {
    inputs.push_back(seeded_host(c.dtype, c.count, s.ctx.seed, InputRole::Data, r));
    input_pointers.push_back(inputs.back().data());
  }
  const ReducedReference reduced = reference_all_reduce(c.dtype, input_pointers, c.count);
  NormReference norm;
  if (fused(c)) {
    const auto residual = seeded_host(c.dtype, c.count, s.ctx.seed, InputRole::Residual, kReplicatedRank);
    const auto gamma = seeded_host(c.dtype, c.hidden, s.ctx.seed, InputRole::Gamma, kReplicatedRank);
    norm = reference_residual_rms_norm(reduced, c.dtype, residual.data(), gamma.data(), c.hidden, c.rms_eps,
                                       c.fp8_scale, c.fusion == FusionOp::ResidualRmsNormQuantFp8);
  }
  const double tolerance = relative_tolerance(c.dtype);
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  CheckResult result;
  std::vector<std::vector<unsigned char>> first_rank_outputs;
  for (int k = 0; k < s.ctx.local_ranks; ++k) {
    const auto kk = static_cast<std::size_t>(k);
    const std::string rank = "rank " + std::to_string(s.ctx.first_rank + k) + " ";
    std::vector<std::vector<unsigned char>> outputs;
    outputs.push_back(download(c.in_place ? s.input[kk] : s.output[kk], bytes));
    if (!fused(c)) {
      compare_elements(result, c.dtype, outputs[0], reduced.sum, reduced.magnitude, tolerance, rank + "output");
    } else {
      compare_elements(result, c.dtype, outputs[0], norm.out, norm.out_scale, tolerance, rank + "output");
      outputs.push_back(download(s.residual_out[kk], bytes));
      compare_elements(result, c.dtype, outputs[1], norm.residual_out, norm.residual_scale, tolerance,
                       rank + "residual_out");
      if (c.fusion == FusionOp::ResidualRmsNormQuantFp8) {
        outputs.push_back(download(s.fp8_out[kk], static_cast<std::size_t>(c.count)));
        for (std::int64_t i = 0; i < c.count; ++i) {
          const auto iu = static_cast<std::size_t>(i);
          const std::uint8_t bits = outputs[2][iu];
          const double upstream = tolerance * norm.out_scale[iu] / c.fp8_scale;
          const bool ok = e4m3_within_tolerance(bits, norm.fp8[iu], upstream);
          record(result, ok, 0.0, rank + "fp8_out[" + std::to_string(i) + "]", e4m3_bits_to_float(bits), norm.fp8[iu]);
        }
      }
    }
    // Every local rank must hold exactly the same bytes (fixed reduction order; one owner per slice).
    if (k == 0) {
      first_rank_outputs = std::move(outputs);
    } else {
      for (std::size_t o = 0; o < outputs.size(); ++o) {
        const std::size_t element = o == 2 ? 1 : static_cast<std::size_t>(dtype_bytes(c.dtype));
        for (std::size_t i = 0; i < outputs[o].size() / element; ++i) {
          if (std::memcmp(outputs[o].data() + i * element, first_rank_outputs[o].data() + i * element, element) != 0) {
            ++result.not_identical;
          }
        }
      }
    }
  }
  return result;
}

}  // namespace arfit::kernels::detail
