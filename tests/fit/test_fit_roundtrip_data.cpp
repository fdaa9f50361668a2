// Every group `fit_model_set` writes for each public measurement file (../shared/data/public; skipped when absent)
// round-trips through the models file's reader, and none had to be set aside as unloadable.
#include <gtest/gtest.h>

#include "fit/fit.h"
#include "ingest/ingest.h"
#include "model/group_model.h"
#include "model/model_set.h"
#include "test_support.h"

using namespace arfit;

TEST(FitRoundTripData, EveryFittedGroupOfThePublicFilesLoads) {
  const auto files = arfit::testing::public_data_files();
  if (files.empty()) GTEST_SKIP() << "public data folder absent";
  fit::FitOptions fo;
  fo.threads = 2;
  int fitted = 0;
  for (const std::string& f : files) {
    std::vector<Sample> samples;
    try {
      samples = ingest::ingest_file(f).samples;
    } catch (const std::exception&) {
      continue;  // files the readers do not take (busbw-only tables) hold no curves
    }
    const ModelSet set = fit::fit_model_set(samples, fo, {f});
    const std::string text = set.raw().dump(1);
    ModelSet loaded;
    ASSERT_NO_THROW(loaded = ModelSet::parse(text, f)) << f;
    EXPECT_EQ(loaded.groups().size(), set.groups().size()) << f;
    for (const auto& g : loaded.raw().at("groups")) {
      EXPECT_NO_THROW(GroupModel::from_json(g)) << f << " " << g.at("id");
      EXPECT_EQ(g.value("problem", std::string()).find("outside what a models file may hold"), std::string::npos)
          << f << " " << g.at("id") << ": " << g.value("problem", std::string());
      fitted += g.value("ok", false);
    }
  }
  EXPECT_GT(fitted, 100);
}
