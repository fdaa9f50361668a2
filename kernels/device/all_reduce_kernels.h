// The custom all-reduce kernels: the cross-rank barrier, the fused residual + RMSNorm (+ e4m3 / NVFP4) epilogue, and
// the one-shot / two-shot kernels templated on element type, rank count, fusion op and threads per block.
//
// The same bodies compile for the GPU (the per-(algorithm, dtype) .cu files, 512 threads per block) and as
// host C++ (kernels/device/host_kernels_*.cpp: small blocks for the tests, one thread for bench/host); they
// touch the machine only through kernels/device/primitives.h, and every ownership decision goes through
// kernels/device/partition.h.
//
// Memory-ordering summary (details at each site):
//  * Data written before a barrier (staging copies, two-shot scratch slices) is published by sync_threads()
//    (CTA-scope ordering of every thread's writes before the signalling thread's store) followed by a
//    release store of a flag into the peer's signal area; a peer's waiting thread reads the flag with an
//    acquire load and then sync_threads() orders its whole block's subsequent loads after the acquire.
//    System scope on the GPU because peers are other GPUs reached over NVLink/PCIe (in virtual-node mode .gpu
//    would do, but the same code path is exercised on purpose).
//  * Data loads and stores themselves are weak: they need no ordering among each other, only the
//    happens-before edges the barriers create.
//  * The barrier at the end of each kernel keeps the next launch from overwriting a staging or scratch
//    buffer that a slower peer is still reading (write-after-read across ranks).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/device/partition.h"
#include "kernels/device/primitives.h"
#include "kernels/team/team_layout.h"

// Deliberately broken variants for the `mutation` ctest label (tests/kernels/CMakeLists.txt): each must make
// the kernels-host tests fail. Only the mutation builds define ARFIT_MUTATION; the CUDA build never does.
#define ARFIT_MUTATION_SKIP_PUBLISH_BARRIER 1  // one-shot reduces the peers' staging without waiting for it
#define ARFIT_MUTATION_SKIP_REDUCE_BARRIER 2   // two-shot gathers the slices before their owners reduced them
#define ARFIT_MUTATION_WRONG_ROW_OWNER 3       // two-shot gathers the last row from the wrong rank
#define ARFIT_MUTATION_WRONG_CHUNK_OWNER 4     // two-shot gathers the last chunk from the wrong rank
#define ARFIT_MUTATION_NVFP4_WRONG_SCALE_COLUMN 5  // NVFP4 stores each block's scale in the next block's column
#define ARFIT_MUTATION_MULTIMEM_SKIP_PUBLISH_BARRIER 6  // multimem one-shot ld_reduces staging nobody waited for
#define ARFIT_MUTATION_MULTIMEM_SKIP_STORE_BARRIER 7    // multimem two-shot copies its staging before the owners' st
#define ARFIT_MUTATION_OUT_QUANT_DROPS_NORM_OUTPUT 8     // the OUT_QUANT epilogues write the quantised norm only
#ifndef ARFIT_MUTATION
#define ARFIT_MUTATION 0
#endif

