#include <gtest/gtest.h>

#include <stdexcept>

#include "model/sample.h"

using namespace arfit;

TEST(SampleTypes, CollectiveNamesRoundTripAndAcceptAliases) {
  for (Collective c : all_collectives()) EXPECT_EQ(parse_collective(to_string(c)), c);
  EXPECT_EQ(parse_collective("all_reduce"), Collective::AllReduce);
  EXPECT_EQ(parse_collective("AllGather"), Collective::AllGather);
  EXPECT_EQ(parse_collective("reduce_scatter"), Collective::ReduceScatter);
  EXPECT_EQ(parse_collective("all-to-allv"), Collective::AllToAllV);
  EXPECT_THROW(parse_collective("allreduc"), std::invalid_argument);
}

TEST(SampleTypes, FusionNamesRoundTripInTensorRtLlmOrder) {
  const auto& f = all_fusions();
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(to_string(f[0]), "NONE");
  EXPECT_EQ(to_string(f[1]), "RESIDUAL_RMS_NORM");
  EXPECT_EQ(to_string(f[2]), "RESIDUAL_RMS_NORM_QUANT_FP8");
  EXPECT_EQ(to_string(f[3]), "RESIDUAL_RMS_NORM_QUANT_NVFP4");
  for (FusionOp op : f) EXPECT_EQ(parse_fusion(to_string(op)), op);
  EXPECT_EQ(parse_fusion("residual_rms_norm"), FusionOp::ResidualRmsNorm);
  EXPECT_THROW(parse_fusion("RMS"), std::invalid_argument);
}

TEST(SampleTypes, DtypeSizesAndCanonicalNames) {
  EXPECT_EQ(dtype_size("half"), 2);
  EXPECT_EQ(dtype_size("bfloat16"), 2);
  EXPECT_EQ(dtype_size("float"), 4);
  EXPECT_EQ(dtype_size("int8"), 1);
  EXPECT_EQ(dtype_size("double"), 8);
  EXPECT_EQ(dtype_size("mystery"), 0);
  EXPECT_EQ(canonical_dtype("half"), "fp16");
  EXPECT_EQ(canonical_dtype("bfloat16"), "bf16");
  EXPECT_EQ(canonical_dtype("mystery"), "mystery");
}
