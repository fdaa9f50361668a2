// Host-side validation of custom all-reduce requests: runs everywhere (no GPU, no CUDA needed).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "kernels/all_reduce.h"
#include "kernels/team.h"
#include "kernels/team/host_team.h"

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
  b.scale_out = mutable_address(base + 0x600000);
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

KernelParam parameter_of(AllReduceAlgorithm algorithm, const TeamShape& team, const AllReduceParams& p) {
  try {
    validate_all_reduce(algorithm, team, p);
  } catch (const KernelError& e) {
    return e.parameter();
  }
  return KernelParam::None;
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

  for (const char* which : {"output", "residual_in", "residual_out", "gamma"}) {
    AllReduceParams q = params(DType::FP16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 1);
    const std::string name = which;
    if (name == "output") q.buffers[0].output = mutable_address(0x30000004);
    if (name == "residual_in") q.buffers[0].residual_in = address(0x30000002);
    if (name == "residual_out") q.buffers[0].residual_out = mutable_address(0x3000000c);
    if (name == "gamma") q.buffers[0].gamma = address(0x30000001);
    e = error_of(AllReduceAlgorithm::OneShot, {4, 1, kMiB}, q);
    EXPECT_NE(e.find(name + " pointer"), std::string::npos) << e;
    EXPECT_NE(e.find("not 16-byte aligned"), std::string::npos) << e;
  }
}

// fp8_out is stored in e4m3 packs of one byte per element of a 16-byte vector (8 bytes for bf16/fp16, 4 for fp32):
// it needs that alignment, not 16 (it was refused at 8 bytes, though no store is wider), and less is refused
// naming fp8_out and the alignment, by the fused kernels and by the unfused epilogue alike.
TEST(KernelValidation, Fp8OutNeedsTheAlignmentOfItsPackOnly) {
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    const std::uintptr_t pack = dtype == DType::FP32 ? 4 : 8;
    EXPECT_EQ(static_cast<std::uintptr_t>(fp8_pack_bytes(dtype)), pack);
    for (std::uintptr_t offset : {pack, 3 * pack, pack / 2, pack + 1}) {
      AllReduceParams p = params(dtype, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 2);
      p.buffers[1].fp8_out = mutable_address(0x30000000 + offset);
      AllReduceBuffers b = aligned_buffers(0x40000000);
      b.fp8_out = p.buffers[1].fp8_out;
      std::string unfused;
      try {
        validate_residual_rms_norm(dtype, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 1e-6f, 1.0f, address(0x50000000), b);
      } catch (const KernelError& error) {
        unfused = error.what();
        EXPECT_EQ(error.parameter(), KernelParam::Buffers);
      }
      const std::string fused = error_of(AllReduceAlgorithm::TwoShot, {2, 2, kMiB}, p);
      const std::string what = to_string(dtype) + " fp8_out at +" + std::to_string(offset);
      if (offset % pack == 0) {
        EXPECT_EQ(fused, "") << what;
        EXPECT_EQ(unfused, "") << what;
        continue;
      }
      const std::string need = "not " + std::to_string(pack) + "-byte aligned (the kernels store e4m3 in packs of " +
                               std::to_string(pack) + " bytes";
      EXPECT_NE(fused.find("local rank 1: fp8_out pointer"), std::string::npos) << what << ": " << fused;
      EXPECT_NE(fused.find(need), std::string::npos) << what << ": " << fused;
      EXPECT_EQ(parameter_of(AllReduceAlgorithm::TwoShot, {2, 2, kMiB}, p), KernelParam::Buffers);
      EXPECT_NE(unfused.find("fp8_out pointer"), std::string::npos) << what << ": " << unfused;
      EXPECT_NE(unfused.find(need), std::string::npos) << what << ": " << unfused;
    }
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

// Counts whose byte size does not fit in 64 bits: 2^61 + 1 fp32 elements are 2^63 + 4 bytes, which wrapped to a
// 4-byte message that every workspace held.
TEST(KernelValidation, RejectsCountsWhoseByteSizeOverflows) {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    for (std::int64_t count : {(std::int64_t{1} << 61) + 1, std::int64_t{1} << 62, max / 2 + 1, max}) {
      const std::string e = error_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, params(dtype, FusionOp::None, count, 0, 1));
      EXPECT_NE(e.find("exceeds the team's workspace limit"), std::string::npos) << count << " " << to_string(dtype) << ": " << e;
      EXPECT_EQ(parameter_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, params(dtype, FusionOp::None, count, 0, 1)),
                KernelParam::Workspace);
    }
  }
  const std::string e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::FP32, FusionOp::None, max, 0, 1));
  EXPECT_NE(e.find("message of more than 9223372036854775807 bytes"), std::string::npos) << e;
  // The unfused epilogue has no workspace, but its buffers' byte sizes must fit too (they wrapped to 0 bytes,
  // so no overlap was ever found).
  try {
    validate_residual_rms_norm(DType::FP32, FusionOp::ResidualRmsNorm, std::int64_t{1} << 62, 1 << 20, 1e-6f, 1.0f,
                               address(0x50000000), aligned_buffers(0x40000000));
    ADD_FAILURE() << "2^62 fp32 elements accepted";
  } catch (const KernelError& error) {
    EXPECT_EQ(error.parameter(), KernelParam::Count) << error.what();
  }
}

