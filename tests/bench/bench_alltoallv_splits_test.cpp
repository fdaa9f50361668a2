// All-to-allv split generators (bench/alltoallv_splits.h) and the grid's `splits` axis: parsing and expansion,
// determinism from the seed, row sums, the recorded strings and what model/alltoallv.h reads back from them,
// and the option errors.
#include <gtest/gtest.h>

#include <numeric>

#include "bench/alltoallv_splits.h"
#include "bench/options.h"
#include "bench/plan.h"
#include "bench_options_helpers.h"
#include "model/alltoallv.h"

using namespace arfit;
using namespace arfit::bench;
using arfit::bench::testing::offending_option;

namespace {

std::vector<std::string> canonical(const std::string& text) {
  std::vector<std::string> out;
  for (const auto& p : parse_split_patterns(text, "--splits")) out.push_back(p.to_string());
  return out;
}

Case a2av_case(const std::string& split, int n, std::int64_t count, const std::string& dtype = "fp32") {
  Case c;
  c.collective = Collective::AllToAllV;
  c.strategy = "MPI";
  c.dtype = dtype;
  c.tp = n;
  c.count = count;
  c.bytes = count * c.elem_size();
  c.split = split;
  return c;
}

std::int64_t row_sum(const SplitCounts& c, std::size_t i) { return std::accumulate(c[i].begin(), c[i].end(), std::int64_t{0}); }

}  // namespace

TEST(AllToAllvSplits, PatternsParseExpandAndRoundTrip) {
  EXPECT_EQ(canonical("dlrm:64/128:16:16:1..3"),
            (std::vector<std::string>{"dlrm:64:16:16:1", "dlrm:64:16:16:2", "dlrm:64:16:16:3", "dlrm:128:16:16:1",
                                      "dlrm:128:16:16:2", "dlrm:128:16:16:3"}));
  EXPECT_EQ(canonical("zipf:1.5, hot:0.8:1, even, cyclic, zipf:1.5:0"),
            (std::vector<std::string>{"zipf:1.5:0", "hot:0.8:1", "even", "cyclic"}));  // defaults filled, duplicate dropped
  EXPECT_EQ(canonical("hot:0.5/0.9"), (std::vector<std::string>{"hot:0.5:0", "hot:0.9:0"}));
  for (const char* s : {"dlrm:2048:26:128:7", "zipf:0.8:3", "hot:0.25:2", "even", "cyclic", "zipf:1.23456789:0"})
    EXPECT_EQ(canonical(canonical(s).front()).front(), s);
  const SplitPattern d = parse_split_patterns("dlrm:2048:26:128:7", "--splits").front();
  EXPECT_TRUE(d.sized_by_tables());
  EXPECT_EQ(d.batch, 2048);
  EXPECT_EQ(d.tables, 26);
  EXPECT_EQ(d.dim, 128);
  EXPECT_EQ(d.seed, 7u);
  EXPECT_FALSE(parse_split_patterns("zipf:1", "--splits").front().sized_by_tables());
}

