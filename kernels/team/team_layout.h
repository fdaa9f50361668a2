// Plain-old-data structs shared by the host launchers and the device kernels: what a rank's registered
// workspace holds and the pointer table a launch receives. They cross the host/device boundary as kernel
// parameters and as raw device memory, so their layout is fixed and checked by static_assert.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/kernel_types.h"

namespace arfit::kernels {

// The signal area at the start of every rank's workspace (zeroed once when the team is created).
// arrival_flag[b][p] is written remotely by block b of peer p (st.release.sys) and polled by block b of
// this rank (ld.acquire.sys). The values are barrier sequence numbers that only grow (mod 2^32), so a flag
// never returns to a value a waiter is looking for (no ABA), and a waiter compares with a wrap-safe
// "at least" test because a fast peer may already have announced the next barrier.
// barrier_epoch[b] counts the barriers block b of this rank has passed; only that block touches it
// (read at kernel start, written at kernel end), and all ranks run the same sequence of launches, so
// the epochs of block b agree across ranks.
struct alignas(128) RankSignals {
  std::uint32_t arrival_flag[kMaxBlocksPerRank][kMaxRanks];
  std::uint32_t barrier_epoch[kMaxBlocksPerRank];
};
static_assert(std::is_trivially_copyable_v<RankSignals> && std::is_standard_layout_v<RankSignals>);
static_assert(offsetof(RankSignals, arrival_flag) == 0);
static_assert(offsetof(RankSignals, barrier_epoch) == kMaxBlocksPerRank * kMaxRanks * sizeof(std::uint32_t));
static_assert(sizeof(RankSignals) % 128 == 0, "keeps the staging buffer that follows 128-byte aligned");

// Layout of one rank's registered workspace (one allocation, one IPC handle):
//   [RankSignals][staging: max_bytes][scratch: kScratchSlots * max_bytes]
// staging receives the rank's input (peers read it); scratch receives two-shot partial results (the
// reduced slice, and for fused epilogues also the new residual and the e4m3 output at fixed offsets).
inline constexpr int kScratchSlots = 3;
inline constexpr std::int64_t workspace_allocation_bytes(std::int64_t max_bytes) {
  return static_cast<std::int64_t>(sizeof(RankSignals)) + (1 + kScratchSlots) * max_bytes;
}

// Pointers to every rank's workspace as seen from the launching process (IPC-mapped for peers), and which
// ranks one launch covers: blocks [k * blocks_per_rank, (k + 1) * blocks_per_rank) serve rank first_rank + k.
struct TeamPointers {
  RankSignals* signals[kMaxRanks];
  void* staging[kMaxRanks];
  void* scratch[kMaxRanks];
  // Raised (non-zero) by the host to stop a launch whose peers will never arrive (the bench watchdog): a block
  // waiting in a barrier polls it and leaves the kernel instead of trapping. Host-mapped pinned memory on a
  // GPU; nullptr: never aborted.
  const std::uint32_t* abort_flag;
  std::int64_t max_bytes;   // staging size; scratch slot size
  std::uint64_t barrier_timeout_ns;  // a barrier wait longer than this traps (the launch fails)
  std::int32_t nranks;
  std::int32_t first_rank;
  std::int32_t local_ranks;
  std::int32_t blocks_per_rank;
  // The multimem kernels' multicast address of the staging buffers: one address that maps offset k to offset k of
  // every rank's staging (a CUDA multicast object bound to each staging buffer, sm_90+). nullptr where the team has
  // none: the host teams (the CPU emulates the multicast address with staging[], primitives.h) and GPUs without
  // multicast, on which the multimem strategies are refused before a launch.
  void* multicast_staging;
};
static_assert(std::is_trivially_copyable_v<TeamPointers> && std::is_standard_layout_v<TeamPointers>);
static_assert(sizeof(void*) == 8, "device pointers are 64-bit");
static_assert(offsetof(TeamPointers, abort_flag) == 3 * kMaxRanks * sizeof(void*));
static_assert(offsetof(TeamPointers, max_bytes) == 3 * kMaxRanks * sizeof(void*) + 8);
static_assert(offsetof(TeamPointers, multicast_staging) == 3 * kMaxRanks * 8 + 8 + 8 + 8 + 4 * 4);
static_assert(sizeof(TeamPointers) == 3 * kMaxRanks * 8 + 8 + 8 + 8 + 4 * 4 + 8);

// Default barrier_timeout_ns: long enough for any legitimate wait, short enough that a hung case ends.
inline constexpr std::uint64_t kDefaultBarrierTimeoutNs = 20ull * 1000 * 1000 * 1000;

// The pointer table of a team whose rank r's workspace (workspace_allocation_bytes(max_bytes), laid out as
// above) starts at workspace[r] in this process's address space. Shared by the GPU teams (kernels/team.h),
// the host teams (kernels/team/host_team.h) and the host backend's shared-memory window (bench/host).
inline TeamPointers team_pointers(void* const* workspace, int nranks, int first_rank, int local_ranks,
                                  std::int64_t max_bytes, int blocks_per_rank, const std::uint32_t* abort_flag,
                                  std::uint64_t barrier_timeout_ns) {
  TeamPointers t{};
  for (int r = 0; r < nranks; ++r) {
    char* base = static_cast<char*>(workspace[r]);
    t.signals[r] = reinterpret_cast<RankSignals*>(base);
    t.staging[r] = base + sizeof(RankSignals);
    t.scratch[r] = base + sizeof(RankSignals) + max_bytes;
  }
  t.abort_flag = abort_flag;
  t.max_bytes = max_bytes;
  t.barrier_timeout_ns = barrier_timeout_ns;
  t.nranks = nranks;
  t.first_rank = first_rank;
  t.local_ranks = local_ranks;
  t.blocks_per_rank = blocks_per_rank;
  return t;
}

// The user's buffers of one all-reduce launch, per local rank (index = rank - first_rank).
struct AllReduceLaunch {
  const void* input[kMaxRanks];
  void* output[kMaxRanks];
  const void* residual_in[kMaxRanks];
  void* residual_out[kMaxRanks];
  const void* gamma[kMaxRanks];
  void* fp8_out[kMaxRanks];    // the quantised output: e4m3 bytes (FP8) or packed e2m1 (NVFP4)
  void* scale_out[kMaxRanks];  // NVFP4: the e4m3 block scales, swizzled (nvfp4_scale_offset); unused otherwise
  std::int64_t count;         // elements
  std::int64_t hidden;        // row length (fused epilogues); 0 otherwise
  float rms_eps;
  float fp8_inv_scale;        // FP8: e4m3 = saturate(normed * fp8_inv_scale); NVFP4: the global scale (see
                              // nvfp4_quantize_block)
  std::int32_t input_may_alias;  // 1 when some rank's input is written during the launch (in place)
  std::int32_t reserved;
};
static_assert(std::is_trivially_copyable_v<AllReduceLaunch> && std::is_standard_layout_v<AllReduceLaunch>);
static_assert(offsetof(AllReduceLaunch, count) == 7 * kMaxRanks * sizeof(void*));
static_assert(sizeof(AllReduceLaunch) == 7 * kMaxRanks * 8 + 2 * 8 + 4 * 4);

}  // namespace arfit::kernels
