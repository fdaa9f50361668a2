// Grid, plan and option parsing: pure functions, no MPI.
#include <gtest/gtest.h>

#include <algorithm>

#include <set>

#include "bench/options.h"
#include "bench/plan.h"
#include "bench_options_helpers.h"

using namespace arfit;
using namespace arfit::bench;
using arfit::bench::testing::offending_option;
using arfit::bench::testing::parse;

TEST(BenchGrid, SizeListsRangesAndSuffixes) {
  EXPECT_EQ(parse_size("8G", "-e"), std::int64_t{8} << 30);
  EXPECT_EQ(parse_size("1K", "-b"), 1024);
  EXPECT_EQ(parse_size_list("8:64", "--bytes"), (std::vector<std::int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(parse_size_list("1:100:x10", "--tokens"), (std::vector<std::int64_t>{1, 10, 100}));
  EXPECT_EQ(parse_size_list("128:512:+128", "--hidden"), (std::vector<std::int64_t>{128, 256, 384, 512}));
  EXPECT_EQ(parse_size_list("64,8,8", "--bytes"), (std::vector<std::int64_t>{8, 64}));
  EXPECT_THROW(parse_size("12Q", "--bytes"), GridError);
  EXPECT_THROW(parse_size("-4", "--bytes"), GridError);
  EXPECT_THROW(parse_size_list("64:8", "--bytes"), GridError);
  try {
    parse_size_list("1:x", "--tokens");
    FAIL() << "no error";
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "--tokens");
    EXPECT_NE(std::string(e.what()).find("--tokens"), std::string::npos);
  }
}

TEST(BenchGrid, PlanParsingRoundTrips) {
  for (std::string s : {"full", "lattice:3", "random:0.25:42"}) EXPECT_EQ(Plan::parse(s).to_string(), s);
  for (std::string s : {"lattice", "lattice:0", "random:1.5:1", "random:0.5", "grid", "random:0.5:-1"})
    EXPECT_THROW(Plan::parse(s), GridError) << s;
}

// K, the fraction and the seed as written: std::stoll after a trim of each field read "lattice: 2", "anchors:+3"
// and "random:0.5: 7", std::stod "random:+0.5:7", and getline dropped a trailing field ("lattice:2:").
TEST(BenchGrid, PlanFieldsAreReadAsWritten) {
  for (std::string s : {"lattice: 2", "lattice:2 ", " lattice:2", "anchors:+3", "anchors:3.0", "lattice:0x2", "lattice:2:",
                        "random:0.5: 7", "random:0.5:+7", "random: 0.5:7", "random:+0.5:7", "random:0x.8:7", "random:nan:7",
                        "random:0.5:7:", "random:.:7", "random:1e:7", "full:",
                        // a leading zero: C's rules read 010 as 8 (issue 43: lattice:02 and anchors:03 ran)
                        "lattice:02", "anchors:03", "random:0.5:07"}) {
    try {
      Plan::parse(s, "--plan");
      ADD_FAILURE() << "'" << s << "' accepted";
    } catch (const GridError& e) {
      EXPECT_EQ(e.option(), "--plan") << s;
    }
  }
  try {
    Plan::parse("anchors:+3", "--plan");
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("anchors K (sizes per curve): '+3' is not a whole number"), std::string::npos) << e.what();
  }
  // lattice:1 keeps every point (the full grid): a plan arbench takes, unlike arfit eval's select --plan.
  EXPECT_EQ(plan_points(Plan::parse("lattice:1"), 5, 3).size(), 15u);
  EXPECT_EQ(Plan::parse("random:.5:0").to_string(), "random:0.5:0");
  EXPECT_EQ(Plan::parse(Plan::parse("random:0.00001:3").to_string()).to_string(), "random:1e-05:3");  // round trip
  EXPECT_EQ(Plan::parse("random:1:18446744073709551615").seed, 18446744073709551615u);
}

TEST(BenchGrid, LatticeKeepsEveryKthPointAndTheCorners) {
  auto pts = plan_points(Plan::parse("lattice:2"), 6, 4);
  std::set<std::pair<std::size_t, std::size_t>> s(pts.begin(), pts.end());
  // x axis: 0,2,4,5 (5 = last); y axis: 0,2,3 (3 = last).
  EXPECT_EQ(pts.size(), 4u * 3u);
  for (auto c : std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {5, 0}, {0, 3}, {5, 3}, {2, 2}, {4, 3}})
    EXPECT_TRUE(s.count(c)) << c.first << "," << c.second;
  EXPECT_FALSE(s.count({1, 0}));
  EXPECT_FALSE(s.count({0, 1}));
  EXPECT_EQ(plan_points(Plan::parse("lattice:3"), 10, 0).size(), 4u);  // 0,3,6,9
}

