// `arfit fit` never writes a group its own readers refuse (fit/model_set_fit.cpp): a fitted or transferred group
// whose JSON GroupModel::from_json would refuse is written as not fitted, with the reader's reason, and the file
// written loads; and the producers of the groups it refused on real-looking inputs. The inputs are extreme but
// valid samples, through the real fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/group_model.h"
#include "model/errors.h"
#include "model/joint_model.h"
#include "model/json_input.h"
#include "model/model_set.h"

using namespace arfit;

namespace {

Sample sample(const std::string& device, const std::string& strategy, double bytes, double time_us) {
  Sample x;
  x.collective = Collective::AllReduce;
  x.strategy = strategy;
  x.dtype = "bf16";
  x.nranks = 8;
  x.device = device;
  x.bytes = static_cast<std::int64_t>(bytes);
  x.time_us = time_us;
  return x;
}

// An alpha-beta machine measured at 2^first .. 2^last bytes, its times written with 6 digits as in a samples file.
std::vector<Sample> sweep(const std::string& device, double alpha_us, double bytes_per_us, int first, int last) {
  std::vector<Sample> out;
  for (int e = first; e <= last; ++e) {
    char t[32];
    std::snprintf(t, sizeof t, "%.6g", alpha_us + 1.75 * std::ldexp(1.0, e) / bytes_per_us);
    out.push_back(sample(device, "NCCL", std::ldexp(1.0, e), std::strtod(t, nullptr)));
  }
  return out;
}

const nlohmann::json& group_of(const ModelSet& set, const std::string& id) {
  for (const auto& g : set.raw().at("groups"))
    if (g.at("id") == id) return g;
  throw std::runtime_error("no group " + id);
}

// The file `arfit fit` writes (ModelSet::save's text) read back as predict, codegen and plot read it.
void expect_loads(const ModelSet& set) {
  EXPECT_NO_THROW(ModelSet::parse(set.raw().dump(1), "m.json"));
}

}  // namespace

// Two valid sizes, 1 B in 1 ns and 2 B in 1000 s: the tail line above the range rises 1e9 us per byte, beyond
// the 1 ms per byte a models file may hold. Before, the whole fit failed on it ("<models>: /groups/0/tail/...");
// now that group alone is not fitted, with the reader's reason, and the other is written.
TEST(FitRoundTrip, AGroupTheReaderRefusesIsNotFittedWithTheReadersReason) {
  std::vector<Sample> s = {sample("H100", "NCCL", 1, 1e-3), sample("H100", "NCCL", 2, 1e9)};
  for (const Sample& x : sweep("H100", 10, 100e3, 10, 20)) {
    s.push_back(x);
    s.back().strategy = "oneshot";
  }
  fit::FitOptions fo;
  fo.min_points = 2;
  const ModelSet set = fit::fit_model_set(s, fo);
  const auto& bad = group_of(set, "H100/allreduce/NCCL/NONE/bf16/n8/N1");
  EXPECT_FALSE(bad.at("ok").get<bool>());
  const std::string why = bad.at("problem").get<std::string>();
  EXPECT_NE(why.find("outside what a models file may hold: /tail/b_us_per_byte"), std::string::npos) << why;
  EXPECT_TRUE(group_of(set, "H100/allreduce/oneshot/NONE/bf16/n8/N1").at("ok").get<bool>());
  expect_loads(set);
}

// `fit --prior` with one anchor of a machine far slower than the prior (1 MiB in 550 s): the transfer carried
// the prior's shape up to its largest size, 1 TiB, and its grid reached 1.4e9 us at 1 GiB, beyond any time a
// sample can have, as a correction knot the reader refused (the whole fit failed on it). The grid now stops at
// the last size whose time a sample can have; above it the group answers as extrapolated.
TEST(FitRoundTrip, ATransferStopsItsGridAtMeasurableTimes) {
  fit::FitOptions fo;
  fo.prior = std::make_shared<fit::TransferLibrary>(std::vector<ModelSet>{fit::fit_model_set(sweep("A100", 20, 400e3, 0, 40))});
  const ModelSet set = fit::fit_model_set({sample("H100", "NCCL", std::ldexp(1.0, 20), 5.5e8)}, fo, {}, {"prior.json"});
  const auto& g = group_of(set, "H100/allreduce/NCCL/NONE/bf16/n8/N1");
  ASSERT_TRUE(g.at("ok").get<bool>()) << g.value("problem", "");
  ASSERT_TRUE(g.contains("transfer"));
  const double max_bytes = g.at("range").at("max_bytes").get<double>();
  EXPECT_GE(max_bytes, std::ldexp(1.0, 20));
  EXPECT_LT(max_bytes, std::ldexp(1.0, 30));
  expect_loads(set);
  PredictQuery q = group_query(GroupKey{"H100", Collective::AllReduce, "NCCL", FusionOp::None, "bf16", 8, 1}, std::ldexp(1.0, 30));
  const auto p = set.predict(q);
  ASSERT_TRUE(p.has_value());
  EXPECT_TRUE(p->extrapolated);
  EXPECT_GT(p->time_us, 1e9);  // the transfer's answer is kept, as an extrapolation
}