// A team's workspace (signals + staging + 3 scratch slots of max_bytes) must fit in 64 bits: max_bytes = 2^62
// wrapped to a workspace of 2304 bytes, and validation then accepted messages of up to 2^62 bytes on it.
TEST(KernelValidation, TeamWorkspaceMustFitIn64Bits) {
  EXPECT_EQ(team_max_bytes("HostTeam", 1), 128);
  EXPECT_EQ(team_max_bytes("HostTeam", 4096 + 100), 4224);
  for (std::int64_t max_bytes : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1} << 61, std::int64_t{1} << 62,
                                 std::numeric_limits<std::int64_t>::max()}) {
    try {
      team_max_bytes("HostTeam", max_bytes);
      ADD_FAILURE() << max_bytes << " accepted";
    } catch (const KernelError& e) {
      EXPECT_EQ(e.parameter(), KernelParam::Workspace);
      EXPECT_NE(std::string(e.what()).find("HostTeam: max_bytes must be in 1.."), std::string::npos) << e.what();
    }
  }
  // The largest accepted limit is a multiple of 128 whose workspace still fits.
  const std::int64_t largest = (std::numeric_limits<std::int64_t>::max() - static_cast<std::int64_t>(sizeof(RankSignals))) /
                               (1 + kScratchSlots) / 128 * 128;
  EXPECT_EQ(team_max_bytes("HostTeam", largest), largest);
  EXPECT_GT(workspace_allocation_bytes(largest), 0);
  EXPECT_THROW(team_max_bytes("HostTeam", largest + 1), KernelError);
  EXPECT_THROW(HostTeam(2, std::int64_t{1} << 62, 1), KernelError);  // refused before it allocates anything
}