TEST(AllToAllvSplits, BadPatternsNameTheOption) {
  for (const std::string bad : {"dlrm:64:16:16", "dlrm:64:16:16:1:2", "dlrm:0:16:16:1", "dlrm:64:1.5:16:1",
                                "dlrm:64:16:16:5..2", "dlrm:64:16:16:x", "zipf", "zipf:-1", "zipf:1:2:3", "hot:1.5",
                                "hot:0.5:-1", "hot:0.5/", "even:1", "uniform", "dlrm:64::16:1", "dlrm:64:16:16:0..100000",
                                "dlrm:1000000000:1000000:1000000:1",
                                // counts through std::stod: 1e3 read as 1000, +2 as 2, 0x10 as 16
                                "dlrm:1e3:16:16:1", "dlrm:64:+2:16:1", "dlrm:64:16:0x10:1", "zipf:1:+3", "hot:0.5: 1",
                                // a leading zero (C's octal) and empty items (issue 43: they were dropped)
                                "dlrm:064:16:16:1", "zipf:1:07", "", "cyclic,,even", "even,", ","}) {
    try {
      parse_split_patterns(bad, "--splits");
      ADD_FAILURE() << bad << " parsed";
    } catch (const GridError& e) {
      EXPECT_EQ(e.option(), "--splits") << bad;
      EXPECT_NE(std::string(e.what()).find("option --splits"), std::string::npos) << e.what();
    }
  }
  const std::vector<std::string> grid = {"--collective", "alltoallv", "--bytes", "64K", "-o", "x.csv"};
  auto with = [&](std::vector<std::string> extra) {
    auto v = grid;
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  EXPECT_EQ(offending_option(with({"--splits", "zipf:1,hot:0.5:1"})), "");
  EXPECT_EQ(offending_option(with({"--splits", "zipf:abc"})), "--splits");
  // Given empty, --splits is refused, never read as "the default pattern".
  EXPECT_EQ(offending_option(with({"--splits", ""})), "--splits");
  EXPECT_EQ(offending_option(with({"--splits", "cyclic,,even"})), "--splits");
  EXPECT_EQ(offending_option(with({"--collective", "alltoallv,"})), "--collective");
  EXPECT_EQ(offending_option(with({"--splits", "hot:0.5:2"})), "--splits");  // rank 2 is not below TP 2
  EXPECT_EQ(offending_option({"--collective", "alltoall", "--bytes", "64K", "--splits", "even", "-o", "x"}), "--splits");
  // A grid of dlrm splits alone needs no size axis; a sized split does.
  EXPECT_EQ(offending_option({"--collective", "alltoallv", "--splits", "dlrm:64:16:16:1", "-o", "x"}), "");
  EXPECT_EQ(offending_option({"--collective", "alltoallv", "--splits", "zipf:1", "-o", "x"}), "--bytes");
}

TEST(AllToAllvSplits, DlrmTablesAreDrawnFromTheSeed) {
  const SplitPattern p = parse_split_patterns("dlrm:2048:26:64:11", "--splits").front();
  const auto t4 = dlrm_tables_per_rank(p, 4);
  EXPECT_EQ(t4, dlrm_tables_per_rank(p, 4));  // deterministic
  EXPECT_EQ(std::accumulate(t4.begin(), t4.end(), std::int64_t{0}), 26);
  // Other seeds draw other assignments (not all of eight seeds can give the same one).
  int differ = 0;
  for (std::uint64_t s = 1; s <= 8; ++s) {
    SplitPattern q = p;
    q.seed = s;
    differ += dlrm_tables_per_rank(q, 4) != t4;
  }
  EXPECT_GE(differ, 6);
  // Rank r sends floor(B/n)·T_r·D elements to every rank; the case's count is the mean a rank sends.
  const SplitCounts c = split_counts(p, 0, 4);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) EXPECT_EQ(c[i][j], 2048 / 4 * t4[i] * 64);
  EXPECT_EQ(dlrm_mean_count(p, 4), 2048 / 4 * 26 * 64);
  const SplitPattern odd = parse_split_patterns("dlrm:10:3:8:1", "--splits").front();
  EXPECT_EQ(dlrm_mean_count(odd, 4), 2 * 3 * 8);  // floor(10 / 4) = 2 samples per rank
}

TEST(AllToAllvSplits, SizedPatternsSpreadEveryRowExactly) {
  const std::int64_t count = 100003;  // not a multiple of anything: the apportionment must still be exact
  for (const char* text : {"cyclic", "even", "zipf:1.2:5", "hot:0.7:2"}) {
    const SplitCounts c = split_counts(parse_split_patterns(text, "--splits").front(), count, 4);
    ASSERT_EQ(c.size(), 4u) << text;
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(row_sum(c, i), count) << text;
      for (auto v : c[i]) EXPECT_GE(v, 0) << text;
    }
  }
  // Zipf: destination weights 1, 1/2^e, 1/3^e, 1/4^e in a seeded order, the same for every sender.
  const SplitCounts z = split_counts(parse_split_patterns("zipf:1:5", "--splits").front(), 25000, 4);
  std::vector<std::int64_t> row = z[0];
  std::sort(row.begin(), row.end(), std::greater<>());
  EXPECT_EQ(row, (std::vector<std::int64_t>{12000, 6000, 4000, 3000}));  // 25000 · (1, 1/2, 1/3, 1/4) / (25/12)
  for (const auto& r : z) EXPECT_EQ(r, z[0]);
  EXPECT_EQ(z, split_counts(parse_split_patterns("zipf:1:5", "--splits").front(), 25000, 4));
  // Hot spot: rank 2 receives 70 % of everything, the others share the rest.
  const SplitCounts h = split_counts(parse_split_patterns("hot:0.7:2", "--splits").front(), 3000, 4);
  EXPECT_EQ(h[1], (std::vector<std::int64_t>{300, 300, 2100, 300}));
  // Cyclic: shares 1 + (i + j) mod n, so every rank also receives exactly `count`.
  const SplitCounts y = split_counts(parse_split_patterns("cyclic", "--splits").front(), 1000, 4);
  for (int j = 0; j < 4; ++j) EXPECT_EQ(y[0][j] + y[1][j] + y[2][j] + y[3][j], 1000);
}

