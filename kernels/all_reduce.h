// Host API of the custom all-reduce kernels (one-shot, two-shot, fused residual + RMSNorm (+ e4m3 / NVFP4)): launches
// on a GPU (all_reduce, residual_rms_norm: arfit_kernels, CUDA builds) and the same kernels run on the CPU
// (all_reduce_on_host, residual_rms_norm_on_host: arfit_kernels_host_exec, every build).
// No CUDA headers here: streams are void* (cudaStream_t).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/device/host_executor.h"
#include "kernels/kernel_types.h"
#include "kernels/team/team_layout.h"
#include "model/sample.h"

namespace arfit::kernels {

class Team;

// "ONESHOT" / "TWOSHOT" / "LOWPRECISION" / "MULTIMEM_ONESHOT" / "MULTIMEM_TWOSHOT" (model/sample.h strategy names)
std::string to_string(AllReduceAlgorithm algorithm);
// The fusion ops an algorithm's kernels are instantiated for: all_fusion_ops() for ONESHOT and TWOSHOT, NONE only for
// LOWPRECISION and the multimem ones.
const std::vector<FusionOp>& all_reduce_fusions(AllReduceAlgorithm algorithm);

// One local rank's buffers (device pointers, 16-byte aligned; fp8_out only to its e4m3 pack, fp8_pack_bytes(dtype):
// 8 bytes for bf16/fp16, 4 for fp32). Buffers may not overlap, except that output
// may equal input (in place) and residual_out may equal residual_in (fused in place); read-only buffers
// (input, residual_in, gamma) may be shared between the ranks of a virtual team.
struct AllReduceBuffers {
  const void* input = nullptr;        // count elements
  void* output = nullptr;             // count elements; may equal input
  const void* residual_in = nullptr;  // fused: count elements (same values on every rank)
  void* residual_out = nullptr;       // fused: count elements, residual_in + allreduce(x); may equal residual_in
  const void* gamma = nullptr;        // fused: hidden elements (same values on every rank)
  // The quantised norm output. FP8 (..._QUANT_FP8, ..._OUT_QUANT_FP8): count bytes, e4m3(output / fp8_scale),
  // aligned to fp8_pack_bytes(dtype). NVFP4 (..._QUANT_NVFP4, ..._OUT_QUANT_NVFP4): nvfp4_packed_bytes(count) bytes
  // of e2m1 pairs, 8-byte aligned (kNvfp4PackBytes).
  void* fp8_out = nullptr;
  // NVFP4: nvfp4_scale_bytes(rows, hidden) bytes of e4m3 block scales in TensorRT-LLM's swizzled 128x4 layout
  // (padding bytes are not written). Unused otherwise.
  void* scale_out = nullptr;
};

struct AllReduceParams {
  DType dtype = DType::BF16;
  FusionOp fusion = FusionOp::None;
  std::int64_t count = 0;   // elements per rank
  std::int64_t hidden = 0;  // row length for fused epilogues (count % hidden == 0, hidden % vector width == 0)
  float rms_eps = 1e-6f;     // > 0, a normal float
  float fp8_scale = 1.0f;   // e4m3 = saturate(output / fp8_scale), of the output as stored (rounded to dtype);
                            // a normal, positive, finite float. NVFP4: the per-tensor dequantisation scale, i.e.
                            // TensorRT-LLM's global scale is 1 / fp8_scale (typically amax / (448 * 6))
  std::vector<AllReduceBuffers> buffers;  // one per local rank of the team
};

// What validation needs to know about a team (Team::shape()); separate so it can be checked without a GPU.
struct TeamShape {
  int nranks = 0;
  int local_ranks = 1;
  std::int64_t max_bytes = 0;  // workspace limit per message
};

// Rank counts the custom kernels are instantiated for (the descriptors' rank_counts).
const std::vector<int>& custom_all_reduce_rank_counts();
bool custom_all_reduce_supports_ranks(int nranks);
// Fusion ops the custom kernels implement: all of model/sample.h's all_fusion_ops().
bool custom_all_reduce_supports_fusion(FusionOp fusion);

// Throws KernelError naming the problem and its parameter: unsupported rank count, dtype/fusion pair, missing,
// misaligned or overlapping buffers, size above the workspace, bad row shape, rms_eps not a positive normal
// float, an FP8 scale that is zero, subnormal, negative or not finite. Host-only; runs without a GPU.
void validate_all_reduce(AllReduceAlgorithm algorithm, const TeamShape& team, const AllReduceParams& params);
// The epilogue's scalars: rms_eps > 0, finite and a normal float (fused: the kernels compute in float, so an epsilon
// given as a double that rounds to zero, a subnormal or infinity is refused), fp8_scale a normal positive float
// (FP8). rms_eps is taken as given (a StrategyCase's double), so the message shows that value, not its float
// rounding. `who` starts the message.
void validate_epilogue_scalars(const std::string& who, FusionOp fusion, double rms_eps, float fp8_scale);
// The same checks without buffers (for planning a grid before anything is allocated).
void validate_all_reduce_shape(AllReduceAlgorithm algorithm, const TeamShape& team, DType dtype, FusionOp fusion,
                               std::int64_t count, std::int64_t hidden);

// Blocks each rank launches for `params` with `threads` threads per block (kernels/device/partition.h; LOWPRECISION:
// kernels/device/low_precision_layout.h), at most max_blocks_per_rank: the same on every rank for the same case.
int all_reduce_blocks_per_rank(AllReduceAlgorithm algorithm, const AllReduceParams& params, int threads,
                               int max_blocks_per_rank);

// The by-value launch parameters of the kernels for `params` (one entry per local rank).
AllReduceLaunch make_all_reduce_launch(const AllReduceParams& params);

// The multimem strategies' GPU preconditions: sm_90+ with CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, and a team with
// multicast staging (Team::multimem_pointers carries a multicast address). KernelError naming Device otherwise, with
// the team's reason (Team::multicast_refusal). CUDA builds only (arfit_kernels).
bool device_supports_multicast(int device);
void validate_multicast_team(AllReduceAlgorithm algorithm, const Team& team);

// Validates, then enqueues one all-reduce for all local ranks of `team` on `stream` (cudaStream_t).
// Only one collective may be in flight on a team at a time (they share the barrier flags).
void all_reduce(AllReduceAlgorithm algorithm, Team& team, const AllReduceParams& params, void* stream);

// ---- the same kernels on the CPU (kernels/device/host_executor.h) ----

// One rank's workspace in this process's address space, laid out as kernels/team/team_layout.h says.
struct WorkspaceRegion {
  void* base = nullptr;
  std::int64_t bytes = 0;  // usable from base: at least workspace_allocation_bytes(max_bytes)
};

// What a team whose workspaces live in host memory is made of (kernels/team/host_team.h, or bench/host's MPI
// shared-memory window): every rank's workspace, which ranks this process drives, and its limits.
struct HostTeamSpec {
  std::vector<WorkspaceRegion> workspaces;  // one per rank, in rank order: their number is the team's size
  int first_rank = 0;                       // the first rank this process drives
  int local_ranks = 1;                      // how many: 1 (one rank per process) or all (virtual node)
  std::int64_t max_bytes = 0;               // per-message limit as team_max_bytes returned it (a multiple of 128)
  int max_blocks_per_rank = 1;              // blocks one launch may give a rank: 1..kMaxBlocksPerRank
  const std::uint32_t* abort_flag = nullptr;  // polled by the barrier waits (4-byte aligned); nullptr: none
  std::uint64_t barrier_timeout_ns = kDefaultBarrierTimeoutNs;
};

// A host team as the CPU launch reads it: its shape, its pointer table (blocks_per_rank is chosen per launch) and
// how many blocks per rank one launch may use. Built only from a HostTeamSpec that the team rules accepted
// (checked once, here, so a launch that reuses the view pays nothing for it).
class HostTeamView {
 public:
  HostTeamView() = default;  // no team (0 ranks): every launch on it is refused
  // Throws KernelError, the message starting with `who` and naming the field, when the spec breaks a rule the
  // kernels rely on (kernels/team/team_rules.cpp; docs/kernels.md lists them).
  HostTeamView(const std::string& who, const HostTeamSpec& spec);
  const TeamShape& shape() const { return shape_; }
  const TeamPointers& table() const { return table_; }
  int max_blocks_per_rank() const { return max_blocks_per_rank_; }

