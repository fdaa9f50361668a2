// The LOWPRECISION all-reduce kernel (TensorRT-LLM's AllReduceStrategy.LOWPRECISION idea, for PCIe machines without
// NVLink, where the bytes on the wire are the cost): every rank quantises its contribution to e4m3 with one fp32
// multiplier per group of 64 elements, the ranks exchange the quantised groups through the team workspace, and the
// sums are formed in fp32 from the dequantised values. Two-shot, as TensorRT-LLM's lowPrecisionTwoShotAllReduceKernel:
//   1. quantise: this rank's input -> its staging (e4m3 groups + multipliers, kernels/device/low_precision_layout.h);
//      barrier;
//   2. reduce-scatter: the owner of each chunk of groups dequantises every rank's group (rank order 0..N-1, fp32),
//      sums, and quantises the sum again into its scratch slot 0 (a second e4m3 rounding, as TensorRT-LLM's first
//      stage does, so the all-gather also moves 1.06 bytes per element); barrier;
//   3. all-gather: every rank dequantises each group from its owner's scratch and writes T; barrier (write-after-read
//      guard, as the other kernels).
// Why two-shot: each rank reads (N-1)/N of the tensor's quantised bytes twice, instead of (N-1) times the whole
// quantised tensor for a one-shot; the strategy exists for bandwidth-bound links and large messages (TensorRT-LLM
// uses it from 2 Mi elements up), where that is the difference. Every rank dequantises the same owner bytes in the
// same order, so all ranks' outputs are bitwise identical.
//
// Memory ordering: the same barrier (team_barrier, kernels/device/all_reduce_kernels.h) orders every phase: its
// sync_threads + release store publishes this block's weak stores of e4m3 bytes and multipliers, and the peers'
// acquire + sync_threads orders their weak loads after it. The group -> block mapping (chunk c on block
// c % blocks_per_rank, low_precision_layout.h) is the same in all three phases, so the per-block barrier orders
// exactly the groups a block exchanges. The multipliers are plain 4-byte stores and loads: like the data they need no
// order among themselves, only the barriers' happens-before edges.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/device/all_reduce_kernels.h"
#include "kernels/device/low_precision_layout.h"

// Deliberately broken variants for the `mutation` label (numbers apart from the ones of all_reduce_kernels.h).
#define ARFIT_MUTATION_LOW_PRECISION_WRONG_SCALE 21      // the reduce dequantises with the next group's multiplier
#define ARFIT_MUTATION_LOW_PRECISION_SKIP_QUANTISE_BARRIER 22  // the reduce reads staging before peers quantised it

