// `arfit plot` end to end on small files written by the test: figures, .gp scripts, the index page, errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "io/staging_folder.h"
#include "model/json_input.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "plot_fixtures.h"
#include "plots/gnuplot_runner.h"
#include "png_check.h"
#include "test_support.h"

namespace fs = std::filesystem;
using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::TempDir;

namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::string write_toy_samples(const TempDir& tmp) {
  arfit::SampleFile f;
  for (std::int64_t t : {1, 16, 256, 4096})
    for (std::int64_t h : {128, 1024, 8192})
      for (int s = 0; s < 3; ++s) {
        arfit::Sample x;
        x.strategy = arfit::plots::fixtures::toy_strategies()[static_cast<std::size_t>(s)];
        x.nranks = 2;
        x.tokens = t;
        x.hidden = h;
        x.bytes = t * h * 2;
        x.time_us = arfit::plots::fixtures::toy_strategy_us(s, t, h);
        x.device = "toy-gpu";
        f.samples.push_back(x);
      }
  std::string path = tmp.file("toy.csv");
  arfit::write_samples_csv(path, f);
  return path;
}

class PlotCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (arfit::plots::find_gnuplot().empty()) GTEST_SKIP() << "gnuplot is not installed (apt-get install gnuplot-nox)";
  }
  TempDir tmp_;
};

TEST_F(PlotCli, BestDiffHeatmapFromSamplesAndIndex) {
  std::string csv = write_toy_samples(tmp_);
  std::string out = tmp_.file("fig"), index = tmp_.file("index.html");
  for (const char* kind : {"best", "diff", "heatmap"}) {
    auto r = run_command(arfit::testing::arfit_bin() + " plot " + kind + " " + csv + " -o " + out + " --index " + index);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_TRUE(has(r.output, "wrote ")) << r.output;
  }
  auto png = arfit::plots::testing::read_png_header(out + "/best_toy-gpu_tp2.png");
  EXPECT_TRUE(png.valid) << png.problem;
  std::string gp = slurp(out + "/best_toy-gpu_tp2.gp");
  EXPECT_TRUE(has(gp, "# title: toy-gpu · allreduce · TP2 · bf16 · best strategy per cell (measured)")) << gp.substr(0, 300);
  EXPECT_TRUE(has(gp, "title 'NCCL ")) << gp;
  EXPECT_TRUE(arfit::plots::testing::read_png_header(out + "/diff_toy-gpu_tp2_NONE.png").valid);
  EXPECT_TRUE(arfit::plots::testing::read_png_header(out + "/heatmap_toy-gpu_tp2_NONE.png").valid);

  std::string html = slurp(index);
  EXPECT_TRUE(has(html, "<img src=\"fig/best_toy-gpu_tp2.png\"")) << html;
  EXPECT_TRUE(has(html, "fig/diff_toy-gpu_tp2_NONE.png"));
  EXPECT_TRUE(has(html, "3 figures"));
  EXPECT_FALSE(has(html, "<script"));

  // the index command rebuilds the same page from the folder alone
  auto r = run_command(arfit::testing::arfit_bin() + " plot index " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(slurp(out + "/index.html"), "<img src=\"best_toy-gpu_tp2.png\""));
}

// Runs writing into one folder at the same instant commit one after the other: with the folder's lock held here (as
// another run's commit holds it), `plot best --index` renders into its staging folder and waits, moving nothing and
// writing no page; `plot index` waits before reading the folder. Released, each writes its complete result.
TEST_F(PlotCli, FiguresAndIndexWaitForTheFolderLock) {
  using arfit::testing::exit_code_of;
  using arfit::testing::start_command;
  using arfit::testing::wait_until_blocked_on_flock;
  const std::string csv = write_toy_samples(tmp_), out = tmp_.file("fig"), index = tmp_.file("index.html");
  std::filesystem::create_directories(out);
  auto held = std::make_unique<arfit::OutputFolderLock>(out);
  pid_t pid = start_command(arfit::testing::arfit_bin() + " plot best " + csv + " -o " + out + " --index " + index,
                            tmp_.file("log"));
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until_blocked_on_flock(pid)) << slurp(tmp_.file("log"));
  const std::filesystem::path staging = std::filesystem::path(out) / (".arfit-plot.tmp." + std::to_string(pid));
  EXPECT_TRUE(std::filesystem::exists(staging / "best_toy-gpu_tp2.png"));
  EXPECT_FALSE(std::filesystem::exists(out + "/best_toy-gpu_tp2.png"));
  EXPECT_FALSE(std::filesystem::exists(index));
  held.reset();
  ASSERT_EQ(exit_code_of(pid), 0) << slurp(tmp_.file("log"));
  EXPECT_TRUE(arfit::plots::testing::read_png_header(out + "/best_toy-gpu_tp2.png").valid);
  EXPECT_TRUE(has(slurp(index), "fig/best_toy-gpu_tp2.png"));
  EXPECT_FALSE(std::filesystem::exists(staging));

  held = std::make_unique<arfit::OutputFolderLock>(out);
  pid = start_command(arfit::testing::arfit_bin() + " plot index " + out, tmp_.file("log"));
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(wait_until_blocked_on_flock(pid)) << slurp(tmp_.file("log"));
  EXPECT_FALSE(std::filesystem::exists(out + "/index.html"));
  held.reset();
  ASSERT_EQ(exit_code_of(pid), 0) << slurp(tmp_.file("log"));
  EXPECT_TRUE(has(slurp(out + "/index.html"), "<img src=\"best_toy-gpu_tp2.png\""));
}