 private:
  TeamShape shape_;
  TeamPointers table_{};
  int max_blocks_per_rank_ = 1;
};

// Threads per block the host build of the kernels is compiled for (kThreads of the kernel templates):
// 1 (bench/host: one rank per process, no fibers), 32 (one warp) and 64 (two warps: the cross-warp order of
// the block sums).
inline constexpr int kHostThreadsPerBlock[] = {1, 32, 64};
bool host_supports_threads_per_block(int threads);

// Validates, then runs one all-reduce of the local ranks of `team` on the CPU with `threads_per_block` threads
// per block and returns when every block has finished. Throws device::host::KernelTrap when a block trapped
// (a barrier timed out). Returns false when the launch was aborted (the team's abort word or
// options.external_abort raised while a block waited): the outputs are then incomplete and the team's
// signals must be reset on every rank before the next launch.
bool all_reduce_on_host(AllReduceAlgorithm algorithm, const HostTeamView& team, const AllReduceParams& params,
                        int threads_per_block, const device::host::LaunchOptions& options = {});

// The unfused epilogue kernel used after an NCCL all-reduce: residual_out = reduced + residual_in,
// output = rmsnorm(residual_out) * gamma (+ e4m3). `reduced` is the all-reduce result (count elements). Output may
// equal reduced and residual_out may equal residual_in (vLLM's in-place fused_add_rms_norm); no other overlap.
void residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                       float fp8_scale, const void* reduced, const AllReduceBuffers& buffers, void* stream);
// The same epilogue kernel on the CPU, one block of `threads_per_block` threads (on the calling thread).
void residual_rms_norm_on_host(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                               float fp8_scale, const void* reduced, const AllReduceBuffers& buffers,
                               int threads_per_block);
// Validation of the above (host-only), and of its shape and scalars alone.
void validate_residual_rms_norm_shape(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden,
                                      double rms_eps, float fp8_scale);
void validate_residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                                float fp8_scale, const void* reduced, const AllReduceBuffers& buffers);

}  // namespace arfit::kernels
