#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "model/errors.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::TempDir;

namespace {

const char* kHeader = "collective,strategy,fusion,dtype,nranks,bytes,time_us\n";

std::string good_file() {
  return std::string(kSampleSchemaLine) + "\n# hostname: node1\n" + kHeader +
         "allreduce,ONESHOT,RESIDUAL_RMS_NORM,bf16,4,4096,12.5\n"
         "allgather,NCCL,NONE,fp16,8,1048576,40.25\n";
}

// Returns the InputError message produced by parsing `text`, or "" when parsing succeeded.
std::string parse_error(const std::string& text) {
  try {
    parse_samples_csv(text, "bad.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(SampleCsv, ParsesRequiredColumnsAndDefaults) {
  SampleFile f = parse_samples_csv(good_file(), "good.csv");
  ASSERT_EQ(f.samples.size(), 2u);
  ASSERT_EQ(f.meta.size(), 1u);
  EXPECT_EQ(f.meta[0].first, "hostname");
  EXPECT_EQ(f.meta[0].second, "node1");
  const Sample& a = f.samples[0];
  EXPECT_EQ(a.collective, Collective::AllReduce);
  EXPECT_EQ(a.strategy, "ONESHOT");
  EXPECT_EQ(a.fusion, FusionOp::ResidualRmsNorm);
  EXPECT_EQ(a.nranks, 4);
  EXPECT_EQ(a.nnodes, 1);
  EXPECT_EQ(a.bytes, 4096);
  EXPECT_DOUBLE_EQ(a.time_us, 12.5);
  EXPECT_TRUE(a.ok());
  EXPECT_EQ(f.samples[1].collective, Collective::AllGather);
}

TEST(SampleCsv, RoundTripsEveryFieldAndUnknownColumns) {
  Sample s;
  s.collective = Collective::AllToAllV;
  s.strategy = "NCCL";
  s.fusion = FusionOp::ResidualRmsNormQuantFp8;
  s.dtype = "fp32";
  s.nranks = 8;
  s.nnodes = 2;
  s.device = "NVIDIA H100 80GB HBM3, rev \"A\"";
  s.sm = 90;
  s.tokens = 64;
  s.hidden = 4096;
  s.bytes = 64 * 4096 * 4;
  s.time_us = 0.1;  // not exactly representable: must still round-trip bit for bit
  s.p10_us = 0.09;
  s.p90_us = 0.125;
  s.min_us = 0.08;
  s.max_us = 0.3;
  s.iterations = 20;
  s.in_place = true;
  s.wrong = 0;
  s.backend = "arbench-host";
  s.source = "run,1";
  s.splits = "1024,10-20-30-40-50-60-70-80,2";
  s.extra["system"] = "h100_sxm";
  Sample failed = s;
  failed.status = SampleStatus::Failed;
  failed.time_us = 0;
  failed.wrong = 17;
  failed.extra.clear();

  SampleFile in;
  in.meta = {{"plan", "lattice:2"}, {"command", "arbench --backend host"}};
  in.samples = {s, failed};
  SampleFile out = parse_samples_csv(format_samples_csv(in), "rt.csv");
  ASSERT_EQ(out.samples.size(), 2u);
  EXPECT_EQ(out.meta, in.meta);
  const Sample& r = out.samples[0];
  EXPECT_EQ(r.collective, s.collective);
  EXPECT_EQ(r.fusion, s.fusion);
  EXPECT_EQ(r.dtype, s.dtype);
  EXPECT_EQ(r.nnodes, 2);
  EXPECT_EQ(r.device, s.device);
  EXPECT_EQ(r.sm, 90);
  EXPECT_EQ(r.tokens, 64);
  EXPECT_EQ(r.hidden, 4096);
  EXPECT_EQ(r.bytes, s.bytes);
  EXPECT_EQ(r.time_us, s.time_us);
  EXPECT_EQ(r.p10_us, s.p10_us);
  EXPECT_EQ(r.p90_us, s.p90_us);
  EXPECT_EQ(r.min_us, s.min_us);
  EXPECT_EQ(r.max_us, s.max_us);
  EXPECT_EQ(r.iterations, 20);
  EXPECT_TRUE(r.in_place);
  EXPECT_EQ(r.backend, s.backend);
  EXPECT_EQ(r.source, s.source);
  EXPECT_EQ(r.splits, s.splits);
  EXPECT_EQ(r.extra.at("system"), "h100_sxm");
  EXPECT_FALSE(out.samples[1].ok());
  EXPECT_EQ(out.samples[1].wrong, 17);
  EXPECT_EQ(out.samples[1].extra.at("system"), "");
  // Formatting what was read gives the same bytes again.
  EXPECT_EQ(format_samples_csv(out), format_samples_csv(in));
}

TEST(SampleCsv, MissingRequiredColumnNamesFileLineAndColumn) {
  std::string text = std::string(kSampleSchemaLine) + "\ncollective,strategy,nranks,bytes\nallreduce,NCCL,2,8\n";
  EXPECT_EQ(parse_error(text), "bad.csv:2: column 'time_us': required column missing");
}

TEST(SampleCsv, NegativeTimeIsAnErrorAtItsLine) {
  std::string text = std::string(kSampleSchemaLine) + "\n" + kHeader + "allreduce,NCCL,NONE,bf16,2,8,1.0\nallreduce,NCCL,NONE,bf16,2,16,-3\n";
  EXPECT_EQ(parse_error(text), "bad.csv:4: column 'time_us': negative value -3");
}

TEST(SampleCsv, NonNumericSizeIsAnErrorAtItsLine) {
  std::string text = std::string(kSampleSchemaLine) + "\n" + kHeader + "allreduce,NCCL,NONE,bf16,2,8k,1.0\n";
  EXPECT_EQ(parse_error(text), "bad.csv:3: column 'bytes': '8k' is not an integer");
}

TEST(SampleCsv, TruncatedLastLineIsAnError) {
  std::string text = std::string(kSampleSchemaLine) + "\n" + kHeader + "allreduce,NCCL,NONE,bf16,2,8,1.0\nallreduce,NCCL,NO";
  EXPECT_EQ(parse_error(text), "bad.csv:4: truncated last line: 3 of 7 fields and no line end");
}

TEST(SampleCsv, OtherMalformedInputs) {
  EXPECT_EQ(parse_error(""), "bad.csv: empty file (expected '#arfit-samples v1')");
  EXPECT_EQ(parse_error("collective,strategy\n"), "bad.csv:1: missing schema line '#arfit-samples v1'");
  EXPECT_EQ(parse_error("#arfit-samples v9\n"), "bad.csv:1: unsupported schema '#arfit-samples v9' (this arfit reads '#arfit-samples v1')");
  std::string base = std::string(kSampleSchemaLine) + "\n" + kHeader;
  EXPECT_EQ(parse_error(base + "allreduce,NCCL,NONE,bf16,2,8\n"), "bad.csv:3: expected 7 fields, found 6");
  EXPECT_EQ(parse_error(base + "allreduce,NCCL,NONE,bf16,0,8,1\n"), "bad.csv:3: column 'nranks': value 0 is below the minimum 1");
  EXPECT_EQ(parse_error(base + "allreduce,NCCL,NONE,bf16,2,8,nan\n"), "bad.csv:3: column 'time_us': 'nan' is not finite");
  EXPECT_EQ(parse_error(base + "allreduce,NCCL,NONE,bf16,2,8,0\n"),
            "bad.csv:3: column 'time_us': time must be positive for a sample with status ok");
  EXPECT_EQ(parse_error(base + "allreduc,NCCL,NONE,bf16,2,8,1\n").rfind("bad.csv:3: column 'collective': unknown collective", 0), 0u);
  EXPECT_EQ(parse_error(base + "allreduce,NCCL,FUSED,bf16,2,8,1\n"), "bad.csv:3: column 'fusion': unknown fusion op 'FUSED'");
  // A stated network (an extra column models files carry on): RAILSxBANDWIDTH or empty, nothing else.
  const std::string with_network = std::string(kSampleSchemaLine) + "\ncollective,strategy,nranks,bytes,time_us,network\n";
  EXPECT_EQ(parse_error(with_network + "allreduce,NCCL,2,8,1,8x400Gb\nallreduce,NCCL,2,16,1,\n"), "");
  EXPECT_EQ(parse_error(with_network + "allreduce,NCCL,2,8,1,fast\n"),
            "bad.csv:3: column 'network': 'fast' is not a network: RAILSxBANDWIDTH, as 8x50GB/s or 8x400Gb (arfit ingest "
            "--network)");
}

TEST(SampleCsv, WriterIsAtomicAndLeavesNothingOnFailure) {
  TempDir dir;
  SampleFile f = parse_samples_csv(good_file(), "good.csv");
  const std::string path = dir.file("samples.csv");
  write_samples_csv(path, f);
  EXPECT_EQ(read_samples_csv(path).samples.size(), 2u);
  // A directory that does not exist: the write fails and leaves no temporary file behind.
  const std::string bad = dir.file("missing/samples.csv");
  EXPECT_THROW(write_samples_csv(bad, f), std::runtime_error);
  size_t entries = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path())) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
}

TEST(SampleCsv, SplitsQuotedFields) {
  auto f = split_csv_line("a,\"b,c\",\"d\"\"e\",");
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[1], "b,c");
  EXPECT_EQ(f[2], "d\"e");
  EXPECT_EQ(f[3], "");
  bool open = false;
  split_csv_line("a,\"b", &open);
  EXPECT_TRUE(open);
}

// Every file arfit writes reads back: a line break inside a field (a multi-line error in arbench's `note`)
// became a quoted newline the line-based reader then called an unterminated field.
TEST(SampleCsv, LineBreaksInsideAFieldAreWrittenAsSpaces) {
  Sample s;
  s.collective = Collective::AllReduce;
  s.nranks = 2;
  s.bytes = 1024;
  s.time_us = 5;
  s.extra["note"] = "error: first line\nsecond, \"quoted\"\r\nthird";
  const std::string text = std::string("#arfit-samples v1\n") + "collective,strategy,fusion,dtype,nranks,nnodes,device,sm,"
                           "tokens,hidden,bytes,time_us,p10_us,p90_us,min_us,max_us,iterations,in_place,status,wrong,"
                           "backend,source,splits,note\n" + samples_csv_row(s, {"note"});
  const SampleFile f = parse_samples_csv(text, "notes.csv");
  ASSERT_EQ(f.samples.size(), 1u);
  EXPECT_EQ(f.samples[0].extra.at("note"), "error: first line second, \"quoted\"  third");
}