// anchors:K: K distinct message sizes per curve at model/anchors.h's indices — on byte lists by value (not
// list order), on token x hidden grids by product, each size at its first point in axis order.
TEST(BenchGrid, AnchorsPlanKeepsKSizesSpreadByTheProtocolsRule) {
  EXPECT_EQ(Plan::parse("anchors:3").to_string(), "anchors:3");
  for (std::string s : {"anchors", "anchors:0", "anchors:x"}) EXPECT_THROW(Plan::parse(s), GridError) << s;
  const std::vector<std::int64_t> bytes = {4096, 1024, 2048, 8192, 16384};
  EXPECT_EQ(anchor_points(3, bytes, {}), (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 0}, {4, 0}}));
  // tokens 1, 2, 4 x hidden 2, 4: products 2, 4, 8, 4, 8, 16 -> distinct 2, 4, 8, 16; K = 3 -> 2, 8 (index
  // round(1.5) = 2), 16.
  const auto pts = anchor_points(3, {1, 2, 4}, {2, 4});
  EXPECT_EQ(pts, (std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {1, 1}, {2, 1}}));
  GridSpec g = preset("host-main");
  g.plan = Plan::parse("anchors:3");
  const PlannedGrid planned = expand_grid(g, [](Collective) { return std::vector<std::string>{"MPI"}; });
  EXPECT_EQ(planned.planned_points, 3u);
}

TEST(BenchGrid, RandomPlanIsSeededKeepsCornersAndTheFraction) {
  auto a = plan_points(Plan::parse("random:0.3:7"), 10, 10);
  auto b = plan_points(Plan::parse("random:0.3:7"), 10, 10);
  auto c = plan_points(Plan::parse("random:0.3:8"), 10, 10);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(a.size(), 30u);
  std::set<std::pair<std::size_t, std::size_t>> s(a.begin(), a.end());
  for (auto k : std::vector<std::pair<std::size_t, std::size_t>>{{0, 0}, {9, 0}, {0, 9}, {9, 9}}) EXPECT_TRUE(s.count(k));
}

