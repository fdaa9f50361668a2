// The robustness label, issue #43's classes of a run that gives all its results or none: the outputs of one run are
// replaced together (eval's --json and --points), a models file that holds no model is bad input naming the file for
// every command that reads one, and a plot with nothing to draw fails (exit 1) without leaving a folder behind.
// Each case asserts the exit code, the message and the folder afterwards (inputs byte-identical, nothing left).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "robustness_support.h"
#include "test_support.h"

namespace fs = std::filesystem;
using arfit::testing::arfit_bin;
using arfit::testing::CommandResult;
using arfit::testing::expect_refused_in;
using arfit::testing::expect_unchanged;
using arfit::testing::names_file_line;
using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::snapshot;
using arfit::testing::synthetic_samples;
using arfit::testing::TempDir;

namespace {

const std::string kProfile = std::string(ARFIT_SOURCE_DIR) + "/tests/trace/data/vllm_tp2_small.json";

class AllOrNothing : public ::testing::Test {
 protected:
  // Fitted once for the suite: all-reduce curves (models.json) and all-gather ones (allgather.json, no strategy grid).
  static void SetUpTestSuite() {
    fixture_ = new TempDir;
    for (const auto& [collective, samples, models] :
         {std::tuple<std::string, std::string, std::string>{"allreduce", "samples.csv", "models.json"},
          {"allgather", "allgather.csv", "allgather.json"}}) {
      fixture_->write(samples, synthetic_samples(collective));
      const CommandResult r = run_command(arfit_bin() + " fit " + fixture_->file(samples) + " -o " + fixture_->file(models) + " -q");
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }
  static void TearDownTestSuite() {
    delete fixture_;
    fixture_ = nullptr;
  }

  std::string copy(const std::string& name) {
    fs::copy_file(fixture_->file(name), dir.file(name), fs::copy_options::overwrite_existing);
    return dir.file(name);
  }
  CommandResult arfit_here(const std::string& args) const {
    return run_command("cd " + dir.path().string() + " && " + arfit_bin() + " " + args);
  }

  static TempDir* fixture_;
  TempDir dir;
};

TempDir* AllOrNothing::fixture_ = nullptr;

bool have_gnuplot() { return run_command("command -v ${ARFIT_GNUPLOT:-gnuplot}").exit_code == 0; }

// The formats `arfit codegen --help` lists, so that a format added later is tested too.
std::vector<std::string> codegen_formats() {
  std::istringstream help(run_command(arfit_bin() + " codegen --help").output);
  std::vector<std::string> formats;
  bool listed = false;
  for (std::string line; std::getline(help, line);) {
    if (line == "FORMAT:") listed = true;
    else if (listed && line.rfind("  ", 0) == 0 && line.size() > 2 && line[2] != ' ') formats.push_back(line.substr(2, line.find(' ', 2) - 2));
  }
  return formats;
}

}  // namespace

// ---------------------------------------------------------------- outputs of one run

// --points failing (ulimit -f: the file size limit, as a full disk fails a write) after --json was written: the run
// fails and both files are the old ones. --json used to be renamed into place before --points was written.
TEST_F(AllOrNothing, EvalReplacesJsonAndPointsTogetherOrNeither) {
  copy("samples.csv");
  const std::string eval = "eval samples.csv --protocol interp2 --json results.json --points points.csv";
  const CommandResult full = arfit_here(eval);
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto json_bytes = fs::file_size(dir.file("results.json")), points_bytes = fs::file_size(dir.file("points.csv"));
  // A limit the results fit under and the points do not, in the 512-byte blocks of a POSIX sh's ulimit -f or the
  // 1024-byte ones of bash's.
  const auto blocks = json_bytes / 512 + 1;
  ASSERT_LT(blocks * 1024, points_bytes) << "the points are not large enough to fail where the results fit";
  dir.write("results.json", "old results\n");
  dir.write("points.csv", "old points\n");
  const auto before = snapshot(dir.path());
  const CommandResult r = run_command("cd " + dir.path().string() + " && sh -c 'ulimit -f " + std::to_string(blocks) + "; exec " +
                                      arfit_bin() + " " + eval + "'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("points.csv: cannot write: File too large"), std::string::npos) << r.output;
  expect_unchanged(before, dir.path(), eval + " under ulimit -f");
  // Without the limit both are replaced.
  ASSERT_EQ(arfit_here(eval).exit_code, 0);
  EXPECT_EQ(fs::file_size(dir.file("results.json")), json_bytes);
  EXPECT_EQ(fs::file_size(dir.file("points.csv")), points_bytes);
}

// ---------------------------------------------------------------- models files without models

// `groups: []` (valid JSON, no models) said "choose one with --system (systems: none)" (codegen, suggest), "needs a
// models file" although one was given (plot best), "no model answers" (predict), and exited 0 keeping every collective
// as measured (whatif). Every command that reads a models file refuses it as bad input naming the file and the line.
TEST_F(AllOrNothing, AModelsFileWithoutModelsIsBadInputForEveryCommand) {
  copy("samples.csv");
  copy("models.json");
  dir.write("empty.json", "{\"schema\": \"arfit-models\", \"schema_version\": 1, \"groups\": []}\n");
  const std::string says = "empty.json:1: /groups: the file holds no models (groups is empty)";
  std::vector<std::string> commands = {
      "suggest empty.json",
      "suggest empty.json --json suggestions.json",
      "predict empty.json --collective allreduce --nranks 8 --bytes 1024",
      "predict models.json --prior empty.json --collective allreduce --nranks 8 --bytes 1024",
      "fit samples.csv --prior empty.json -o fitted.json",
      "whatif " + kProfile + " --models empty.json --tp 8",
      "whatif " + kProfile + " --models empty.json --tp 8 -o phases.csv",
  };
  const std::vector<std::string> formats = codegen_formats();
  ASSERT_GE(formats.size(), 7u);
  for (const std::string& format : formats) commands.push_back("codegen empty.json --format " + format + " -o table.out");
  if (have_gnuplot())
    for (const std::string kind : {"fit", "cross", "heatmap", "best", "diff", "all"}) commands.push_back("plot " + kind + " empty.json -o figs");
  for (const std::string& args : commands) {
    const CommandResult r = expect_refused_in(dir, args, 1, {says, "fit one with `arfit fit SAMPLES -o empty.json`"});
    EXPECT_TRUE(names_file_line(r.output, "empty.json")) << args << "\n" << r.output;
  }
  if (have_gnuplot()) {
    expect_refused_in(dir, "plot regret empty.json samples.csv -o figs", 1, {says});
    expect_refused_in(dir, "plot alltoallv samples.csv empty.json -o figs", 1, {says});
  }
  // eval reads measurements, not models: a models file is named as such, empty or not.
  expect_refused_in(dir, "eval empty.json --protocol interp2", 1, {"empty.json: an arfit models file"});

  // Groups none of which was fitted are no model either (`arfit fit` refuses to write such a file).
  nlohmann::json unfitted = nlohmann::json::parse(slurp(dir.file("models.json")));
  for (auto& g : unfitted["groups"]) g = {{"id", g["id"]}, {"key", g["key"]}, {"ok", false}, {"problem", "only 3 distinct sizes"}};
  dir.write("unfitted.json", unfitted.dump(1) + "\n");
  for (const std::string args : {"codegen unfitted.json --format json -o table.json", "suggest unfitted.json",
                                 "predict unfitted.json --collective allreduce --nranks 8 --bytes 1024"})
    expect_refused_in(dir, args, 1, {"unfitted.json:", "/groups: the file holds no fitted model (none of its 2 groups was fitted; /groups/0: only 3 distinct sizes)"});
}

// ---------------------------------------------------------------- nothing to draw

// A plot that draws no figure fails (exit 1, as eval and plot errors with nothing to evaluate) and says why; cross and
// alltoallv exited 0 and left an empty folder. No folder is made (nor its missing parents), and an existing one is
// left as it was, its index page included.
TEST_F(AllOrNothing, PlotWithNothingToDrawFailsAndLeavesNoFolder) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  copy("samples.csv");
  copy("models.json");
  copy("allgather.csv");
  copy("allgather.json");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      // 8 ranks measured, 8 asked: no TP left to predict.
      {"plot cross models.json -o figs --tp 8", {"plot cross: nothing to draw: no family has a TP in --tp"}},
      {"plot cross models.json samples.csv -o out/sub/figs --tp 8 --sm 90", {"plot cross: nothing to draw"}},
      {"plot alltoallv samples.csv models.json -o figs", {"plot alltoallv: nothing to draw: no all-to-allv group has an all-to-all model"}},
      {"plot heatmap allgather.json -o figs", {"plot heatmap: nothing to draw: allgather.json has no fitted all-reduce group"}},
      {"plot best allgather.json -o figs", {"plot best: nothing to draw: allgather.json has no fitted all-reduce group"}},
      {"plot diff allgather.csv -o figs", {"plot diff: nothing to draw: the samples hold no successful all-reduce measurement"}},
      {"plot regret models.json allgather.csv -o figs", {"plot regret: nothing to draw: the samples hold no successful all-reduce"}},
  };
  for (const auto& [args, needles] : cases) {
    std::vector<std::string> says = needles;
    says.push_back("no figure written");
    expect_refused_in(dir, args, 1, says);
  }
  // Into a folder that holds an earlier run's figures and index page: all of it as it was.
  ASSERT_EQ(arfit_here("plot fit samples.csv -o figs --index figs/index.html").exit_code, 0);
  const auto figures_before = snapshot(dir.path() / "figs");
  for (const std::string args : {"plot cross models.json -o figs --tp 8 --index figs/index.html",
                                 "plot alltoallv samples.csv models.json -o figs --index figs/index.html"}) {
    expect_refused_in(dir, args, 1, {"nothing to draw"});
    expect_unchanged(figures_before, dir.path() / "figs", args);
  }
  // An input missing from the command line stays a usage error (exit 2), not nothing to draw.
  expect_refused_in(dir, "plot regret models.json -o figs2", 2, {"plot regret needs a strategy table"});
  expect_refused_in(dir, "plot alltoallv samples.csv -o figs2", 2, {"plot alltoallv needs"});
}
