// Host-side validation of custom all-reduce requests: runs everywhere (no GPU, no CUDA needed).
#include <gtest/gtest.h>

#include <string>

#include "kernels/all_reduce.h"

namespace arfit::kernels {
namespace {

// Fake device addresses: validation only looks at their values.
const void* address(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
void* mutable_address(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

AllReduceBuffers aligned_buffers(std::uintptr_t base) {
  AllReduceBuffers b;
  b.input = address(base);
  b.output = mutable_address(base + 0x100000);
  b.residual_in = address(base + 0x200000);
  b.residual_out = mutable_address(base + 0x300000);
  b.gamma = address(base + 0x400000);
  b.fp8_out = mutable_address(base + 0x500000);
  return b;
}

AllReduceParams params(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, int local_ranks) {
  AllReduceParams p;
  p.dtype = dtype;
  p.fusion = fusion;
  p.count = count;
  p.hidden = hidden;
  for (int k = 0; k < local_ranks; ++k) p.buffers.push_back(aligned_buffers(0x10000000u * (k + 1)));
  return p;
}

std::string error_of(AllReduceAlgorithm algorithm, const TeamShape& team, const AllReduceParams& p) {
  try {
    validate_all_reduce(algorithm, team, p);
  } catch (const KernelError& e) {
    return e.what();
  }
  return "";
}

constexpr std::int64_t kMiB = 1 << 20;

TEST(KernelValidation, AcceptsEverySupportedCombination) {
  for (auto algorithm : {AllReduceAlgorithm::OneShot, AllReduceAlgorithm::TwoShot}) {
    for (int n : {2, 4, 8}) {
      for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
        for (FusionOp fusion : {FusionOp::None, FusionOp::ResidualRmsNorm, FusionOp::ResidualRmsNormQuantFp8}) {
          for (int local : {1, n}) {
            const TeamShape team{n, local, 64 * kMiB};
            EXPECT_EQ(error_of(algorithm, team, params(dtype, fusion, 4096 * 3, 4096, local)), "")
                << to_string(algorithm) << " n=" << n << " " << to_string(dtype) << " " << to_string(fusion);
          }
        }
      }
    }
  }
  // Sizes that are not a multiple of the vector width are fine without fusion (scalar tail).
  EXPECT_EQ(error_of(AllReduceAlgorithm::OneShot, {4, 1, kMiB}, params(DType::BF16, FusionOp::None, 13, 0, 1)), "");
}

TEST(KernelValidation, RejectsUnsupportedRankCounts) {
  for (int n : {0, 1, 3, 5, 6, 7, 16}) {
    const std::string e = error_of(AllReduceAlgorithm::OneShot, {n, 1, kMiB}, params(DType::BF16, FusionOp::None, 64, 0, 1));
    EXPECT_NE(e.find("unsupported rank count " + std::to_string(n)), std::string::npos) << e;
    EXPECT_NE(e.find("2, 4 or 8"), std::string::npos) << e;
  }
  EXPECT_FALSE(custom_all_reduce_supports_ranks(3));
  EXPECT_TRUE(custom_all_reduce_supports_ranks(8));
}

TEST(KernelValidation, RejectsMisalignedPointers) {
  AllReduceParams p = params(DType::FP16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 2);
  p.buffers[1].input = address(0x20000008);
  std::string e = error_of(AllReduceAlgorithm::TwoShot, {2, 2, kMiB}, p);
  EXPECT_NE(e.find("local rank 1: input pointer"), std::string::npos) << e;
  EXPECT_NE(e.find("not 16-byte aligned"), std::string::npos) << e;

  for (const char* which : {"output", "residual_in", "residual_out", "gamma", "fp8_out"}) {
    AllReduceParams q = params(DType::FP16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 1);
    const std::string name = which;
    if (name == "output") q.buffers[0].output = mutable_address(0x30000004);
    if (name == "residual_in") q.buffers[0].residual_in = address(0x30000002);
    if (name == "residual_out") q.buffers[0].residual_out = mutable_address(0x3000000c);
    if (name == "gamma") q.buffers[0].gamma = address(0x30000001);
    if (name == "fp8_out") q.buffers[0].fp8_out = mutable_address(0x30000008);
    e = error_of(AllReduceAlgorithm::OneShot, {4, 1, kMiB}, q);
    EXPECT_NE(e.find(name + " pointer"), std::string::npos) << e;
    EXPECT_NE(e.find("not 16-byte aligned"), std::string::npos) << e;
  }
}

TEST(KernelValidation, RejectsMissingPointers) {
  AllReduceParams p = params(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 1);
  p.buffers[0].gamma = nullptr;
  const std::string e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p);
  EXPECT_NE(e.find("gamma pointer is null"), std::string::npos) << e;
}

TEST(KernelValidation, RejectsSizesAboveTheWorkspace) {
  // 1 MiB of fp32 = 262144 elements fits exactly; one more element does not.
  EXPECT_EQ(error_of(AllReduceAlgorithm::OneShot, {8, 1, kMiB}, params(DType::FP32, FusionOp::None, kMiB / 4, 0, 1)), "");
  const std::string e =
      error_of(AllReduceAlgorithm::OneShot, {8, 1, kMiB}, params(DType::FP32, FusionOp::None, kMiB / 4 + 1, 0, 1));
  EXPECT_NE(e.find("message of 1048580 bytes"), std::string::npos) << e;
  EXPECT_NE(e.find("exceeds the team's workspace limit of 1048576 bytes"), std::string::npos) << e;
}

TEST(KernelValidation, RejectsUnsupportedFusionDtypePairs) {
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    const std::string e = error_of(AllReduceAlgorithm::TwoShot, {4, 1, kMiB},
                                   params(dtype, FusionOp::ResidualRmsNormQuantNvfp4, 1024, 256, 1));
    EXPECT_NE(e.find("fusion RESIDUAL_RMS_NORM_QUANT_NVFP4 with dtype " + to_string(dtype) + " is not implemented"),
              std::string::npos)
        << e;
  }
  EXPECT_FALSE(custom_all_reduce_supports_fusion(FusionOp::ResidualRmsNormQuantNvfp4));
  // Element types outside bf16/fp16/fp32 are rejected by name.
  for (const char* name : {"fp8", "int8", "fp64", "nonsense"}) {
    try {
      parse_dtype(name);
      ADD_FAILURE() << name << " accepted";
    } catch (const KernelError& e) {
      EXPECT_NE(std::string(e.what()).find("is not supported by the kernels"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_dtype("bfloat16"), DType::BF16);
  EXPECT_EQ(parse_dtype("half"), DType::FP16);
  EXPECT_EQ(parse_dtype("float"), DType::FP32);
}

TEST(KernelValidation, RejectsRowShapesTheFusedKernelsCannotServe) {
  // bf16 vectors hold 8 elements: hidden 12 is not a whole number of vectors.
  std::string e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::BF16, FusionOp::ResidualRmsNorm, 120, 12, 1));
  EXPECT_NE(e.find("multiple of the vector width 8, got 12"), std::string::npos) << e;
  // fp32 vectors hold 4: hidden 12 is fine there.
  EXPECT_EQ(error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::FP32, FusionOp::ResidualRmsNorm, 120, 12, 1)), "");
  e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::FP32, FusionOp::ResidualRmsNorm, 100, 12, 1));
  EXPECT_NE(e.find("not a whole number of rows"), std::string::npos) << e;
  e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::FP32, FusionOp::ResidualRmsNorm, 100, 0, 1));
  EXPECT_NE(e.find("needs the row length (hidden) > 0"), std::string::npos) << e;
}