TEST(BenchGrid, PresetsHaveTheDocumentedAxes) {
  GridSpec t = preset("trtllm");
  EXPECT_EQ(t.tokens.front(), 1);
  EXPECT_EQ(t.tokens.back(), 16384);
  EXPECT_EQ(t.hidden.front(), 128);
  EXPECT_EQ(t.hidden.back(), 8192);
  EXPECT_EQ(t.tp, (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(t.fusions.size(), 4u);
  GridSpec n = preset("nccl-tests");
  EXPECT_EQ(n.bytes.front(), 8);
  EXPECT_EQ(n.bytes.back(), std::int64_t{8} << 30);
  EXPECT_EQ(n.bytes.size(), 31u);
  GridSpec h = preset("host-main");
  EXPECT_EQ(h.plan.to_string(), "lattice:2");
  EXPECT_THROW(preset("nope"), GridError);
}

TEST(BenchGrid, ExpansionOrderAndNcclTestsByteCounts) {
  Options o = parse({"--collective", "allreduce,allgather", "--bytes", "4,64", "--dtype", "fp32", "--tp", "2", "-o", "x"});
  PlanOptions po;
  po.limits.world = 2;
  po.limits.workspace = o.workspace;
  std::vector<std::string> notes;
  PlannedGrid g = plan_cases(o.spec, po, &notes);
  // allreduce: MPI, ONESHOT, TWOSHOT, MULTIMEM_ONESHOT, MULTIMEM_TWOSHOT x 2 sizes; allgather: MPI x 2 sizes minus
  // 4 B (1 element < 2 ranks).
  ASSERT_EQ(g.cases.size(), 10u + 1u);
  EXPECT_EQ(g.cases[0].strategy, "MPI");
  EXPECT_EQ(g.cases[1].strategy, "ONESHOT");  // strategy is the innermost axis
  EXPECT_EQ(g.cases[0].bytes, 4);
  EXPECT_EQ(g.cases.back().collective, Collective::AllGather);
  EXPECT_EQ(g.cases.back().bytes, 64);
  EXPECT_EQ(g.cases.back().count, 16);
  ASSERT_FALSE(notes.empty());
  for (std::size_t i = 0; i < g.cases.size(); ++i) EXPECT_EQ(g.cases[i].index, static_cast<int>(i));
}

TEST(BenchGrid, JsonSpecAppliesAndRejectsUnknownKeys) {
  GridSpec g;
  apply_json_spec(g, R"({"collectives":["allreduce"],"tokens":"1:8","hidden":[256,"1K"],"plan":"lattice:2","tp":[2]})", "s.json");
  EXPECT_EQ(g.tokens, (std::vector<std::int64_t>{1, 2, 4, 8}));
  EXPECT_EQ(g.hidden, (std::vector<std::int64_t>{256, 1024}));
  EXPECT_EQ(g.plan.to_string(), "lattice:2");
  GridSpec r;
  apply_json_spec(r, R"({"bytes":{"min":8,"max":"1K","factor":4}})", "s.json");
  EXPECT_EQ(r.bytes, (std::vector<std::int64_t>{8, 32, 128, 512}));
  try {
    apply_json_spec(g, R"({"tokenz":[1]})", "s.json");
    FAIL();
  } catch (const GridError& e) {
    EXPECT_NE(e.option().find("'tokenz'"), std::string::npos) << e.option();
  }
  EXPECT_THROW(apply_json_spec(g, "{not json", "s.json"), GridError);
  EXPECT_THROW(apply_json_spec(g, R"({"plan":"lattice:0"})", "s.json"), GridError);
}

TEST(BenchGrid, BadCommandLinesNameTheOffendingOption) {
  const std::vector<std::string> small = {"--tokens", "1,8", "--hidden", "256", "-o", "x.csv"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = small;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  EXPECT_EQ(offending_option(small), "");
  EXPECT_EQ(offending_option(with({"--tp", "4"})), "--tp");                      // TP larger than the world
  EXPECT_EQ(offending_option(with({"--backend", "bogus"})), "--backend");
  EXPECT_EQ(offending_option(with({"--strategy", "NCCL"})), "--strategy");       // not a host strategy
  EXPECT_EQ(offending_option(with({"--fusion", "RESIDUAL_RMS_NORM_QUANT_NVFP4"})), "");  // every host strategy has it
  EXPECT_EQ(offending_option(with({"--fusion", "all"})), "");
  // NVFP4 quantises whole blocks of 16: hidden 200 (25 bf16 vectors) is refused naming --hidden.
  EXPECT_EQ(offending_option({"--tokens", "1", "--hidden", "200", "--fusion", "RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4", "-o", "x.csv"}),
            "--hidden");
  EXPECT_EQ(offending_option(with({"--fusion", "SOMETHING"})), "--fusion");
  EXPECT_EQ(offending_option(with({"--dtype", "int3"})), "--dtype");
  EXPECT_EQ(offending_option(with({"--plan", "lattice:x"})), "--plan");
  EXPECT_EQ(offending_option(with({"--workspace", "1K"})), "--workspace");     // 8x256 bf16 = 4K > 1K
  EXPECT_EQ(offending_option(with({"--on-timeout", "maybe"})), "--on-timeout");
  EXPECT_EQ(offending_option(with({"--iters", "0"})), "-n/--iters");
  EXPECT_EQ(offending_option(with({"--resume", "--overwrite"})), "--resume");
  EXPECT_EQ(offending_option(with({"--bytes", "8"})), "--tokens");             // both size kinds
  EXPECT_EQ(offending_option(with({"--no-such-flag"})), "--no-such-flag");
  EXPECT_EQ(offending_option({"--tokens", "1,8", "-o", "x"}), "--hidden");      // tokens without hidden
  EXPECT_EQ(offending_option({"--bytes", "8", "--fusion", "RESIDUAL_RMS_NORM", "-o", "x"}), "--fusion");
  EXPECT_EQ(offending_option({"--bytes", "8"}), "-o/--output");
  EXPECT_EQ(offending_option({"-o", "x"}), "--bytes");                          // no sizes at all
  EXPECT_EQ(offending_option({"-b", "1K", "-e", "8", "-o", "x"}), "-b/--minbytes");
  EXPECT_EQ(offending_option({"--preset", "trtllm", "-o", "x"}), "--preset trtllm");  // its TP 4, 8 > world 2
  EXPECT_EQ(offending_option({"--preset", "trtllm", "--tp", "2", "--backend", "host", "-o", "x"}), "");
  EXPECT_EQ(offending_option({"--collective", "broadcast", "--bytes", "8", "-o", "x"}), "--collective");
}

TEST(BenchGrid, CudaGraphOptionIsValidatedBeforeAnythingRuns) {
  const std::vector<std::string> small = {"--tokens", "1,8", "--hidden", "256", "-o", "x.csv"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = small;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  // The host backend (the default) has no CUDA graphs: refused by name, long or short spelling.
  EXPECT_EQ(offending_option(with({"--cuda-graph", "1"})), "-G/--cuda-graph");
  EXPECT_EQ(offending_option(with({"--backend", "host", "-G", "4"})), "-G/--cuda-graph");
  try {
    parse(with({"-G", "2"}));
    FAIL();
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("host backend has no CUDA graphs"), std::string::npos) << e.what();
  }
  EXPECT_EQ(offending_option(with({"--cuda-graph", "0"})), "");  // 0 = off, fine everywhere
  // Out of range, and rotations whose lcm with K would capture too many collectives.
  EXPECT_EQ(offending_option(with({"--backend", "custom", "--virtual-ranks", "-G", "-1"})), "-G/--cuda-graph");
  EXPECT_EQ(offending_option(with({"--backend", "custom", "--virtual-ranks", "-G", "1025"})), "-G/--cuda-graph");
  EXPECT_EQ(offending_option(with({"--backend", "custom", "--virtual-ranks", "-G", "1000", "--buffers", "999"})),
            "-G/--cuda-graph");
  // Accepted for a GPU backend (parsing only: planning a GPU grid needs the build's GPU backends).
  Options o = parse(with({"--backend", "custom", "--virtual-ranks", "-G", "3", "--buffers", "4"}));
  EXPECT_EQ(o.runner.cuda_graph, 3);
  EXPECT_EQ(parse(with({"--backend", "nccl", "--cuda-graph", "1"})).runner.cuda_graph, 1);
  // The other GPU options were ignored by the host backend (exit 0, measured as if --device 3 or --profile-cases 0
  // had been read); a negative --device other than the default -1 was taken as the default.
  EXPECT_EQ(offending_option(with({"--device", "3"})), "--device");
  EXPECT_EQ(offending_option(with({"--backend", "host", "--profile-cases", "0"})), "--profile-cases");
  EXPECT_EQ(offending_option(with({"--backend", "nccl", "--device", "-5"})), "--device");
  EXPECT_EQ(offending_option(with({"--device", "-1"})), "");  // the default, spelled out
  // Accepted for a GPU backend (parsing only).
  const Options gpu = parse(with({"--backend", "nccl", "--device", "1", "--profile-cases", "0"}));
  EXPECT_EQ(gpu.device, 1);
  EXPECT_EQ(gpu.runner.profile_cases, (std::set<int>{0}));
  EXPECT_EQ(parse(small).runner.cuda_graph, 0);  // default: eager launches
  // --help says what the option does.
  Options h = parse({"--help"});
  EXPECT_NE(h.help_text.find("--cuda-graph"), std::string::npos);
}

// MPI, ONESHOT and TWOSHOT implement every fusion (the NVFP4 and OUT_QUANT epilogues included), the multimem
// strategies NONE only: the trtllm preset's four fusions all plan for the first three, NONE for the multimem ones.
// --fusion all is every fusion each strategy supports; with byte sizes (no rows) the fused ones are dropped with a
// notice instead of failing.
TEST(BenchGrid, PresetAndFusionAllPlanEveryFusionTheStrategiesSupport) {
  Options o = parse({"--preset", "trtllm", "--tp", "2", "--tokens", "1,2", "--hidden", "128", "-o", "x"});
  PlanOptions po;
  po.limits.world = 2;
  po.limits.workspace = o.workspace;
  std::vector<std::string> notes;
  PlannedGrid g = plan_cases(o.spec, po, &notes);
  // 2 tokens x (3 host strategies x the preset's 4 fusions + 2 multimem strategies x NONE)
  EXPECT_EQ(g.cases.size(), 2u * (3u * 4u + 2u));
  Options all = parse({"--fusion", "all", "--tp", "2", "--tokens", "1", "--hidden", "128", "-o", "x"});
  EXPECT_EQ(plan_cases(all.spec, po, &notes).cases.size(), 3u * all_fusion_ops().size() + 2u);
  notes.clear();
  Options bytes = parse({"--fusion", "all", "--tp", "2", "--bytes", "1K", "-o", "x"});
  EXPECT_EQ(plan_cases(bytes.spec, po, &notes).cases.size(), 5u);  // NONE only: byte sizes have no rows
  ASSERT_FALSE(notes.empty());
  EXPECT_TRUE(std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
    return n.find("without --tokens/--hidden") != std::string::npos;
  })) << notes[0];
}

// The MPI strategy's fused epilogue is the kernels' residual + RMSNorm pass: a hidden size that is not a whole
// number of 16-byte packs is refused at plan time, naming --hidden, as ONESHOT/TWOSHOT are; a whole one plans.
TEST(BenchGrid, MpiFusedEpilogueShapeIsCheckedBeforeAnythingRuns) {
  for (const auto& [hidden, ok] : std::vector<std::pair<std::string, bool>>{{"100", false}, {"104", true}}) {
    Options o = parse({"--strategy", "MPI", "--fusion", "RESIDUAL_RMS_NORM", "--dtype", "bf16", "--tp", "2",
                       "--tokens", "4", "--hidden", hidden, "-o", "x"});
    PlanOptions po;
    po.limits.world = 2;
    po.limits.workspace = o.workspace;
    if (ok) {
      EXPECT_EQ(plan_cases(o.spec, po, nullptr).cases.size(), 1u) << hidden;
      continue;
    }
    try {
      plan_cases(o.spec, po, nullptr);
      ADD_FAILURE() << "hidden " << hidden << " was accepted";
    } catch (const GridError& e) {
      EXPECT_EQ(e.option(), "--hidden") << e.what();
      EXPECT_NE(std::string(e.what()).find("multiple of 8"), std::string::npos) << e.what();
    }
  }
}

TEST(BenchGrid, RotationBuffersSpanTheCacheForSmallMessages) {
  EXPECT_EQ(rotation_buffers(512, 0), 16);
  EXPECT_EQ(rotation_buffers(8 << 20, 0), 8);
  EXPECT_EQ(rotation_buffers(std::int64_t{256} << 20, 0), 1);
  EXPECT_EQ(rotation_buffers(512, 3), 3);
}

TEST(BenchGrid, CaseKeyMatchesTheSampleItBecomes) {
  Case c;
  c.collective = Collective::AllReduce;
  c.strategy = "ONESHOT";
  c.fusion = FusionOp::ResidualRmsNorm;
  c.dtype = "bf16";
  c.tp = 2;
  c.tokens = 4;
  c.hidden = 256;
  c.count = 1024;
  c.bytes = 2048;
  Sample s;
  s.collective = c.collective;
  s.strategy = c.strategy;
  s.fusion = c.fusion;
  s.dtype = "bfloat16";
  s.nranks = 2;
  s.tokens = 4;
  s.hidden = 256;
  s.bytes = 2048;
  EXPECT_EQ(c.key(), sample_key(s));
  s.bytes = 4096;
  EXPECT_NE(c.key(), sample_key(s));
}

// lattice:K and anchors:K beyond an int were cast unchecked: 2^32 became stride 0 (SIGFPE in the lattice's
// modulo), 2^31 became -2^31, and anchors:2^31 planned nothing and blamed --strategy. Now a usage error
// naming the option (or the --spec key) with the allowed range.
TEST(BenchGrid, PlanStrideBeyondAnIntIsAUsageErrorNamingThePlan) {
  for (std::string k : {"4294967296", "2147483648", "99999999999", "99999999999999999999999", "-1", "0", "1.5"})
    for (std::string kind : {"lattice", "anchors"}) {
      try {
        Plan::parse(kind + ":" + k, "--plan");
        ADD_FAILURE() << kind << ":" << k << " accepted";
      } catch (const GridError& e) {
        EXPECT_EQ(e.option(), "--plan");
        EXPECT_NE(std::string(e.what()).find("1..2147483647"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("'" + k + "'"), std::string::npos) << e.what();
      }
    }
  EXPECT_EQ(Plan::parse("lattice:2147483647").stride, 2147483647);
  const std::vector<std::string> grid = {"--bytes", "1K:1M", "--strategy", "MPI", "--tp", "1", "--dry-run"};
  auto with_plan = [&](const std::string& plan) {
    auto v = grid;
    v.insert(v.end(), {"--plan", plan});
    return v;
  };
  EXPECT_EQ(offending_option(with_plan("lattice:4294967296")), "--plan");
  EXPECT_EQ(offending_option(with_plan("anchors:2147483648")), "--plan");
  // The same path through a --spec file names the key.
  GridSpec g;
  try {
    apply_json_spec(g, R"({"plan":"lattice:4294967296"})", "s.json");
    FAIL() << "no error";
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "--spec s.json:1 key 'plan'");
    EXPECT_NE(std::string(e.what()).find("1..2147483647"), std::string::npos) << e.what();
  }
}

// -f inf swept nothing past the first size (8 * inf is above any end) and ran: a step factor is finite.
TEST(BenchGrid, InfiniteStepFactorIsRefused) {
  for (std::string f : {"inf", "nan", "1"})
    EXPECT_EQ(offending_option({"-b", "8", "-e", "1K", "-f", f, "--strategy", "MPI", "--dry-run"}), "-f/--stepfactor") << f;
  EXPECT_EQ(offending_option({"-b", "8", "-e", "1K", "-f", "4", "--strategy", "MPI", "--dry-run"}), "");
}

// --timeout inf or 1e300 overflowed the watchdog's nanosecond clock arithmetic (undefined behaviour): bounded.
TEST(BenchGrid, TimeoutIsPositiveAndBounded) {
  for (std::string t : {"inf", "1e300", "nan", "0", "-1", "604801"})
    EXPECT_EQ(offending_option({"--bytes", "1K", "--strategy", "MPI", "--tp", "1", "--dry-run", "--timeout", t}), "--timeout") << t;
  EXPECT_EQ(offending_option({"--bytes", "1K", "--strategy", "MPI", "--tp", "1", "--dry-run", "--timeout", "604800"}), "");
}

// -n 2000000000 allocated 16 GB of per-iteration times on every rank before the first case (bad_alloc, MPI_Abort).
TEST(BenchGrid, TimedIterationsAreBounded) {
  for (std::string n : {"0", "-1", "10000001", "2000000000"})
    EXPECT_EQ(offending_option({"--bytes", "1K", "--strategy", "MPI", "--tp", "1", "--dry-run", "-n", n}), "-n/--iters") << n;
  EXPECT_EQ(offending_option({"--bytes", "1K", "--strategy", "MPI", "--tp", "1", "--dry-run", "-n", "10000000"}), "");
}

// A grid whose every case is below one element per rank (a dlrm split of 1 element over 4 ranks) was refused as
// "option --strategy: the grid has no runnable case", blaming an option not given and hiding why.
// A dlrm split sets its own size, so its batch below the rank count is the --splits value's fault, with or without
// a --bytes (issue 43: it was blamed on --bytes).
TEST(BenchGrid, EmptyGridSaysWhyEveryCaseWent) {
  const std::vector<std::string> args = {"--collective", "alltoallv", "--strategy", "MPI", "--dtype", "fp32", "--tp", "4",
                                         "--bytes", "4K", "--splits", "dlrm:1:1:1:0", "--dry-run"};
  EXPECT_EQ(offending_option(args, 4), "--splits");
  EXPECT_EQ(offending_option({"--collective", "alltoallv", "--strategy", "MPI", "--dtype", "fp32", "--tp", "4", "--splits",
                              "dlrm:3:2:8:0", "--dry-run"}, 4),
            "--splits");
  // A fixed split over a size below one element per rank is the size's fault.
  EXPECT_EQ(offending_option({"--collective", "alltoallv", "--strategy", "MPI", "--dtype", "fp32", "--tp", "4", "--bytes",
                              "8", "--splits", "even", "--dry-run"}, 4),
            "--bytes");
  try {
    Options o = parse(args);
    PlanOptions po;
    po.limits.world = 4;
    po.limits.workspace = o.workspace;
    plan_cases(o.spec, po, nullptr);
    ADD_FAILURE() << "planned";
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("batch B is below the rank count"), std::string::npos) << e.what();
  }
}