// A sample of exactly 1e9 us (the largest a sample may have) came back through exp(ln model + residual) as
// 1.0000000000000002e9 us and the reader refused its knot: the measured time is a measured time.
TEST(FitRoundTrip, AKnotAtTheLargestSampleTimeLoads) {
  fit::FitOptions fo;
  fo.prior = std::make_shared<fit::TransferLibrary>(std::vector<ModelSet>{fit::fit_model_set(sweep("A100", 20000, 0.4e3, 0, 37))});
  const ModelSet set =
      fit::fit_model_set({sample("H100", "NCCL", 1, 1e8), sample("H100", "NCCL", std::ldexp(1.0, 40), 1e9)}, fo, {}, {"prior.json"});
  const auto& g = group_of(set, "H100/allreduce/NCCL/NONE/bf16/n8/N1");
  EXPECT_TRUE(g.at("ok").get<bool>()) << g.value("problem", "");
  EXPECT_TRUE(g.contains("transfer"));
  expect_loads(set);
}

// Two anchors an octave apart whose times differ 9,400x (2 MiB in 1 ms, 4 MiB in 9.4 s): the transfer's σ of ln t
// grows with the octaves beyond them, past 50 (the largest a models file holds) toward 1 TiB, and the reader
// refused the group. σ is held at 50 there, where the interval's half-width is capped anyway.
TEST(FitRoundTrip, ATransfersSigmaIsHeldAtTheLargestAFileHolds) {
  fit::FitOptions fo;
  fo.prior = std::make_shared<fit::TransferLibrary>(std::vector<ModelSet>{fit::fit_model_set(sweep("A100", 20, 400e3, 0, 40))});
  const ModelSet set = fit::fit_model_set(
      {sample("H100", "NCCL", std::ldexp(1.0, 21), 1000), sample("H100", "NCCL", std::ldexp(1.0, 22), 9.41635e+06)}, fo, {}, {"prior.json"});
  const auto& g = group_of(set, "H100/allreduce/NCCL/NONE/bf16/n8/N1");
  ASSERT_TRUE(g.at("ok").get<bool>()) << g.value("problem", "");
  double largest = 0;
  for (double s : g.at("transfer").at("log_sigma")) largest = std::max(largest, s);
  EXPECT_EQ(largest, kMaxLogSigma);
  expect_loads(set);
}

// The joint-n guard (fit/model_set_fit.cpp, joint_loadable) cannot be reached through fit_model_set: a family's
// block holds only the compile-time defaults (kappa, sigma per doubling, smooth octaves, excess-trend sigma, all
// inside the reader's bounds) and members that each passed GroupModel::from_json, at distinct rank counts. The
// guard is the reader itself, JointModel::from_json on JointModel::make_json's text: here that pair is checked on
// a family fit writes, and on the same members with a block the reader refuses, which fit would leave out.
TEST(FitRoundTrip, AJointFamilyIsWrittenAsTheReaderReadsItAndOneItRefusesWouldNotLoad) {
  std::vector<Sample> s = sweep("H100", 10, 100e3, 10, 24);
  for (Sample x : sweep("H100", 14, 90e3, 10, 24)) {
    x.nranks = 4;
    s.push_back(x);
  }
  const ModelSet set = fit::fit_model_set(s);
  const nlohmann::json written = nlohmann::json::parse(set.raw().dump(1));
  ASSERT_EQ(written.at("joint").size(), 1u);
  const nlohmann::json& family = written.at("joint").at(0);
  JointModel read;
  ASSERT_NO_THROW(read = JointModel::from_json(family));
  EXPECT_EQ(read.members.size(), 2u);
  expect_loads(set);
  // What fit writes is make_json over the members with the defaults: the block checked below is fit's own.
  const GroupKey key = read.key;
  const std::vector<nlohmann::json> members = family.at("members").get<std::vector<nlohmann::json>>();
  EXPECT_EQ(JointModel::make_json(key, members, kJointKappa, kJointSigmaPerDoubling), family);

  // The same valid members, a kappa beyond the reader's [0, 4]: refused, naming the field, and a file holding it
  // does not load; so is a family whose two members share a rank count.
  nlohmann::json beyond = JointModel::make_json(key, members, 5.0, kJointSigmaPerDoubling);
  try {
    JointModel::from_json(beyond);
    ADD_FAILURE() << "a kappa of 5 was read";
  } catch (const JsonError& e) {
    EXPECT_NE(std::string(e.what()).find("/kappa"), std::string::npos) << e.what();
  }
  nlohmann::json with_beyond = written;
  with_beyond["joint"][0] = beyond;
  try {
    ModelSet::from_json(with_beyond);
    ADD_FAILURE() << "a file holding a kappa of 5 loaded";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/joint/0/kappa"), std::string::npos) << e.what();
  }
  EXPECT_THROW(JointModel::from_json(JointModel::make_json(key, {members[0], members[0]}, kJointKappa, kJointSigmaPerDoubling)),
               JsonError);
}
