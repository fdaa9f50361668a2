// fit/eval.h on synthetic samples: the ceiling diagnostics (other curves' held-out errors at the same size)
// and the check of method names.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "fit/eval.h"

using namespace arfit;

namespace {

constexpr double kBumpBytes = 1 << 21;  // an odd-indexed size of the grid 2^10..2^30: interp2 holds it out

// α-β with a 30 % step at one size that no training size shows (a protocol switch between measured sizes).
double true_time(double s, double alpha_us) {
  const double t = alpha_us + s / 2e5;
  return s == kBumpBytes ? 1.3 * t : t;
}

void add_curve(std::vector<Sample>& out, const std::string& source, const std::string& system,
               const std::string& strategy, double alpha_us) {
  for (int e = 10; e <= 30; ++e) {
    Sample x;
    x.collective = Collective::AllReduce;
    x.strategy = strategy;
    x.dtype = "fp16";
    x.nranks = 8;
    x.nnodes = 1;
    x.bytes = std::int64_t{1} << e;
    x.time_us = true_time(std::ldexp(1.0, e), alpha_us);
    x.source = source;
    x.extra["system"] = system;
    out.push_back(x);
  }
}

const fit::EvalPoint& point_at(const fit::EvalMethodResult& m, const std::string& source, double bytes) {
  for (const auto& p : m.points)
    if (p.key.system == source && p.bytes == bytes) return p;
  throw std::runtime_error("no point " + source + " at " + std::to_string(bytes));
}

double rel_error(const fit::EvalPoint& p) { return std::fabs(p.predicted.time_us / p.measured - 1); }

}  // namespace

TEST(FitEval, CeilingsCarryOtherCurvesHeldOutErrorsAtTheSameSize) {
  // Three files of machine "a" and two of machine "b" share the step; a custom kernel on "a" does not have it.
  std::vector<Sample> s;
  add_curve(s, "a1.txt", "a", "NCCL", 10);
  add_curve(s, "a2.txt", "a", "NCCL", 11);
  add_curve(s, "a3.txt", "a", "NCCL", 12);
  add_curve(s, "b1.txt", "b", "NCCL", 14);
  add_curve(s, "b2.txt", "b", "NCCL", 15);
  add_curve(s, "a-custom.txt", "a", "custom", 4);
  fit::EvalOptions o;
  o.methods = {"auto", "ceiling-others", "ceiling-otherhw"};
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_sizes(s, "interp2", o);
  ASSERT_EQ(r.curves, 6);
  const auto* a = r.method("auto");
  const auto* others = r.method("ceiling-others");
  const auto* otherhw = r.method("ceiling-otherhw");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(others, nullptr);
  ASSERT_NE(otherhw, nullptr);
  EXPECT_EQ(others->errors.points, a->errors.points);

  // auto cannot see the step (its neighbours are plain α-β): it misses it by about 1/1.3.
  EXPECT_GT(rel_error(point_at(*a, "a1.txt", kBumpBytes)), 0.2);
  // Four other NCCL files share it: their median held-out error restores it.
  EXPECT_LT(rel_error(point_at(*others, "a1.txt", kBumpBytes)), 0.01);
  EXPECT_NE(point_at(*others, "a1.txt", kBumpBytes).predicted.how.find("ceiling"), std::string::npos);
  // Other machines only: "a" files see b1, b2 (two, fewer than needed), so auto's prediction stays.
  EXPECT_DOUBLE_EQ(point_at(*otherhw, "a1.txt", kBumpBytes).predicted.time_us,
                   point_at(*a, "a1.txt", kBumpBytes).predicted.time_us);
  // The "b" files see a1, a2, a3.
  EXPECT_LT(rel_error(point_at(*otherhw, "b1.txt", kBumpBytes)), 0.01);
  // Another strategy is another key: the custom curve keeps auto's prediction at every size.
  for (const auto& p : others->points) {
    if (p.key.system != "a-custom.txt") continue;
    EXPECT_DOUBLE_EQ(p.predicted.time_us, point_at(*a, "a-custom.txt", p.bytes).predicted.time_us);
  }
  EXPECT_LT(others->errors.gmae, a->errors.gmae);
}