TEST(KernelValidation, RejectsBadCountsAndBufferSets) {
  std::string e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::FP32, FusionOp::None, 0, 0, 1));
  EXPECT_NE(e.find("element count must be positive"), std::string::npos) << e;
  e = error_of(AllReduceAlgorithm::OneShot, {4, 4, kMiB}, params(DType::FP32, FusionOp::None, 64, 0, 2));
  EXPECT_NE(e.find("2 buffer sets given for 4 local ranks"), std::string::npos) << e;
  e = error_of(AllReduceAlgorithm::OneShot, {4, 3, kMiB}, params(DType::FP32, FusionOp::None, 64, 0, 3));
  EXPECT_NE(e.find("not 3"), std::string::npos) << e;
  AllReduceParams p = params(DType::FP32, FusionOp::ResidualRmsNormQuantFp8, 64, 16, 1);
  p.fp8_scale = 0;
  e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p);
  EXPECT_NE(e.find("fp8_scale must be finite and > 0"), std::string::npos) << e;
}

TEST(KernelValidation, UnfusedEpilogueChecksItsInputs) {
  AllReduceBuffers b = aligned_buffers(0x40000000);
  EXPECT_NO_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 1.0f, address(0x50000000), b));
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::None, 1024, 256, 1.0f, address(0x50000000), b), KernelError);
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNormQuantNvfp4, 1024, 256, 1.0f,
                                          address(0x50000000), b),
               KernelError);
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 1.0f, address(0x50000004), b),
               KernelError);
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1000, 250, 1.0f, address(0x50000000), b),
               KernelError);
}

}  // namespace
}  // namespace arfit::kernels
