// The strategy descriptors as bench/ sees them, and the host-side parts of their checks. Links the CUDA
// library but calls nothing that needs a device, so it runs everywhere nvcc built it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/strategy.h"
#include "kernels/strategies/strategy_support.h"
#include "model/bus_factor.h"

namespace arfit::kernels {
namespace {

std::string validation_error(const StrategyDescriptor& s, const StrategyContext& ctx, const StrategyCase& c) {
  try {
    s.validate_context(ctx, c);
  } catch (const KernelError& e) {
    return e.what();
  }
  return "";
}

// The parameter a plan-time validation error names (KernelParam::None when the case is fine).
KernelParam case_error(const StrategyDescriptor& s, const StrategyCase& c, const StrategyLimits& limits) {
  try {
    s.validate_case(c, limits);
  } catch (const KernelError& e) {
    return e.parameter() == KernelParam::None ? KernelParam::Device : e.parameter();  // None would read as "fine"
  }
  return KernelParam::None;
}

TEST(KernelStrategies, RegistryListsEveryStrategyWithCompleteDescriptors) {
  ASSERT_NE(find_strategy("ONESHOT", Collective::AllReduce), nullptr);
  ASSERT_NE(find_strategy("TWOSHOT", Collective::AllReduce), nullptr);
  ASSERT_NE(find_strategy("LOWPRECISION", Collective::AllReduce), nullptr);
  EXPECT_EQ(find_strategy("ONESHOT", Collective::AllGather), nullptr);
  EXPECT_EQ(find_strategy("NOPE", Collective::AllReduce), nullptr);
#ifdef ARFIT_HAVE_NCCL
  for (Collective c : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll,
                       Collective::AllToAllV}) {
    EXPECT_NE(find_strategy("NCCL", c), nullptr) << to_string(c);
  }
  ASSERT_NE(find_strategy("NCCL_SYMMETRIC", Collective::AllReduce), nullptr);
  EXPECT_EQ(all_strategies().size(), 11u);
#else
  EXPECT_EQ(all_strategies().size(), 5u);
#endif
  for (const StrategyDescriptor* s : all_strategies()) {
    EXPECT_TRUE(s->validate_case && s->validate_context && s->workspace && s->byte_counts && s->init && s->run && s->check)
        << s->strategy;
    EXPECT_FALSE(s->dtypes.empty());
    EXPECT_FALSE(s->fusions.empty());
    for (int n : {2, 4, 8}) EXPECT_DOUBLE_EQ(s->bus_factor(n), bus_factor(s->collective, n)) << s->strategy;
    EXPECT_NE(s->uses_workspace, s->needs_nccl) << s->strategy;
    EXPECT_EQ(s->backend, s->needs_nccl ? "nccl" : "custom") << s->strategy;
  }
}

TEST(KernelStrategies, MultimemDescriptorsServeNoneOnlyAndRefuseFusionsAtPlanTime) {
  for (const char* name : {"MULTIMEM_ONESHOT", "MULTIMEM_TWOSHOT"}) {
    const StrategyDescriptor* s = find_strategy(name, Collective::AllReduce);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_EQ(s->backend, "custom");
    EXPECT_EQ(s->fusions, std::vector<FusionOp>{FusionOp::None});
    StrategyCase c;
    c.nranks = 4;
    c.count = 1000;
    const StrategyLimits limits{4, 1 << 20, true};
    EXPECT_EQ(case_error(*s, c, limits), KernelParam::None) << name;
    c.fusion = FusionOp::ResidualRmsNorm;
    c.hidden = 200;
    EXPECT_EQ(case_error(*s, c, limits), KernelParam::Fusion) << name;
  }
}

#ifdef ARFIT_HAVE_NCCL
TEST(KernelStrategies, NcclSymmetricIsAnUnfusedNcclAllReduce) {
  const StrategyDescriptor* s = find_strategy("NCCL_SYMMETRIC", Collective::AllReduce);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->backend, "nccl");
  EXPECT_TRUE(s->needs_nccl);
  EXPECT_EQ(s->fusions, std::vector<FusionOp>{FusionOp::None});
  StrategyCase c;
  c.nranks = 2;
  c.count = 1024;
  const StrategyLimits one_per_process{2, 0, false};
  EXPECT_EQ(case_error(*s, c, one_per_process), KernelParam::None);  // nccl.h here is >= 2.27
  EXPECT_EQ(case_error(*s, c, StrategyLimits{1, 0, true}), KernelParam::LocalRanks);
  c.fusion = FusionOp::ResidualRmsNorm;
  c.hidden = 256;
  EXPECT_EQ(case_error(*s, c, one_per_process), KernelParam::Fusion);
  c.fusion = FusionOp::None;
  c.count = 0;
  EXPECT_EQ(case_error(*s, c, one_per_process), KernelParam::Count);
}
#endif