// The parsed split holds the row sums, column sums and diagonal of the counts arbench sent (`bytes` per element).
static void expect_sums_of(const AllToAllvSplit& parsed, const SplitCounts& counts, double bytes) {
  const std::size_t n = counts.size();
  ASSERT_EQ(parsed.nranks(), static_cast<int>(n));
  for (std::size_t i = 0; i < n; ++i) {
    double row = 0, column = 0;
    for (std::size_t j = 0; j < n; ++j) {
      row += static_cast<double>(counts[i][j]) * bytes;
      column += static_cast<double>(counts[j][i]) * bytes;
    }
    EXPECT_DOUBLE_EQ(parsed.sent(static_cast<int>(i)), row) << i;
    EXPECT_DOUBLE_EQ(parsed.received(static_cast<int>(i)), column) << i;
    EXPECT_DOUBLE_EQ(parsed.self(static_cast<int>(i)), static_cast<double>(counts[i][i]) * bytes) << i;
  }
}

TEST(AllToAllvSplits, RecordedStringsParseBackAndSeparateTheModes) {
  // DLRM: the seed's "B,T0-T1-...,D" string; the model reads back what arbench sent.
  const Case d = a2av_case("dlrm:2048:26:64:11", 4, 0);
  const std::string rd = alltoallv_recorded_splits(d);
  const auto t4 = dlrm_tables_per_rank(parse_split_patterns(d.split, "--splits").front(), 4);
  EXPECT_EQ(rd, "2048," + std::to_string(t4[0]) + "-" + std::to_string(t4[1]) + "-" + std::to_string(t4[2]) + "-" +
                    std::to_string(t4[3]) + ",64");
  const AllToAllvSplit pd = parse_alltoallv_split(rd, 4);
  const SplitCounts cd = alltoallv_case_counts(d);
  expect_sums_of(pd, cd, 4);
  // Sized patterns: the byte matrix (bf16: 2 bytes per element).
  const Case z = a2av_case("zipf:1.5:3", 4, 40000, "bf16");
  const AllToAllvSplit pz = parse_alltoallv_split(alltoallv_recorded_splits(z));
  const SplitCounts cz = alltoallv_case_counts(z);
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(pz.sent(i), 80000);
  }
  expect_sums_of(pz, cz, 2);
  // The sum mode is the case's own size; uneven senders (dlrm) and uneven receivers (zipf, hot) put
  // max_of_sum strictly between sum and max_of_max, so the three modes predict different times.
  for (const Case& c : {a2av_case("dlrm:2048:26:64:11", 4, 0), z, a2av_case("hot:0.6:1", 4, 40000)}) {
    const Case sized = c.split.rfind("dlrm", 0) == 0 ? a2av_case(c.split, 4, dlrm_mean_count(parse_split_patterns(c.split, "--splits").front(), 4)) : c;
    const AllToAllvSplit sp = parse_alltoallv_split(alltoallv_recorded_splits(sized), sized.elem_size());
    const double sum = effective_alltoall_bytes(sp, EffectiveMode::Sum), mos = effective_alltoall_bytes(sp, EffectiveMode::MaxOfSum),
                 mom = effective_alltoall_bytes(sp, EffectiveMode::MaxOfMax);
    EXPECT_DOUBLE_EQ(sum, static_cast<double>(sized.count * sized.elem_size())) << c.split;
    EXPECT_LT(sum, mos) << c.split;
    EXPECT_LT(mos, mom) << c.split;
  }
  // Cyclic and even splits leave all three equal (why the old fixed pattern could not tell them apart).
  for (const char* s : {"cyclic", "even"}) {
    const AllToAllvSplit sp = parse_alltoallv_split(alltoallv_recorded_splits(a2av_case(s, 4, 4000)));
    EXPECT_DOUBLE_EQ(effective_alltoall_bytes(sp, EffectiveMode::MaxOfMax), effective_alltoall_bytes(sp, EffectiveMode::Sum)) << s;
  }
}