// A ceiling is honest about where it is one: with one machine there are no other machines' errors at all, so
// ceiling-otherhw has no points (the table shows '-', not auto's errors as if a bound) and a note says what the
// inputs hold; where some held-out points lack three other curves, a note counts them.
TEST(FitEval, CeilingsSayWhereTheyKeptAutosPrediction) {
  std::vector<Sample> s;
  add_curve(s, "a1.txt", "a", "NCCL", 10);
  add_curve(s, "a2.txt", "a", "NCCL", 11);
  add_curve(s, "a3.txt", "a", "NCCL", 12);
  add_curve(s, "a4.txt", "a", "NCCL", 13);
  fit::EvalOptions o;
  o.methods = {"auto", "ceiling-others", "ceiling-otherhw"};
  fit::EvalResult r = fit::eval_sizes(s, "interp2", o);
  ASSERT_EQ(r.curves, 4);
  const int points = r.method("auto")->errors.points;
  // Every point of a file has three other files: all corrected, no note about ceiling-others.
  EXPECT_EQ(r.method("ceiling-others")->errors.points, points);
  EXPECT_EQ(r.method("ceiling-others")->ceiling_points, points);
  EXPECT_EQ(r.method("auto")->ceiling_points, -1);
  const auto* hw = r.method("ceiling-otherhw");
  EXPECT_EQ(hw->errors.points, 0);
  EXPECT_EQ(hw->groups, 0);
  EXPECT_EQ(hw->ceiling_points, 0);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("ceiling-otherhw: no held-out point"), std::string::npos) << r.notes[0];
  EXPECT_NE(r.notes[0].find("1 machine: a)"), std::string::npos) << r.notes[0];
  EXPECT_EQ(r.to_json()["methods"]["ceiling-otherhw"]["ceiling_points"], 0);
  const std::string table = r.to_table();
  EXPECT_NE(table.find("ceiling-otherhw         -        -"), std::string::npos) << table;

  // Two more machines' files (one each) and a custom kernel: "a" files see two other machines (too few), "b" and
  // "c" see four "a" files; no file shares the custom kernel's key.
  add_curve(s, "b1.txt", "b", "NCCL", 14);
  add_curve(s, "c1.txt", "c", "NCCL", 15);
  add_curve(s, "a-custom.txt", "a", "custom", 4);
  r = fit::eval_sizes(s, "interp2", o);
  ASSERT_EQ(r.curves, 7);
  const int per_curve = r.method("auto")->errors.points / 7;
  EXPECT_EQ(r.method("ceiling-otherhw")->ceiling_points, 2 * per_curve);
  EXPECT_EQ(r.method("ceiling-otherhw")->errors.points, 7 * per_curve);  // auto's kept: comparable with auto
  EXPECT_EQ(r.method("ceiling-others")->ceiling_points, 6 * per_curve);
  ASSERT_EQ(r.notes.size(), 2u);
  EXPECT_NE(r.notes[0].find("ceiling-others: " + std::to_string(per_curve) + " of " + std::to_string(7 * per_curve) +
                            " held-out points had fewer than 3 other source files' curves"),
            std::string::npos)
      << r.notes[0];
  EXPECT_NE(r.notes[1].find("ceiling-otherhw: " + std::to_string(5 * per_curve) + " of " + std::to_string(7 * per_curve) +
                            " held-out points had fewer than 3 other machines' curves"),
            std::string::npos)
      << r.notes[1];
  EXPECT_NE(r.notes[1].find("auto's prediction is kept there"), std::string::npos) << r.notes[1];
}

TEST(FitEval, UnknownMethodsAreRejectedByName) {
  std::vector<Sample> s;
  add_curve(s, "a1.txt", "a", "NCCL", 10);
  fit::EvalOptions o;
  o.methods = {"auto", "alphabet"};
  try {
    fit::eval_sizes(s, "interp2", o);
    FAIL() << "an unknown method must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'alphabet'"), std::string::npos) << e.what();
  }
  o.methods = {"ceiling-others"};
  EXPECT_THROW(fit::eval_crossn(s, o), std::invalid_argument);  // no held-out sizes to share there
  o.methods = {"regimes2+c", "auto-nc", "seed", "loglog", "regimes"};
  EXPECT_NO_THROW(fit::eval_sizes(s, "interp2", o));
}

// A file of several machines under one source (a CSV written with a system column and no source column) is one
// curve per machine, labelled "source · system": one label had made one curve of both machines' points, the
// median of their times at each size, and crosshw found one system where there were two.
TEST(FitEval, OneSourceOfSeveralMachinesIsACurvePerMachine) {
  std::vector<Sample> samples;
  add_curve(samples, "fleet.csv", "gpu-a", "NCCL", 10);
  add_curve(samples, "fleet.csv", "gpu-b", "NCCL", 40);
  add_curve(samples, "alone.csv", "gpu-c", "NCCL", 20);
  fit::EvalOptions o;
  o.keep_points = true;
  const fit::EvalResult r = fit::eval_sizes(samples, "interp2", o);
  EXPECT_EQ(r.curves, 3);
  const fit::EvalMethodResult* autom = r.method("auto");
  ASSERT_NE(autom, nullptr);
  // Each machine's points are its own: the held-out 2 KiB of gpu-b is 40 + 2048 / 2e5 µs, not a median with gpu-a's.
  const fit::EvalPoint& b = point_at(*autom, "fleet.csv · gpu-b", 1 << 11);
  EXPECT_DOUBLE_EQ(b.measured, true_time(1 << 11, 40));
  EXPECT_NO_THROW(point_at(*autom, "fleet.csv · gpu-a", 1 << 11));
  EXPECT_NO_THROW(point_at(*autom, "alone.csv", 1 << 11));  // a source of one machine keeps its name
}
