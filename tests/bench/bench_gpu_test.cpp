// GPU backends end to end: custom in virtual-rank mode (one process, TP virtual ranks on one GPU) and nccl
// with one rank. Skips with the reason when this build has no GPU backends or the machine has no GPU.
#include <gtest/gtest.h>

#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::CommandResult;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

std::string mpirun1(const std::string& args) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " + std::string(ARFIT_MPIEXEC) + " -np 1 " +
         ARBENCH_BIN + " " + args;
}

// Runs arbench; returns "" when it ran, or the reason to skip.
std::string run_or_skip_reason(const std::string& args, CommandResult* r) {
  *r = run_command(mpirun1(args));
  for (const char* why : {"needs a GPU", "built without"}) {
    auto p = r->output.find(why);
    if (r->exit_code == 2 && p != std::string::npos) {
      auto b = r->output.rfind("option --backend", p);
      const std::size_t start = b == std::string::npos ? p : b;
      const auto e = r->output.find('\n', p);
      return r->output.substr(start, e == std::string::npos ? std::string::npos : e - start);
    }
  }
  return "";
}

void expect_valid(const std::string& path, std::size_t cases) {
  SampleFile f = read_samples_csv(path);
  EXPECT_EQ(f.samples.size(), cases);
  for (const Sample& s : f.samples) {
    EXPECT_TRUE(s.ok()) << s.strategy << " " << s.bytes << " " << (s.extra.count("note") ? s.extra.at("note") : "");
    EXPECT_GT(s.time_us, 0);
    EXPECT_LE(s.p10_us, s.time_us);
    EXPECT_LE(s.time_us, s.p90_us);
    EXPECT_EQ(s.wrong, 0);
    EXPECT_GT(s.sm, 0);
  }
}

}  // namespace

TEST(BenchGpu, CustomVirtualRanksProduceValidSamples) {
  TempDir d;
  CommandResult r;
  const std::string why = run_or_skip_reason(
      "--backend custom --virtual-ranks --tp 2,4,8 --tokens 1,64 --hidden 1024 --fusion NONE,RESIDUAL_RMS_NORM -q -o " +
          d.file("c.csv"),
      &r);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_valid(d.file("c.csv"), 3u * 2u * 2u * 2u);
}

TEST(BenchGpu, NcclOneRankProducesValidSamples) {
  TempDir d;
  CommandResult r;
  const std::string why = run_or_skip_reason(
      "--backend nccl --tp 1 --collective allreduce,allgather,reducescatter,alltoall,alltoallv -b 1K -e 1M -f 32 -q -o " +
          d.file("n.csv"),
      &r);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_valid(d.file("n.csv"), 5u * 3u);
}
