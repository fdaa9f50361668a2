// Device code of the custom all-reduce kernels: 16-byte memory access, the cross-rank barrier, the fused
// residual + RMSNorm (+ e4m3) epilogue, and the one-shot / two-shot kernels templated on element type,
// rank count and fusion op. Included by the per-(algorithm, dtype) translation units
// (all_reduce_<algorithm>_<dtype>.cu) so that instantiations compile in parallel and stay small.
//
// Memory-ordering summary (details at each site):
//  * Data written before a barrier (staging copies, two-shot scratch slices) is published by
//    __syncthreads() (CTA-scope ordering of every thread's writes before the signalling thread's store)
//    followed by st.release.sys of a flag into the peer's signal area; a peer's waiting thread reads the
//    flag with ld.acquire.sys and then __syncthreads() orders its whole block's subsequent loads after
//    the acquire. Release/acquire at system scope because peers are other GPUs reached over NVLink/PCIe
//    (in virtual-node mode .gpu would do, but the same code path is exercised on purpose).
//  * Data loads and stores themselves are weak (plain ld/st.global): they need no ordering among each
//    other, only the happens-before edges the barriers create.
//  * The barrier at the end of each kernel keeps the next launch from overwriting a staging or scratch
//    buffer that a slower peer is still reading (write-after-read across ranks).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "kernels/team_layout.h"

namespace arfit::kernels::device {

inline constexpr int kThreadsPerBlock = 512;
inline constexpr int kWarpsPerBlock = kThreadsPerBlock / 32;
// A barrier that waits longer than this traps (the launch fails with an error) instead of hanging the
// process forever when a peer never arrives (e.g. ranks launched different sequences of collectives).
inline constexpr std::uint64_t kBarrierTimeoutNs = 20ull * 1000 * 1000 * 1000;

template <typename T>
struct VectorWidth {
  static constexpr int value = 16 / static_cast<int>(sizeof(T));
};

// ---------------- 16-byte memory access ----------------

// Read-only path (ld.global.nc): only for buffers no thread writes during the launch (the user's input
// when it does not alias an output, gamma).
__device__ __forceinline__ uint4 load_16_read_only(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// Coherent weak load: peers' staging/scratch buffers (written during the launch, ordered by the barrier)
// and buffers that may alias an output. `volatile` + "memory" keep it on its side of the barrier in
// program order (the compiler may not move it across the barrier's asm).
__device__ __forceinline__ uint4 load_16(const void* p) {
  uint4 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// Weak 16-byte store; published to peers by the next barrier's release.
__device__ __forceinline__ void store_16(void* p, uint4 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w)
               : "memory");
}

// ---------------- element conversions (fp32 accumulation) ----------------

template <typename T>
__device__ __forceinline__ float to_float(T x);
template <>
__device__ __forceinline__ float to_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ float to_float<__half>(__half x) { return __half2float(x); }
template <>
__device__ __forceinline__ float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float<float>(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float<__half>(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }

// One 16-byte vector of T viewed as elements.
template <typename T>
union Packed16 {
  uint4 raw;
  T element[VectorWidth<T>::value];
  __device__ Packed16() : raw{} {}
};

// acc[k] += element k of `raw`.
template <typename T>
__device__ __forceinline__ void accumulate(uint4 raw, float* acc) {
  Packed16<T> p;
  p.raw = raw;
#pragma unroll
  for (int k = 0; k < VectorWidth<T>::value; ++k) acc[k] += to_float<T>(p.element[k]);
}

template <typename T>
__device__ __forceinline__ uint4 pack(const float* values) {
  Packed16<T> p;
#pragma unroll
  for (int k = 0; k < VectorWidth<T>::value; ++k) p.element[k] = from_float<T>(values[k]);
  return p.raw;
}

// e4m3 of W values (W = 8 for 16-bit T, 4 for fp32), saturating to +-448, stored with one 8- or 4-byte store.
template <int W>
__device__ __forceinline__ void store_e4m3(std::uint8_t* dst, const float* values, float inv_scale) {
  static_assert(W == 8 || W == 4);
  std::uint32_t word[W / 4];
#pragma unroll
  for (int k = 0; k < W / 4; ++k) {
    const auto lo = __nv_cvt_float2_to_fp8x2(make_float2(values[4 * k] * inv_scale, values[4 * k + 1] * inv_scale),
                                             __NV_SATFINITE, __NV_E4M3);
    const auto hi = __nv_cvt_float2_to_fp8x2(make_float2(values[4 * k + 2] * inv_scale, values[4 * k + 3] * inv_scale),
                                             __NV_SATFINITE, __NV_E4M3);
    word[k] = static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
  }
  if constexpr (W == 8) {
    asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(dst), "r"(word[0]), "r"(word[1]) : "memory");
  } else {
    asm volatile("st.global.u32 [%0], %1;" ::"l"(dst), "r"(word[0]) : "memory");
  }
}

// Copies W e4m3 bytes (the unit store_e4m3 writes) with coherent loads.
template <int W>
__device__ __forceinline__ void copy_e4m3(std::uint8_t* dst, const std::uint8_t* src) {
  if constexpr (W == 8) {
    std::uint32_t a, b;
    asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "l"(src) : "memory");
    asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(dst), "r"(a), "r"(b) : "memory");
  } else {
    std::uint32_t a;
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(a) : "l"(src) : "memory");
    asm volatile("st.global.u32 [%0], %1;" ::"l"(dst), "r"(a) : "memory");
  }
}