// A bad value in a --spec file was named by file and key only: the message names the line too.
TEST(BenchGrid, SpecErrorsNameTheFileLineAndKey) {
  const struct {
    std::string json, option;
  } cases[] = {{"{\n  \"bytes\": [1024],\n  \"tp\": [-2]\n}", "--spec s.json:3 key 'tp'"},
               {"{\"bytes\": [1024,\n -5]}", "--spec s.json:1 key 'bytes'"},
               {"{\n\n \"bytez\": 1}", "--spec s.json:3 key 'bytez'"},
               {"{\"bytes\": [1024],\n \"plan\": \"anchors:0\"}", "--spec s.json:2 key 'plan'"},
               // empty split items in a spec file, as on the command line (issue 43: they were dropped)
               {"{\"bytes\": [1024],\n\n \"splits\": \"cyclic,,even\"}", "--spec s.json:3 key 'splits'"},
               {"{\"bytes\": [1024],\n \"splits\": [\"cyclic\", \"\"]}", "--spec s.json:2 key 'splits'"},
               {"{\"bytes\": [1024],\n \"plan\": \"lattice:08\"}", "--spec s.json:2 key 'plan'"}};
  for (const auto& c : cases) {
    GridSpec g;
    try {
      apply_json_spec(g, c.json, "s.json");
      ADD_FAILURE() << "no error for " << c.json;
    } catch (const GridError& e) {
      EXPECT_EQ(e.option(), c.option) << e.what();
    }
  }
}

