// `arfit plot` under faults (the robustness label): a gnuplot that fails mid-run, figure names that fold to one
// file stem, bad values in an eval JSON, and a signal while figures are staged. Each asserts the exit code, the
// message and the output folder afterwards (old figures byte-identical, no staging folder left).
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "io/atomic_output.h"
#include "io/staging_folder.h"
#include "model/json_input.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "plots/gnuplot_runner.h"
#include "robustness_support.h"
#include "test_support.h"

namespace fs = std::filesystem;
using arfit::testing::arfit_bin;
using arfit::testing::expect_unchanged;
using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::snapshot;
using arfit::testing::TempDir;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// Three all-reduce strategies of one or more systems on 2 ranks, 1 KiB .. 1 MiB.
std::string write_samples(const TempDir& tmp, const std::string& name, const std::vector<std::string>& systems) {
  arfit::SampleFile f;
  for (const auto& system : systems)
    for (const char* strategy : {"NCCL", "ONESHOT", "TWOSHOT"})
      for (std::int64_t bytes = 1024; bytes <= (1 << 20); bytes *= 4) {
        arfit::Sample x;
        x.strategy = strategy;
        x.nranks = 2;
        x.bytes = bytes;
        x.time_us = 5.0 + static_cast<double>(bytes) / (strategy[0] == 'N' ? 9e4 : strategy[0] == 'O' ? 5e4 : 7e4);
        x.device = system;
        f.samples.push_back(x);
      }
  const std::string path = tmp.file(name);
  arfit::write_samples_csv(path, f);
  return path;
}

