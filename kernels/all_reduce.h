// Host API of the custom all-reduce kernels (one-shot, two-shot, fused residual + RMSNorm (+ e4m3)).
// No CUDA headers here: streams are void* (cudaStream_t).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_types.h"
#include "model/sample.h"

namespace arfit::kernels {

class Team;

enum class AllReduceAlgorithm {
  OneShot,  // every rank reads all peers' staged inputs and reduces the whole tensor (rank order 0..N-1)
  TwoShot,  // reduce-scatter into scratch, barrier, all-gather of the reduced slices
};
std::string to_string(AllReduceAlgorithm algorithm);  // "ONESHOT" / "TWOSHOT" (model/sample.h strategy names)

// One local rank's buffers (device pointers, 16-byte aligned).
struct AllReduceBuffers {
  const void* input = nullptr;        // count elements
  void* output = nullptr;             // count elements; may equal input
  const void* residual_in = nullptr;  // fused: count elements (same values on every rank)
  void* residual_out = nullptr;       // fused: count elements, residual_in + allreduce(x); may equal residual_in
  const void* gamma = nullptr;        // fused: hidden elements (same values on every rank)
  void* fp8_out = nullptr;            // RESIDUAL_RMS_NORM_QUANT_FP8: count bytes of e4m3
};

struct AllReduceParams {
  DType dtype = DType::BF16;
  FusionOp fusion = FusionOp::None;
  std::int64_t count = 0;   // elements per rank
  std::int64_t hidden = 0;  // row length for fused epilogues (count % hidden == 0, hidden % vector width == 0)
  float rms_eps = 1e-6f;
  float fp8_scale = 1.0f;   // e4m3 = saturate(normed / fp8_scale)
  std::vector<AllReduceBuffers> buffers;  // one per local rank of the team
};

// What validation needs to know about a team (Team::shape()); separate so it can be checked without a GPU.
struct TeamShape {
  int nranks = 0;
  int local_ranks = 1;
  std::int64_t max_bytes = 0;  // workspace limit per message
};

// Rank counts the custom kernels are instantiated for.
bool custom_all_reduce_supports_ranks(int nranks);
// Fusion ops the custom kernels implement (NONE, RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8).
bool custom_all_reduce_supports_fusion(FusionOp fusion);

// Throws KernelError naming the problem: unsupported rank count, dtype/fusion pair, missing or
// misaligned pointer, size above the workspace, bad row shape. Host-only; runs without a GPU.
void validate_all_reduce(AllReduceAlgorithm algorithm, const TeamShape& team, const AllReduceParams& params);
// The same checks without buffers (for planning a grid before anything is allocated).
void validate_all_reduce_shape(AllReduceAlgorithm algorithm, const TeamShape& team, DType dtype, FusionOp fusion,
                               std::int64_t count, std::int64_t hidden);

// Validates, then enqueues one all-reduce for all local ranks of `team` on `stream` (cudaStream_t).
// Only one collective may be in flight on a team at a time (they share the barrier flags).
void all_reduce(AllReduceAlgorithm algorithm, Team& team, const AllReduceParams& params, void* stream);

// The unfused epilogue kernel used after an NCCL all-reduce: residual_out = reduced + residual_in,
// output = rmsnorm(residual_out) * gamma (+ e4m3). `reduced` is the all-reduce result (count elements).
void residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                       float fp8_scale, const void* reduced, const AllReduceBuffers& buffers, void* stream);
// Validation of the above (host-only).
void validate_residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden,
                                float fp8_scale, const void* reduced, const AllReduceBuffers& buffers);

}  // namespace arfit::kernels
