// `arfit ingest` end to end: summary, output file, and the error paths (exit codes, file:line, nothing
// half-written).
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/ingest.h"
#include "model/sample_csv.h"
#include "test_support.h"

using arfit::testing::arfit_bin;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {
const char* kGood = R"(# Collective test starting: all_reduce_perf
# Using devices
#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] Unit GPU
#  Rank  1 Group  0 Pid 1 on h device  1 [0x02] Unit GPU
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
         1024           256     float     sum      -1    10.00    0.10    0.10      0    11.00    0.09    0.09      0
         2048           512     float     sum      -1    12.00    0.17    0.17      0    13.00    0.16    0.16      0
         2048           512     float     sum      -1    12.50    0.16    0.16      0    13.50    0.15    0.15      0
)";
}  // namespace

TEST(CliIngest, WritesSamplesAndPrintsSummary) {
  TempDir d;
  std::string in = d.write("unit_allreduce.txt", kGood);
  std::string out = d.file("samples.csv");
  auto r = run_command(arfit_bin() + " ingest " + in + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 rows, 6 samples, 0 failed, 1 duplicated sizes"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("2 groups"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("1 KiB .. 2 KiB"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("duplicated size 2048"), std::string::npos) << r.output;
  auto file = arfit::read_samples_csv(out);
  ASSERT_EQ(file.samples.size(), 6u);
  EXPECT_EQ(file.samples[0].nranks, 2);
  // What fit/eval read back through load_samples is the same.
  auto again = arfit::ingest::load_samples({out});
  EXPECT_EQ(again.size(), 6u);
}

TEST(CliIngest, BadFileExitsOneWithFileLineAndLeavesNoOutput) {
  TempDir d;
  std::string good = d.write("ok_allreduce.txt", kGood);
  std::string bad = std::string(kGood) + "         4096          1024     float     sum      -1    14.00    0.29\n";
  std::string badf = d.write("bad_allreduce.txt", bad);
  std::string out = d.file("samples.csv");
  auto r = run_command(arfit_bin() + " ingest " + good + " " + badf + " -o " + out);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bad_allreduce.txt:10:"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  for (const auto& e : std::filesystem::directory_iterator(d.path()))
    EXPECT_EQ(e.path().string().find("samples.csv"), std::string::npos) << "left behind: " << e.path();
}

TEST(CliIngest, UsageErrorsExitTwo) {
  TempDir d;
  std::string in = d.write("a_allreduce.txt", kGood);
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + in + " --format csv").exit_code, 2);
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + in + " --collective allsorts").exit_code, 2);
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + in + " --nranks -3").exit_code, 2);
  EXPECT_EQ(run_command(arfit_bin() + " ingest").exit_code, 2);
}

TEST(CliIngest, MissingRankCountAsksForTheFlag) {
  TempDir d;
  std::string text = "# Collective test starting: broadcast_perf\n"
                     "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                     "         1024           256     float    none       0    10.00    0.10    0.10      0    11.00    0.09    0.09      0\n";
  std::string in = d.write("bc.txt", text);
  auto r = run_command(arfit_bin() + " ingest " + in);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("--nranks"), std::string::npos) << r.output;
  auto ok = run_command(arfit_bin() + " ingest " + in + " --nranks 4 -q");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}