TEST_F(PlotCli, FitAndErrorsFromJson) {
  std::string csv = write_toy_samples(tmp_);
  std::string out = tmp_.file("fig");
  auto r = run_command(arfit::testing::arfit_bin() + " plot fit " + csv + " -o " + out + " --format both");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/fit_toy-gpu_allreduce_ONESHOT_NONE_bf16_n2.svg")) << r.output;
  EXPECT_TRUE(arfit::plots::testing::read_png_header(out + "/fit_toy-gpu_allreduce_ONESHOT_NONE_bf16_n2.png").valid);

  nlohmann::json eval = {{"protocol", "sparse4"},
                         {"methods", {{"auto", {{"gmae", 1.5}, {"median", 1.0}, {"p90", 4.0}}}}},
                         {"points", {{{"method", "auto"}, {"measured_us", 10.0}, {"predicted_us", 10.4}},
                                     {{"method", "auto"}, {"measured_us", 100.0}, {"predicted_us", 97.0}}}}};
  std::string ej = tmp_.write("eval.json", eval.dump());
  r = run_command(arfit::testing::arfit_bin() + " plot errors " + ej + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : {"errors_eval_summary", "errors_eval_scatter", "errors_eval_hist"})
    EXPECT_TRUE(arfit::plots::testing::read_png_header(out + "/" + f + ".png").valid) << f;
}

