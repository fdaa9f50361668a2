// The GPU test matrix, run on the CPU through the host build of the very same kernel bodies (ctest label
// kernels-host): one-shot and two-shot x 2, 4, 8 ranks x bf16, fp16, fp32 x every fusion op (NONE,
// RESIDUAL_RMS_NORM, the QUANT and OUT_QUANT fusions for FP8 and NVFP4) x one block / several blocks per rank,
// LOWPRECISION (NONE only, checked against its error bound on group-ranged inputs) and the multimem one-shot and
// two-shot (NONE only; the multicast address emulated over the peers' staging buffers) x 2, 4, 8 ranks x bf16, fp16,
// fp32 x one / several blocks.
// The quantising fusions other than QUANT_FP8 walk the small fused shapes only (the epilogue's arithmetic does not
// depend on size beyond a row; the large shapes exercise the barriers and partition the others already cover). Each case walks message sizes from 16 B to
// a few MiB (counts that are not multiples of the vector width or of the rank count; rows fewer than ranks),
// out of place, in place and fused in place, with several consecutive launches on one team (the barrier epochs
// carry over from launch to launch and from size to size), block start order, start delays and the order of
// the threads within a block randomised from the run seed (printed; ARFIT_KERNELS_HOST_SEED repeats a run).
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "kernels_host_support.h"

