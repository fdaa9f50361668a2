// The wire format of the LOWPRECISION all-reduce (kernels/device/low_precision_kernels.h): how a rank's quantised
// contribution, and a slice owner's quantised sum, lie in a staging or scratch buffer, and who handles which group.
// Host and device code (no CUDA headers): the kernels, the launchers' block counts, the validation's workspace
// check and the descriptor's workspace size all read it, so they cannot disagree.
//
// Units:
//  * group: kLowPrecisionGroupElements (64) consecutive elements of the tensor, the last one possibly partial. One
//    fp32 quantisation multiplier per group (448 / the group's largest magnitude), so one large value only coarsens
//    the 63 values next to it. 64 e4m3 bytes + 4 scale bytes per group: the wire carries 1.0625 bytes per element
//    (bf16/fp16: 0.53 of the exact strategies' bytes; fp32: 0.27).
//  * chunk: `threads` consecutive groups, one group per thread (a thread quantises its group alone: no cross-thread
//    amax, so the host and GPU builds compute the same bits). Chunk c is handled by block c % blocks_per_rank of
//    every rank in every phase, so the per-block barriers order exactly the data each block exchanges (as the unfused
//    two-shot's chunks, kernels/device/partition.h).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/device/partition.h"

namespace arfit::kernels::low_precision {

inline constexpr int kLowPrecisionGroupElements = 64;
// e4m3's largest finite magnitude: a group's largest element is scaled onto it.
inline constexpr float kE4m3Largest = 448.0f;

// Where the parts of one quantised tensor of `count` elements start, in bytes from the buffer's base (16-byte
// aligned, like every buffer of the team). [e4m3 data: groups * 64 bytes, zero-padded][fp32 multipliers: groups].
struct QuantisedLayout {
  std::int64_t groups;         // ceil(count / 64)
  std::int64_t scales_offset;  // = groups * 64: a multiple of 16, so the data's 16-byte stores stay aligned
  std::int64_t bytes;          // scales_offset + 4 * groups
};
static_assert(std::is_trivially_copyable_v<QuantisedLayout> && std::is_standard_layout_v<QuantisedLayout>);
static_assert(sizeof(QuantisedLayout) == 3 * sizeof(std::int64_t));
static_assert(kLowPrecisionGroupElements % 16 == 0, "a group's e4m3 bytes are whole 16-byte stores");

ARFIT_HOST_DEVICE QuantisedLayout quantised_layout(std::int64_t count) {
  QuantisedLayout l;
  l.groups = partition::ceil_div(count, kLowPrecisionGroupElements);
  l.scales_offset = l.groups * kLowPrecisionGroupElements;
  l.bytes = l.scales_offset + 4 * l.groups;
  return l;
}

// Bytes of staging (and of a scratch slot) one launch of `count` elements needs: the quantised tensor. Never more
// than count * 2 bytes once count >= 68; small messages need up to 68 bytes whatever their size.
ARFIT_HOST_DEVICE std::int64_t workspace_bytes(std::int64_t count) { return quantised_layout(count).bytes; }

// Chunks of `threads` groups.
ARFIT_HOST_DEVICE std::int64_t chunk_count(std::int64_t count, int threads) {
  return partition::ceil_div(quantised_layout(count).groups, threads);
}

// Blocks each rank launches: one per chunk, at least 1, at most max_blocks_per_rank (same on every rank).
ARFIT_HOST_DEVICE int blocks_per_rank(std::int64_t count, int threads, int max_blocks_per_rank) {
  const std::int64_t chunks = chunk_count(count, threads);
  if (chunks < 1) return 1;
  return chunks < max_blocks_per_rank ? static_cast<int>(chunks) : max_blocks_per_rank;
}

}  // namespace arfit::kernels::low_precision
