// Foundation acceptance: a sample CSV with a missing column, a negative time, a non-numeric size or a
// truncated last line gives one clear error naming file:line, a non-zero exit, and no output file.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "test_support.h"

using arfit::testing::arfit_bin;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

const std::string kHead = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
const std::string kGoodRow = "allreduce,NCCL,NONE,bf16,2,1024,10.5\n";

struct BadCase {
  const char* name;
  std::string content;
  std::string expected;  // the error line, after "<path>"
};

void expect_clean_failure(const BadCase& c) {
  TempDir dir;
  const std::string in = dir.write(std::string(c.name) + ".csv", c.content);
  const std::string out = dir.file("converted.csv");
  auto r = run_command(arfit_bin() + " ingest " + in + " -o " + out);
  EXPECT_NE(r.exit_code, 0) << c.name << ": " << r.output;
  EXPECT_NE(r.output.find(in + c.expected), std::string::npos) << c.name << ": " << r.output;
  // Exactly one error line.
  size_t errors = 0;
  for (size_t pos = 0; (pos = r.output.find("error:", pos)) != std::string::npos; ++pos) ++errors;
  EXPECT_EQ(errors, 1u) << c.name << ": " << r.output;
  // Nothing written: neither the output nor a temporary file.
  size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(e.path().filename().string(), std::string(c.name) + ".csv");
    ++entries;
  }
  EXPECT_EQ(entries, 1u) << c.name;
}

}  // namespace

TEST(CliBadSamples, MissingColumn) {
  expect_clean_failure({"missing_column",
                        "#arfit-samples v1\ncollective,strategy,nranks,bytes\nallreduce,NCCL,2,1024\n",
                        ":2: column 'time_us': required column missing"});
}

TEST(CliBadSamples, NegativeTime) {
  expect_clean_failure({"negative_time", kHead + kGoodRow + "allreduce,NCCL,NONE,bf16,2,2048,-4.5\n",
                        ":4: column 'time_us': negative value -4.5"});
}

TEST(CliBadSamples, NonNumericSize) {
  expect_clean_failure({"non_numeric_size", kHead + kGoodRow + "allreduce,NCCL,NONE,bf16,2,2KiB,11\n",
                        ":4: column 'bytes': '2KiB' is not an integer"});
}

TEST(CliBadSamples, TruncatedLastLine) {
  expect_clean_failure({"truncated", kHead + kGoodRow + "allreduce,NCCL,NONE,bf1",
                        ":4: truncated last line: 4 of 7 fields and no line end"});
}

TEST(CliBadSamples, GoodFileConvertsAndRoundTrips) {
  TempDir dir;
  const std::string in = dir.write("good.csv", kHead + kGoodRow);
  const std::string out = dir.file("converted.csv");
  auto r = run_command(arfit_bin() + " ingest " + in + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = arfit::testing::slurp(out);
  EXPECT_EQ(text.rfind("#arfit-samples v1\n", 0), 0u) << text;
  EXPECT_NE(text.find("allreduce,NCCL,NONE,bf16,2,1,"), std::string::npos) << text;
}

// Values beyond what arfit models are named at their line, before any fit could fail on them later with a
// models-file message (a time of 1e-300 us underflowed the fit's logs).
TEST(CliBadSamples, ValuesBeyondWhatArfitModels) {
  expect_clean_failure({"tiny_time", kHead + kGoodRow + "allreduce,NCCL,NONE,bf16,2,2048,1e-300\n",
                        ":4: column 'time_us': time 1e-300 us is outside [1e-06, 1e+09] us"});
  expect_clean_failure({"huge_time", kHead + kGoodRow + "allreduce,NCCL,NONE,bf16,2,2048,2e9\n",
                        ":4: column 'time_us': time 2e+09 us is outside [1e-06, 1e+09] us"});
  expect_clean_failure({"huge_bytes", kHead + kGoodRow + "allreduce,NCCL,NONE,bf16,2,9223372036854775807,11\n",
                        ":4: column 'bytes': 9223372036854775807 bytes, more than the 1e+18 arfit models"});
  expect_clean_failure({"many_ranks", kHead + kGoodRow + "allreduce,NCCL,NONE,bf16,2097152,2048,11\n",
                        ":4: column 'nranks': 2097152 ranks, more than the 1048576 arfit models"});
  expect_clean_failure({"nodes_beyond_ranks",
                        "#arfit-samples v1\ncollective,strategy,nranks,nnodes,bytes,time_us\nallreduce,NCCL,2,4,1024,10\n",
                        ":3: column 'nnodes': 4 nodes for 2 ranks"});
}

// A name with a control character would end a comment in a generated table or a figure script.
TEST(CliBadSamples, NamesWithControlCharacters) {
  expect_clean_failure({"strategy_with_bell", kHead + kGoodRow + "allreduce,NCCL\a,NONE,bf16,2,2048,11\n",
                        ":4: column 'strategy': control character \\a at offset 4"});
  expect_clean_failure({"dtype_with_escape", kHead + kGoodRow + "allreduce,NCCL,NONE,bf\x1b[2J16,2,2048,11\n",
                        ":4: column 'dtype': control character \\x1b at offset 2"});
}

// An all-to-allv split is checked where it is read, naming its line.
TEST(CliBadSamples, SplitsCheckedAtTheirLine) {
  const std::string head = "#arfit-samples v1\ncollective,strategy,dtype,nranks,bytes,time_us,splits\n";
  expect_clean_failure({"split_garbage", head + "alltoallv,NCCL,fp32,2,1024,10,garbage\n", ":3: column 'splits': "});
  expect_clean_failure({"split_wrong_ranks", head + "alltoallv,NCCL,fp32,4,1024,10,100-200\n",
                        ":3: column 'splits': the split has 2 ranks, the sample 4"});
}
