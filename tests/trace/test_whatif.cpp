#include <gtest/gtest.h>

#include <algorithm>

#include "trace/nsys_csv.h"
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

TEST(WhatIf, MissingSizeIsAnError) {
  WhatIfOptions opt;
  opt.tp = 8;  // no --hidden: prefill's collectives have no recorded size
  FakeModels fake;
  try {
    what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pass --hidden"), std::string::npos) << e.what();
  }
  opt.tp = 0;
  EXPECT_THROW(what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); }), std::invalid_argument);
}

// A collective the model set has no curve for keeps its measured time and is reported as not re-predicted; the
// others are re-predicted as usual.
TEST(WhatIf, CollectiveWithoutModelKeepsItsMeasuredTime) {
  WhatIfOptions opt;
  opt.tp = 8;
  opt.hidden = 2048;
  FakeModels fake;
  WhatIfResult r = what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) {
    return q.collective == Collective::AllGather ? std::optional<Prediction>() : fake(q);
  });
  EXPECT_EQ(r.recognised, 7);
  EXPECT_EQ(r.repredicted, 6);
  const CollectiveWhatIf* gather = nullptr;
  for (const auto& c : r.collectives)
    if (c.class_id == "nccl_all_gather") gather = &c;
  ASSERT_NE(gather, nullptr);
  EXPECT_FALSE(gather->repredicted);
  EXPECT_EQ(gather->kept, KeptBecause::NoModel);
  EXPECT_DOUBLE_EQ(gather->predicted_us, 9.0);
  EXPECT_NE(gather->how.find("no curve for allgather/NCCL/NONE/bf16 n=8"), std::string::npos) << gather->how;
  double per_call = (2.0 + 512.0 * 2048 * 2 / 1000.0) * 2.0;
  EXPECT_NEAR(r.phases[0].comm_predicted_us, 4 * per_call + 9.0, 1e-9);  // the gather counted as measured
  std::string text = format_what_if(r, small(), opt);
  EXPECT_NE(text.find("kept as measured: 1 without a model in the set"), std::string::npos) << text;
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

namespace {
// A kernel summary (one phase "all", no token counts) with the given communication kernels and a GEMM.
Profile summary_with(const std::vector<std::pair<std::string, double>>& kernels) {
  std::string csv = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
                    "50.0,100000,10,1,1,1,1,0,sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel\n";
  for (const auto& [name, ns] : kernels) csv += "1.0," + std::to_string(static_cast<long>(ns)) + ",10,1,1,1,1,0,\"" + name + "\"\n";
  return parse_nsys_csv(csv, "summary.csv");
}

WhatIfOptions per_call(int tp, std::int64_t hidden, std::int64_t tokens) {
  WhatIfOptions opt;
  opt.tp = tp;
  opt.hidden = hidden;
  opt.tokens = tokens;
  return opt;
}
}  // namespace

// A summary without phases works from --tokens alone (no --batch-size/--prompt-len); without it, the hint says
// to pass --tokens.
TEST(WhatIf, PhaselessSummaryFromTokensAlone) {
  Profile p = summary_with({{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 40000}});
  ASSERT_EQ(p.phases.size(), 1u);
  EXPECT_EQ(p.phases[0].tokens, 0);
  WhatIfOptions opt;
  opt.tp = 8;
  opt.hidden = 4096;
  FakeModels fake;
  try {
    what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("pass --tokens, the tokens per call"), std::string::npos) << e.what();
  }
  opt.tokens = 16;
  WhatIfResult r = what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  EXPECT_EQ(r.repredicted, 1);
  ASSERT_EQ(fake.seen.size(), 1u);
  EXPECT_EQ(fake.seen[0].tokens, 16);
  EXPECT_DOUBLE_EQ(fake.seen[0].bytes, 16.0 * 4096 * 2);
  EXPECT_NEAR(r.collectives[0].predicted_us, 10 * (2.0 + 16.0 * 4096 * 2 / 1000.0) * 2.0, 1e-9);
}