TEST(KernelStrategies, CustomDescriptorsAdvertiseWhatTheKernelsImplement) {
  const StrategyDescriptor& one = *find_strategy("ONESHOT", Collective::AllReduce);
  EXPECT_EQ(one.rank_counts, (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(one.dtypes.size(), 3u);
  EXPECT_EQ(one.fusions, all_fusion_ops());  // every epilogue, NVFP4 and the OUT_QUANT ops included
  StrategyCase c;
  c.dtype = DType::BF16;
  c.nranks = 8;
  c.count = 1000;
  EXPECT_EQ(one.byte_counts(c.count, 2, 8).send_bytes, 2000);
  EXPECT_EQ(one.byte_counts(c.count, 2, 8).recv_bytes, 2000);
  EXPECT_EQ(one.workspace(c), 2000);
}

TEST(KernelStrategies, LowPrecisionDescriptorIsNoneOnlyAndStagesTheQuantisedMessage) {
  const StrategyDescriptor& low = *find_strategy("LOWPRECISION", Collective::AllReduce);
  EXPECT_EQ(low.backend, "custom");
  EXPECT_EQ(low.fusions, (std::vector<FusionOp>{FusionOp::None}));
  EXPECT_EQ(low.rank_counts, (std::vector<int>{2, 4, 8}));
  StrategyCase c;
  c.dtype = DType::BF16;
  c.nranks = 4;
  c.count = 1000;
  EXPECT_EQ(low.workspace(c), 2000);  // the message: its quantised form (16 groups: 1088 bytes) is smaller
  c.count = 3;
  EXPECT_EQ(low.workspace(c), 68);  // one group of e4m3 bytes and its multiplier, more than the 6-byte message
  StrategyLimits limits;
  limits.workspace = 1 << 20;
  c.count = 1024;
  c.fusion = FusionOp::ResidualRmsNorm;
  c.hidden = 512;
  try {
    low.validate_case(c, limits);
    ADD_FAILURE() << "LOWPRECISION accepted RESIDUAL_RMS_NORM";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.parameter(), KernelParam::Fusion) << e.what();
  }
}

// Plan-time validation names the parameter at fault (bench maps it to its option; no message parsing).
TEST(KernelStrategies, PlanTimeValidationNamesTheParameter) {
  const StrategyDescriptor& two = *find_strategy("TWOSHOT", Collective::AllReduce);
  StrategyLimits limits;
  limits.workspace = 1 << 20;
  StrategyCase c;
  c.nranks = 4;
  c.count = 4096;
  EXPECT_EQ(case_error(two, c, limits), KernelParam::None);
  c.nranks = 3;
  EXPECT_EQ(case_error(two, c, limits), KernelParam::Ranks);
  c.nranks = 4;
  c.count = (1 << 20) / 2 + 8;
  EXPECT_EQ(case_error(two, c, limits), KernelParam::Workspace);
  c.count = 4096;
  c.fusion = FusionOp::ResidualRmsNorm;
  c.hidden = 100;
  EXPECT_EQ(case_error(two, c, limits), KernelParam::Hidden);
  c.hidden = 1024;
  EXPECT_EQ(case_error(two, c, limits), KernelParam::None);
  c.rms_eps = 0;
  EXPECT_EQ(case_error(two, c, limits), KernelParam::RmsEps);
  c.rms_eps = 1e-50;  // positive, but 0 as a float: refused with the value given
  EXPECT_EQ(case_error(two, c, limits), KernelParam::RmsEps);
  try {
    two.validate_case(c, limits);
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("got 1e-50"), std::string::npos) << e.what();
  }
  c.rms_eps = 1e-6;
  c.fusion = FusionOp::ResidualRmsNormQuantFp8;
  c.fp8_scale = 1e-40f;  // subnormal
  EXPECT_EQ(case_error(two, c, limits), KernelParam::Fp8Scale);
  c.fusion = FusionOp::ResidualRmsNormQuantNvfp4;  // the NVFP4 global scale is 1 / fp8_scale: the same rule
  EXPECT_EQ(case_error(two, c, limits), KernelParam::Fp8Scale);
  c.fp8_scale = 1.0f;
  c.hidden = 24;  // a whole number of bf16 vectors, not of 16-element NVFP4 blocks
  c.count = 24 * 8;
  EXPECT_EQ(case_error(two, c, limits), KernelParam::Hidden);
#ifdef ARFIT_HAVE_NCCL
  limits.virtual_ranks = true;
  StrategyCase n;
  n.nranks = 4;
  n.count = 4096;
  EXPECT_EQ(case_error(*find_strategy("NCCL", Collective::AllReduce), n, limits), KernelParam::LocalRanks);
#endif
}

TEST(KernelStrategies, CustomStrategiesNeedATeam) {
  const StrategyDescriptor& two = *find_strategy("TWOSHOT", Collective::AllReduce);
  StrategyCase c;
  c.nranks = 4;
  c.count = 1024;
  StrategyContext ctx;
  ctx.nranks = 4;
  const std::string e = validation_error(two, ctx, c);
  EXPECT_NE(e.find("TWOSHOT needs a registered team"), std::string::npos) << e;
  c.collective = Collective::AllGather;
  EXPECT_NE(validation_error(two, ctx, c).find("implements allreduce"), std::string::npos) << validation_error(two, ctx, c);
}

