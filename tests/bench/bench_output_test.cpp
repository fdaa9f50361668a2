// Output handling for --resume: partial last lines, mismatched grids, existing files.
#include <gtest/gtest.h>

#include <map>

#include "bench/reporter.h"
#include "bench/run_info.h"
#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using namespace arfit::bench;
using arfit::testing::TempDir;

namespace {
std::string file_with(const std::string& grid, const std::vector<Sample>& samples, bool partial_tail) {
  std::string s = samples_csv_preamble({{"grid", grid}}, CsvReporter::extra_columns());
  for (const auto& x : samples) s += samples_csv_row(x, CsvReporter::extra_columns());
  if (partial_tail) s += "allreduce,ONESHOT,NONE,bf16,2,1,cpu,,1,2";
  return s;
}
Sample sample(std::int64_t tokens) {
  Sample s;
  s.strategy = "ONESHOT";
  s.nranks = 2;
  s.tokens = tokens;
  s.hidden = 256;
  s.bytes = tokens * 512;
  s.time_us = 3;
  return s;
}
}  // namespace

TEST(BenchOutput, ResumeReadsFinishedCasesAndCutsAPartialLine) {
  TempDir d;
  const std::string path = d.write("s.csv", file_with("G", {sample(1), sample(2)}, true));
  OutputState st = inspect_output(path, "G", true, false);
  EXPECT_TRUE(st.append);
  EXPECT_EQ(st.finished.size(), 2u);
  EXPECT_TRUE(st.finished.count(sample_key(sample(2))));
  // The partial row is gone and the file parses.
  EXPECT_EQ(read_samples_csv(path).samples.size(), 2u);
  EXPECT_EQ(arfit::testing::slurp(path).back(), '\n');
}

TEST(BenchOutput, ExistingFileNeedsResumeOrOverwrite) {
  TempDir d;
  const std::string path = d.write("s.csv", file_with("G", {sample(1)}, false));
  try {
    inspect_output(path, "G", false, false);
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "-o/--output");
  }
  EXPECT_FALSE(inspect_output(path, "G", false, true).append);  // --overwrite starts afresh
  try {
    inspect_output(path, "OTHER", true, false);
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "--resume");
    EXPECT_NE(std::string(e.what()).find("different grid"), std::string::npos);
  }
  EXPECT_FALSE(inspect_output(d.file("missing.csv"), "G", true, false).append);  // nothing to resume: fresh
}

TEST(BenchOutput, ResumeRefusesAnotherCudaGraphMode) {
  TempDir d;
  // A file without a cuda_graph header entry was measured with eager launches.
  const std::string path = d.write("s.csv", file_with("G", {sample(1)}, false));
  EXPECT_TRUE(inspect_output(path, "G", true, false, cuda_graph_header_value(0)).append);
  try {
    inspect_output(path, "G", true, false, cuda_graph_header_value(2));
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "-G/--cuda-graph");
    EXPECT_NE(std::string(e.what()).find("cuda_graph: off"), std::string::npos) << e.what();
  }
  // --overwrite starts afresh in any mode.
  EXPECT_FALSE(inspect_output(path, "G", false, true, cuda_graph_header_value(2)).append);
}

TEST(BenchOutput, RunHeaderRecordsTheCudaGraphMode) {
  auto header_of = [](int cuda_graph) {
    const RunHeader h = make_run_header(RunIdentity{}, DeviceInfo{}, GridSpec{}, PlannedGrid{}, "arbench", 1, 5, 20, 0,
                                        60, cuda_graph);
    return std::map<std::string, std::string>(h.begin(), h.end());
  };
  EXPECT_EQ(header_of(0)["cuda_graph"], "off");
  EXPECT_EQ(cuda_graph_header_value(1), "1 collective per replay");
  auto graph = header_of(4);
  EXPECT_EQ(graph["cuda_graph"], "4 collectives per replay");
  EXPECT_NE(graph["timing"].find("CUDA-graph replay"), std::string::npos) << graph["timing"];
  EXPECT_NE(graph["timing"].find("divided by 4"), std::string::npos) << graph["timing"];
  EXPECT_EQ(header_of(0)["timing"].find("graph"), std::string::npos);
}