// ---------------- cross-rank barrier ----------------

__device__ __forceinline__ void store_release_system(std::uint32_t* flag, std::uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

__device__ __forceinline__ std::uint32_t load_acquire_system(const std::uint32_t* flag) {
  std::uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

__device__ __forceinline__ std::uint64_t global_timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Block `block` of every rank meets here. `sequence` is this block's running barrier count (epoch + k);
// it only grows, so flags never repeat a value (no ABA) and a waiter accepts any value at least as new
// as its own (wrap-safe signed difference): a fast peer may already have announced the next barrier.
//
// Why flags rather than Lamport sentinels: the same barrier serves one-shot (staging), two-shot (scratch
// between its two halves) and the end-of-kernel write-after-read guard, for all three dtypes and the fused
// epilogues; sentinel buffers would need a reserved bit pattern per dtype (and per e4m3 output), a
// buffer reset per launch and double buffering. Flags cost one round trip per barrier and keep the data path
// free of sentinel checks.
template <int kRanks>
__device__ __forceinline__ void team_barrier(const TeamPointers& team, int rank, int block, std::uint32_t sequence) {
  // CTA-scope ordering: every thread's writes of the finished phase happen before the signalling threads'
  // release below (bar.sync synchronises the block; the release is cumulative over what it observed).
  __syncthreads();
  if (threadIdx.x < kRanks) {
    const int peer = static_cast<int>(threadIdx.x);
    // Release at system scope: the peer (another GPU, or this GPU in virtual mode) that acquires this flag
    // sees all writes of our block's phase, including our staging/scratch data.
    store_release_system(&team.signals[peer]->arrival_flag[block][rank], sequence);
    const std::uint32_t* arrived = &team.signals[rank]->arrival_flag[block][peer];
    // Acquire at system scope: once the peer's flag is seen, the peer's published data is visible to us.
    std::uint64_t started = 0;
    unsigned spins = 0;
    while (static_cast<std::int32_t>(load_acquire_system(arrived) - sequence) < 0) {
      if ((++spins & 1023u) == 0) {
        const std::uint64_t now = global_timer_ns();
        if (started == 0) {
          started = now;
        } else if (now - started > kBarrierTimeoutNs) {
          __trap();
        }
      }
    }
  }
  // The acquiring threads' observations happen before every thread's loads of peer data that follow.
  __syncthreads();
}

// ---------------- fused epilogue ----------------

// Sum of `value` over the block, in a fixed order (so every rank computing the same row gets the same bits).
__device__ __forceinline__ float block_sum(float value) {
  __shared__ float warp_sums[kWarpsPerBlock];
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = value;
  __syncthreads();
  float total = 0;
#pragma unroll
  for (int w = 0; w < kWarpsPerBlock; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums is reused by the next row
  return total;
}

// One row of residual_out = reduced + residual_in; output = residual_out * rsqrt(mean(residual_out^2) + eps)
// * gamma; e4m3 = saturate(output_fp32 * fp8_inv_scale). `load_reduced(j, acc)` adds the all-reduced fp32
// values of vector j of the row into acc. The norm uses residual_out as stored (rounded to T), so that the
// returned residual and the normalised output agree. Every thread of the block must call it (block_sum).
template <typename T, bool kQuantFp8, typename LoadReduced>
__device__ __forceinline__ void residual_rms_norm_row(LoadReduced load_reduced, const T* residual_in, const T* gamma,
                                                      T* residual_out, T* output, std::uint8_t* fp8_out,
                                                      std::int64_t vectors_per_row, std::int64_t hidden, float eps,
                                                      float fp8_inv_scale) {
  constexpr int W = VectorWidth<T>::value;
  float sum_squares = 0;
  for (std::int64_t j = threadIdx.x; j < vectors_per_row; j += kThreadsPerBlock) {
    float acc[W] = {};
    load_reduced(j, acc);
    accumulate<T>(load_16(residual_in + j * W), acc);  // coherent: residual_in may alias residual_out
    const uint4 rounded = pack<T>(acc);
    store_16(residual_out + j * W, rounded);
    float r[W] = {};
    accumulate<T>(rounded, r);
#pragma unroll
    for (int k = 0; k < W; ++k) sum_squares += r[k] * r[k];
  }
  const float inv_rms = rsqrtf(block_sum(sum_squares) / static_cast<float>(hidden) + eps);
  for (int j = static_cast<int>(threadIdx.x); j < vectors_per_row; j += kThreadsPerBlock) {
    float r[W] = {};
    accumulate<T>(load_16(residual_out + j * W), r);  // this thread's own store above (program order)
    float g[W] = {};
    accumulate<T>(load_16_read_only(gamma + j * W), g);
    float y[W];
#pragma unroll
    for (int k = 0; k < W; ++k) y[k] = r[k] * inv_rms * g[k];
    store_16(output + j * W, pack<T>(y));
    if constexpr (kQuantFp8) store_e4m3<W>(fp8_out + j * W, y, fp8_inv_scale);
  }
}

// ---------------- kernels ----------------

// Which rank and which of its blocks this CTA is (one launch may cover all ranks of a virtual node).
struct BlockRole {
  int local;  // index into the launch's per-rank buffers
  int rank;
  int block;  // block index within the rank: the barrier flags are per block
};
__device__ __forceinline__ BlockRole block_role(const TeamPointers& team) {
  BlockRole r;
  r.local = static_cast<int>(blockIdx.x) / team.blocks_per_rank;
  r.block = static_cast<int>(blockIdx.x) % team.blocks_per_rank;
  r.rank = team.first_rank + r.local;
  return r;
}

__device__ __forceinline__ std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
// Smallest c >= lo with c % stride == residue.
__device__ __forceinline__ std::int64_t first_at_or_after(std::int64_t lo, int residue, int stride) {
  return lo + ((residue - lo % stride) % stride + stride) % stride;
}

// Phase 1 of both algorithms: copy this rank's input into its registered staging buffer, so that peers can
// read it. Vector i is handled by block (i / kThreadsPerBlock) % blocks_per_rank of every rank, the same
// mapping the later phases use (the barrier only orders block b of one rank with block b of the others).
template <typename T>
__device__ __forceinline__ void publish_input_vectors(const T* input, T* staging, std::int64_t vectors, int block,
                                                      int blocks_per_rank, bool input_may_alias) {
  constexpr int W = VectorWidth<T>::value;
  const std::int64_t stride = static_cast<std::int64_t>(blocks_per_rank) * kThreadsPerBlock;
  for (std::int64_t i = static_cast<std::int64_t>(block) * kThreadsPerBlock + threadIdx.x; i < vectors; i += stride) {
    const uint4 v = input_may_alias ? load_16(input + i * W) : load_16_read_only(input + i * W);
    store_16(staging + i * W, v);
  }
}

template <typename T>
__device__ __forceinline__ void publish_input_rows(const T* input, T* staging, std::int64_t rows,
                                                   std::int64_t vectors_per_row, int block, int blocks_per_rank,
                                                   bool input_may_alias) {
  constexpr int W = VectorWidth<T>::value;
  for (std::int64_t row = block; row < rows; row += blocks_per_rank) {
    const std::int64_t base = row * vectors_per_row * W;
    for (std::int64_t j = threadIdx.x; j < vectors_per_row; j += kThreadsPerBlock) {
      const uint4 v = input_may_alias ? load_16(input + base + j * W) : load_16_read_only(input + base + j * W);
      store_16(staging + base + j * W, v);
    }
  }
}

// Sum over ranks 0..kRanks-1 (always in that order: bitwise-identical results on every rank) of vector
// `offset` (element offset) of the peers' buffers.
template <typename T, int kRanks>
__device__ __forceinline__ void reduce_peers(void* const* buffers, std::int64_t offset, float* acc) {
#pragma unroll
  for (int p = 0; p < kRanks; ++p) accumulate<T>(load_16(static_cast<const T*>(buffers[p]) + offset), acc);
}

template <typename T, int kRanks>
__device__ __forceinline__ float reduce_peers_scalar(void* const* buffers, std::int64_t index) {
  float acc = 0;
#pragma unroll
  for (int p = 0; p < kRanks; ++p) acc += to_float<T>(static_cast<const T*>(buffers[p])[index]);
  return acc;
}

// One-shot: publish, barrier, every rank reduces the whole tensor from all peers' staging, barrier.
template <typename T, int kRanks, FusionOp kFusion>
__global__ void __launch_bounds__(kThreadsPerBlock, 1)
    one_shot_all_reduce_kernel(const TeamPointers team, const AllReduceLaunch args) {
  constexpr int W = VectorWidth<T>::value;
  const BlockRole me = block_role(team);
  const int blocks_per_rank = team.blocks_per_rank;
  // Written by this block at the end of the previous launch on this stream (stream order makes it visible).
  const std::uint32_t epoch = team.signals[me.rank]->barrier_epoch[me.block];
  T* const staging = static_cast<T*>(team.staging[me.rank]);
  const T* const input = static_cast<const T*>(args.input[me.local]);
  T* const output = static_cast<T*>(args.output[me.local]);

  if constexpr (kFusion == FusionOp::None) {
    const std::int64_t vectors = args.count / W;
    publish_input_vectors<T>(input, staging, vectors, me.block, blocks_per_rank, args.input_may_alias != 0);
    if (me.block == 0) {
      for (std::int64_t j = vectors * W + threadIdx.x; j < args.count; j += kThreadsPerBlock) staging[j] = input[j];
    }
    team_barrier<kRanks>(team, me.rank, me.block, epoch + 1);
    const std::int64_t stride = static_cast<std::int64_t>(blocks_per_rank) * kThreadsPerBlock;
    for (std::int64_t i = static_cast<std::int64_t>(me.block) * kThreadsPerBlock + threadIdx.x; i < vectors;
         i += stride) {
      float acc[W] = {};
      reduce_peers<T, kRanks>(team.staging, i * W, acc);
      store_16(output + i * W, pack<T>(acc));
    }
    if (me.block == 0) {  // scalar tail: count not a multiple of the vector width
      for (std::int64_t j = vectors * W + threadIdx.x; j < args.count; j += kThreadsPerBlock) {
        output[j] = from_float<T>(reduce_peers_scalar<T, kRanks>(team.staging, j));
      }
    }
  } else {
    constexpr bool kQuantFp8 = kFusion == FusionOp::ResidualRmsNormQuantFp8;
    const std::int64_t rows = args.count / args.hidden;
    const std::int64_t vectors_per_row = args.hidden / W;
    publish_input_rows<T>(input, staging, rows, vectors_per_row, me.block, blocks_per_rank, args.input_may_alias != 0);
    team_barrier<kRanks>(team, me.rank, me.block, epoch + 1);
    const T* const residual_in = static_cast<const T*>(args.residual_in[me.local]);
    T* const residual_out = static_cast<T*>(args.residual_out[me.local]);
    const T* const gamma = static_cast<const T*>(args.gamma[me.local]);
    auto* const fp8_out = static_cast<std::uint8_t*>(args.fp8_out[me.local]);
    for (std::int64_t row = me.block; row < rows; row += blocks_per_rank) {
      const std::int64_t base = row * args.hidden;
      auto load_reduced = [&](std::int64_t j, float* acc) { reduce_peers<T, kRanks>(team.staging, base + j * W, acc); };
      residual_rms_norm_row<T, kQuantFp8>(load_reduced, residual_in + base, gamma, residual_out + base, output + base,
                                          kQuantFp8 ? fp8_out + base : nullptr, vectors_per_row, args.hidden,
                                          args.rms_eps, args.fp8_inv_scale);
    }
  }
  // Write-after-read guard: no rank's next launch overwrites its staging while a peer still reads it.
  team_barrier<kRanks>(team, me.rank, me.block, epoch + 2);
  if (threadIdx.x == 0) team.signals[me.rank]->barrier_epoch[me.block] = epoch + 2;
}

// Two-shot: publish, barrier, reduce-scatter (rank r reduces slice r from all peers into its scratch),
// barrier, all-gather (every rank copies slice s from rank s's scratch), barrier.
// Fused epilogues run on the slice owner (rows are the slice unit), which writes output, new residual and
// e4m3 into scratch slots 0, 1, 2; the all-gather copies all three.
template <typename T, int kRanks, FusionOp kFusion>
__global__ void __launch_bounds__(kThreadsPerBlock, 1)
    two_shot_all_reduce_kernel(const TeamPointers team, const AllReduceLaunch args) {
  constexpr int W = VectorWidth<T>::value;
  const BlockRole me = block_role(team);
  const int blocks_per_rank = team.blocks_per_rank;
  const std::uint32_t epoch = team.signals[me.rank]->barrier_epoch[me.block];
  T* const staging = static_cast<T*>(team.staging[me.rank]);
  const T* const input = static_cast<const T*>(args.input[me.local]);
  T* const output = static_cast<T*>(args.output[me.local]);

  if constexpr (kFusion == FusionOp::None) {
    const std::int64_t vectors = args.count / W;
    // Slices are whole chunks of kThreadsPerBlock vectors so that chunk ownership (block c % blocks_per_rank)
    // is the same in all three phases. The scalar tail belongs to the last rank.
    const std::int64_t chunks = ceil_div(vectors, kThreadsPerBlock);
    const std::int64_t chunks_per_rank = ceil_div(chunks, kRanks);
    publish_input_vectors<T>(input, staging, vectors, me.block, blocks_per_rank, args.input_may_alias != 0);
    if (me.block == 0) {
      for (std::int64_t j = vectors * W + threadIdx.x; j < args.count; j += kThreadsPerBlock) staging[j] = input[j];
    }
    team_barrier<kRanks>(team, me.rank, me.block, epoch + 1);

    T* const scratch = static_cast<T*>(team.scratch[me.rank]);
    const std::int64_t lo = me.rank * chunks_per_rank;
    const std::int64_t hi = lo + chunks_per_rank < chunks ? lo + chunks_per_rank : chunks;
    for (std::int64_t c = first_at_or_after(lo, me.block, blocks_per_rank); c < hi; c += blocks_per_rank) {
      const std::int64_t i = c * kThreadsPerBlock + threadIdx.x;
      if (i < vectors) {
        float acc[W] = {};
        reduce_peers<T, kRanks>(team.staging, i * W, acc);
        store_16(scratch + i * W, pack<T>(acc));
      }
    }
    if (me.rank == kRanks - 1 && me.block == 0) {
      for (std::int64_t j = vectors * W + threadIdx.x; j < args.count; j += kThreadsPerBlock) {
        scratch[j] = from_float<T>(reduce_peers_scalar<T, kRanks>(team.staging, j));
      }
    }
    team_barrier<kRanks>(team, me.rank, me.block, epoch + 2);

    const std::int64_t stride = static_cast<std::int64_t>(blocks_per_rank) * kThreadsPerBlock;
    for (std::int64_t i = static_cast<std::int64_t>(me.block) * kThreadsPerBlock + threadIdx.x; i < vectors;
         i += stride) {
      const std::int64_t owner = (i / kThreadsPerBlock) / chunks_per_rank;
      store_16(output + i * W, load_16(static_cast<const T*>(team.scratch[owner]) + i * W));
    }
    if (me.block == 0) {
      const T* const tail_owner = static_cast<const T*>(team.scratch[kRanks - 1]);
      for (std::int64_t j = vectors * W + threadIdx.x; j < args.count; j += kThreadsPerBlock) output[j] = tail_owner[j];
    }
  } else {
    constexpr bool kQuantFp8 = kFusion == FusionOp::ResidualRmsNormQuantFp8;
    const std::int64_t rows = args.count / args.hidden;
    const std::int64_t vectors_per_row = args.hidden / W;
    const std::int64_t rows_per_rank = ceil_div(rows, kRanks);
    publish_input_rows<T>(input, staging, rows, vectors_per_row, me.block, blocks_per_rank, args.input_may_alias != 0);
    team_barrier<kRanks>(team, me.rank, me.block, epoch + 1);

    // Scratch slots of every rank: [0] normalised output, [1] new residual (both T), [2] e4m3 bytes.
    auto slot = [&](int rank, int s) { return static_cast<char*>(team.scratch[rank]) + s * team.max_bytes; };
    const T* const residual_in = static_cast<const T*>(args.residual_in[me.local]);
    const T* const gamma = static_cast<const T*>(args.gamma[me.local]);
    const std::int64_t lo = me.rank * rows_per_rank;
    const std::int64_t hi = lo + rows_per_rank < rows ? lo + rows_per_rank : rows;
    for (std::int64_t row = first_at_or_after(lo, me.block, blocks_per_rank); row < hi; row += blocks_per_rank) {
      const std::int64_t base = row * args.hidden;
      auto load_reduced = [&](std::int64_t j, float* acc) { reduce_peers<T, kRanks>(team.staging, base + j * W, acc); };
      residual_rms_norm_row<T, kQuantFp8>(
          load_reduced, residual_in + base, gamma, reinterpret_cast<T*>(slot(me.rank, 1)) + base,
          reinterpret_cast<T*>(slot(me.rank, 0)) + base,
          kQuantFp8 ? reinterpret_cast<std::uint8_t*>(slot(me.rank, 2)) + base : nullptr, vectors_per_row,
          args.hidden, args.rms_eps, args.fp8_inv_scale);
    }
    team_barrier<kRanks>(team, me.rank, me.block, epoch + 2);

    T* const residual_out = static_cast<T*>(args.residual_out[me.local]);
    auto* const fp8_out = static_cast<std::uint8_t*>(args.fp8_out[me.local]);
    for (std::int64_t row = me.block; row < rows; row += blocks_per_rank) {
      const int owner = static_cast<int>(row / rows_per_rank);
      const std::int64_t base = row * args.hidden;
      const T* const owner_output = reinterpret_cast<const T*>(slot(owner, 0)) + base;
      const T* const owner_residual = reinterpret_cast<const T*>(slot(owner, 1)) + base;
      for (std::int64_t j = threadIdx.x; j < vectors_per_row; j += kThreadsPerBlock) {
        store_16(output + base + j * W, load_16(owner_output + j * W));
        store_16(residual_out + base + j * W, load_16(owner_residual + j * W));
        if constexpr (kQuantFp8) {
          copy_e4m3<W>(fp8_out + base + j * W, reinterpret_cast<const std::uint8_t*>(slot(owner, 2)) + base + j * W);
        }
      }
    }
  }
  // Write-after-read guard for staging and scratch (see one-shot).
  team_barrier<kRanks>(team, me.rank, me.block, epoch + 3);
  if (threadIdx.x == 0) team.signals[me.rank]->barrier_epoch[me.block] = epoch + 3;
}

// The unfused epilogue (after an NCCL all-reduce): one block per row, grid-stride over rows.
template <typename T, bool kQuantFp8>
__global__ void __launch_bounds__(kThreadsPerBlock)
    residual_rms_norm_kernel(const T* reduced, const T* residual_in, T* residual_out, const T* gamma, T* output,
                             std::uint8_t* fp8_out, std::int64_t rows, std::int64_t hidden, float eps,
                             float fp8_inv_scale) {
  constexpr int W = VectorWidth<T>::value;
  const std::int64_t vectors_per_row = hidden / W;
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const std::int64_t base = row * hidden;
    auto load_reduced = [&](std::int64_t j, float* acc) { accumulate<T>(load_16(reduced + base + j * W), acc); };
    residual_rms_norm_row<T, kQuantFp8>(load_reduced, residual_in + base, gamma, residual_out + base, output + base,
                                        kQuantFp8 ? fp8_out + base : nullptr, vectors_per_row, hidden, eps,
                                        fp8_inv_scale);
  }
}

// Host-side dispatch over rank count and fusion op, shared by every algorithm: calls
// launch(std::integral_constant<int, R>, std::integral_constant<FusionOp, F>) with the team's rank count and the
// fusion op as compile-time values. Other values were rejected by validate_all_reduce before we get here.
template <typename Launch>
inline void dispatch_ranks_and_fusion(int nranks, FusionOp fusion, const Launch& launch) {
  auto with_ranks = [&](auto ranks) {
    switch (fusion) {
      case FusionOp::None: launch(ranks, std::integral_constant<FusionOp, FusionOp::None>{}); break;
      case FusionOp::ResidualRmsNorm: launch(ranks, std::integral_constant<FusionOp, FusionOp::ResidualRmsNorm>{}); break;
      case FusionOp::ResidualRmsNormQuantFp8:
        launch(ranks, std::integral_constant<FusionOp, FusionOp::ResidualRmsNormQuantFp8>{});
        break;
      default: break;
    }
  };
  switch (nranks) {
    case 2: with_ranks(std::integral_constant<int, 2>{}); break;
    case 4: with_ranks(std::integral_constant<int, 4>{}); break;
    case 8: with_ranks(std::integral_constant<int, 8>{}); break;
    default: break;
  }
}

// One element type's launches (instantiated per .cu file).
template <typename T>
inline void launch_one_shot_typed(FusionOp fusion, const TeamPointers& team, const AllReduceLaunch& args, int grid,
                                  cudaStream_t stream) {
  dispatch_ranks_and_fusion(team.nranks, fusion, [&](auto ranks, auto op) {
    one_shot_all_reduce_kernel<T, decltype(ranks)::value, decltype(op)::value><<<grid, kThreadsPerBlock, 0, stream>>>(team, args);
  });
}

template <typename T>
inline void launch_two_shot_typed(FusionOp fusion, const TeamPointers& team, const AllReduceLaunch& args, int grid,
                                  cudaStream_t stream) {
  dispatch_ranks_and_fusion(team.nranks, fusion, [&](auto ranks, auto op) {
    two_shot_all_reduce_kernel<T, decltype(ranks)::value, decltype(op)::value><<<grid, kThreadsPerBlock, 0, stream>>>(team, args);
  });
}

}  // namespace arfit::kernels::device