// The largest K plans like K = the number of sizes (every size), without one loop step per anchor.
TEST(BenchGrid, LargestAnchorsOrLatticeKPlansEverySizeOrTheEnds) {
  Options o = parse({"--bytes", "1K:1M", "--strategy", "MPI", "--tp", "1", "--dry-run", "--plan", "anchors:2147483647"});
  PlanOptions po;
  po.limits.world = 1;
  po.limits.workspace = o.workspace;
  EXPECT_EQ(plan_cases(o.spec, po, nullptr).cases.size(), 11u);
  o = parse({"--bytes", "1K:1M", "--strategy", "MPI", "--tp", "1", "--dry-run", "--plan", "lattice:2147483647"});
  EXPECT_EQ(plan_cases(o.spec, po, nullptr).cases.size(), 2u);  // the first and last size
}

// Case indices count from 0 (as --dry-run lists them; --help's example is "0,5"): 0 was refused as "not a
// positive whole number", and 2^32 wrapped to case 0.
TEST(BenchGrid, ProfileCasesAreZeroBasedIndicesCheckedAgainstAnInt) {
  // A GPU backend: the host backend has no profiler ranges (parsing only, as the -G test).
  const std::vector<std::string> base = {"--backend", "nccl", "--bytes", "1K", "--dry-run"};
  auto with = [&](const std::string& cases) {
    auto v = base;
    v.insert(v.end(), {"--profile-cases", cases});
    return v;
  };
  EXPECT_EQ(parse(with("0,5")).runner.profile_cases, (std::set<int>{0, 5}));
  EXPECT_EQ(parse(with("2147483647")).runner.profile_cases, (std::set<int>{2147483647}));
  for (std::string bad : {"4294967296", "2147483648", "-1", "1K", "x", ",", "+1", "1e3", "0x1"}) {
    try {
      parse(with(bad));
      ADD_FAILURE() << bad << " accepted";
    } catch (const GridError& e) {
      EXPECT_EQ(e.option(), "--profile-cases") << bad;
    }
  }
  try {
    parse(with("4294967296"));
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("0..2147483647"), std::string::npos) << e.what();
  }
  EXPECT_NE(parse({"--help"}).help_text.find("e.g. 0,5"), std::string::npos);
}