// Every fusion op is implemented for every dtype; NVFP4 needs rows of whole 16-element blocks (hidden 24 is a whole
// number of bf16 vectors but not of blocks), its packed output 8-byte aligned and a scale buffer.
TEST(KernelValidation, Nvfp4NeedsWholeBlocksAndItsBuffers) {
  for (FusionOp fusion : all_fusion_ops()) EXPECT_TRUE(custom_all_reduce_supports_fusion(fusion)) << to_string(fusion);
  for (FusionOp fusion : {FusionOp::ResidualRmsNormQuantNvfp4, FusionOp::ResidualRmsNormOutQuantNvfp4}) {
    for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
      EXPECT_EQ(error_of(AllReduceAlgorithm::TwoShot, {4, 1, kMiB}, params(dtype, fusion, 1024, 256, 1)), "");
      const std::string e = error_of(AllReduceAlgorithm::OneShot, {4, 1, kMiB}, params(dtype, fusion, 960, 24, 1));
      EXPECT_NE(e.find("needs hidden to be a multiple of 16"), std::string::npos) << e;
      EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {4, 1, kMiB}, params(dtype, fusion, 960, 24, 1)),
                KernelParam::Hidden);
    }
    AllReduceParams p = params(DType::BF16, fusion, 1024, 256, 1);
    p.buffers[0].fp8_out = mutable_address(0x10500004);  // 4-byte aligned: not one 8-byte pack
    EXPECT_NE(error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p).find("fp8_out pointer"), std::string::npos);
    p = params(DType::BF16, fusion, 1024, 256, 1);
    p.buffers[0].scale_out = nullptr;
    EXPECT_NE(error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p).find("scale_out pointer is null"), std::string::npos);
  }
  // The swizzled scale buffer of 1024 / 256 = 4 rows of 16 scales: rows padded to 128, columns to a multiple of 4.
  EXPECT_EQ(nvfp4_scale_bytes(4, 256), 128 * 16);
  EXPECT_EQ(nvfp4_scale_bytes(130, 80), 256 * 8);
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

TEST(KernelValidation, MultimemKernelsServeNoneOnly) {
  for (AllReduceAlgorithm algorithm : {AllReduceAlgorithm::MultimemOneShot, AllReduceAlgorithm::MultimemTwoShot}) {
    EXPECT_EQ(all_reduce_fusions(algorithm), std::vector<FusionOp>{FusionOp::None});
    EXPECT_NO_THROW(validate_all_reduce_shape(algorithm, {8, 1, kMiB}, DType::BF16, FusionOp::None, 3, 0));
    for (FusionOp fusion : {FusionOp::ResidualRmsNorm, FusionOp::ResidualRmsNormQuantFp8}) {
      const std::string e = error_of(algorithm, {4, 1, kMiB}, params(DType::BF16, fusion, 1024, 256, 1));
      EXPECT_NE(e.find(to_string(algorithm) + ": fusion " + to_string(fusion) + " is not implemented for the multimem"),
                std::string::npos)
          << e;
      EXPECT_EQ(parameter_of(algorithm, {4, 1, kMiB}, params(DType::BF16, fusion, 1024, 256, 1)), KernelParam::Fusion);
    }
  }
  EXPECT_EQ(to_string(AllReduceAlgorithm::MultimemOneShot), "MULTIMEM_ONESHOT");
  EXPECT_EQ(to_string(AllReduceAlgorithm::MultimemTwoShot), "MULTIMEM_TWOSHOT");
  EXPECT_EQ(all_reduce_fusions(AllReduceAlgorithm::TwoShot), all_fusion_ops());  // every fusion op, NVFP4 and OUT_QUANT included
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
  EXPECT_NE(e.find("fp8_scale must be a normal, positive, finite float, got 0"), std::string::npos) << e;
}

TEST(KernelValidation, Fp8ScaleMustBeANormalPositiveFloat) {
  AllReduceParams p = params(DType::BF16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 1);
  for (float scale : {0.0f, -0.0f, -1.0f, 1e-40f /* subnormal: 1/scale overflows */, INFINITY, -INFINITY, NAN}) {
    p.fp8_scale = scale;
    EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p), KernelParam::Fp8Scale) << scale;
  }
  for (float scale : {1.0f, 0.0025f, 448.0f, 1.2e-38f /* smallest normal */}) {
    p.fp8_scale = scale;
    EXPECT_EQ(error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p), "") << scale;
  }
  // Only the FP8 epilogue uses the scale.
  AllReduceParams q = params(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 1);
  q.fp8_scale = 0;
  EXPECT_EQ(error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, q), "");
}

