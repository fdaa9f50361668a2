// The ranks' agreement before the first collective (bench/agreement.h): judged from every rank's plan, the same
// verdict on every rank, and rank 0's message names what differed.
#include <gtest/gtest.h>

#include "bench/agreement.h"
#include "bench_options_helpers.h"

using namespace arfit::bench;
using arfit::bench::testing::parse;

namespace {

RankPlan plan_of(const std::vector<std::string>& args) {
  Options o = parse(args);
  PlanOptions po;
  po.limits.world = 2;
  po.limits.workspace = o.workspace;
  const PlannedGrid g = o.help || o.version ? PlannedGrid{} : plan_cases(o.spec, po, nullptr);
  return plan_of_rank(o, g);
}

const std::vector<std::string> kRun = {"--backend", "host", "--strategy", "MPI", "--bytes", "1K:8K", "-o", "s.csv"};

std::vector<std::string> with(std::vector<std::string> args, const std::vector<std::string>& more) {
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

}  // namespace

TEST(BenchAgreement, SameCommandLineRunsOrAnswersTogether) {
  for (const auto& args : {kRun, with(kRun, {"--help"}), with(kRun, {"--version"})}) {
    const std::vector<RankPlan> all = {plan_of(args), plan_of(args), plan_of(args)};
    for (int r = 0; r < 3; ++r) {
      const Verdict v = judge_agreement(all, r);
      EXPECT_EQ(v.status, 0);
      EXPECT_EQ(v.kind, all[0].kind);
      EXPECT_TRUE(v.message.empty()) << v.message;
    }
  }
  // The output file is rank 0's alone: another -o on another rank changes nothing the ranks share.
  std::vector<std::string> other_output = kRun;
  other_output.back() = "other.csv";
  EXPECT_EQ(judge_agreement({plan_of(kRun), plan_of(other_output)}, 0).status, 0);
}

TEST(BenchAgreement, OneRankAskingForHelpOrVersionIsNamed) {
  const std::vector<RankPlan> all = {plan_of(kRun), plan_of(with(kRun, {"--help"})), plan_of(kRun),
                                     plan_of(with(kRun, {"--version"}))};
  for (int r = 0; r < 4; ++r) EXPECT_EQ(judge_agreement(all, r).status, 2);
  const std::string m = judge_agreement(all, 0).message;
  EXPECT_NE(m.find("rank 1 was given --help"), std::string::npos) << m;
  EXPECT_NE(m.find("rank 3 was given --version"), std::string::npos) << m;
  EXPECT_EQ(m.find("differs from"), std::string::npos) << m;  // ranks 0 and 2 planned alike
}

TEST(BenchAgreement, UsageErrorsAreSaidByTheirRanksAndNamedByRankZero) {
  const RankPlan bad = usage_error_of_rank("--bogus", "option --bogus: not expected");
  const std::vector<RankPlan> all = {plan_of(kRun), bad, bad, plan_of(kRun)};
  const Verdict v0 = judge_agreement(all, 0);
  EXPECT_EQ(v0.status, 2);
  EXPECT_FALSE(v0.print_own_error);
  EXPECT_NE(v0.message.find("ranks 1-2 have a usage error in option --bogus"), std::string::npos) << v0.message;
  EXPECT_TRUE(judge_agreement(all, 1).print_own_error);
  EXPECT_FALSE(judge_agreement(all, 2).print_own_error);  // rank 1 said the same error
  EXPECT_FALSE(judge_agreement(all, 3).print_own_error);
  EXPECT_EQ(judge_agreement(all, 3).status, 2);
  // The same error on every rank: rank 0 says it once, no summary.
  const Verdict same = judge_agreement({bad, bad}, 1);
  EXPECT_EQ(same.status, 2);
  EXPECT_FALSE(same.print_own_error);
  EXPECT_TRUE(judge_agreement({bad, bad}, 0).print_own_error);
  EXPECT_TRUE(judge_agreement({bad, bad}, 0).message.empty());
  // A rank that failed while planning (not a usage error) makes it a failed run.
  const Verdict failed = judge_agreement({plan_of(kRun), failure_of_rank("std::bad_alloc")}, 0);
  EXPECT_EQ(failed.status, 1);
  EXPECT_NE(failed.message.find("rank 1 failed while planning the run"), std::string::npos) << failed.message;
}

TEST(BenchAgreement, DifferingOptionIsNamed) {
  const struct {
    std::vector<std::string> more;
    std::string named;
  } cases[] = {{{"-n", "3"}, "-n/--iters"},
               {{"--timeout", "5"}, "--timeout"},
               {{"--dry-run"}, "--dry-run"},
               {{"--plan", "lattice:2"}, "--plan"},
               {{"--dtype", "fp32"}, "--dtype"},
               // Enum lists, compared by their names (text_of's enum case).
               {{"--collective", "all_gather"}, "--collective"}};
  for (const auto& c : cases) {
    const Verdict v = judge_agreement({plan_of(kRun), plan_of(with(kRun, c.more))}, 0);
    EXPECT_EQ(v.status, 2) << c.named;
    EXPECT_NE(v.message.find("rank 1 differs from rank 0 in " + c.named), std::string::npos) << v.message;
    EXPECT_EQ(v.message.find("the planned cases"), std::string::npos) << v.message;  // the option explains it
  }
  // Fusions (the other enum list) need rows: both ranks give the same --tokens/--hidden, one adds the norm.
  const std::vector<std::string> rows = {"--backend", "host", "--strategy", "MPI", "--tokens", "4", "--hidden", "256",
                                         "-o", "s.csv"};
  const Verdict fused = judge_agreement({plan_of(rows), plan_of(with(rows, {"--fusion", "NONE,RESIDUAL_RMS_NORM"}))}, 0);
  EXPECT_NE(fused.message.find("rank 1 differs from rank 0 in --fusion"), std::string::npos) << fused.message;
  // Other sizes.
  std::vector<std::string> other = kRun;
  other[5] = "2K:8K";
  const Verdict v = judge_agreement({plan_of(kRun), plan_of(other)}, 0);
  EXPECT_NE(v.message.find("rank 1 differs from rank 0 in the sizes"), std::string::npos) << v.message;
}