// A size beyond arbench's limit said "must be a positive whole number"; it now says what the limit is. The
// help names every suffix the parser takes (T included).
TEST(BenchGrid, SizeBeyondTheLimitSaysSoAndHelpNamesEverySuffix) {
  for (std::string big : {"9223372036854775807", "1000000000000001", "1024T"}) {
    try {
      parse_size(big, "--bytes");
      ADD_FAILURE() << big << " accepted";
    } catch (const GridError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("beyond the largest size arbench accepts"), std::string::npos) << what;
      EXPECT_NE(what.find(std::to_string(kMaxSize)), std::string::npos) << what;
      EXPECT_EQ(what.find("positive"), std::string::npos) << what;
    }
  }
  EXPECT_EQ(parse_size("909T", "--bytes"), std::int64_t{909} << 40);  // below the limit
  EXPECT_EQ(parse_size(std::to_string(kMaxSize), "--bytes"), kMaxSize);
  try {
    parse_size("0", "--bytes");
    ADD_FAILURE() << "0 accepted";
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("positive whole number"), std::string::npos) << e.what();
  }
  EXPECT_NE(parse({"--help"}).help_text.find("suffixes K M G T (powers of 1024)"), std::string::npos);
}

// arbench's sizes take the units arfit reads everywhere (model/text.h): lower-case letters as nccl-tests' -b/-e,
// KiB spelled out, and the decimal-looking MB refused as ambiguous instead of read as MiB.
TEST(BenchGrid, SizeUnitsAreArfitsOneTable) {
  EXPECT_EQ(parse_size("8m", "-e"), std::int64_t{8} << 20);
  EXPECT_EQ(parse_size("4KiB", "-b"), 4096);
  try {
    parse_size("8MB", "--bytes");
    FAIL() << "8MB was accepted";
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("ambiguous"), std::string::npos) << e.what();
  }
}

