#include <gtest/gtest.h>

#include "trace/vllm_profile.h"
#include "trace/whatif.h"
#include "trace_test_util.h"

using namespace arfit::trace;
using arfit::Collective;
using arfit::Prediction;
using arfit::PredictQuery;

namespace {

const Profile& small() {
  static const Profile p = read_vllm_profile(trace_data("vllm_tp2_small.json"));
  return p;
}

// A predictor with a known answer: 2 us + bytes / 1 GB/s (1000 bytes per us), times 1 + n/8, interval ±10 %.
struct FakeModels {
  std::vector<PredictQuery> seen;
  std::optional<Prediction> operator()(const PredictQuery& q) {
    seen.push_back(q);
    Prediction p;
    p.time_us = (2.0 + q.bytes / 1000.0) * (1.0 + q.nranks / 8.0);
    p.lo_us = 0.9 * p.time_us;
    p.hi_us = 1.1 * p.time_us;
    p.how = "fake";
    return p;
  }
};

}  // namespace

TEST(WhatIf, ReplacesEachRecognisedCollective) {
  FakeModels fake;
  WhatIfOptions opt;
  opt.tp = 8;
  opt.sm = 100;
  opt.hidden = 2048;
  WhatIfResult r = what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  EXPECT_EQ(r.measured_tp, 2);
  // prefill: custom AR, NCCL AR, NCCL AG; decode_1 and decode_2: custom AR, NCCL AR.
  EXPECT_EQ(r.recognised, 7);
  EXPECT_EQ(r.repredicted, 7);
  ASSERT_EQ(fake.seen.size(), 7u);
  const PredictQuery& q0 = fake.seen[0];  // prefill custom all-reduce
  EXPECT_EQ(q0.collective, Collective::AllReduce);
  EXPECT_EQ(q0.strategy, "ONESHOT");
  EXPECT_EQ(q0.nranks, 8);
  EXPECT_EQ(q0.sm, 100);
  EXPECT_EQ(q0.tokens, 512);
  EXPECT_EQ(q0.hidden, 2048);
  EXPECT_DOUBLE_EQ(q0.bytes, 512.0 * 2048 * 2);
  EXPECT_EQ(fake.seen[1].strategy, "NCCL");
  EXPECT_EQ(fake.seen[2].collective, Collective::AllGather);

  // prefill: measured comm 99 of 684; predicted = 2 calls each of the two all-reduces + 1 all-gather.
  double per_call = (2.0 + 512.0 * 2048 * 2 / 1000.0) * 2.0;
  double comm = 2 * per_call + 2 * per_call + per_call;
  const PhaseWhatIf& pre = r.phases[0];
  EXPECT_DOUBLE_EQ(pre.comm_measured_us, 99.0);
  EXPECT_NEAR(pre.comm_predicted_us, comm, 1e-9);
  EXPECT_NEAR(pre.comm_lo_us, 0.9 * comm, 1e-9);
  EXPECT_NEAR(pre.comm_hi_us, 1.1 * comm, 1e-9);
  EXPECT_NEAR(pre.share_measured, 99.0 / 684.0, 1e-12);
  EXPECT_NEAR(pre.share_predicted, comm / (684.0 - 99.0 + comm), 1e-12);
  EXPECT_LT(pre.share_lo, pre.share_predicted);
  EXPECT_GT(pre.share_hi, pre.share_predicted);

  // decode_2's NCCL all-reduce records its shape [4, 2048]: that size is used.
  const auto& last = r.collectives.back();
  EXPECT_EQ(last.phase, "decode_2");
  EXPECT_EQ(last.bytes_from, "recorded shape");
  EXPECT_DOUBLE_EQ(last.bytes, 4.0 * 2048 * 2);

  std::string text = format_what_if(r, small(), opt);
  EXPECT_NE(text.find("7 collective kernel entries recognised, 7 re-predicted"), std::string::npos) << text;
  EXPECT_NE(text.find("TP=8 SM100"), std::string::npos) << text;
  std::string csv = what_if_phases_csv(r);
  EXPECT_NE(csv.find("prefill,prefill,684.000,99.000,"), std::string::npos) << csv;
}

TEST(WhatIf, StrategyOverrideAndFolding) {
  FakeModels fake;
  WhatIfOptions opt;
  opt.tp = 4;
  opt.hidden = 2048;
  opt.strategy = "TWOSHOT";
  opt.fold = {"LogitsProcessor"};
  WhatIfResult r = what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  EXPECT_EQ(r.recognised, 6);  // the all-gather is folded away
  for (const auto& q : fake.seen) EXPECT_EQ(q.strategy, "TWOSHOT");
}

TEST(WhatIf, NothingToRepredict) {
  std::string text = R"({"context": {"batch_size": 1, "prompt_len": 8, "tensor_parallel_size": 1},
    "prefill": {"summary_stats": [{"entry": {"name": "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "cuda_time_us": 10, "invocations": 1}}]}})";
  Profile p = parse_vllm_profile(text, "tp1.json");
  int calls = 0;
  WhatIfOptions opt;
  opt.tp = 8;
  WhatIfResult r = what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery&) {
    ++calls;
    return std::optional<Prediction>();
  });
  EXPECT_EQ(r.recognised, 0);
  EXPECT_EQ(calls, 0);
  EXPECT_DOUBLE_EQ(r.phases[0].comm_predicted_us, 0.0);
  std::string out = format_what_if(r, p, opt);
  EXPECT_NE(out.find("nothing to re-predict"), std::string::npos) << out;
}

TEST(WhatIf, MissingSizeOrModelIsAnError) {
  WhatIfOptions opt;
  opt.tp = 8;  // no --hidden: prefill's collectives have no recorded size
  FakeModels fake;
  try {
    what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pass --hidden"), std::string::npos) << e.what();
  }
  opt.hidden = 2048;
  try {
    what_if(small(), RuleTable::defaults(), opt, [](const PredictQuery&) { return std::optional<Prediction>(); });
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot predict allreduce/ONESHOT"), std::string::npos) << e.what();
  }
  opt.tp = 0;
  EXPECT_THROW(what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); }), std::invalid_argument);
}

TEST(WhatIf, UnknownCollectiveKeepsItsMeasuredTime) {
  std::string text = R"J({"context": {"batch_size": 1, "prompt_len": 8},
    "prefill": {"summary_stats": [{"entry": {"name": "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "cuda_time_us": 7, "invocations": 3}},
                                  {"entry": {"name": "gemm_kernel", "cuda_time_us": 13, "invocations": 1}}]}})J";
  Profile p = parse_vllm_profile(text, "sr.json");
  WhatIfOptions opt;
  opt.tp = 8;
  FakeModels fake;
  WhatIfResult r = what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  EXPECT_EQ(r.recognised, 1);
  EXPECT_EQ(r.repredicted, 0);
  EXPECT_DOUBLE_EQ(r.phases[0].comm_predicted_us, 7.0);
  EXPECT_NEAR(r.phases[0].share_predicted, 0.35, 1e-12);
  EXPECT_NE(r.collectives[0].how.find("not re-predicted"), std::string::npos);
}