TEST(KernelValidation, RmsEpsMustBePositive) {
  AllReduceParams p = params(DType::FP16, FusionOp::ResidualRmsNorm, 1024, 256, 1);
  for (float eps : {0.0f, -1e-6f, INFINITY, NAN}) {
    p.rms_eps = eps;
    EXPECT_EQ(parameter_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, p), KernelParam::RmsEps) << eps;
  }
  // The message shows the value given (std::to_string printed -1e-07 as "-0.000000").
  p.rms_eps = -1e-7f;
  const std::string e = error_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, p);
  EXPECT_NE(e.find("rms_eps must be finite and > 0, got -1e-07"), std::string::npos) << e;
  p.rms_eps = 1e-6f;
  EXPECT_EQ(error_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, p), "");
  AllReduceParams unfused = params(DType::FP16, FusionOp::None, 1024, 0, 1);
  unfused.rms_eps = 0;  // no norm, no epsilon
  EXPECT_EQ(error_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, unfused), "");
}

// A StrategyCase's epsilon is a double: it is checked as given, and the message shows that value, not its float
// rounding (1e-50 read "got 0"). Positive values the float kernels cannot hold as a normal float are refused too.
TEST(KernelValidation, RmsEpsIsCheckedAsGivenBeforeItBecomesAFloat) {
  auto message = [](double eps) {
    try {
      validate_epilogue_scalars("TWOSHOT", FusionOp::ResidualRmsNorm, eps, 1.0f);
    } catch (const KernelError& e) {
      EXPECT_EQ(e.parameter(), KernelParam::RmsEps) << eps;
      return std::string(e.what());
    }
    return std::string();
  };
  for (const char* given : {"1e-50", "1e-39" /* a float subnormal */, "1e+39" /* a float infinity */}) {
    const std::string e = message(std::stod(given));
    EXPECT_NE(e.find(std::string("TWOSHOT: rms_eps must be finite and > 0, got ") + given + " (the kernels compute in float"),
              std::string::npos)
        << e;
  }
  EXPECT_NE(message(-1e-50).find("got -1e-50"), std::string::npos);
  EXPECT_EQ(message(1e-30), "");
  EXPECT_EQ(message(static_cast<double>(std::numeric_limits<float>::min())), "");
  EXPECT_EQ(message(1e-6), "");
  // Through a case's shape check (the NCCL all-reduce's fused epilogue).
  try {
    validate_residual_rms_norm_shape(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 1e-50, 1.0f);
    ADD_FAILURE() << "1e-50 accepted";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("got 1e-50"), std::string::npos) << e.what();
  }
}

TEST(KernelValidation, OverlappingBuffersAreRejectedExceptTheInPlaceForms) {
  // bf16, 1024 elements: every buffer is 2048 bytes.
  const std::uintptr_t base = 0x60000000;
  AllReduceParams p = params(DType::BF16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 1);
  // In place and fused in place are the two allowed aliases.
  p.buffers[0].output = const_cast<void*>(p.buffers[0].input);
  p.buffers[0].residual_out = const_cast<void*>(p.buffers[0].residual_in);
  EXPECT_EQ(error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p), "");
  // An output that starts 16 bytes into the input: partial overlap.
  p = params(DType::BF16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 1);
  p.buffers[0].input = address(base);
  p.buffers[0].output = mutable_address(base + 16);
  std::string e = error_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p);
  EXPECT_NE(e.find("local rank 0 input"), std::string::npos) << e;
  EXPECT_NE(e.find("overlaps local rank 0 output"), std::string::npos) << e;
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, p), KernelParam::Buffers);
  // The same pointer for two outputs (the normalised output would overwrite the new residual).
  p = params(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 1);
  p.buffers[0].residual_out = p.buffers[0].output;
  e = error_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, p);
  EXPECT_NE(e.find("output"), std::string::npos) << e;
  EXPECT_NE(e.find("overlaps"), std::string::npos) << e;
  // The e4m3 output inside the residual.
  p = params(DType::BF16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, 1);
  p.buffers[0].fp8_out = mutable_address(reinterpret_cast<std::uintptr_t>(p.buffers[0].residual_in) + 1024);
  EXPECT_NE(error_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, p).find("fp8_out"), std::string::npos);
  // Gamma inside an output.
  p = params(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 1);
  p.buffers[0].gamma = address(reinterpret_cast<std::uintptr_t>(p.buffers[0].output) + 512);
  EXPECT_NE(error_of(AllReduceAlgorithm::TwoShot, {2, 1, kMiB}, p).find("gamma"), std::string::npos);
  // Virtual ranks: one rank's output inside another rank's input...
  p = params(DType::BF16, FusionOp::None, 1024, 0, 2);
  p.buffers[1].output = mutable_address(reinterpret_cast<std::uintptr_t>(p.buffers[0].input) + 32);
  e = error_of(AllReduceAlgorithm::OneShot, {2, 2, kMiB}, p);
  EXPECT_NE(e.find("local rank 0 input"), std::string::npos) << e;
  EXPECT_NE(e.find("local rank 1 output"), std::string::npos) << e;
  // ... but read-only buffers may be shared (one gamma and residual for every virtual rank).
  p = params(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 2);
  p.buffers[1].gamma = p.buffers[0].gamma;
  p.buffers[1].residual_in = p.buffers[0].residual_in;
  EXPECT_EQ(error_of(AllReduceAlgorithm::OneShot, {2, 2, kMiB}, p), "");
}

