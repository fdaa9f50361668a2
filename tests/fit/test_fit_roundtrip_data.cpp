// Every group `fit_model_set` writes for each public measurement file (../shared/data/public; skipped when absent)
// round-trips through the models file's reader, and none had to be set aside as unloadable; and so does every
// group and joint family of a calibration run (each public machine cut to its `anchors:3` sizes) fitted with
// the other machines as priors, as `arfit fit --prior` fits it.
#include <gtest/gtest.h>

#include <algorithm>

#include <map>
#include <memory>
#include <set>

#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/model_set.h"
#include "public_files.h"

using namespace arfit;

namespace {

constexpr const char* kUnloadable = "outside what a models file may hold";

}  // namespace

TEST(FitRoundTripData, EveryFittedGroupOfThePublicFilesLoads) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  fit::FitOptions fo;
  fo.threads = 2;
  int fitted = 0;
  for (const auto& [f, samples] : arfit::testing::readable_public_files()) {
    const ModelSet set = fit::fit_model_set(samples, fo, {f});
    // A set without a fitted group is what `arfit fit` refuses to write and every reader refuses as holding no
    // model (one file sweeps GPU counts at one size): nothing to round-trip.
    const auto& all = set.raw().at("groups");
    if (std::none_of(all.begin(), all.end(), [](const auto& g) { return g.value("ok", false); })) continue;
    const std::string text = set.raw().dump(1);
    ModelSet loaded;
    ASSERT_NO_THROW(loaded = ModelSet::parse(text, f)) << f;
    EXPECT_EQ(loaded.groups().size(), set.groups().size()) << f;
    for (const auto& g : loaded.raw().at("groups")) {
      EXPECT_NO_THROW(GroupModel::from_json(g)) << f << " " << g.at("id");
      EXPECT_EQ(g.value("problem", std::string()).find(kUnloadable), std::string::npos)
          << f << " " << g.at("id") << ": " << g.value("problem", std::string());
      fitted += g.value("ok", false);
    }
  }
  EXPECT_GT(fitted, 100);
}

// Each public machine's curves cut to their anchors:3 sizes, fitted with every other machine's fitted models as
// priors (the library `arfit fit --prior` builds): the text written loads whole, each group and each joint family
// through its own reader, and no group was set aside as unloadable.
TEST(FitRoundTripData, AnAnchorsRunFittedWithTheOtherMachinesAsPriorsLoads) {
  const auto by_system = arfit::testing::public_samples_by_system();
  if (by_system.size() < 2) GTEST_SKIP() << "public data folder absent (or one machine only)";
  fit::FitOptions fo;
  fo.threads = 2;
  std::map<std::string, ModelSet> fitted;
  for (const auto& [system, samples] : by_system) fitted[system] = fit::fit_model_set(samples, fo);
  int transferred = 0, joint = 0;
  for (const auto& [system, samples] : by_system) {
    const std::vector<Sample> anchors = arfit::testing::samples_at_anchors(samples, 3);
    for (const fit::Curve& c : fit::build_curves(anchors)) ASSERT_LE(c.bytes.size(), 3u) << c.key.id();
    const ModelSet set = arfit::testing::fit_with_other_machines_as_priors(anchors, system, fitted, fo);
    const nlohmann::json written = nlohmann::json::parse(set.raw().dump(1));
    EXPECT_NO_THROW(ModelSet::from_json(written)) << system;
    for (const auto& g : written.at("groups")) {
      EXPECT_NO_THROW(GroupModel::from_json(g)) << system << " " << g.at("id");
      const std::string why = g.value("problem", std::string());
      EXPECT_EQ(why.find(kUnloadable), std::string::npos) << "set aside as unloadable: " << g.at("id") << ": " << why;
      transferred += g.value("ok", false) && g.contains("transfer");
    }
    for (const auto& family : written.at("joint")) {
      EXPECT_NO_THROW(JointModel::from_json(family)) << system << " " << family.at("id");
      ++joint;
    }
  }
  std::printf("%zu machines: %d groups transferred from the priors, %d joint families\n", by_system.size(), transferred, joint);
  EXPECT_GT(transferred, 100);
  EXPECT_GT(joint, 0);
}