namespace arfit::kernels::testing {
namespace {

constexpr std::int64_t kKiB = 1024;
constexpr std::int64_t kMiB = 1024 * kKiB;

struct MatrixCase {
  AllReduceAlgorithm algorithm;
  int nranks;
  DType dtype;
  FusionOp fusion;
  bool several_blocks;
};

void PrintTo(const MatrixCase& c, std::ostream* os) {
  *os << to_string(c.algorithm) << " " << c.nranks << " ranks " << to_string(c.dtype) << " " << to_string(c.fusion)
      << (c.several_blocks ? " several blocks" : " one block");
}

std::string case_name(const ::testing::TestParamInfo<MatrixCase>& info) {
  const MatrixCase& c = info.param;
  return to_string(c.algorithm) + "_" + std::to_string(c.nranks) + "ranks_" + to_string(c.dtype) + "_" +
         to_string(c.fusion) + (c.several_blocks ? "_blocks" : "_block");
}

std::vector<MatrixCase> matrix() {
  std::vector<MatrixCase> cases;
  // LOWPRECISION: NONE only, against its own error bound (kernels/reference/reference.h).
  for (auto algorithm : {AllReduceAlgorithm::OneShot, AllReduceAlgorithm::TwoShot, AllReduceAlgorithm::LowPrecision,
                         AllReduceAlgorithm::MultimemOneShot, AllReduceAlgorithm::MultimemTwoShot})
    for (int n : {2, 4, 8})
      for (DType d : {DType::BF16, DType::FP16, DType::FP32})
        for (FusionOp f : all_reduce_fusions(algorithm))  // LOWPRECISION and the multimem kernels: NONE only
          for (bool several : {false, true}) cases.push_back({algorithm, n, d, f, several});
  return cases;
}

// One step of a case: a message shape, where the outputs go, and the threads per block it runs with.
struct Step {
  std::int64_t count;
  std::int64_t hidden;
  Placement placement;
  int threads;
};

// Unfused sizes in bytes: 16 B (one vector) up to 3 MiB; most are neither a multiple of 16 B (the scalar tail)
// nor of the rank count times 16 B (uneven slices), and several chunks per block at the large end.
// LOWPRECISION stops at 1 MiB + 36: its per-element work on the host (e4m3 conversions, two quantisations) makes the
// 3 MiB step cost more than the rest of its case together, and 1 MiB already gives every rank several chunks per block.
// The multimem cases stop there too: above it the same loops only run longer (CI budget; the unicast cases cover the
// 3 MiB step).
std::vector<Step> unfused_steps(DType dtype, AllReduceAlgorithm algorithm) {
  const int element = dtype_bytes(dtype);
  std::vector<Step> steps;
  const std::int64_t sizes[] = {16, 20, 52, 1000, 4100, 64 * kKiB + 12, kMiB + 36, 3 * kMiB + 4};
  const int threads[] = {64, 1, 32};
  const Placement placements[] = {Placement::OutOfPlace, Placement::InPlace};
  int k = 0;
  for (std::int64_t bytes : sizes) {
    if (quick_mode() && bytes > 64 * kKiB + 12) continue;
    if ((algorithm == AllReduceAlgorithm::LowPrecision || is_multimem(algorithm)) && bytes > kMiB + 36) continue;
    steps.push_back({bytes / element, 0, placements[k % 2], threads[k % 3]});
    ++k;
  }
  return steps;
}

// Fused shapes (rows x hidden): a single row (fewer rows than ranks), row counts that do not divide by the rank
// count, one-vector rows, rows longer than a block's threads, more rows than one tile of the NVFP4 scale layout, up
// to 2 MiB; every placement.
std::vector<Step> fused_steps(DType dtype, FusionOp fusion) {
  const int width = vector_width(dtype);
  // NVFP4 quantises blocks of 16: its rows are whole blocks. The newer quantising fusions skip the shapes above 64 KiB.
  const int row_unit = fusion_quantizes_nvfp4(fusion) ? kNvfp4BlockElements : width;
  const bool small_only = quick_mode() || fusion_quantizes_nvfp4(fusion) || fusion == FusionOp::ResidualRmsNormOutQuantFp8;
  struct Shape {
    std::int64_t rows, hidden;
  };
  const Shape shapes[] = {{1, 8 * width},  {3, width},       {7, 40 * width}, {5, 1024},
                          {13, 136},       {64, 2048},       {9, 4096 + 8 * width}, {128, 4096},
                          // past one 128-row tile of the NVFP4 scale layout, 5 scale columns (not a multiple of 4)
                          {130, 80}};
  const Placement placements[] = {Placement::OutOfPlace, Placement::FusedInPlace, Placement::InPlace,
                                  Placement::BothInPlace};
  const int threads[] = {32, 64, 1};
  std::vector<Step> steps;
  int k = 0;
  for (const Shape& s : shapes) {
    if (s.hidden % row_unit != 0) continue;
    if (small_only && s.rows * s.hidden * dtype_bytes(dtype) > 64 * kKiB) continue;
    steps.push_back({s.rows * s.hidden, s.hidden, placements[k % 4], threads[k % 3]});
    ++k;
  }
  return steps;
}

class KernelsHost : public ::testing::TestWithParam<MatrixCase> {};

TEST_P(KernelsHost, MatchesReferenceAcrossSizesPlacementsAndLaunches) {
  const MatrixCase m = GetParam();
  const std::vector<Step> steps = m.fusion == FusionOp::None ? unfused_steps(m.dtype, m.algorithm) : fused_steps(m.dtype, m.fusion);
  std::int64_t largest = 0;
  for (const Step& s : steps) largest = std::max(largest, s.count * dtype_bytes(m.dtype));
  largest = std::max<std::int64_t>(largest, 128);  // LOWPRECISION stages at least one 68-byte group
  // One team for the whole case: every launch continues the epochs of the launches before it. Several blocks:
  // at most 3 per rank (not a divisor of most chunk and row counts).
  HostTeam team(m.nranks, largest, m.several_blocks ? 3 : 1);
  team.set_barrier_timeout_ns(120ull * 1000 * 1000 * 1000);
  std::uint64_t salt = std::hash<std::string>{}(case_name(::testing::TestParamInfo<MatrixCase>(m, 0)));
  for (const Step& s : steps) {
    HostCase c;
    c.algorithm = m.algorithm;
    c.dtype = m.dtype;
    c.fusion = m.fusion;
    c.nranks = m.nranks;
    c.count = s.count;
    c.hidden = s.hidden;
    c.placement = s.placement;
    c.threads_per_block = s.threads;
    // Every other step quantises with a scale that saturates the largest outputs (and is not a power of 2).
    c.fp8_scale = salt % 2 ? 0.5f : 0.0025f;
    // Two launches per step (three for the small ones): fresh inputs each time, the same team.
    const int launches = s.count * dtype_bytes(m.dtype) <= 64 * kKiB ? 3 : 2;
    run_and_check(team, c, launches, derived_seed(++salt));
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Matrix, KernelsHost, ::testing::ValuesIn(matrix()), case_name);

}  // namespace
}  // namespace arfit::kernels::testing