// dlrm seeds that draw the same tables per rank are one measurement: measured once, with a notice, so that
// the output has no two rows alike and --resume cannot mistake one seed's row for another's.
TEST(AllToAllvSplits, SeedsDrawingTheSameTablesAreMeasuredOnce) {
  Options o = arfit::bench::testing::parse({"--collective", "alltoallv", "--dtype", "fp32", "--tp", "2", "--splits",
                                           "dlrm:64:16:16:1..6", "-o", "x"});
  PlanOptions po;
  po.limits.world = 2;
  std::vector<std::string> notes;
  PlannedGrid g = plan_cases(o.spec, po, &notes);
  std::set<std::string> keys, splits;
  for (const Case& c : g.cases) {
    keys.insert(c.key());
    splits.insert(alltoallv_recorded_splits(c));
  }
  EXPECT_EQ(keys.size(), g.cases.size());
  EXPECT_EQ(splits.size(), g.cases.size());
  // Six seeds over 16 tables on 2 ranks: some draw the same split (the case before this fix).
  EXPECT_GT(g.repeated_cases, 0u);
  EXPECT_EQ(g.cases.size() + g.repeated_cases, 6u);
  EXPECT_EQ(g.full_cases, g.cases.size());
  bool noted = false;
  for (const auto& n : notes) noted = noted || n.find("measured once: " + std::to_string(g.repeated_cases)) == 0;
  EXPECT_TRUE(noted);
}

TEST(AllToAllvSplits, GridExpandsSplitsAndKeysTellThemApart) {
  Options o = arfit::bench::testing::parse({"--collective", "alltoall,alltoallv", "--bytes", "16K,64K", "--dtype", "fp32",
                                           "--tp", "2", "--splits", "zipf:1,hot:0.8,dlrm:64:16:16:3..4", "-o", "x"});
  PlanOptions po;
  po.limits.world = 2;
  PlannedGrid g = plan_cases(o.spec, po, nullptr);
  // alltoall: 2 sizes; alltoallv: zipf and hot at 2 sizes each, two dlrm cases whatever the sizes (seeds 3 and 4
  // draw 5-11 and 9-7 tables on 2 ranks: two different splits).
  ASSERT_EQ(g.cases.size(), 2u + 4u + 2u);
  EXPECT_EQ(g.cases[0].split, "");
  std::set<std::string> keys;
  for (const Case& c : g.cases) keys.insert(c.key());
  EXPECT_EQ(keys.size(), g.cases.size());
  const Case& dlrm = g.cases.back();
  EXPECT_EQ(dlrm.split, "dlrm:64:16:16:4");
  EXPECT_EQ(dlrm.bytes, 64 / 2 * 16 * 16 * 4);
  EXPECT_NE(dlrm.describe().find("split=dlrm:64:16:16:4"), std::string::npos);
  // The grid JSON (--resume's identity) names the splits.
  EXPECT_NE(o.spec.to_json().find("\"splits\":[\"zipf:1:0\",\"hot:0.8:0\",\"dlrm:64:16:16:3\",\"dlrm:64:16:16:4\"]"),
            std::string::npos)
      << o.spec.to_json();
  // A sample carrying the recorded split has its case's key.
  Sample s;
  s.collective = Collective::AllToAllV;
  s.strategy = "MPI";
  s.dtype = "fp32";
  s.nranks = 2;
  s.bytes = dlrm.bytes;
  s.splits = alltoallv_recorded_splits(dlrm);
  EXPECT_EQ(sample_key(s), dlrm.key());
  // The JSON spec takes the same patterns.
  GridSpec j;
  apply_json_spec(j, R"({"collectives":["alltoallv"],"splits":["dlrm:64:16:16:1..2","zipf:1"]})", "s.json");
  EXPECT_EQ(j.splits, (std::vector<std::string>{"dlrm:64:16:16:1", "dlrm:64:16:16:2", "zipf:1:0"}));
  try {
    apply_json_spec(j, R"({"splits":["zipf"]})", "s.json");
    FAIL();
  } catch (const GridError& e) {
    EXPECT_NE(e.option().find("'splits'"), std::string::npos) << e.option();
  }
}

TEST(AllToAllvSplits, HostPresetMeasuresTheCurveAndTheSplitsTogether) {
  GridSpec p = preset("host-alltoallv");
  EXPECT_EQ(p.collectives, (std::vector<Collective>{Collective::AllToAll, Collective::AllToAllV}));
  EXPECT_EQ(p.bytes.front(), 8 * 1024);
  EXPECT_EQ(p.bytes.back(), 512 * 1024);
  EXPECT_EQ(p.bytes.size(), 13u);  // half-octave steps
  EXPECT_EQ(p.splits.size(), 18u + 2u);
  EXPECT_EQ(p.tp, (std::vector<int>{2}));
}
