// GPU backends end to end: custom in virtual-rank mode (one process, TP virtual ranks on one GPU) and nccl
// with one rank. Skips with the reason when this build has no GPU backends or the machine has no GPU.
#include <gtest/gtest.h>

#include <map>

#include "io/sample_csv_file.h"
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

void expect_valid(const std::string& path, std::size_t cases, const std::string& cuda_graph = "off") {
  SampleFile f = read_samples_csv(path);
  EXPECT_EQ(f.samples.size(), cases);
  std::map<std::string, std::string> meta(f.meta.begin(), f.meta.end());
  EXPECT_EQ(meta["cuda_graph"], cuda_graph);
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

// -G/--cuda-graph: the timed iterations are replays of captured graphs. K = 3 collectives per graph over 4
// rotation buffers needs 4 graphs (buffers 0-2, 3-1, 2-0, 1-3), so rotation across graph boundaries, several
// kernels per graph and the device-side barrier epochs advancing across replays are all exercised: a replay
// that reused a stale epoch would hang in the cross-rank barrier (the kernels trap after 20 s) and fail the case.
TEST(BenchGpu, CustomVirtualRanksInCudaGraphsProduceValidSamples) {
  TempDir d;
  CommandResult r;
  const std::string why = run_or_skip_reason(
      "--backend custom --virtual-ranks --tp 2,4,8 --tokens 1,64 --hidden 1024 --fusion NONE,RESIDUAL_RMS_NORM "
      "-G 3 --buffers 4 -w 2 -n 10 -q -o " +
          d.file("c.csv"),
      &r);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_valid(d.file("c.csv"), 3u * 2u * 2u * 2u, "3 collectives per replay");
}

// One collective per graph (per-iteration events between single-collective replays), automatic rotation; the
// NCCL all-reduce with the unfused residual + RMSNorm kernel puts two launches (NCCL, epilogue) in each graph.
TEST(BenchGpu, NcclOneRankInCudaGraphsProducesValidSamples) {
  TempDir d;
  CommandResult r;
  std::string why = run_or_skip_reason(
      "--backend nccl --tp 1 --collective allreduce,allgather,reducescatter,alltoall,alltoallv -b 1K -e 1M -f 32 "
      "--cuda-graph 1 -q -o " +
          d.file("n.csv"),
      &r);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_valid(d.file("n.csv"), 5u * 3u, "1 collective per replay");

  why = run_or_skip_reason(
      "--backend nccl --tp 1 --tokens 1,64 --hidden 1024 --fusion NONE,RESIDUAL_RMS_NORM -G 2 -q -o " + d.file("f.csv"),
      &r);
  if (!why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_valid(d.file("f.csv"), 2u * 2u, "2 collectives per replay");
}

// Two IPC ranks on one GPU are refused before anything runs, naming --device (an IPC team or an NCCL
// communicator would fail later, inside a collective).
TEST(BenchGpu, TwoRanksOnOneGpuAreRefused) {
  TempDir d;
  CommandResult probe;
  const std::string why = run_or_skip_reason("--backend custom --virtual-ranks --tp 2 --bytes 1K -n 1 -w 0 -q -o " +
                                                 d.file("probe.csv"),
                                             &probe);
  if (!why.empty()) GTEST_SKIP() << why;
  for (const char* backend : {"custom", "nccl"}) {
    const CommandResult r = run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " +
                                        std::string(ARFIT_MPIEXEC) + " -np 2 " + ARBENCH_BIN + " --backend " + backend +
                                        " --device 0 --tp 2 --bytes 1K -q -o " + d.file(std::string(backend) + ".csv"));
    EXPECT_EQ(r.exit_code, 2) << backend << "\n" << r.output;
    EXPECT_NE(r.output.find("option --device"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("two ranks would share a GPU"), std::string::npos) << r.output;
  }
}