namespace arfit::kernels::device {

// ---------------- cross-rank barrier ----------------

// Block `block` of every rank meets here. `sequence` is this block's running barrier count (epoch + k);
// it only grows, so flags never repeat a value (no ABA) and a waiter accepts any value at least as new
// as its own (wrap-safe signed difference): a fast peer may already have announced the next barrier.
// Returns false when the team's abort word was raised while this block waited: the kernel must return
// (every thread of the block gets the same answer).
//
// Why flags rather than Lamport sentinels: the same barrier serves one-shot (staging), two-shot (scratch
// between its two halves) and the end-of-kernel write-after-read guard, for all three dtypes and the fused
// epilogues; sentinel buffers would need a reserved bit pattern per dtype (and per e4m3 output), a
// buffer reset per launch and double buffering. Flags cost one round trip per barrier and keep the data path
// free of sentinel checks.
template <int kRanks, int kThreads>
ARFIT_DEVICE bool team_barrier(const TeamPointers& team, int rank, int block, std::uint32_t sequence) {
  // CTA-scope ordering: every thread's writes of the finished phase happen before the signalling threads'
  // release below (the block barrier synchronises the block; the release is cumulative over what it observed).
  sync_threads();
  // Thread p signals and waits for peer p (a thread takes several peers when the block has fewer threads
  // than the team has ranks).
  for (int peer = thread_index(); peer < kRanks; peer += kThreads) {
    // Release: the peer that acquires this flag sees all writes of our block's phase.
    store_release_system(&team.signals[peer]->arrival_flag[block][rank], sequence);
  }
  bool aborted = false;
  for (int peer = thread_index(); peer < kRanks && !aborted; peer += kThreads) {
    const std::uint32_t* arrived = &team.signals[rank]->arrival_flag[block][peer];
    // Acquire: once the peer's flag is seen, the peer's published data is visible to us.
    std::uint64_t started = 0;
    unsigned spins = 0;
    while (static_cast<std::int32_t>(load_acquire_system(arrived) - sequence) < 0) {
      spin_pause();
      if (++spins % kSpinsPerPoll == 0) {
        if (team.abort_flag && load_relaxed_system(team.abort_flag) != 0) {
          aborted = true;
          break;
        }
        const std::uint64_t now = timer_ns();
        if (started == 0) {
          started = now;
        } else if (now - started > team.barrier_timeout_ns) {
          trap();  // a peer never arrived and nobody aborted: fail the launch instead of hanging
        }
      }
    }
  }
  // The acquiring threads' observations happen before every thread's loads of peer data that follow; the OR
  // tells every thread whether the block was aborted.
  return !sync_threads_or(aborted);
}

// ---------------- fused epilogue ----------------

// sum += value with Kahan compensation (`carry` keeps the low-order bits the running sum dropped), so a thread's
// sum of squares over a long row stays within a few ulp whatever the row length: a plain fp32 running sum of the
// 2^17 squares of a one-thread row (bench/host runs one thread per block) was off by 1e-4 relative, ten times
// the fp32 tolerance. Deterministic (no reassociation is allowed without fast-math, on either compiler), so
// every rank still gets the same bits. A few flops per 16-byte vector, nothing next to the loads.
// Once the sum overflows to inf the carry would be inf - inf = NaN and poison the later terms; it is dropped
// instead, so an overflowing row still gives inv_rms = 0 as a plain sum does (a NaN term still makes sum NaN).
ARFIT_DEVICE void compensated_add(float& sum, float& carry, float value) {
  const float corrected = value - carry;
  const float next = sum + corrected;
  const float lost = (next - sum) - corrected;
  carry = lost == lost ? lost : 0.0f;  // NaN only when next or sum is not finite
  sum = next;
}

// What a fusion op's epilogue writes (kernels/kernel_types.h has the same rules for host code).
template <FusionOp kFusion>
struct Epilogue {
  static constexpr bool kFp8 =
      kFusion == FusionOp::ResidualRmsNormQuantFp8 || kFusion == FusionOp::ResidualRmsNormOutQuantFp8;
  static constexpr bool kNvfp4 =
      kFusion == FusionOp::ResidualRmsNormQuantNvfp4 || kFusion == FusionOp::ResidualRmsNormOutQuantNvfp4;
  // The QUANT fusions write only the quantised norm (and residual_out); RESIDUAL_RMS_NORM and OUT_QUANT the norm too.
  static constexpr bool kWritesOutput =
      kFusion == FusionOp::ResidualRmsNorm ||
      (ARFIT_MUTATION != ARFIT_MUTATION_OUT_QUANT_DROPS_NORM_OUTPUT &&
       (kFusion == FusionOp::ResidualRmsNormOutQuantFp8 || kFusion == FusionOp::ResidualRmsNormOutQuantNvfp4));
};

// Byte offset of the scale of (row, column) in TensorRT-LLM's swizzled 128x4 block-scale layout
// (get_sf_out_offset_128x4, cpp/tensorrt_llm/kernels/quantization.cuh): tiles of 128 rows x 4 scale columns, 512
// bytes each, row-tile major; inside a tile, row r sits at (r % 32) * 16 + (r / 32) * 4 and the column at % 4.
// `columns` = hidden / 16; kernel_types.h's nvfp4_scale_bytes is the padded buffer size.
ARFIT_DEVICE std::int64_t nvfp4_scale_offset(std::int64_t row, std::int64_t column, std::int64_t columns) {
  const std::int64_t column_tiles = (columns + 3) / 4;
  return (row / 128) * column_tiles * 512 + (column / 4) * 512 + (row % 32) * 16 + ((row % 128) / 32) * 4 +
         column % 4;
}

// NVFP4 of one block of 16 values (the norm output as stored, rounded to T), as TensorRT-LLM's
// cvt_warp_fp16_to_fp4 computes it with exact reciprocals instead of rcp.approx (so the host and every GPU give the
// same bits): scale = e4m3(global * (amax / 6)); each value becomes e2m1(v / (scale / global)), element 2i in the
// low nibble of byte i. A block of zeros has scale 0 and all-zero codes. Returns the scale byte, fills packed[0..1].
ARFIT_DEVICE std::uint8_t nvfp4_quantize_block(const float* values, float global_scale, std::uint32_t* packed) {
  float amax = 0.0f;
  ARFIT_UNROLL
  for (int k = 0; k < kNvfp4BlockElements; ++k) {
    const float a = values[k] < 0.0f ? -values[k] : values[k];
    amax = a > amax ? a : amax;
  }
  const std::uint8_t scale = e4m3_from_float(global_scale * (amax * (1.0f / 6.0f)));
  const float block_scale = e4m3_to_float(scale);
  const float to_e2m1 = block_scale != 0.0f ? 1.0f / (block_scale * (1.0f / global_scale)) : 0.0f;
  packed[0] = 0;
  packed[1] = 0;
  ARFIT_UNROLL
  for (int k = 0; k < kNvfp4BlockElements; ++k) packed[k / 8] |= e2m1_from_float(values[k] * to_e2m1) << (4 * (k % 8));
  return scale;
}

// Where one row's epilogue results go; what the fusion does not write is never touched (may be null).
template <typename T>
struct RowOutputs {
  T* residual_out;
  T* output;              // the norm output (RESIDUAL_RMS_NORM, OUT_QUANT)
  std::uint8_t* quant;    // this row's e4m3 bytes (FP8: hidden) or packed e2m1 (NVFP4: hidden / 2)
  std::uint8_t* scales;   // NVFP4: the block-scale buffer (the whole tensor's, not the row's)
  std::int64_t row;       // NVFP4: the row's index in `scales`
  bool swizzled;          // NVFP4: scales in the 128x4 layout (user buffers) or row-major (two-shot scratch)
};

// The norm output of vector j of a row: rounded to T (returned packed) and, as stored, widened into y[0..W).
template <typename T>
ARFIT_DEVICE Vec16 normed_vector(const T* residual_out, const T* gamma, std::int64_t j, float inv_rms, float* y) {
  constexpr int W = VectorWidth<T>::value;
  float r[W] = {};
  accumulate<T>(load_16(residual_out + j * W), r);  // this thread's own store of the first pass (program order)
  float g[W] = {};
  accumulate<T>(load_16_read_only(gamma + j * W), g);
  float normed[W];
  ARFIT_UNROLL
  for (int k = 0; k < W; ++k) normed[k] = r[k] * inv_rms * g[k];
  const Vec16 rounded = pack<T>(normed);
  ARFIT_UNROLL
  for (int k = 0; k < W; ++k) y[k] = 0.0f;
  accumulate<T>(rounded, y);
  return rounded;
}

// One row of residual_out = reduced + residual_in; output = residual_out * rsqrt(mean(residual_out^2) + eps)
// * gamma; then, by fusion: e4m3 = saturate(output * fp8_inv_scale), or NVFP4 of output per block of 16 with
// global scale quant_scale (nvfp4_quantize_block). `load_reduced(j, acc)` adds the all-reduced fp32 values
// of vector j of the row into acc. Order of operations (the host backend runs this same code):
//  * the norm is taken over residual_out as stored (rounded to T), so the returned residual and the
//    normalised output agree;
//  * the quantised output quantises `output` as stored (rounded to T), as an engine that keeps the T output and
//    quantises it would (TensorRT-LLM quantises its T-typed norm vector): fp8 == e4m3(float(output) * fp8_inv_scale)
//    bit for bit, whether or not the fusion also writes `output`.
// A thread handles whole units of vectors in both passes (one vector, or the 16 elements of an NVFP4 block), so the
// second pass reads only its own stores of the first. Every thread of the block must call it (block_sum).
template <typename T, FusionOp kFusion, int kThreads, typename LoadReduced>
ARFIT_DEVICE void residual_rms_norm_row(LoadReduced load_reduced, const T* residual_in, const T* gamma,
                                        const RowOutputs<T>& out, std::int64_t vectors_per_row, std::int64_t hidden,
                                        float eps, float quant_scale) {
  constexpr int W = VectorWidth<T>::value;
  using E = Epilogue<kFusion>;
  constexpr int kUnit = E::kNvfp4 ? kNvfp4BlockElements / W : 1;  // vectors per unit
  const std::int64_t units = vectors_per_row / kUnit;
  float sum_squares = 0;
  float sum_squares_carry = 0;
  for (std::int64_t u = thread_index(); u < units; u += kThreads) {
    for (int v = 0; v < kUnit; ++v) {
      const std::int64_t j = u * kUnit + v;
      float acc[W] = {};
      load_reduced(j, acc);
      accumulate<T>(load_16(residual_in + j * W), acc);  // coherent: residual_in may alias residual_out
      const Vec16 rounded = pack<T>(acc);
      store_16(out.residual_out + j * W, rounded);
      float r[W] = {};
      accumulate<T>(rounded, r);
      float vector_squares = 0;  // W terms: a plain sum is accurate enough; the long run over vectors is compensated
      ARFIT_UNROLL
      for (int k = 0; k < W; ++k) vector_squares += r[k] * r[k];
      compensated_add(sum_squares, sum_squares_carry, vector_squares);
    }
  }
  const float inv_rms = reciprocal_sqrt(block_sum<kThreads>(sum_squares) / static_cast<float>(hidden) + eps);
  const std::int64_t scale_columns = hidden / kNvfp4BlockElements;
  for (std::int64_t u = thread_index(); u < units; u += kThreads) {
    float y[kUnit * W];
    for (int v = 0; v < kUnit; ++v) {
      const std::int64_t j = u * kUnit + v;
      const Vec16 rounded = normed_vector<T>(out.residual_out, gamma, j, inv_rms, y + v * W);
      if constexpr (E::kWritesOutput) store_16(out.output + j * W, rounded);
      if constexpr (E::kFp8) store_e4m3<W>(out.quant + j * W, y + v * W, quant_scale);
    }
    if constexpr (E::kNvfp4) {
      std::uint32_t packed[2];
      const std::uint8_t scale = nvfp4_quantize_block(y, quant_scale, packed);
      store_8(out.quant + u * kNvfp4PackBytes, packed[0], packed[1]);
      std::int64_t column = u;
      if constexpr (ARFIT_MUTATION == ARFIT_MUTATION_NVFP4_WRONG_SCALE_COLUMN) column = (u + 1) % scale_columns;
      store_byte(out.scales + (out.swizzled ? nvfp4_scale_offset(out.row, column, scale_columns)
                                            : out.row * scale_columns + column),
                 scale);
    }
  }
}

// ---------------- kernels ----------------

// The first quantised byte of the row that starts at element `base`: one byte per element (FP8), one per two
// (NVFP4); null when the fusion quantises nothing.
template <FusionOp kFusion>
ARFIT_DEVICE std::uint8_t* quant_row(std::uint8_t* quant, std::int64_t base) {
  if constexpr (Epilogue<kFusion>::kFp8) return quant + base;
  if constexpr (Epilogue<kFusion>::kNvfp4) return quant + base / 2;
  return nullptr;
}

// Which rank and which of its blocks this CTA is (one launch may cover all ranks of a virtual node).
struct BlockRole {
  int local;  // index into the launch's per-rank buffers
  int rank;
  int block;  // block index within the rank: the barrier flags are per block
};
ARFIT_DEVICE BlockRole block_role(const TeamPointers& team) {
  BlockRole r;
  r.local = block_index() / team.blocks_per_rank;
  r.block = block_index() % team.blocks_per_rank;
  r.rank = team.first_rank + r.local;
  return r;
}

// Phase 1 of both algorithms: copy this rank's input into its registered staging buffer, so that peers can
// read it. Vector i is handled by the block of its chunk (partition.h), the same mapping the later phases use
// (the barrier only orders block b of one rank with block b of the others).
template <typename T, int kThreads>
ARFIT_DEVICE void publish_input_vectors(const T* input, T* staging, std::int64_t vectors, int block,
                                        int blocks_per_rank, bool input_may_alias) {
  constexpr int W = VectorWidth<T>::value;
  const std::int64_t stride = static_cast<std::int64_t>(blocks_per_rank) * kThreads;
  for (std::int64_t i = static_cast<std::int64_t>(block) * kThreads + thread_index(); i < vectors; i += stride) {
    const Vec16 v = input_may_alias ? load_16(input + i * W) : load_16_read_only(input + i * W);
    store_16(staging + i * W, v);
  }
}

template <typename T, int kThreads>
ARFIT_DEVICE void publish_input_rows(const T* input, T* staging, std::int64_t rows, std::int64_t vectors_per_row,
                                     int block, int blocks_per_rank, bool input_may_alias) {
  constexpr int W = VectorWidth<T>::value;
  for (std::int64_t row = block; row < rows; row += blocks_per_rank) {
    const std::int64_t base = row * vectors_per_row * W;
    for (std::int64_t j = thread_index(); j < vectors_per_row; j += kThreads) {
      const Vec16 v = input_may_alias ? load_16(input + base + j * W) : load_16_read_only(input + base + j * W);
      store_16(staging + base + j * W, v);
    }
  }
}

// The scalar tail (count not a multiple of the vector width): elements [vectors * W, count), by block 0.
template <typename T, int kThreads>
ARFIT_DEVICE void publish_tail(const T* input, T* staging, std::int64_t first, std::int64_t count) {
  for (std::int64_t j = first + thread_index(); j < count; j += kThreads) staging[j] = input[j];
}

// Sum over ranks 0..kRanks-1 (always in that order: bitwise-identical results on every rank) of vector
// `offset` (element offset) of the peers' buffers.
template <typename T, int kRanks>
ARFIT_DEVICE void reduce_peers(void* const* buffers, std::int64_t offset, float* acc) {
  ARFIT_UNROLL
  for (int p = 0; p < kRanks; ++p) accumulate<T>(load_16(static_cast<const T*>(buffers[p]) + offset), acc);
}

template <typename T, int kRanks>
ARFIT_DEVICE float reduce_peers_scalar(void* const* buffers, std::int64_t index) {
  float acc = 0;
  ARFIT_UNROLL
  for (int p = 0; p < kRanks; ++p) acc += to_float<T>(static_cast<const T*>(buffers[p])[index]);
  return acc;
}

// A barrier the mutation builds may drop (`skip`): then it neither signals nor waits.
template <int kRanks, int kThreads>
ARFIT_DEVICE bool team_barrier_unless(bool skip, const TeamPointers& team, int rank, int block, std::uint32_t sequence) {
  return skip || team_barrier<kRanks, kThreads>(team, rank, block, sequence);
}

// What every block of an all-reduce launch starts from: its role, its barrier count, its rank's buffers.
template <typename T>
struct RankView {
  BlockRole me;
  std::uint32_t epoch;  // written by this block at the end of the previous launch (stream order makes it visible)
  T* staging;
  const T* input;
  T* output;
};

template <typename T>
ARFIT_DEVICE RankView<T> rank_view(const TeamPointers& team, const AllReduceLaunch& args) {
  RankView<T> v;
  v.me = block_role(team);
  v.epoch = team.signals[v.me.rank]->barrier_epoch[v.me.block];
  v.staging = static_cast<T*>(team.staging[v.me.rank]);
  v.input = static_cast<const T*>(args.input[v.me.local]);
  v.output = static_cast<T*>(args.output[v.me.local]);
  return v;
}

// Phase 1 of both algorithms and the barrier that publishes it: this rank's input into its staging buffer
// (vectors by chunk, plus the scalar tail; or whole rows), then barrier epoch + 1. False when aborted.
template <typename T, int kRanks, FusionOp kFusion, int kThreads>
ARFIT_DEVICE bool publish_input(const TeamPointers& team, const AllReduceLaunch& args, const RankView<T>& v,
                                bool skip_barrier) {
  constexpr int W = VectorWidth<T>::value;
  const bool may_alias = args.input_may_alias != 0;
  if constexpr (kFusion == FusionOp::None) {
    const std::int64_t vectors = args.count / W;
    publish_input_vectors<T, kThreads>(v.input, v.staging, vectors, v.me.block, team.blocks_per_rank, may_alias);
    if (v.me.block == 0) publish_tail<T, kThreads>(v.input, v.staging, vectors * W, args.count);
  } else {
    publish_input_rows<T, kThreads>(v.input, v.staging, args.count / args.hidden, args.hidden / W, v.me.block,
                                    team.blocks_per_rank, may_alias);
  }
  return team_barrier_unless<kRanks, kThreads>(skip_barrier, team, v.me.rank, v.me.block, v.epoch + 1);
}

// One-shot: publish, barrier, every rank reduces the whole tensor from all peers' staging, barrier.
template <typename T, int kRanks, FusionOp kFusion, int kThreads>
ARFIT_KERNEL(kThreads) one_shot_all_reduce_kernel(const TeamPointers team, const AllReduceLaunch args) {
  constexpr int W = VectorWidth<T>::value;
  constexpr bool kSkipPublishBarrier = ARFIT_MUTATION == ARFIT_MUTATION_SKIP_PUBLISH_BARRIER;
  const RankView<T> v = rank_view<T>(team, args);
  const BlockRole& me = v.me;
  const int blocks_per_rank = team.blocks_per_rank;
  if (!publish_input<T, kRanks, kFusion, kThreads>(team, args, v, kSkipPublishBarrier)) return;

  if constexpr (kFusion == FusionOp::None) {
    const std::int64_t vectors = args.count / W;
    const std::int64_t stride = static_cast<std::int64_t>(blocks_per_rank) * kThreads;
    for (std::int64_t i = static_cast<std::int64_t>(me.block) * kThreads + thread_index(); i < vectors; i += stride) {
      float acc[W] = {};
      reduce_peers<T, kRanks>(team.staging, i * W, acc);
      store_16(v.output + i * W, pack<T>(acc));
    }
    if (me.block == 0) {  // scalar tail: count not a multiple of the vector width
      for (std::int64_t j = vectors * W + thread_index(); j < args.count; j += kThreads) {
        v.output[j] = from_float<T>(reduce_peers_scalar<T, kRanks>(team.staging, j));
      }
    }
  } else {
    const std::int64_t rows = args.count / args.hidden;
    const std::int64_t vectors_per_row = args.hidden / W;
    const T* const residual_in = static_cast<const T*>(args.residual_in[me.local]);
    T* const residual_out = static_cast<T*>(args.residual_out[me.local]);
    const T* const gamma = static_cast<const T*>(args.gamma[me.local]);
    auto* const quant_out = static_cast<std::uint8_t*>(args.fp8_out[me.local]);
    auto* const scale_out = static_cast<std::uint8_t*>(args.scale_out[me.local]);
    for (std::int64_t row = me.block; row < rows; row += blocks_per_rank) {
      const std::int64_t base = row * args.hidden;
      auto load_reduced = [&](std::int64_t j, float* acc) { reduce_peers<T, kRanks>(team.staging, base + j * W, acc); };
      const RowOutputs<T> out{residual_out + base, v.output + base, quant_row<kFusion>(quant_out, base), scale_out,
                              row, true};
      residual_rms_norm_row<T, kFusion, kThreads>(load_reduced, residual_in + base, gamma, out, vectors_per_row,
                                                  args.hidden, args.rms_eps, args.fp8_inv_scale);
    }
  }
  // Write-after-read guard: no rank's next launch overwrites its staging while a peer still reads it.
  if (!team_barrier<kRanks, kThreads>(team, me.rank, me.block, v.epoch + 2)) return;
  if (thread_index() == 0) team.signals[me.rank]->barrier_epoch[me.block] = v.epoch + 2;
}

// Two-shot: publish, barrier, reduce-scatter (rank r reduces its slice from all peers into its scratch),
// barrier, all-gather (every rank copies slice s from rank s's scratch), barrier.
// Fused epilogues run on the slice owner (rows are the slice unit), which writes output, new residual and
// the quantised bytes (and NVFP4 scales) into scratch slots 0, 1, 2; the all-gather copies what the fusion writes.
template <typename T, int kRanks, FusionOp kFusion, int kThreads>
ARFIT_KERNEL(kThreads) two_shot_all_reduce_kernel(const TeamPointers team, const AllReduceLaunch args) {
  constexpr int W = VectorWidth<T>::value;
  constexpr bool kSkipReduceBarrier = ARFIT_MUTATION == ARFIT_MUTATION_SKIP_REDUCE_BARRIER;
  const RankView<T> v = rank_view<T>(team, args);
  const BlockRole& me = v.me;
  const int blocks_per_rank = team.blocks_per_rank;
  const std::uint32_t epoch = v.epoch;
  T* const output = v.output;
  if (!publish_input<T, kRanks, kFusion, kThreads>(team, args, v, false)) return;

  if constexpr (kFusion == FusionOp::None) {
    const std::int64_t vectors = args.count / W;
    // Slices are whole chunks of kThreads vectors so that chunk ownership (block c % blocks_per_rank) is the same
    // in all three phases. The scalar tail belongs to the last rank.
    const std::int64_t chunks = partition::chunk_count(vectors, kThreads);
    const std::int64_t chunks_per_rank = partition::units_per_rank(chunks, kRanks);

    T* const scratch = static_cast<T*>(team.scratch[me.rank]);
    const partition::Range mine = partition::owned_units(me.rank, chunks, chunks_per_rank);
    for (std::int64_t c = partition::first_at_or_after(mine.begin, me.block, blocks_per_rank); c < mine.end;
         c += blocks_per_rank) {
      const std::int64_t i = c * kThreads + thread_index();
      if (i < vectors) {
        float acc[W] = {};
        reduce_peers<T, kRanks>(team.staging, i * W, acc);
        store_16(scratch + i * W, pack<T>(acc));
      }
    }
    if (me.rank == partition::tail_owner(kRanks) && me.block == 0) {
      for (std::int64_t j = vectors * W + thread_index(); j < args.count; j += kThreads) {
        scratch[j] = from_float<T>(reduce_peers_scalar<T, kRanks>(team.staging, j));
      }
    }
    if (!team_barrier_unless<kRanks, kThreads>(kSkipReduceBarrier, team, me.rank, me.block, epoch + 2)) return;

    const std::int64_t stride = static_cast<std::int64_t>(blocks_per_rank) * kThreads;
    for (std::int64_t i = static_cast<std::int64_t>(me.block) * kThreads + thread_index(); i < vectors; i += stride) {
      const std::int64_t chunk = i / kThreads;
      int owner = partition::owner_of(chunk, chunks_per_rank);
      if constexpr (ARFIT_MUTATION == ARFIT_MUTATION_WRONG_CHUNK_OWNER) {
        if (chunk == chunks - 1) owner = (owner + 1) % kRanks;
      }
      store_16(output + i * W, load_16(static_cast<const T*>(team.scratch[owner]) + i * W));
    }
    if (me.block == 0) {
      const T* const tail = static_cast<const T*>(team.scratch[partition::tail_owner(kRanks)]);
      for (std::int64_t j = vectors * W + thread_index(); j < args.count; j += kThreads) output[j] = tail[j];
    }
  } else {
    using E = Epilogue<kFusion>;
    const std::int64_t rows = args.count / args.hidden;
    const std::int64_t vectors_per_row = args.hidden / W;
    const std::int64_t rows_per_rank = partition::units_per_rank(rows, kRanks);
    const std::int64_t scale_columns = args.hidden / kNvfp4BlockElements;

    // Scratch slots of every rank: [0] normalised output, [1] new residual (both T), [2] the quantised bytes (FP8:
    // count; NVFP4: count / 2 packed, then the count / 16 block scales row-major, swizzled only on the way out).
    auto slot = [&](int rank, int s) { return static_cast<char*>(team.scratch[rank]) + s * team.max_bytes; };
    auto scratch_scales = [&](int rank) {
      return reinterpret_cast<std::uint8_t*>(slot(rank, 2)) + args.count / 2;  // after the packed e2m1
    };
    const T* const residual_in = static_cast<const T*>(args.residual_in[me.local]);
    const T* const gamma = static_cast<const T*>(args.gamma[me.local]);
    const partition::Range mine = partition::owned_units(me.rank, rows, rows_per_rank);
    for (std::int64_t row = partition::first_at_or_after(mine.begin, me.block, blocks_per_rank); row < mine.end;
         row += blocks_per_rank) {
      const std::int64_t base = row * args.hidden;
      auto load_reduced = [&](std::int64_t j, float* acc) { reduce_peers<T, kRanks>(team.staging, base + j * W, acc); };
      const RowOutputs<T> out{reinterpret_cast<T*>(slot(me.rank, 1)) + base,
                              reinterpret_cast<T*>(slot(me.rank, 0)) + base,
                              quant_row<kFusion>(reinterpret_cast<std::uint8_t*>(slot(me.rank, 2)), base),
                              scratch_scales(me.rank), row, false};
      residual_rms_norm_row<T, kFusion, kThreads>(load_reduced, residual_in + base, gamma, out, vectors_per_row,
                                                  args.hidden, args.rms_eps, args.fp8_inv_scale);
    }
    if (!team_barrier_unless<kRanks, kThreads>(kSkipReduceBarrier, team, me.rank, me.block, epoch + 2)) return;

    T* const residual_out = static_cast<T*>(args.residual_out[me.local]);
    auto* const quant_out = static_cast<std::uint8_t*>(args.fp8_out[me.local]);
    auto* const scale_out = static_cast<std::uint8_t*>(args.scale_out[me.local]);
    for (std::int64_t row = me.block; row < rows; row += blocks_per_rank) {
      int owner = partition::owner_of(row, rows_per_rank);
      if constexpr (ARFIT_MUTATION == ARFIT_MUTATION_WRONG_ROW_OWNER) {
        if (row == rows - 1) owner = (owner + 1) % kRanks;
      }
      const std::int64_t base = row * args.hidden;
      const T* const owner_output = reinterpret_cast<const T*>(slot(owner, 0)) + base;
      const T* const owner_residual = reinterpret_cast<const T*>(slot(owner, 1)) + base;
      const std::uint8_t* const owner_quant = quant_row<kFusion>(reinterpret_cast<std::uint8_t*>(slot(owner, 2)), base);
      for (std::int64_t j = thread_index(); j < vectors_per_row; j += kThreads) {
        if constexpr (E::kWritesOutput) store_16(output + base + j * W, load_16(owner_output + j * W));
        store_16(residual_out + base + j * W, load_16(owner_residual + j * W));
        if constexpr (E::kFp8) copy_e4m3<W>(quant_out + base + j * W, owner_quant + j * W);
      }
      if constexpr (E::kNvfp4) {
        const std::uint8_t* const owner_scales = scratch_scales(owner) + row * scale_columns;
        for (std::int64_t b = thread_index(); b < scale_columns; b += kThreads) {
          copy_e4m3<kNvfp4PackBytes>(quant_row<kFusion>(quant_out, base) + b * kNvfp4PackBytes,
                                     owner_quant + b * kNvfp4PackBytes);
          store_byte(scale_out + nvfp4_scale_offset(row, b, scale_columns), load_byte(owner_scales + b));
        }
      }
    }
  }
  // Write-after-read guard for staging and scratch (see one-shot).
  if (!team_barrier<kRanks, kThreads>(team, me.rank, me.block, epoch + 3)) return;
  if (thread_index() == 0) team.signals[me.rank]->barrier_epoch[me.block] = epoch + 3;
}

// ---------------- multimem (NVLS) kernels: NONE only ----------------
//
// The same phase 1 (publish_input: staging and barrier epoch + 1) as the unicast kernels, then the peers' data is
// reached through the staging buffers' multicast address (primitives.h): on the GPU one multimem instruction per
// 16-byte vector (the switch reads, or writes, every rank), on the host the emulation over team.staging[]. Vector i
// belongs to chunk i / kThreads, handled by block chunk % blocks_per_rank on every rank (partition.h), so each
// per-block barrier orders exactly the vectors its block exchanges. The scalar tail (count not a multiple of the
// vector width: multimem moves whole vectors) goes through the unicast peer pointers, as in the unicast kernels.

// Multimem one-shot (PyTorch's multimem_one_shot_all_reduce): publish, barrier, every rank ld_reduces the whole
// tensor through the multicast address into its output, barrier (write-after-read guard, as in one-shot).
template <typename T, int kRanks, int kThreads>
ARFIT_KERNEL(kThreads) multimem_one_shot_all_reduce_kernel(const TeamPointers team, const AllReduceLaunch args) {
  constexpr int W = VectorWidth<T>::value;
  constexpr bool kSkipPublishBarrier = ARFIT_MUTATION == ARFIT_MUTATION_MULTIMEM_SKIP_PUBLISH_BARRIER;
  const RankView<T> v = rank_view<T>(team, args);
  const BlockRole& me = v.me;
  if (!publish_input<T, kRanks, FusionOp::None, kThreads>(team, args, v, kSkipPublishBarrier)) return;
  // The peers' staging was written through unicast addresses; it is read below through the multicast one.
  multicast_alias_fence();

  const MulticastSpan mc = multicast_staging(team);
  const std::int64_t vectors = args.count / W;
  const std::int64_t stride = static_cast<std::int64_t>(team.blocks_per_rank) * kThreads;
  for (std::int64_t i = static_cast<std::int64_t>(me.block) * kThreads + thread_index(); i < vectors; i += stride) {
    store_16(v.output + i * W, multimem_ld_reduce_16<T, kRanks>(mc, i * W));
  }
  if (me.block == 0) {  // scalar tail: unicast, rank order
    for (std::int64_t j = vectors * W + thread_index(); j < args.count; j += kThreads) {
      v.output[j] = from_float<T>(reduce_peers_scalar<T, kRanks>(team.staging, j));
    }
  }
  // Write-after-read guard: no rank's next launch overwrites its staging while a peer's ld_reduce still reads it.
  if (!team_barrier<kRanks, kThreads>(team, me.rank, me.block, v.epoch + 2)) return;
  if (thread_index() == 0) team.signals[me.rank]->barrier_epoch[me.block] = v.epoch + 2;
}

// Multimem two-shot (PyTorch's multimem_all_reduce_, in place in the staging buffers): publish, barrier, rank r
// ld_reduces the chunks of its slice and multimem.st's each sum into every rank's staging (the reduce-scatter and the
// all-gather in one pass), barrier, every rank copies its own staging to its output. Two barriers suffice: after the
// second nobody touches a peer's staging, and a peer's next launch overwrites only its own staging, which nobody
// reads through the multicast address before that launch's first barrier.
template <typename T, int kRanks, int kThreads>
ARFIT_KERNEL(kThreads) multimem_two_shot_all_reduce_kernel(const TeamPointers team, const AllReduceLaunch args) {
  constexpr int W = VectorWidth<T>::value;
  constexpr bool kSkipStoreBarrier = ARFIT_MUTATION == ARFIT_MUTATION_MULTIMEM_SKIP_STORE_BARRIER;
  const RankView<T> v = rank_view<T>(team, args);
  const BlockRole& me = v.me;
  const int blocks_per_rank = team.blocks_per_rank;
  if (!publish_input<T, kRanks, FusionOp::None, kThreads>(team, args, v, false)) return;
  multicast_alias_fence();  // unicast-written staging, read and overwritten through the multicast address below

  const MulticastSpan mc = multicast_staging(team);
  const std::int64_t vectors = args.count / W;
  const std::int64_t chunks = partition::chunk_count(vectors, kThreads);
  const std::int64_t chunks_per_rank = partition::units_per_rank(chunks, kRanks);
  const partition::Range mine = partition::owned_units(me.rank, chunks, chunks_per_rank);
  for (std::int64_t c = partition::first_at_or_after(mine.begin, me.block, blocks_per_rank); c < mine.end;
       c += blocks_per_rank) {
    const std::int64_t i = c * kThreads + thread_index();
    // The same thread reads vector i from every rank and then overwrites it everywhere: only the owner touches it.
    if (i < vectors) multimem_st_16<T, kRanks>(mc, i * W, multimem_ld_reduce_16<T, kRanks>(mc, i * W));
  }
  if (me.rank == partition::tail_owner(kRanks) && me.block == 0) {  // scalar tail: unicast loads and stores
    for (std::int64_t j = vectors * W + thread_index(); j < args.count; j += kThreads) {
      const T sum = from_float<T>(reduce_peers_scalar<T, kRanks>(team.staging, j));
      for (int p = 0; p < kRanks; ++p) static_cast<T*>(team.staging[p])[j] = sum;
    }
  }
  // The multicast stores above, then this block's release: fence between the two address spaces first.
  multicast_alias_fence();
  if (!team_barrier_unless<kRanks, kThreads>(kSkipStoreBarrier, team, me.rank, me.block, v.epoch + 2)) return;

  // Every owner's sums are now in this rank's staging (written by the owners' multimem.st, acquired by the barrier).
  const std::int64_t stride = static_cast<std::int64_t>(blocks_per_rank) * kThreads;
  for (std::int64_t i = static_cast<std::int64_t>(me.block) * kThreads + thread_index(); i < vectors; i += stride) {
    store_16(v.output + i * W, load_16(v.staging + i * W));
  }
  if (me.block == 0) {
    for (std::int64_t j = vectors * W + thread_index(); j < args.count; j += kThreads) v.output[j] = v.staging[j];
  }
  if (thread_index() == 0) team.signals[me.rank]->barrier_epoch[me.block] = v.epoch + 2;
}

// The unfused epilogue (after an NCCL all-reduce, or bench/host's MPI_Allreduce): one block per row,
// grid-stride over rows. quant_out / scale_out as AllReduceBuffers' fp8_out / scale_out.
template <typename T, FusionOp kFusion, int kThreads>
ARFIT_KERNEL(kThreads) residual_rms_norm_kernel(const T* reduced, const T* residual_in, T* residual_out, const T* gamma,
                                                T* output, std::uint8_t* quant_out, std::uint8_t* scale_out,
                                                std::int64_t rows, std::int64_t hidden, float eps, float quant_scale) {
  constexpr int W = VectorWidth<T>::value;
  const std::int64_t vectors_per_row = hidden / W;
  for (std::int64_t row = block_index(); row < rows; row += grid_blocks()) {
    const std::int64_t base = row * hidden;
    auto load_reduced = [&](std::int64_t j, float* acc) { accumulate<T>(load_16(reduced + base + j * W), acc); };
    const RowOutputs<T> out{residual_out + base, output + base, quant_row<kFusion>(quant_out, base), scale_out, row,
                            true};
    residual_rms_norm_row<T, kFusion, kThreads>(load_reduced, residual_in + base, gamma, out, vectors_per_row, hidden,
                                                eps, quant_scale);
  }
}

// The kernel of an algorithm for one instantiation, as a function pointer (GPU launches and occupancy queries,
// host launches).
template <AllReduceAlgorithm kAlgorithm, typename T, int kRanks, FusionOp kFusion, int kThreads>
constexpr auto all_reduce_kernel() {
  if constexpr (kAlgorithm == AllReduceAlgorithm::OneShot) {
    return &one_shot_all_reduce_kernel<T, kRanks, kFusion, kThreads>;
  } else if constexpr (kAlgorithm == AllReduceAlgorithm::TwoShot) {
    return &two_shot_all_reduce_kernel<T, kRanks, kFusion, kThreads>;
  } else if constexpr (kAlgorithm == AllReduceAlgorithm::MultimemOneShot) {
    static_assert(kFusion == FusionOp::None, "the multimem kernels have no fused epilogue");
    return &multimem_one_shot_all_reduce_kernel<T, kRanks, kThreads>;
  } else {
    static_assert(kAlgorithm == AllReduceAlgorithm::MultimemTwoShot, "LOWPRECISION has its own launchers");
    static_assert(kFusion == FusionOp::None, "the multimem kernels have no fused epilogue");
    return &multimem_two_shot_all_reduce_kernel<T, kRanks, kThreads>;
  }
}

// Whether all_reduce_kernel<kAlgorithm, ..., kFusion, ...> exists (the dispatchers skip the other combinations, which
// validate_all_reduce refuses before a launch).
template <AllReduceAlgorithm kAlgorithm, FusionOp kFusion>
inline constexpr bool kHasAllReduceKernel = !is_multimem(kAlgorithm) || kFusion == FusionOp::None;

// Calls launch(std::integral_constant<AllReduceAlgorithm, A>) with `algorithm` as a compile-time value; nothing for
// LOWPRECISION, whose kernel (low_precision_kernels.h) is launched by its own launchers.
template <typename Launch>
inline void dispatch_algorithm(AllReduceAlgorithm algorithm, const Launch& launch) {
  switch (algorithm) {
    case AllReduceAlgorithm::OneShot:
      launch(std::integral_constant<AllReduceAlgorithm, AllReduceAlgorithm::OneShot>{});
      break;
    case AllReduceAlgorithm::TwoShot:
      launch(std::integral_constant<AllReduceAlgorithm, AllReduceAlgorithm::TwoShot>{});
      break;
    case AllReduceAlgorithm::MultimemOneShot:
      launch(std::integral_constant<AllReduceAlgorithm, AllReduceAlgorithm::MultimemOneShot>{});
      break;
    case AllReduceAlgorithm::MultimemTwoShot:
      launch(std::integral_constant<AllReduceAlgorithm, AllReduceAlgorithm::MultimemTwoShot>{});
      break;
    case AllReduceAlgorithm::LowPrecision: break;
  }
}

// Dispatch over the fusion op: calls launch(std::integral_constant<FusionOp, F>) with `fusion` as a compile-time
// value (every op of model/sample.h's all_fusion_ops()).
template <typename Launch>
inline void dispatch_fusion(FusionOp fusion, const Launch& launch) {
  switch (fusion) {
    case FusionOp::None: launch(std::integral_constant<FusionOp, FusionOp::None>{}); break;
    case FusionOp::ResidualRmsNorm: launch(std::integral_constant<FusionOp, FusionOp::ResidualRmsNorm>{}); break;
    case FusionOp::ResidualRmsNormQuantFp8:
      launch(std::integral_constant<FusionOp, FusionOp::ResidualRmsNormQuantFp8>{});
      break;
    case FusionOp::ResidualRmsNormQuantNvfp4:
      launch(std::integral_constant<FusionOp, FusionOp::ResidualRmsNormQuantNvfp4>{});
      break;
    case FusionOp::ResidualRmsNormOutQuantFp8:
      launch(std::integral_constant<FusionOp, FusionOp::ResidualRmsNormOutQuantFp8>{});
      break;
    case FusionOp::ResidualRmsNormOutQuantNvfp4:
      launch(std::integral_constant<FusionOp, FusionOp::ResidualRmsNormOutQuantNvfp4>{});
      break;
  }
}

// Dispatch over rank count and fusion op, shared by every algorithm and both targets: calls
// launch(std::integral_constant<int, R>, std::integral_constant<FusionOp, F>) with the team's rank count and the
// fusion op as compile-time values. Other values were rejected by validate_all_reduce before we get here.
template <typename Launch>
inline void dispatch_ranks_and_fusion(int nranks, FusionOp fusion, const Launch& launch) {
  auto with_ranks = [&](auto ranks) { dispatch_fusion(fusion, [&](auto op) { launch(ranks, op); }); };
  switch (nranks) {
    case 2: with_ranks(std::integral_constant<int, 2>{}); break;
    case 4: with_ranks(std::integral_constant<int, 4>{}); break;
    case 8: with_ranks(std::integral_constant<int, 8>{}); break;
    default: break;
  }
}

}  // namespace arfit::kernels::device
