// Numerics of the kernels at the edges the matrix (test_kernels_host_matrix.cpp) does not reach (ctest label
// kernels-host): the fused RMSNorm of rows far longer than a block's threads, in the one-thread configuration
// bench/host runs, where every square of a row goes through a single thread's running sum.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels_host_support.h"

namespace arfit::kernels::testing {
namespace {

// One fp32 row of 2^17 elements summed by one thread: a plain fp32 running sum of the squares drifted by 1e-4
// relative (inv_rms by half that), and 84 % of the outputs missed the 1e-5 tolerance.
constexpr std::int64_t kLongRow = std::int64_t{1} << 17;

TEST(KernelsHostNumerics, Fp32NormOfALongRowOnOneThreadStaysWithinTolerance) {
  HostTeam team(2, kLongRow * 4 * 2, 1);
  for (auto algorithm : {AllReduceAlgorithm::OneShot, AllReduceAlgorithm::TwoShot}) {
    for (std::int64_t rows : {1, 2}) {
      HostCase c;
      c.algorithm = algorithm;
      c.dtype = DType::FP32;
      c.fusion = FusionOp::ResidualRmsNormQuantFp8;
      c.count = rows * kLongRow;
      c.hidden = kLongRow;
      c.threads_per_block = 1;
      run_and_check(team, c, 1, derived_seed(static_cast<std::uint64_t>(rows)));
    }
  }
}

// The unfused epilogue (after NCCL, or bench/host's MPI_Allreduce, also one thread there) shares the row routine.
TEST(KernelsHostNumerics, UnfusedEpilogueOfALongRowOnOneThreadStaysWithinTolerance) {
  const DType dtype = DType::FP32;
  const std::uint64_t seed = derived_seed(3);
  std::vector<std::vector<unsigned char>> inputs;
  std::vector<const void*> pointers;
  for (int r = 0; r < 2; ++r) {
    inputs.push_back(detail::seeded_host(dtype, kLongRow, seed, InputRole::Data, r));
    pointers.push_back(inputs.back().data());
  }
  const ReducedReference reduced = reference_all_reduce(dtype, pointers, kLongRow);
  const auto residual = detail::seeded_host(dtype, kLongRow, seed, InputRole::Residual, kReplicatedRank);
  const auto gamma = detail::seeded_host(dtype, kLongRow, seed, InputRole::Gamma, kReplicatedRank);
  const float eps = 1e-6f;
  const NormReference norm =
      reference_residual_rms_norm(reduced, dtype, residual.data(), gamma.data(), kLongRow, eps, 1.0, false);

  const auto bytes = static_cast<std::size_t>(kLongRow * 4);
  PageAlignedBuffer sum(bytes), residual_in(bytes), residual_out(bytes), gamma_buffer(bytes), output(bytes);
  for (std::int64_t i = 0; i < kLongRow; ++i) set_element(dtype, sum.data(), i, reduced.sum[static_cast<std::size_t>(i)]);
  std::memcpy(residual_in.data(), residual.data(), bytes);
  std::memcpy(gamma_buffer.data(), gamma.data(), bytes);
  AllReduceBuffers b;
  b.residual_in = residual_in.data();
  b.residual_out = residual_out.data();
  b.gamma = gamma_buffer.data();
  b.output = output.data();
  residual_rms_norm_on_host(dtype, FusionOp::ResidualRmsNorm, kLongRow, kLongRow, eps, 1.0f, sum.data(), b, 1);

  std::int64_t wrong = 0;
  for (std::int64_t i = 0; i < kLongRow; ++i) {
    const auto k = static_cast<std::size_t>(i);
    wrong += !within_tolerance(element_at(dtype, output.data(), i), norm.out[k], norm.out_scale[k], relative_tolerance(dtype));
  }
  EXPECT_EQ(wrong, 0) << "of " << kLongRow << " outputs";
}

}  // namespace
}  // namespace arfit::kernels::testing
