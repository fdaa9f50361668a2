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

// nccl-tests names its fp8 types f8e4m3 and f8e5m2, PyTorch float8_e4m3fn and float8_e5m2: all one byte (an
// f8e5m2 log's shaped query was sized at the one-byte guess, its name unknown; whatif let its kernels' e5m2 yield
// to --dtype). Sub-byte and unknown types have no size: a shaped message of them has none either, where one byte an
// element had put an fp4 message at twice its size.
TEST(SampleTypes, Fp8NamesAndTypesWithoutASize) {
  for (const char* e4m3 : {"fp8", "f8e4m3", "float8_e4m3fn", "e4m3fn", "FP8_E4M3"}) {
    EXPECT_EQ(canonical_dtype(e4m3), "fp8_e4m3") << e4m3;
    EXPECT_EQ(dtype_size(e4m3), 1) << e4m3;
  }
  for (const char* e5m2 : {"f8e5m2", "float8_e5m2", "e5m2", "fp8_e5m2"}) {
    EXPECT_EQ(canonical_dtype(e5m2), "fp8_e5m2") << e5m2;
    EXPECT_EQ(dtype_size(e5m2), 1) << e5m2;
  }
  EXPECT_EQ(dtype_size("int16"), 2);
  EXPECT_EQ(dtype_size("uint16"), 2);
  EXPECT_DOUBLE_EQ(message_bytes(128, 4096, "bf16"), 128.0 * 4096 * 2);
  EXPECT_DOUBLE_EQ(message_bytes(128, 4096, "f8e5m2"), 128.0 * 4096);
  EXPECT_EQ(message_bytes(128, 4096, "nvfp4"), 0.0);
  EXPECT_EQ(message_bytes(128, 4096, ""), 0.0);
  // A DLRM split's elements: the type's size, else fp32's (what the reader, fit, predict and plot all take).
  EXPECT_EQ(dlrm_element_bytes("bf16"), 2.0);
  EXPECT_EQ(dlrm_element_bytes("nvfp4"), 4.0);
  EXPECT_EQ(dlrm_element_bytes(""), 4.0);
}