// Under an address-space limit (ulimit -v) a case whose buffers cannot be mapped is refused before anything runs,
// naming the size option; it was a bad_alloc per case, or Open MPI's fatal error (exit 17) in MPI_Allreduce's
// temporary buffer, or a segmentation fault in the shared window. The window counts every rank's segment.
TEST(BenchGrid, SizesBeyondTheAddressSpaceLimitAreRefusedNamingTheSizeOption) {
  const std::int64_t left = std::int64_t{3} << 30;  // 3 GiB may still be mapped
  const auto plan = [&](std::vector<std::string> args) {
    Options o = parse(std::move(args));
    PlanOptions po;
    po.limits.world = 2;
    po.limits.workspace = o.workspace;
    po.address_space_bytes = left;
    return plan_cases(o.spec, po, nullptr);
  };
  // MPI, fp32 1 GiB: one input and the outputs (about 4 GiB) are more than 80% of 3 GiB.
  try {
    plan({"--strategy", "MPI", "-d", "fp32", "-b", "1G", "-e", "1G", "-o", "x"});
    ADD_FAILURE() << "a 1 GiB all-reduce was planned with 3 GiB of address space left";
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "-b/-e/-f") << e.what();
    EXPECT_NE(std::string(e.what()).find("bytes=1G needs about 4G of address space per rank"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("ulimit -v: 3G left"), std::string::npos) << e.what();
  }
  // ONESHOT at 256 MiB: this rank's buffers and workspace segment (about 2 GiB) fit, but the window also maps the
  // peer's 1 GiB segment.
  try {
    plan({"--strategy", "ONESHOT", "-d", "fp32", "--bytes", "256M", "-o", "x"});
    ADD_FAILURE() << "the shared window of both ranks was not counted";
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "--bytes") << e.what();
  }
  // Within the limit, and without one: planned.
  EXPECT_EQ(plan({"--strategy", "MPI", "-d", "fp32", "--bytes", "256M", "-o", "x"}).cases.size(), 1u);
  Options o = parse({"--strategy", "MPI", "-d", "fp32", "-b", "1G", "-e", "1G", "-o", "x"});
  PlanOptions unlimited;
  unlimited.limits.world = 2;
  unlimited.limits.workspace = o.workspace;
  EXPECT_EQ(plan_cases(o.spec, unlimited, nullptr).cases.size(), 1u);
}