// plot errors from samples runs every protocol eval runs on curves, crosshw:K among them (it matched the names
// exactly, so crosshw:3 was "unknown"), and a bad --protocol is refused before the samples are read (a missing
// input named first hid it).
TEST_F(PlotCli, ErrorsFromSamplesTakeEveryCurveProtocol) {
  arfit::SampleFile f;
  for (const char* device : {"gpu-a", "gpu-b", "gpu-c"})
    for (std::int64_t b = 1024; b <= (64LL << 20); b *= 2) {
      arfit::Sample x;
      x.strategy = "NCCL";
      x.nranks = 8;
      x.bytes = b;
      x.device = device;
      x.extra["system"] = device;
      x.time_us = (device[4] == 'a' ? 8.0 : device[4] == 'b' ? 12.0 : 10.0) + static_cast<double>(b) / (device[4] == 'a' ? 150e3 : 90e3);
      f.samples.push_back(x);
    }
  const std::string csv = tmp_.file("three.csv"), out = tmp_.file("fig");
  arfit::write_samples_csv(csv, f);
  auto r = run_command(arfit::testing::arfit_bin() + " plot errors " + csv + " --protocol crosshw:3 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* fig : {"errors_crosshw_3_summary", "errors_crosshw_3_scatter", "errors_crosshw_3_hist"})
    EXPECT_TRUE(arfit::plots::testing::read_png_header(out + "/" + fig + ".png").valid) << fig << "\n" << r.output;
  // One machine: nothing to leave out, said as eval says it (gnuplot failed on the empty figure, exit 1).
  arfit::SampleFile one;
  for (const arfit::Sample& x : f.samples)
    if (x.device == "gpu-a") one.samples.push_back(x);
  arfit::write_samples_csv(tmp_.file("one.csv"), one);
  r = run_command(arfit::testing::arfit_bin() + " plot errors " + tmp_.file("one.csv") + " --protocol crosshw:3 -o " + tmp_.file("none"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "nothing to evaluate for --protocol crosshw:3") && !has(r.output, "gnuplot")) << r.output;
  EXPECT_FALSE(fs::exists(tmp_.file("none")));
  for (const auto& [protocol, says] : std::vector<std::pair<std::string, std::string>>{
           {"crosshw:x", "crosshw:K needs K"}, {"interp2:3", "interp2 takes no ':' argument"}, {"bogus", "crosshw:K"}}) {
    r = run_command(arfit::testing::arfit_bin() + " plot errors " + tmp_.file("missing.csv") + " --protocol " + protocol + " -o " +
                    tmp_.file("other"));
    EXPECT_EQ(r.exit_code, 2) << protocol << ": " << r.output;
    EXPECT_TRUE(has(r.output, "--protocol") && has(r.output, says) && !has(r.output, "missing.csv")) << protocol << ": " << r.output;
    EXPECT_FALSE(fs::exists(tmp_.file("other")));
  }
}

TEST_F(PlotCli, BadInvocationsExitNonZeroWithReason) {
  std::string out = tmp_.file("fig");
  // A path naming no file is a usage error, as in every command (it was exit 1 here, 2 in ingest, fit and eval).
  auto r = run_command(arfit::testing::arfit_bin() + " plot best " + tmp_.file("missing.csv") + " -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "missing.csv")) << r.output;
  std::string csv = write_toy_samples(tmp_);
  r = run_command(arfit::testing::arfit_bin() + " plot best " + csv);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(arfit::testing::arfit_bin() + " plot regret " + csv + " -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "regret needs")) << r.output;
  r = run_command(arfit::testing::arfit_bin() + " plot best " + csv + " -o " + out + " --format jpeg");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  std::string bad = tmp_.write("bad.csv", "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\nallreduce,NCCL,2,abc,1\n");
  r = run_command(arfit::testing::arfit_bin() + " plot fit " + bad + " -o " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "bad.csv:3")) << r.output;
  r = run_command("ARFIT_GNUPLOT=/nonexistent/gnuplot " + arfit::testing::arfit_bin() + " plot best " + csv + " -o " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "gnuplot not found")) << r.output;
  EXPECT_FALSE(fs::exists(out + "/best_toy-gpu_tp2.png"));
}

// A codegen JSON is read through JsonView: each bad value is refused naming file, line and JSON pointer, and no
// figure is drawn (a TP of -1 used to give best_toy-gpu_tp-1.png).
TEST_F(PlotCli, CodegenJsonValuesAreChecked) {
  nlohmann::json cell = {{"tp", 2}, {"fusion", "NONE"}, {"tokens", 16}, {"hidden", 1024}, {"bytes", 32768.0},
                         {"choice", "NCCL"}, {"predicted", {{"NCCL", {{"time_us", 10.0}}}, {"ONESHOT", {{"time_us", 12.0}}}}}};
  const nlohmann::json good = {{"system", "toy-gpu"}, {"strategies", {"NCCL", "ONESHOT"}}, {"cells", {cell, cell}}};
  struct Bad {
    const char* pointer;
    nlohmann::json value;
    const char* reason;
  };
  const Bad cases[] = {{"/cells/1/tp", -1, "expected a whole number in 1.."},
                       {"/cells/1/tokens", 0, "expected a whole number in 1.."},
                       {"/cells/1/hidden", "x", "expected a whole number, got string"},
                       {"/cells/1/fusion", "BOGUS", "unknown fusion"},
                       {"/cells/1/predicted/NCCL/time_us", 0, "expected a number > 0"},
                       {"/cells/1/bytes", -1, "expected a number > 0"},
                       {"/system", "x\nsystem \"id\"", "control character \\n"},
                       {"/cells/1/choice", "a\rb", "control character \\r"}};
  std::string out = tmp_.file("fig");
  for (const Bad& c : cases) {
    nlohmann::json j = good;
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    const std::string text = j.dump(1);
    const std::string path = tmp_.write("table.json", text);
    const long line = arfit::json_line_of(text, c.pointer);
    ASSERT_GT(line, 1) << c.pointer;
    auto r = run_command(arfit::testing::arfit_bin() + " plot best " + path + " -o " + out);
    EXPECT_EQ(r.exit_code, 1) << c.pointer << ": " << r.output;
    EXPECT_TRUE(has(r.output, path + ":" + std::to_string(line) + ": " + c.pointer + ": " + c.reason)) << r.output;
    EXPECT_FALSE(fs::exists(out)) << c.pointer;
  }
  const std::string path = tmp_.write("table.json", good.dump(1));
  auto r = run_command(arfit::testing::arfit_bin() + " plot best " + path + " -o " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/best_toy-gpu_tp2.png")) << r.output;
}

// Every output path is checked before any figure is rendered: one refused image path (a folder) leaves the
// output folder as it was, and the index page may not replace a figure script it reads.
TEST_F(PlotCli, RefusedOutputPathChangesNothing) {
  std::string csv = write_toy_samples(tmp_);
  std::string out = tmp_.file("fig");
  const std::string blocked = out + "/fit_toy-gpu_allreduce_TWOSHOT_NONE_bf16_n2.png";
  fs::create_directories(blocked);
  auto r = run_command(arfit::testing::arfit_bin() + " plot fit " + csv + " -o " + out);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, blocked)) << r.output;
  for (const auto& e : fs::directory_iterator(out)) EXPECT_EQ(e.path().string(), blocked) << "written: " << e.path();
  fs::remove(blocked);

  r = run_command(arfit::testing::arfit_bin() + " plot fit " + csv + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string script = out + "/fit_toy-gpu_allreduce_NCCL_NONE_bf16_n2.gp";
  const std::string before = slurp(script);
  r = run_command(arfit::testing::arfit_bin() + " plot index " + out + " -o " + script);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "is an input of this run")) << r.output;
  EXPECT_EQ(slurp(script), before);
}

}  // namespace
