// Checking a case's outputs against the double-precision references (host-only, no CUDA): the GPU strategies'
// check() (kernels/strategies/), the NCCL all-reduce's and the CPU runs of the kernels (tests/kernels) all
// compare through these functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/reference.h"
#include "kernels/strategy.h"

namespace arfit::kernels {

// Residual and gamma are the same on every rank (tensor parallelism replicates them): seeded as rank 0's.
inline constexpr int kReplicatedRank = 0;

// What an all-reduce case computed from seeded inputs must produce: rank r's input is
// fill_seeded(seed, InputRole::Data, r); residual and gamma are seeded as kReplicatedRank's.
struct AllReduceExpectation {
  DType dtype = DType::BF16;
  FusionOp fusion = FusionOp::None;
  int nranks = 0;
  std::int64_t count = 0;
  std::int64_t hidden = 0;
  double rms_eps = 1e-6;
  float fp8_scale = 1.0f;
  std::uint64_t seed = 1;
  // Multiplies relative_tolerance(dtype): NCCL rounds after every step (up to nranks - 1 roundings).
  double tolerance_factor = 1.0;
  // LOWPRECISION: inputs are InputRole::GroupRangedData and every output must lie within the per-element bound of
  // reference_low_precision_all_reduce (CheckResult::max_error is then the largest |error| / bound: <= 1 passes).
  bool low_precision = false;
};

// The input role of an all-reduce strategy's data: GroupRangedData for LOWPRECISION, Data for the exact ones.
InputRole data_role(const std::string& strategy);

// The expectation of all-reduce case `c` run on inputs seeded from `seed` (the kernels' fp32 epsilon).
AllReduceExpectation expectation_for(const StrategyCase& c, std::uint64_t seed);

// One rank's outputs, copied to the host: output (NONE, RESIDUAL_RMS_NORM and the OUT_QUANT fusions), residual_out
// (fused), fp8_out (the quantised output: count e4m3 bytes, or count / 2 packed e2m1 bytes for NVFP4) and scale_out
// (NVFP4: nvfp4_scale_bytes(rows, hidden) bytes of block scales, swizzled).
struct RankOutputs {
  int rank = 0;
  std::vector<unsigned char> output, residual_out, fp8_out, scale_out;
};

// Compares every element of every rank's outputs with the reference (within tolerance; e4m3 within one step
// of the exact value), and, when `identical`, that all ranks hold the same bytes (not_identical counts the
// differing elements). The quantised value is always the norm output as the kernels store it (rounded to dtype):
//  * FP8: each byte within one e4m3 step of out / fp8_scale (plus the upstream tolerance); with the norm output
//    written (OUT_QUANT_FP8) also exactly e4m3(float(output) * (1 / fp8_scale)).
//  * NVFP4 (global scale g = 1 / fp8_scale in fp32): each block scale s must lie between e4m3(g * (amax - u) / 6)
//    and e4m3(g * (amax + u) / 6), amax the block's largest |out| and u its largest upstream tolerance; each e2m1
//    code between e2m1((out - u) * g / s) and e2m1((out + u) * g / s): the exact reference value quantised, one
//    e2m1 step either way allowed only where the tolerance interval straddles a rounding boundary. With the norm
//    output written (OUT_QUANT_NVFP4) also bit-exact: s and every code recomputed in fp32 from the stored output.
CheckResult check_all_reduce_outputs(const AllReduceExpectation& e, const std::vector<RankOutputs>& ranks,
                                     bool identical);

// The reference-side checks of a fusion's quantised output alone, for callers with their own inputs (bench/host):
// `out` is the exact norm output, `slack` its absolute tolerance per element; quant holds the e4m3 bytes (FP8) or
// packed e2m1 (NVFP4), scales the swizzled NVFP4 block scales. The rules are check_all_reduce_outputs' (FP8 within
// one e4m3 step plus slack / fp8_scale; NVFP4 scale and codes within the rounding of the slack interval). Returns
// the quantised elements (and NVFP4 block scales) outside them; 0 for a fusion that quantises nothing.
std::int64_t count_quantized_wrong(FusionOp fusion, std::int64_t hidden, float fp8_scale, const std::vector<double>& out,
                                   const std::vector<double>& slack, const std::vector<unsigned char>& quant,
                                   const std::vector<unsigned char>& scales);

namespace detail {

// Byte pattern written over outputs before a checked run: all-ones is NaN in bf16, fp16, fp32 and e4m3, so an
// element the kernel never wrote fails the comparison.
inline constexpr int kPoisonByte = 0xff;

// Seeded host values of one rank's buffer, rounded to dtype (fill_seeded).
std::vector<unsigned char> seeded_host(DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank);

// Adds one comparison to `result` (keeps the first failure's description).
void record(CheckResult& result, bool ok, double error, const std::string& where, double got, double expected);

// Compares `count` elements of `got` (dtype) against `expected` with tolerance * scale[i].
void compare_elements(CheckResult& result, DType dtype, const std::vector<unsigned char>& got,
                      const std::vector<double>& expected, const std::vector<double>& scale, double tolerance,
                      const std::string& what);
// Exact comparison (data movement collectives): got[i] must equal expected[i] bit for bit after rounding to dtype.
void compare_exact(CheckResult& result, DType dtype, const std::vector<unsigned char>& got, std::int64_t got_offset,
                   const std::vector<unsigned char>& expected, std::int64_t expected_offset, std::int64_t count,
                   const std::string& what);

}  // namespace detail
}  // namespace arfit::kernels