class PlotRobustness : public ::testing::Test {
 protected:
  void SetUp() override {
    gnuplot_ = arfit::plots::find_gnuplot();
    if (gnuplot_.empty()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  }
  // A gnuplot that fails on any script whose commands mention `word`, and runs the real one otherwise.
  std::string failing_gnuplot(const std::string& word) {
    const std::string path = tmp_.write("failing-gnuplot.sh", "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *" + word +
                                                                   "*) echo 'forced failure' >&2; exit 1;; esac\n"
                                                                   "printf '%s\\n' \"$input\" | '" + gnuplot_ + "'\n");
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  std::string gnuplot_;
  TempDir tmp_;
};

// gnuplot fails on the second figure of a run: the first figure's old script and image (and the index page) are
// byte-identical afterwards, nothing new is in the folder, no staging folder is left, and the exit code is 1. Before,
// figure 1 had already replaced its old files when figure 2 failed. `plot fit` and `plot all` share the renderer.
TEST_F(PlotRobustness, FailedRenderLeavesEveryOldFigure) {
  const std::string csv = write_samples(tmp_, "toy.csv", {"toy-gpu"});
  const std::string out = tmp_.file("fig"), index = tmp_.file("fig/index.html");
  auto r = run_command(arfit_bin() + " plot fit " + csv + " -o " + out + " --index " + index);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Old files unlike what this run draws, so a replaced one shows.
  const std::string first = out + "/fit_toy-gpu_allreduce_NCCL_NONE_bf16_n2";
  ASSERT_TRUE(fs::exists(first + ".png")) << r.output;
  for (const auto& p : {first + ".gp", first + ".png", index}) std::ofstream(p, std::ios::binary) << "old " << p;
  const auto before = snapshot(out);
  for (const char* kind : {"fit", "all"}) {
    r = run_command("ARFIT_GNUPLOT='" + failing_gnuplot("ONESHOT") + "' " + arfit_bin() + " plot " + kind + " " + csv +
                    " -o " + out + " --index " + index);
    EXPECT_EQ(r.exit_code, 1) << kind << ": " << r.output;
    EXPECT_TRUE(has(r.output, "forced failure")) << r.output;
    EXPECT_FALSE(has(r.output, "wrote ")) << r.output;
    expect_unchanged(before, out, kind);
  }
  EXPECT_EQ(slurp(first + ".gp"), "old " + first + ".gp");
}

// The index never lists the figures in a staging folder (of a run still going, or one killed by SIGKILL).
TEST_F(PlotRobustness, IndexSkipsStagingFolders) {
  const std::string csv = write_samples(tmp_, "toy.csv", {"toy-gpu"});
  const std::string out = tmp_.file("fig");
  ASSERT_EQ(run_command(arfit_bin() + " plot best " + csv + " -o " + out).exit_code, 0);
  const std::string staged = out + "/.arfit-plot.tmp.1";
  fs::create_directories(staged);
  for (const char* ext : {".gp", ".png"}) fs::copy_file(out + "/best_toy-gpu.png", staged + "/best_other" + ext);
  std::ofstream(staged + "/best_other.gp") << "# arfit-figure v1\n# title: staged\n";
  for (const std::string& cmd : {" plot index " + out, " plot best " + csv + " -o " + out + " --index " + out + "/index.html"}) {
    auto r = run_command(arfit_bin() + cmd);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string html = slurp(out + "/index.html");
    EXPECT_TRUE(has(html, "best_toy-gpu.png")) << html;
    EXPECT_FALSE(has(html, ".arfit-")) << html;
    EXPECT_TRUE(has(html, "1 figure.")) << html;
  }
}

// A failed first run into a folder that did not exist leaves no folder behind either.
TEST_F(PlotRobustness, FailedRenderIntoANewFolderLeavesNoFolder) {
  const std::string csv = write_samples(tmp_, "toy.csv", {"toy-gpu"});
  const std::string out = tmp_.file("new/fig");
  auto r = run_command("ARFIT_GNUPLOT='" + failing_gnuplot("ONESHOT") + "' " + arfit_bin() + " plot fit " + csv + " -o " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_FALSE(fs::exists(tmp_.file("new"))) << r.output;
}

// Systems "a b" and "a_b" fold to the same stem; each gets its own figure (the second one drawn is numbered).
// Two eval JSON files of one name in different folders give errors_eval_* and errors_eval_*_2.
TEST_F(PlotRobustness, FiguresWhoseNamesFoldAlikeAreAllWritten) {
  const std::string csv = write_samples(tmp_, "two.csv", {"a b", "a_b"});
  const std::string out = tmp_.file("fig");
  auto r = run_command(arfit_bin() + " plot best " + csv + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> scripts;
  for (const auto& e : fs::directory_iterator(out))
    if (e.path().extension() == ".gp") scripts.push_back(slurp(e.path().string()));
  ASSERT_EQ(scripts.size(), 2u) << r.output;
  // Both fold to "a_b": the second figure drawn is numbered.
  EXPECT_TRUE(fs::exists(out + "/best_a_b.png")) << r.output;
  EXPECT_TRUE(fs::exists(out + "/best_a_b_2.png")) << r.output;
  EXPECT_NE(has(scripts[0], "# title: a b ·"), has(scripts[1], "# title: a b ·")) << r.output;
  EXPECT_NE(has(scripts[0], "# title: a_b ·"), has(scripts[1], "# title: a_b ·")) << r.output;
  // The same names in a second run.
  const auto before = snapshot(out);
  ASSERT_EQ(run_command(arfit_bin() + " plot best " + csv + " -o " + out).exit_code, 0);
  EXPECT_EQ(snapshot(out).size(), before.size());

  const nlohmann::json eval = {{"protocol", "interp2"}, {"methods", {{"auto", {{"gmae", 1.0}, {"median", 0.5}, {"p90", 2.0}}}}}};
  fs::create_directories(tmp_.file("x"));
  fs::create_directories(tmp_.file("y"));
  tmp_.write("x/eval.json", eval.dump());
  tmp_.write("y/eval.json", eval.dump());
  r = run_command(arfit_bin() + " plot errors " + tmp_.file("x/eval.json") + " " + tmp_.file("y/eval.json") + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/errors_eval_summary.png")) << r.output;
  EXPECT_TRUE(fs::exists(out + "/errors_eval_summary_2.png")) << r.output;
}

// The eval JSON of `plot errors` is read through JsonView: a value of the wrong type, out of range or a name with
// a control character is refused naming file, line and JSON pointer (exit 1), and nothing is written. Before, a
// wrong type printed "[json.exception.type_error...]" with no line, and a negative regret was drawn.
TEST_F(PlotRobustness, EvalJsonValuesAreChecked) {
  const nlohmann::json good = {
      {"protocol", "select"},
      {"measured_fraction", 0.5},
      {"methods", {{"auto", {{"geomean_regret", 1.01}, {"p95_regret", 1.1}, {"max_regret", 1.2}, {"exact", 90.0}, {"cells", 2}}}}},
      {"cells",
       {{{"method", "auto"}, {"system", "b200"}, {"nranks", 8}, {"bytes", 4096}, {"regret", 1.0}},
        {{"method", "auto"}, {"system", "b200"}, {"nranks", 8}, {"bytes", 8192}, {"regret", 1.25}}}},
      {"points", {{{"method", "auto"}, {"measured_us", 10.0}, {"predicted_us", 11.0}}}}};
  struct Bad {
    const char* pointer;
    nlohmann::json value;
    const char* reason;
  };
  const Bad cases[] = {{"/methods/auto/geomean_regret", "x", "expected a number, got string"},
                       {"/methods/auto/exact", 101, "expected a number in 0.0..100.0"},
                       {"/measured_fraction", 2, "expected a number in 0.0..1.0"},
                       {"/protocol", 5, "expected a string, got number"},
                       {"/cells/1/regret", -0.5, "expected a number >= 1, got -0.5"},
                       {"/cells/1/nranks", 0, "expected a whole number in 1.."},
                       {"/cells/1/system", "a\x01" "b", "control character \\x01"},
                       {"/cells/1/method", true, "expected a string, got"},
                       {"/points/0/measured_us", 0, "expected a number > 0"},
                       {"/points/0/method", "a\nb", "control character \\n"}};
  const std::string out = tmp_.file("fig");
  for (const Bad& c : cases) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const std::string text = j.dump(1);
    const std::string path = tmp_.write("select.json", text);
    const long line = arfit::json_line_of(text, c.pointer);
    ASSERT_GT(line, 1) << c.pointer;
    auto r = run_command(arfit_bin() + " plot errors " + path + " -o " + out);
    EXPECT_EQ(r.exit_code, 1) << c.pointer << ": " << r.output;
    EXPECT_TRUE(has(r.output, path + ":" + std::to_string(line) + ": " + c.pointer + ": " + c.reason)) << r.output;
    EXPECT_FALSE(has(r.output, "json.exception")) << r.output;
    EXPECT_FALSE(fs::exists(out)) << c.pointer;
  }
  const std::string path = tmp_.write("select.json", good.dump(1));
  auto r = run_command(arfit_bin() + " plot errors " + path + " -o " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/select_regret_b200.png")) << r.output;
}

// SIGINT / SIGTERM / SIGHUP while outputs are staged: the handler removes the staging folder and what it holds (a
// finished file and a temporary one), the old output is untouched, and the process dies of the signal.
TEST(StagingFolder, SignalsRemoveTheStagingFolder) {
  TempDir tmp;
  const std::string out = tmp.file("out");
  fs::create_directories(out);
  tmp.write("out/a.csv", "old");
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    arfit::testing::expect_killed_mid_write(sig, [&] {
      arfit::StagingFolder staging(out, "test");
      arfit::write_string_atomically(staging.file("a.csv"), "new");
      arfit::write_file_atomically(staging.file("b.csv"), [&](std::ostream& os) {
        os << "partial";
        os.flush();
        if (!fs::exists(staging.file("a.csv"))) std::_Exit(10);
        ::raise(sig);
        std::_Exit(11);  // not reached: the signal's default action ends the process
      });
    });
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(out)) left.push_back(e.path().filename().string());
    EXPECT_EQ(left, std::vector<std::string>{"a.csv"}) << "signal " << sig;
    EXPECT_EQ(slurp(tmp.file("out/a.csv")), "old");
  }
}

}  // namespace

// --tp and the grid's cells have the bounds `arfit codegen` applies (2^20 GPUs; tokens x hidden x dtype within 1e18
// bytes), refused before anything is read or the output folder is made.
TEST(PlotOptions, RanksAndCellsAboveTheModelBoundsAreUsageErrors) {
  TempDir tmp;
  const std::string samples = write_samples(tmp, "s.csv", {"box"});
  const std::string out = tmp.file("figures");
  auto r = run_command(arfit_bin() + " plot cross " + samples + " -o " + out + " --tp 2,2097152");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--tp: 2097152 is above 1048576 (2^20)")) << r.output;
  r = run_command(arfit_bin() + " plot heatmap " + samples + " -o " + out + " --tokens 1099511627776 --hidden 1099511627776");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--tokens x --hidden: 1099511627776 x 1099511627776 x bf16")) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

// Every grid and target option (--tp, --fusion, --sm, --tokens, --hidden) is parsed once, up front: a bad value is
// a usage error naming the option before any input is read (here one that does not exist), whatever the kind.
TEST(PlotOptions, GridOptionsAreParsedBeforeAnyInputIsRead) {
  TempDir tmp;
  const std::string missing = tmp.file("missing.csv"), out = tmp.file("figures");
  for (const auto& [option, says] : std::vector<std::pair<std::string, std::string>>{
           {"--fusion bogus", "--fusion"}, {"--sm 9x", "--sm"}, {"--tp 0", "--tp"}, {"--tokens 3", "--tokens"},
           // An SM without bandwidth figures drew nothing with exit 0 (cross); an unknown --dtype was exit 1 after
           // the inputs were read.
           {"--sm 7", "--sm: 7 is not an SM"}, {"--dtype bogus", "--dtype: unknown dtype 'bogus'"}}) {
    for (const std::string kind : {"heatmap", "cross", "fit"}) {
      const auto r = run_command(arfit_bin() + " plot " + kind + " " + missing + " -o " + out + " " + option);
      EXPECT_EQ(r.exit_code, 2) << kind << " " << option << ": " << r.output;
      EXPECT_TRUE(has(r.output, says)) << kind << " " << option << ": " << r.output;
      EXPECT_FALSE(has(r.output, "no such file")) << kind << " " << option << ": " << r.output;
    }
  }
  EXPECT_FALSE(fs::exists(out));
}

// --sm carries a grid from models to that SM as codegen's --sm --transfer-sm does, and a machine whose SM has no
// datasheet figures is refused as codegen refuses it (plot drew no figure with exit 0 where codegen said why).
TEST(PlotOptions, GridsRefuseAnSmTransferAsCodegenDoes) {
  TempDir tmp;
  std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us,sm\n";
  for (int k = 10; k <= 26; ++k)
    for (const auto& [strategy, alpha] : std::vector<std::pair<std::string, double>>{{"NCCL", 15}, {"custom", 3}})
      csv += "allreduce," + strategy + ",NONE,bf16,2," + std::to_string(1LL << k) + "," +
             std::to_string(alpha + static_cast<double>(1LL << k) / 4e5) + ",\n";
  const std::string models = tmp.file("m.json"), out = tmp.file("figures");
  auto r = run_command(arfit_bin() + " fit " + tmp.write("s.csv", csv) + " -o " + models);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto codegen = run_command(arfit_bin() + " codegen " + models + " --format json --tp 2 --sm 100 --transfer-sm -o " + tmp.file("t.json"));
  EXPECT_EQ(codegen.exit_code, 2) << codegen.output;
  for (const std::string kind : {"best", "heatmap"}) {
    r = run_command(arfit_bin() + " plot " + kind + " " + models + " --sm 100 -o " + out);
    EXPECT_EQ(r.exit_code, 2) << kind << ": " << r.output;
    EXPECT_TRUE(has(r.output, "--sm: system 'default' was measured on an SM arfit cannot tell")) << r.output;
    EXPECT_TRUE(has(r.output, "cannot be carried to --sm 100")) << r.output;
  }
  EXPECT_FALSE(fs::exists(out));
}

// A grid from models is predicted for one SM: several --sm are refused for the grid kinds (they took the first and
// dropped the rest silently); cross draws one curve per SM.
TEST(PlotOptions, GridKindsTakeOneSm) {
  TempDir tmp;
  const std::string missing = tmp.file("missing.json"), out = tmp.file("figures");
  for (const std::string kind : {"heatmap", "best", "diff", "regret"}) {
    const auto r = run_command(arfit_bin() + " plot " + kind + " " + missing + " -o " + out + " --sm 90,100");
    EXPECT_EQ(r.exit_code, 2) << kind << ": " << r.output;
    EXPECT_TRUE(has(r.output, "predicts its grids for one SM, got 2")) << kind << ": " << r.output;
  }
  const auto cross = run_command(arfit_bin() + " plot cross " + missing + " -o " + out + " --sm 90,100");
  EXPECT_TRUE(has(cross.output, "no such file")) << cross.output;  // past the options: several SMs are cross's to draw
  EXPECT_FALSE(fs::exists(out));
}
