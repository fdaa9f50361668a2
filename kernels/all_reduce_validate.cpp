// Host-side checks of custom all-reduce requests: everything the kernels assume, checked before a launch,
// each failure a KernelError that says what was asked and what is allowed.
#include <cmath>
#include <cstdint>
#include <sstream>

#include "kernels/all_reduce.h"

namespace arfit::kernels {
namespace {

std::string pointer_text(const void* p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

void require_pointer(const void* p, const char* what, int local_rank, bool must_be_aligned = true) {
  if (!p) throw KernelError("local rank " + std::to_string(local_rank) + ": " + what + " pointer is null");
  if (must_be_aligned && reinterpret_cast<std::uintptr_t>(p) % kVectorBytes != 0) {
    throw KernelError("local rank " + std::to_string(local_rank) + ": " + what + " pointer " + pointer_text(p) +
                      " is not " + std::to_string(kVectorBytes) +
                      "-byte aligned (the kernels move 16-byte vectors)");
  }
}

bool is_fused(FusionOp f) { return f != FusionOp::None; }

}  // namespace

std::string to_string(AllReduceAlgorithm algorithm) {
  return algorithm == AllReduceAlgorithm::OneShot ? strategy::kOneShot : strategy::kTwoShot;
}

bool custom_all_reduce_supports_ranks(int nranks) { return nranks == 2 || nranks == 4 || nranks == 8; }

bool custom_all_reduce_supports_fusion(FusionOp fusion) {
  return fusion == FusionOp::None || fusion == FusionOp::ResidualRmsNorm || fusion == FusionOp::ResidualRmsNormQuantFp8;
}

void validate_all_reduce_shape(AllReduceAlgorithm algorithm, const TeamShape& team, DType dtype, FusionOp fusion,
                               std::int64_t count, std::int64_t hidden) {
  const std::string who = to_string(algorithm);
  if (!custom_all_reduce_supports_ranks(team.nranks)) {
    throw KernelError(who + ": unsupported rank count " + std::to_string(team.nranks) +
                      " (the custom kernels are instantiated for 2, 4 or 8 ranks; use NCCL for other team sizes)");
  }
  if (team.local_ranks != 1 && team.local_ranks != team.nranks) {
    throw KernelError(who + ": a process drives 1 rank (IPC) or all " + std::to_string(team.nranks) +
                      " ranks (virtual node), not " + std::to_string(team.local_ranks));
  }
  if (!custom_all_reduce_supports_fusion(fusion)) {
    throw KernelError(who + ": fusion " + to_string(fusion) + " with dtype " + to_string(dtype) +
                      " is not implemented (supported fusions: NONE, RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8)");
  }
  if (count <= 0) throw KernelError(who + ": element count must be positive, got " + std::to_string(count));
  const std::int64_t bytes = count * dtype_bytes(dtype);
  if (bytes > team.max_bytes) {
    throw KernelError(who + ": message of " + std::to_string(bytes) + " bytes (" + std::to_string(count) + " " +
                      to_string(dtype) + " elements) exceeds the team's workspace limit of " +
                      std::to_string(team.max_bytes) + " bytes per rank (create the team with a larger max_bytes)");
  }
  if (is_fused(fusion)) {
    const int width = vector_width(dtype);
    if (hidden <= 0) {
      throw KernelError(who + ": fusion " + to_string(fusion) + " needs the row length (hidden) > 0, got " +
                        std::to_string(hidden));
    }
    if (hidden % width != 0) {
      throw KernelError(who + ": fusion " + to_string(fusion) + " with dtype " + to_string(dtype) +
                        " needs hidden to be a multiple of the vector width " + std::to_string(width) + ", got " +
                        std::to_string(hidden));
    }
    if (count % hidden != 0) {
      throw KernelError(who + ": element count " + std::to_string(count) + " is not a whole number of rows of hidden " +
                        std::to_string(hidden));
    }
  }
}

void validate_all_reduce(AllReduceAlgorithm algorithm, const TeamShape& team, const AllReduceParams& p) {
  validate_all_reduce_shape(algorithm, team, p.dtype, p.fusion, p.count, p.hidden);
  const std::string who = to_string(algorithm);
  if (static_cast<int>(p.buffers.size()) != team.local_ranks) {
    throw KernelError(who + ": " + std::to_string(p.buffers.size()) + " buffer sets given for " +
                      std::to_string(team.local_ranks) + " local ranks");
  }
  for (int k = 0; k < team.local_ranks; ++k) {
    const AllReduceBuffers& b = p.buffers[static_cast<std::size_t>(k)];
    require_pointer(b.input, "input", k);
    require_pointer(b.output, "output", k);
    if (is_fused(p.fusion)) {
      require_pointer(b.residual_in, "residual_in", k);
      require_pointer(b.residual_out, "residual_out", k);
      require_pointer(b.gamma, "gamma", k);
    }
    if (p.fusion == FusionOp::ResidualRmsNormQuantFp8) require_pointer(b.fp8_out, "fp8_out", k);
  }
  if (is_fused(p.fusion) && !(p.rms_eps >= 0 && std::isfinite(p.rms_eps))) {
    throw KernelError(who + ": rms_eps must be finite and >= 0");
  }
  if (p.fusion == FusionOp::ResidualRmsNormQuantFp8 && !(p.fp8_scale > 0 && std::isfinite(p.fp8_scale))) {
    throw KernelError(who + ": fp8_scale must be finite and > 0, got " + std::to_string(p.fp8_scale));
  }
}

void validate_residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden,
                                float fp8_scale, const void* reduced, const AllReduceBuffers& b) {
  if (fusion != FusionOp::ResidualRmsNorm && fusion != FusionOp::ResidualRmsNormQuantFp8) {
    throw KernelError("residual_rms_norm: fusion " + to_string(fusion) + " with dtype " + to_string(dtype) +
                      " is not implemented (supported: RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8)");
  }
  const int width = vector_width(dtype);
  if (count <= 0 || hidden <= 0 || hidden % width != 0 || count % hidden != 0) {
    throw KernelError("residual_rms_norm: count " + std::to_string(count) + " and hidden " + std::to_string(hidden) +
                      " must be positive, hidden a multiple of " + std::to_string(width) +
                      " and count a whole number of rows");
  }
  require_pointer(reduced, "reduced", 0);
  require_pointer(b.residual_in, "residual_in", 0);
  require_pointer(b.residual_out, "residual_out", 0);
  require_pointer(b.gamma, "gamma", 0);
  require_pointer(b.output, "output", 0);
  if (fusion == FusionOp::ResidualRmsNormQuantFp8) {
    require_pointer(b.fp8_out, "fp8_out", 0);
    if (!(fp8_scale > 0 && std::isfinite(fp8_scale))) throw KernelError("residual_rms_norm: fp8_scale must be finite and > 0");
  }
}

}  // namespace arfit::kernels