#ifdef ARFIT_HAVE_NCCL
TEST(KernelStrategies, NcclDescriptorsValidateBeforeTouchingNccl) {
  StrategyContext ctx;
  ctx.nranks = 4;
  StrategyCase c;
  c.nranks = 4;
  c.count = 1024;
  const StrategyDescriptor& ar = *find_strategy("NCCL", Collective::AllReduce);
  EXPECT_NE(validation_error(ar, ctx, c).find("needs an NCCL communicator"), std::string::npos);
  int fake_comm = 0;  // never dereferenced by validate
  ctx.nccl_comm = &fake_comm;
  EXPECT_EQ(validation_error(ar, ctx, c), "");
  ctx.local_ranks = 4;
  EXPECT_NE(validation_error(ar, ctx, c).find("one rank per process"), std::string::npos);
  ctx.local_ranks = 1;
  c.fusion = FusionOp::ResidualRmsNormQuantNvfp4;  // the unfused epilogue kernel implements every fusion
  c.hidden = 256;
  EXPECT_EQ(validation_error(ar, ctx, c), "");
  c.hidden = 24;
  c.count = 24 * 8;
  EXPECT_NE(validation_error(ar, ctx, c).find("needs hidden to be a multiple of 16"), std::string::npos)
      << validation_error(ar, ctx, c);
  c.count = 1024;
  c.fusion = FusionOp::ResidualRmsNorm;
  c.hidden = 250;
  EXPECT_NE(validation_error(ar, ctx, c).find("hidden a multiple of 8"), std::string::npos) << validation_error(ar, ctx, c);

  const StrategyDescriptor& a2av = *find_strategy("NCCL", Collective::AllToAllV);
  StrategyCase v;
  v.collective = Collective::AllToAllV;
  v.nranks = 2;
  v.alltoallv_counts = {1, 2, 3};
  ctx.nranks = 2;
  EXPECT_NE(validation_error(a2av, ctx, v).find("expected nranks * nranks = 4"), std::string::npos) << validation_error(a2av, ctx, v);
  v.alltoallv_counts = {1, 2, 3, 6};
  EXPECT_EQ(validation_error(a2av, ctx, v), "");
  v.fusion = FusionOp::ResidualRmsNorm;
  EXPECT_NE(validation_error(a2av, ctx, v).find("fusion RESIDUAL_RMS_NORM"), std::string::npos);

  const StrategyDescriptor& a2a = *find_strategy("NCCL", Collective::AllToAll);
  StrategyCase t;
  t.collective = Collective::AllToAll;
  t.nranks = 2;
  t.count = 7;
  EXPECT_NE(validation_error(a2a, ctx, t).find("multiple of nranks"), std::string::npos);

  const StrategyDescriptor& ag = *find_strategy("NCCL", Collective::AllGather);
  StrategyCase g;
  g.collective = Collective::AllGather;
  g.nranks = 8;
  g.count = 100;
  g.dtype = DType::FP32;
  // nccl-tests' byte counts for a message of 800 fp32 elements (the gathered output): 100 sent, 800 received.
  EXPECT_EQ(ag.byte_counts(800, 4, 8).send_bytes, 400);
  EXPECT_EQ(ag.byte_counts(800, 4, 8).recv_bytes, 3200);
}
#endif

TEST(KernelStrategies, ChecksCountPoisonedAndWrongElements) {
  // Poison (all ones) is NaN in every dtype: a never-written output fails.
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    std::vector<unsigned char> poisoned(static_cast<std::size_t>(10 * dtype_bytes(dtype)), detail::kPoisonByte);
    CheckResult r;
    detail::compare_elements(r, dtype, poisoned, std::vector<double>(10, 1.0), std::vector<double>(10, 1.0),
                             relative_tolerance(dtype), "out");
    EXPECT_EQ(r.checked, 10);
    EXPECT_EQ(r.wrong, 10);
    EXPECT_NE(r.first_wrong.find("out[0]: got NaN (the poison pattern"), std::string::npos) << r.first_wrong;
  }
  std::vector<unsigned char> good(8);
  float values[2] = {1.0f, 2.5f};
  std::memcpy(good.data(), values, 8);
  CheckResult ok;
  detail::compare_elements(ok, DType::FP32, good, {1.0, 2.5}, {1.0, 2.5}, 1e-5, "out");
  EXPECT_TRUE(ok.ok());
  CheckResult off;
  detail::compare_elements(off, DType::FP32, good, {1.0, 2.6}, {1.0, 2.5}, 1e-5, "out");
  EXPECT_EQ(off.wrong, 1);
  EXPECT_NE(off.first_wrong.find("out[1]: got 2.5, expected 2.6"), std::string::npos) << off.first_wrong;
  CheckResult exact;
  detail::compare_exact(exact, DType::FP32, good, 1, good, 0, 1, "recv");
  EXPECT_EQ(exact.wrong, 1);
  EXPECT_EQ(exact.checked, 1);
}

}  // namespace
}  // namespace arfit::kernels