TEST(KernelValidation, ErrorsNameTheirParameter) {
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {3, 1, kMiB}, params(DType::BF16, FusionOp::None, 64, 0, 1)),
            KernelParam::Ranks);
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {4, 3, kMiB}, params(DType::BF16, FusionOp::None, 64, 0, 3)),
            KernelParam::LocalRanks);
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB},
                         params(DType::BF16, FusionOp::ResidualRmsNormQuantNvfp4, 1024, 24, 1)),
            KernelParam::Hidden);
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::BF16, FusionOp::None, 0, 0, 1)),
            KernelParam::Count);
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {2, 1, 1024}, params(DType::BF16, FusionOp::None, 4096, 0, 1)),
            KernelParam::Workspace);
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::BF16, FusionOp::ResidualRmsNorm, 1200, 12, 1)),
            KernelParam::Hidden);
  EXPECT_EQ(parameter_of(AllReduceAlgorithm::OneShot, {2, 1, kMiB}, params(DType::BF16, FusionOp::ResidualRmsNorm, 1000, 16, 1)),
            KernelParam::Count);
  try {
    parse_dtype("int8");
    ADD_FAILURE();
  } catch (const KernelError& e) {
    EXPECT_EQ(e.parameter(), KernelParam::DType);
  }
}

TEST(KernelValidation, UnfusedEpilogueChecksItsInputs) {
  AllReduceBuffers b = aligned_buffers(0x40000000);
  const float eps = 1e-6f;
  EXPECT_NO_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, eps, 1.0f, address(0x50000000), b));
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::None, 1024, 256, eps, 1.0f, address(0x50000000), b), KernelError);
  EXPECT_NO_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNormQuantNvfp4, 1024, 256, eps, 1.0f,
                                             address(0x50000000), b));
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNormOutQuantNvfp4, 960, 24, eps, 1.0f,
                                          address(0x50000000), b),
               KernelError);
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, eps, 1.0f, address(0x50000004), b),
               KernelError);
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1000, 250, eps, 1.0f, address(0x50000000), b),
               KernelError);
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, 0.0f, 1.0f, address(0x50000000), b),
               KernelError);
  // The reduced input inside the output it is normalised into.
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, eps, 1.0f,
                                          address(reinterpret_cast<std::uintptr_t>(b.output) + 16), b),
               KernelError);
  // ...but exactly the output, with the residual updated in place too (vLLM's fused_add_rms_norm), is fine.
  AllReduceBuffers in_place = b;
  in_place.residual_out = const_cast<void*>(b.residual_in);
  EXPECT_NO_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNormQuantFp8, 1024, 256, eps, 1.0f,
                                             b.output, in_place));
  // Other overlaps stay refused, e.g. the reduced input over the new residual.
  EXPECT_THROW(validate_residual_rms_norm(DType::BF16, FusionOp::ResidualRmsNorm, 1024, 256, eps, 1.0f, b.residual_out, b),
               KernelError);
}

}  // namespace
}  // namespace arfit::kernels