namespace {

// The strategies of the cases a command line plans on 2 ranks.
std::set<std::string> planned_strategies(std::vector<std::string> args) {
  Options o = arfit::bench::testing::parse(std::move(args));
  PlanOptions po;
  po.limits.world = 2;
  po.limits.workspace = o.workspace;
  std::set<std::string> s;
  for (const Case& c : plan_cases(o.spec, po, nullptr).cases) s.insert(c.strategy);
  return s;
}

}  // namespace

// LOWPRECISION (e4m3 transport, not exact) is never a default strategy: a grid measures it only when --strategy
// names it, so an existing host run neither gains inexact rows nor fails on its fused cases; named, its unsupported
// fusions are refused naming --fusion.
TEST(BenchGrid, LowPrecisionIsMeasuredOnlyWhenNamed) {
  const std::vector<std::string> sizes = {"--backend", "host", "--bytes", "1K,64K", "-o", "x.csv"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = sizes;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  EXPECT_EQ(planned_strategies(sizes),
            (std::set<std::string>{"MPI", "ONESHOT", "TWOSHOT", "MULTIMEM_ONESHOT", "MULTIMEM_TWOSHOT"}));
  EXPECT_EQ(planned_strategies(with({"--strategy", "LOWPRECISION,ONESHOT"})),
            (std::set<std::string>{"LOWPRECISION", "ONESHOT"}));
  EXPECT_EQ(offending_option({"--backend", "host", "--tokens", "1,8", "--hidden", "256", "--fusion",
                              "NONE,RESIDUAL_RMS_NORM", "-o", "x"}),
            "");  // the default strategies without RESIDUAL_RMS_NORM (the multimem ones) skip it
  EXPECT_EQ(offending_option({"--backend", "host", "--strategy", "LOWPRECISION", "--tokens", "1,8", "--hidden", "256",
                              "--fusion", "RESIDUAL_RMS_NORM", "-o", "x"}),
            "--fusion");
}
