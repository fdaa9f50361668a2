// Who does what: the ownership and partition math of the custom all-reduce, in one header compiled by
// nvcc for the kernels (device), by the host compiler for the launchers (kernels/device/all_reduce_launch.cpp,
// kernels/device/host_all_reduce.h) and for the CPU execution of the same kernels (bench/host runs them
// over an MPI shared-memory window). Change the partition here and every user follows.
//
// Units of work:
//  * unfused (NONE): 16-byte vectors grouped into chunks of `threads` vectors (one vector per thread).
//    Chunk c is processed by block c % blocks_per_rank of every rank in every phase, so the barriers, which
//    are per block, order exactly the data each block exchanges. Two-shot gives each rank a contiguous slice
//    of ceil(chunks / nranks) chunks; the scalar tail (count not a multiple of the vector width) belongs to
//    the last rank and is handled by its block 0.
//  * fused epilogues: rows of `hidden` elements. Row r is processed by block r % blocks_per_rank; two-shot
//    gives each rank a contiguous slice of ceil(rows / nranks) rows (fewer rows than ranks: the last ranks
//    own none).
#pragma once

#include <cstdint>

#include "model/sample.h"

#if defined(__CUDACC__)
#define ARFIT_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ARFIT_HOST_DEVICE inline
#endif

namespace arfit::kernels::partition {

ARFIT_HOST_DEVICE std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Smallest c >= lo with c % stride == residue (0 <= residue < stride).
ARFIT_HOST_DEVICE std::int64_t first_at_or_after(std::int64_t lo, int residue, int stride) {
  return lo + ((residue - lo % stride) % stride + stride) % stride;
}

// A half-open range of work units [begin, end).
struct Range {
  std::int64_t begin;
  std::int64_t end;
};

// Units (chunks or rows) each rank owns in the two-shot reduce-scatter: ceil(units / nranks).
ARFIT_HOST_DEVICE std::int64_t units_per_rank(std::int64_t units, int nranks) { return ceil_div(units, nranks); }

// The contiguous slice of units rank `rank` owns (empty for trailing ranks when units < nranks).
ARFIT_HOST_DEVICE Range owned_units(int rank, std::int64_t units, std::int64_t per_rank) {
  const std::int64_t lo = rank * per_rank;
  const std::int64_t hi = lo + per_rank < units ? lo + per_rank : units;
  return Range{lo < units ? lo : units, hi};
}

// The rank that owns unit `unit` (the inverse of owned_units).
ARFIT_HOST_DEVICE int owner_of(std::int64_t unit, std::int64_t per_rank) { return static_cast<int>(unit / per_rank); }

// The rank that reduces the scalar tail of an unfused message.
ARFIT_HOST_DEVICE int tail_owner(int nranks) { return nranks - 1; }

// Chunks of `threads` vectors in a message of `vectors` vectors.
ARFIT_HOST_DEVICE std::int64_t chunk_count(std::int64_t vectors, int threads) { return ceil_div(vectors, threads); }

// The block of a rank that processes chunk or row `unit`.
ARFIT_HOST_DEVICE int block_of(std::int64_t unit, int blocks_per_rank) { return static_cast<int>(unit % blocks_per_rank); }

// Blocks each rank launches: one per work unit (chunk or row), at least 1, at most what the team can keep
// co-resident. The same on every rank for the same case, so all ranks launch the same partition.
ARFIT_HOST_DEVICE int blocks_per_rank_for(FusionOp fusion, std::int64_t count, std::int64_t hidden, int vector_width,
                                          int threads, int max_blocks_per_rank) {
  const std::int64_t units = fusion == FusionOp::None ? chunk_count(count / vector_width, threads) : count / hidden;
  if (units < 1) return 1;
  return units < max_blocks_per_rank ? static_cast<int>(units) : max_blocks_per_rank;
}

}  // namespace arfit::kernels::partition