// The element type where NCCL names it decides the query and the message size, whatever --dtype says.
TEST(WhatIf, DtypeFromTheKernelName) {
  Profile p = summary_with({{"ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 40000},
                            {"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", 30000}});
  WhatIfOptions opt = per_call(4, 1024, 8);
  opt.dtype = "fp32";  // an fp32 model: its fp32 all-reduce is traffic
  FakeModels fake;
  WhatIfResult r = what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  ASSERT_EQ(fake.seen.size(), 2u);
  EXPECT_EQ(fake.seen[0].dtype, "fp16");
  EXPECT_DOUBLE_EQ(fake.seen[0].bytes, 8.0 * 1024 * 2);
  EXPECT_EQ(r.collectives[0].dtype_from, "kernel name");
  EXPECT_EQ(fake.seen[1].dtype, "fp32");
  EXPECT_DOUBLE_EQ(fake.seen[1].bytes, 8.0 * 1024 * 4);
}

// A models file without the kernel's dtype: a dtype of the same element size answers, and the report says so;
// none of the same size: kept as measured.
TEST(WhatIf, DtypeFallsBackToTheSameElementSize) {
  Profile p = summary_with({{"ncclDevKernel_AllReduce_Sum_f16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 40000},
                            {"ncclDevKernel_ReduceScatter_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 20000}});
  WhatIfOptions opt = per_call(4, 1024, 8);
  FakeModels fake;
  std::vector<std::string> asked;
  auto bf16_only = [&](const PredictQuery& q) {
    asked.push_back(q.dtype);
    return q.dtype == "bf16" ? fake(q) : std::optional<Prediction>();
  };
  WhatIfResult r = what_if(p, RuleTable::defaults(), opt, bf16_only);
  ASSERT_EQ(r.collectives.size(), 2u);
  const auto& ar = r.collectives[0];
  EXPECT_TRUE(ar.repredicted);
  EXPECT_EQ(ar.dtype, "fp16");
  EXPECT_NE(ar.how.find("no fp16 model: used bf16 (same element size)"), std::string::npos) << ar.how;
  EXPECT_DOUBLE_EQ(fake.seen.at(0).bytes, 8.0 * 1024 * 2);  // sized as fp16 (same bytes)
  const auto& rs = r.collectives[1];
  EXPECT_FALSE(rs.repredicted);
  EXPECT_EQ(rs.kept, KeptBecause::NoModel);
  EXPECT_NE(rs.how.find("nor a dtype of the same element size"), std::string::npos) << rs.how;
  // fp32 was tried, then the 4-byte integer types; never a 2-byte type.
  EXPECT_EQ(std::count(asked.begin(), asked.end(), "bf16"), 1);
  EXPECT_NE(std::find(asked.begin(), asked.end(), "int32"), asked.end());
  std::string text = format_what_if(r, p, opt);
  EXPECT_NE(text.find("no fp16 model: used bf16 (same element size)"), std::string::npos) << text;
}

// Small all-reduces that synchronise (integer counters, Max/Min, fp32 statistics in a bf16 model, a few recorded
// bytes) keep their measured time and are never sized or scaled as tensor-parallel traffic.
TEST(WhatIf, SynchronisationAllReducesAreNotScaled) {
  Profile p = summary_with({{"ncclDevKernel_AllReduce_Sum_u32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 9000},
                            {"ncclDevKernel_AllReduce_Sum_i64_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 8000},
                            {"ncclDevKernel_AllReduce_Max_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 7000},
                            {"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 6000},
                            {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 50000}});
  WhatIfOptions opt = per_call(8, 4096, 64);
  FakeModels fake;
  WhatIfResult r = what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  ASSERT_EQ(r.collectives.size(), 5u);
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.collectives[i].kept, KeptBecause::Synchronisation) << r.collectives[i].kernel;
    EXPECT_DOUBLE_EQ(r.collectives[i].predicted_us, r.collectives[i].measured_us);
  }
  EXPECT_NE(r.collectives[0].how.find("uint32 all-reduce"), std::string::npos) << r.collectives[0].how;
  EXPECT_NE(r.collectives[2].how.find("Max all-reduce"), std::string::npos) << r.collectives[2].how;
  EXPECT_NE(r.collectives[3].how.find("fp32 all-reduce in a bf16 model"), std::string::npos) << r.collectives[3].how;
  EXPECT_TRUE(r.collectives[4].repredicted);  // the bf16 Sum is the TP traffic
  EXPECT_EQ(fake.seen.size(), 1u);
  EXPECT_EQ(r.repredicted, 1);
  // Without --hidden only the real traffic lacks a size.
  opt.hidden = 0;
  try {
    what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("message size unknown for 1 collective(s)"), std::string::npos) << e.what();
  }
  // A recorded size of a few bytes is synchronisation whatever the type.
  std::string text = R"J({"context": {"batch_size": 1, "prompt_len": 8},
    "prefill": {"summary_stats": [{"entry": {"name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)", "cuda_time_us": 7, "invocations": 1, "bytes": 8}}]}})J";
  WhatIfResult tiny = what_if(parse_vllm_profile(text, "tiny.json"), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  ASSERT_EQ(tiny.collectives.size(), 1u);
  EXPECT_EQ(tiny.collectives[0].kept, KeptBecause::Synchronisation);
  EXPECT_NE(tiny.collectives[0].how.find("8-byte all-reduce recorded"), std::string::npos) << tiny.collectives[0].how;
  EXPECT_NE(format_what_if(tiny, parse_vllm_profile(text, "tiny.json"), opt).find("kept as measured: 1 synchronisation"), std::string::npos);
}

// Expert-parallel dispatch/combine is communication, kept as measured (no model of it).
TEST(WhatIf, ExpertCommunicationIsCommunicationKeptAsMeasured) {
  Profile p = summary_with({{"void deep_ep::intranode::dispatch<8, 768, 8192>(int4*)", 30000}});
  WhatIfOptions opt;
  opt.tp = 8;
  FakeModels fake;
  WhatIfResult r = what_if(p, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
  ASSERT_EQ(r.collectives.size(), 1u);
  EXPECT_EQ(r.collectives[0].class_id, "moe_comm");
  EXPECT_EQ(r.collectives[0].kept, KeptBecause::NoCollective);
  EXPECT_DOUBLE_EQ(r.phases[0].comm_measured_us, 30.0);
  EXPECT_DOUBLE_EQ(r.phases[0].comm_predicted_us, 30.0);
  EXPECT_TRUE(fake.seen.empty());
}

// A strategy the models refuse on the asked nodes (ModelSet::across_nodes_refusal: a custom all-reduce no machine
// measured across nodes) keeps its measured time with that reason, apart from a missing model.
TEST(WhatIf, KeepsAStrategyRefusedAcrossNodesWithTheReason) {
  FakeModels fake;
  WhatIfOptions opt;
  opt.tp = 16;
  opt.nnodes = 2;
  opt.hidden = 2048;
  const auto nccl_only = [&](const PredictQuery& q) { return q.strategy == "NCCL" ? fake(q) : std::optional<Prediction>(); };
  const auto refusal = [](const PredictQuery& q) {
    return q.strategy == "NCCL" ? std::string() : q.strategy + ": not measured on more than one node";
  };
  WhatIfResult r = what_if(small(), RuleTable::defaults(), opt, nccl_only, refusal);
  int refused = 0;
  for (const CollectiveWhatIf& c : r.collectives) {
    if (c.repredicted) continue;
    ++refused;
    EXPECT_EQ(c.kept, KeptBecause::NotAcrossNodes) << c.kernel;
    EXPECT_NE(c.how.find("ONESHOT: not measured on more than one node"), std::string::npos) << c.how;
    EXPECT_EQ(c.predicted_us, c.measured_us);
  }
  EXPECT_EQ(refused, 3);  // the custom all-reduce of prefill and both decodes
  EXPECT_EQ(r.repredicted, r.recognised - 3);
  const std::string text = format_what_if(r, small(), opt);
  EXPECT_NE(text.find("3 whose strategy no machine measured across nodes"), std::string::npos) << text;
  // Without a refusal to say why, the same collectives are kept as without a model.
  WhatIfResult plain = what_if(small(), RuleTable::defaults(), opt, nccl_only);
  for (const CollectiveWhatIf& c : plain.collectives) {
    if (c.repredicted) continue;
    EXPECT_EQ(c.kept, KeptBecause::NoModel) << c.kernel;
  }
}

// A message beyond the models' size bound (1e18 bytes, what predict and codegen refuse) is not predicted: a
// recorded shape of 2^62 x 2^62 was asked at 4e37 bytes (exit 0 with a time of 1e33 us). The profile's shape is
// bad data naming the node; tokens x --hidden is the user's (std::invalid_argument, a usage error).
TEST(WhatIf, MessagesBeyondTheModelsSizeBoundAreRefused) {
  arfit::testing::TempDir dir;
  std::string text = arfit::testing::slurp(trace_data("vllm_tp2_small.json"));
  const std::string shape = "\"shape\": [4, 2048]";
  ASSERT_NE(text.find(shape), std::string::npos);
  text.replace(text.find(shape), shape.size(), "\"shape\": [4611686018427387904, 4611686018427387904]");
  const Profile huge = read_vllm_profile(dir.write("huge.json", text));
  WhatIfOptions opt;
  opt.tp = 8;
  opt.hidden = 4096;
  FakeModels fake;
  try {
    what_if(huge, RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    FAIL() << "a usage error for the profile's own shape: " << e.what();
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("huge.json: decode_2."), std::string::npos) << m;
    EXPECT_NE(m.find("'shape': 4611686018427387904 x 4611686018427387904 x bf16 is 4.25e+37 bytes, above 1e+18"), std::string::npos) << m;
  }
  for (const double b : [&] { std::vector<double> v; for (const auto& q : fake.seen) v.push_back(q.bytes); return v; }())
    EXPECT_LE(b, arfit::kMaxSampleBytes);
  opt.hidden = 1LL << 31;
  opt.tokens = 1LL << 31;
  try {
    what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--tokens x --hidden: 2147483648 x 2147483648 x bf16 is 9.22e+18 bytes"), std::string::npos)
        << e.what();
  }
  opt.tokens = 0;  // the phases' own token counts (prefill 2 x 4) with a huge --hidden
  opt.hidden = 1LL << 60;
  try {
    what_if(small(), RuleTable::defaults(), opt, [&](const PredictQuery& q) { return fake(q); });
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--hidden: the phase's tokens "), std::string::npos) << e.what();
  }
}