namespace arfit::kernels::device {

// A quantised tensor inside a staging buffer or a scratch slot.
struct QuantisedView {
  std::uint8_t* data;  // group g's e4m3 bytes at data + g * 64 (16-byte aligned)
  float* scales;       // group g's multiplier: e4m3 = value * scales[g], value = e4m3 / scales[g]
};
static_assert(std::is_trivially_copyable_v<QuantisedView>);

ARFIT_DEVICE QuantisedView quantised_view(void* base, const low_precision::QuantisedLayout& layout) {
  QuantisedView v;
  v.data = static_cast<std::uint8_t*>(base);
  v.scales = reinterpret_cast<float*>(static_cast<std::uint8_t*>(base) + layout.scales_offset);
  return v;
}

// values[0..64) = the elements of group `group` of a T tensor of `count` elements as fp32, zero past its end. A whole
// group is 64 / W packed 16-byte loads; a partial one (the tensor's last) element loads. Every index is a
// compile-time constant after unrolling, so the arrays stay in registers on the GPU.
template <typename T>
ARFIT_DEVICE void load_group(const T* src, std::int64_t group, std::int64_t count, bool may_alias, float* values) {
  constexpr int G = low_precision::kLowPrecisionGroupElements;
  constexpr int W = VectorWidth<T>::value;
  const std::int64_t begin = group * G;
  const std::int64_t n = count - begin < G ? count - begin : G;
  if (n == G) {
    ARFIT_UNROLL
    for (int k = 0; k < G / W; ++k) {
      // Coherent when the input may be an output of this launch (in place), the read-only path otherwise.
      const Vec16 raw = may_alias ? load_16(src + begin + k * W) : load_16_read_only(src + begin + k * W);
      accumulate<T>(raw, values + k * W);
    }
  } else {
    ARFIT_UNROLL
    for (int k = 0; k < G; ++k) values[k] = k < n ? to_float<T>(src[begin + k]) : 0.0f;
  }
}

// Rounds values[0..64) to T into group `group` of dst (count elements): packed stores for a whole group.
template <typename T>
ARFIT_DEVICE void store_group(T* dst, std::int64_t group, std::int64_t count, const float* values) {
  constexpr int G = low_precision::kLowPrecisionGroupElements;
  constexpr int W = VectorWidth<T>::value;
  const std::int64_t begin = group * G;
  const std::int64_t n = count - begin < G ? count - begin : G;
  if (n == G) {
    ARFIT_UNROLL
    for (int k = 0; k < G / W; ++k) store_16(dst + begin + k * W, pack<T>(values + k * W));
  } else {
    ARFIT_UNROLL
    for (int k = 0; k < G; ++k) {
      if (k < n) dst[begin + k] = from_float<T>(values[k]);
    }
  }
}

// The multiplier that maps the group's largest magnitude onto e4m3's largest (448), as TensorRT-LLM's
// QUANT_MAX / amax. 0 for an all-zero group (its bytes are then all zero and dequantise to 0); capped at 2^126 so
// that a group of tiny subnormals still has a finite multiplier (it then quantises with a coarser step).
ARFIT_DEVICE float group_multiplier(const float* values) {
  constexpr int G = low_precision::kLowPrecisionGroupElements;
  float largest = 0;
  ARFIT_UNROLL
  for (int k = 0; k < G; ++k) {
    const float a = values[k] < 0 ? -values[k] : values[k];
    largest = a > largest ? a : largest;
  }
  if (!(largest > 0)) return 0.0f;
  const float multiplier = low_precision::kE4m3Largest / largest;
  constexpr float kCap = 8.507059173023462e37f;  // 2^126
  return multiplier < kCap ? multiplier : kCap;
}

// Quantises values[0..64) into group `group` of `to`: four 16-byte stores of e4m3 (round to nearest even,
// saturating) and one store of the multiplier. Weak stores: the next barrier publishes them.
ARFIT_DEVICE void quantise_group(const float* values, std::int64_t group, const QuantisedView& to) {
  constexpr int G = low_precision::kLowPrecisionGroupElements;
  const float multiplier = group_multiplier(values);
  std::uint8_t* const data = to.data + group * G;
  ARFIT_UNROLL
  for (int k = 0; k < G / 16; ++k) {
    union {
      Vec16 raw;
      std::uint8_t bytes[16];
    } pack16;
    ARFIT_UNROLL
    for (int j = 0; j < 16; ++j) pack16.bytes[j] = e4m3_from_float(values[16 * k + j] * multiplier);
    store_16(data + 16 * k, pack16.raw);
  }
  to.scales[group] = multiplier;
}

// sums[k] += the dequantised element k of group `group` of `from`, read with the multiplier of group `scale_group`
// (the group itself; the wrong-scale mutation passes another). Coherent weak loads: a peer wrote them before the
// barrier this block passed.
ARFIT_DEVICE void dequantise_add_group(const QuantisedView& from, std::int64_t group, std::int64_t scale_group,
                                       float* sums) {
  constexpr int G = low_precision::kLowPrecisionGroupElements;
  const float multiplier = from.scales[scale_group];
  const std::uint8_t* const data = from.data + group * G;
  ARFIT_UNROLL
  for (int k = 0; k < G / 16; ++k) {
    union {
      Vec16 raw;
      std::uint8_t bytes[16];
    } pack16;
    pack16.raw = load_16(data + 16 * k);
    ARFIT_UNROLL
    for (int j = 0; j < 16; ++j) {
      // Division, as TensorRT-LLM's dequantisation: correctly rounded on both targets (no fast-math).
      if (multiplier > 0) sums[16 * k + j] += e4m3_to_float(pack16.bytes[j]) / multiplier;
    }
  }
}

// The group whose multiplier dequantises `group`: itself, except in the wrong-scale mutation (its neighbour).
ARFIT_DEVICE std::int64_t scale_group_of(std::int64_t group, std::int64_t groups) {
  if constexpr (ARFIT_MUTATION == ARFIT_MUTATION_LOW_PRECISION_WRONG_SCALE) {
    return (group ^ 1) < groups ? (group ^ 1) : group;
  } else {
    (void)groups;
    return group;
  }
}

// Phase 2 for the groups this block owns: dequantise all ranks' group (rank order), sum in fp32, quantise the sum
// into this rank's scratch.
template <int kRanks, int kThreads>
ARFIT_DEVICE void reduce_owned_groups(const TeamPointers& team, const BlockRole& me,
                                      const low_precision::QuantisedLayout& layout, std::int64_t chunks) {
  constexpr int G = low_precision::kLowPrecisionGroupElements;
  const std::int64_t chunks_per_rank = partition::units_per_rank(chunks, kRanks);
  const partition::Range mine = partition::owned_units(me.rank, chunks, chunks_per_rank);
  const QuantisedView sums_out = quantised_view(team.scratch[me.rank], layout);
  for (std::int64_t c = partition::first_at_or_after(mine.begin, me.block, team.blocks_per_rank); c < mine.end;
       c += team.blocks_per_rank) {
    const std::int64_t g = c * kThreads + thread_index();
    if (g >= layout.groups) continue;
    float sums[G] = {};
    ARFIT_UNROLL
    for (int p = 0; p < kRanks; ++p) {
      dequantise_add_group(quantised_view(team.staging[p], layout), g, scale_group_of(g, layout.groups), sums);
    }
    quantise_group(sums, g, sums_out);
  }
}

// LOWPRECISION: quantise, barrier, reduce-scatter + requantise, barrier, all-gather + dequantise, barrier.
template <typename T, int kRanks, int kThreads>
ARFIT_KERNEL(kThreads) low_precision_all_reduce_kernel(const TeamPointers team, const AllReduceLaunch args) {
  constexpr int G = low_precision::kLowPrecisionGroupElements;
  constexpr bool kSkipQuantiseBarrier = ARFIT_MUTATION == ARFIT_MUTATION_LOW_PRECISION_SKIP_QUANTISE_BARRIER;
  const RankView<T> v = rank_view<T>(team, args);
  const BlockRole& me = v.me;
  const int blocks_per_rank = team.blocks_per_rank;
  const low_precision::QuantisedLayout layout = low_precision::quantised_layout(args.count);
  const std::int64_t chunks = partition::ceil_div(layout.groups, kThreads);

  const QuantisedView mine = quantised_view(v.staging, layout);
  for (std::int64_t c = me.block; c < chunks; c += blocks_per_rank) {
    const std::int64_t g = c * kThreads + thread_index();
    if (g >= layout.groups) continue;
    float values[G] = {};
    load_group<T>(v.input, g, args.count, args.input_may_alias != 0, values);
    quantise_group(values, g, mine);
  }
  if (!team_barrier_unless<kRanks, kThreads>(kSkipQuantiseBarrier, team, me.rank, me.block, v.epoch + 1)) return;

  reduce_owned_groups<kRanks, kThreads>(team, me, layout, chunks);
  if (!team_barrier<kRanks, kThreads>(team, me.rank, me.block, v.epoch + 2)) return;

  const std::int64_t chunks_per_rank = partition::units_per_rank(chunks, kRanks);
  for (std::int64_t c = me.block; c < chunks; c += blocks_per_rank) {
    const std::int64_t g = c * kThreads + thread_index();
    if (g >= layout.groups) continue;
    const int owner = partition::owner_of(c, chunks_per_rank);
    float values[G] = {};
    dequantise_add_group(quantised_view(team.scratch[owner], layout), g, g, values);
    store_group<T>(v.output, g, args.count, values);
  }
  // Write-after-read guard: no rank's next launch overwrites its staging or scratch while a peer still reads them.
  if (!team_barrier<kRanks, kThreads>(team, me.rank, me.block, v.epoch + 3)) return;
  if (thread_index() == 0) team.signals[me.rank]->barrier_epoch[me.block] = v.epoch + 3;
}

// Calls launch(std::integral_constant<int, R>) with the team's rank count (2, 4 or 8; others were refused by
// validate_all_reduce). LOWPRECISION has no fused epilogue, so only the rank count is dispatched.
template <typename Launch>
inline void dispatch_ranks(int nranks, const Launch& launch) {
  switch (nranks) {
    case 2: launch(std::integral_constant<int, 2>{}); break;
    case 4: launch(std::integral_constant<int, 4>{}); break;
    case 8: launch(std::integral_constant<int, 8>{}); break;
    default: break;
  }
}

}  // namespace arfit::kernels::device
