// `arfit ingest` end to end: summary, output file, and the error paths (exit codes, file:line, nothing
// half-written).
#include <gtest/gtest.h>

#include <filesystem>

#include "ingest/ingest.h"
#include "model/sample.h"
#include "io/sample_csv_file.h"
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

// A posted all-reduce log as most are: no per-rank host lines (so no rank or node count), float elements.
const char* kHostlessFloatAllReduce =
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "         1024           256     float     sum      -1    40.00    0.03    0.05      0    41.00    0.02    0.05      0\n"
    "         2048           512     float     sum      -1    42.00    0.05    0.09      0    43.00    0.05    0.09      0\n";
}  // namespace

TEST(CliIngest, WritesSamplesAndPrintsSummary) {
  TempDir d;
  std::string in = d.write("unit_allreduce.txt", kGood);
  std::string out = d.file("samples.csv");
  auto r = run_command(arfit_bin() + " ingest " + in + " -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The 2048 row twice: two samples (out-of-place and in-place) whose group already has that size.
  EXPECT_NE(r.output.find("3 rows, 6 samples, 0 failed, 2 duplicates"), std::string::npos) << r.output;
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

// The summary counted duplicates as each reader did, a size repeated within one run of a table, per row: a log
// holding the same run twice, tables of several GPU counts given one --nranks, or two files given one --system
// put the same (group, size) into the output several times while the summary said "0 duplicated sizes". Now
// each sample whose group already has one at its size is a duplicate, in this file or an earlier one.
// --network states the machine's inter-node network for every sample (canonical in the CSV, named in the file's
// summary line); a value that is not RAILSxBANDWIDTH is a usage error naming the option, and nothing is written.
TEST(CliIngest, NetworkOptionIsCanonicalAndChecked) {
  TempDir d;
  const std::string log = d.write("net_allreduce.txt", kHostlessFloatAllReduce);
  const std::string out = d.file("net.csv");
  auto r = run_command(arfit_bin() + " ingest " + log + " --nranks 2 --network 8x400Gb -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("net_allreduce.txt: nccl-tests, 2 rows, 4 samples, 0 failed, 0 duplicates, network 8x50GB/s"),
            std::string::npos)
      << r.output;
  const auto file = arfit::read_samples_csv(out);
  ASSERT_EQ(file.samples.size(), 4u);
  for (const arfit::Sample& x : file.samples) EXPECT_EQ(x.extra.at("network"), "8x50GB/s");
  const std::string refused = d.file("refused.csv");
  r = run_command(arfit_bin() + " ingest " + log + " --nranks 2 --network fast -o " + refused);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--network: 'fast' is not RAILSxBANDWIDTH"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(refused));
}

TEST(CliIngest, DuplicatesAreCountedOverWhatIsWritten) {
  TempDir d;
  const std::string once = d.write("once_allreduce.txt", kHostlessFloatAllReduce);
  const std::string twice = d.write("twice_allreduce.txt", std::string(kHostlessFloatAllReduce) + kHostlessFloatAllReduce);
  auto r = run_command(arfit_bin() + " ingest " + twice + " --nranks 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // 2 rows a run, 2 samples a row: the second run repeats all 4 (group, size) points.
  EXPECT_NE(r.output.find("twice_allreduce.txt: nccl-tests, 4 rows, 8 samples, 0 failed, 4 duplicates"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("summary: 1 files, 4 rows, 8 samples, 0 failed, 4 duplicates, 2 groups"), std::string::npos) << r.output;
  // Two files of one machine: the second repeats the first's points; each file alone has none.
  r = run_command(arfit_bin() + " ingest " + once + " " + d.write("again_allreduce.txt", kHostlessFloatAllReduce) +
                  " --nranks 2 --system m");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("once_allreduce.txt: nccl-tests, 2 rows, 4 samples, 0 failed, 0 duplicates"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("again_allreduce.txt: nccl-tests, 2 rows, 4 samples, 0 failed, 4 duplicates"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("summary: 2 files, 4 rows, 8 samples, 0 failed, 4 duplicates, 2 groups"), std::string::npos) << r.output;
  // Without --system they are two machines: nothing repeated.
  r = run_command(arfit_bin() + " ingest " + once + " " + d.file("again_allreduce.txt") + " --nranks 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("0 failed, 0 duplicates, 4 groups"), std::string::npos) << r.output;
  // A shape is its own point: 128 x 4096 and 256 x 2048 are the same bytes, two cells of a table; the third row
  // repeats the first.
  const std::string shaped = d.write("shaped.csv",
                                     "#arfit-samples v1\ncollective,strategy,dtype,nranks,tokens,hidden,bytes,time_us\n"
                                     "allreduce,ONESHOT,bf16,2,128,4096,1048576,10\n"
                                     "allreduce,ONESHOT,bf16,2,256,2048,1048576,11\n"
                                     "allreduce,ONESHOT,bf16,2,128,4096,1048576,12\n");
  r = run_command(arfit_bin() + " ingest " + shaped);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("3 samples, 0 failed, 1 duplicate\n"), std::string::npos) << r.output;
  // Groups are fit's (sample_system, canonical_dtype): two devices of one CSV without a system column are two
  // machines, and bf16 and bfloat16 one type. The summary took the source for the machine and the type as
  // written: "3 duplicates, 1 groups" where fit fits two groups of 3 sizes.
  const std::string two_devices = d.write("two_devices.csv",
                                          "#arfit-samples v1\ncollective,strategy,dtype,nranks,device,bytes,time_us,source\n"
                                          "allreduce,nccl,bf16,8,H100,1024,10,run.txt\n"
                                          "allreduce,nccl,bfloat16,8,H100,2048,11,run.txt\n"
                                          "allreduce,nccl,bf16,8,A100,1024,12,run.txt\n"
                                          "allreduce,nccl,bf16,8,A100,2048,13,run.txt\n");
  r = run_command(arfit_bin() + " ingest " + two_devices);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("summary: 1 files, 4 rows, 4 samples, 0 failed, 0 duplicates, 2 groups"), std::string::npos) << r.output;
  for (const char* machine : {"\n  A100 ", "\n  H100 "}) EXPECT_NE(r.output.find(machine), std::string::npos) << machine << r.output;
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

// A 2-node log without per-rank host lines reads as one node; --nnodes and --system say what it cannot, for
// every sample; --nnodes beyond the --nranks given with it is a usage error (exit 2, the two options, as in predict
// and whatif; beyond the rank count a file states, the reader names the file: test_other_formats) and writes nothing.
TEST(CliIngest, NodeCountAndSystemOverrides) {
  TempDir d;
  std::string in = d.write("posted_2node_allreduce.txt", kHostlessFloatAllReduce);
  std::string out = d.file("samples.csv");
  auto plain = run_command(arfit_bin() + " ingest " + in + " --nranks 16 -o " + out);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  for (const auto& s : arfit::read_samples_csv(out).samples) {
    EXPECT_EQ(s.nnodes, 1);
    EXPECT_EQ(s.extra.at("system"), "posted_2node_allreduce");
  }
  auto r = run_command(arfit_bin() + " ingest " + in + " --nranks 16 --nnodes 2 --system a100-ib -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("a100-ib"), std::string::npos) << r.output;
  const auto file = arfit::read_samples_csv(out);
  ASSERT_EQ(file.samples.size(), 4u);
  for (const auto& s : file.samples) {
    EXPECT_EQ(s.nranks, 16);
    EXPECT_EQ(s.nnodes, 2);
    EXPECT_EQ(s.extra.at("system"), "a100-ib");
  }
  std::filesystem::remove(out);
  auto too_many = run_command(arfit_bin() + " ingest " + in + " --nranks 16 --nnodes 32 -o " + out);
  EXPECT_EQ(too_many.exit_code, 2) << too_many.output;
  EXPECT_NE(too_many.output.find("--nnodes 32 is more nodes than --nranks 16 has GPUs"), std::string::npos) << too_many.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + in + " --nranks 16 --nnodes 0").exit_code, 2);
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + in + " --nranks 16 --system 'a,b'").exit_code, 2);
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + in + " --nranks 16 --system ''").exit_code, 2);
}

// A framework benchmark's busbw table (ml-engineering's all_reduce_bench: fp32) does not state its element
// type, and curves compare across machines only at one element size: --dtype fills it. A file that states
// another type is bad input (exit 1, naming the file, nothing written): its reader turned element counts into
// bytes with its own. An unknown type is a usage error.
TEST(CliIngest, DtypeFillsWhatTheFileDoesNotState) {
  TempDir d;
  const std::string table = d.write("p6_busbw.txt",
                                    "# HARDWARE: 8 GPUs per node. Column \"1 node\" = 8 GPUs; column \"4 nodes\" = 32 GPUs\n"
                                    "# COLLECTIVE: all_reduce via torch.distributed (NCCL); busbw only (GBps)\n"
                                    "| payload | 1 node     | 4 nodes    | slowdown |\n"
                                    "| ------: | ---------: | ---------: | -------: |\n"
                                    "|   32KiB |   1.20GBps |   0.01GBps |   120.0x |\n"
                                    "|   64KiB |   2.17GBps |   0.04GBps |    54.2x |\n");
  const std::string out = d.file("samples.csv");
  ASSERT_EQ(run_command(arfit_bin() + " ingest " + table + " -o " + out).exit_code, 0);
  for (const auto& s : arfit::read_samples_csv(out).samples) EXPECT_EQ(arfit::dtype_size(s.dtype), 0) << s.dtype;
  auto r = run_command(arfit_bin() + " ingest " + table + " --dtype float32 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto file = arfit::read_samples_csv(out);
  ASSERT_EQ(file.samples.size(), 4u);
  for (const auto& s : file.samples) EXPECT_EQ(s.dtype, "fp32");

  const std::string log = d.write("float_allreduce.txt", kHostlessFloatAllReduce);
  const std::string out2 = d.file("log.csv");
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + log + " --nranks 8 --dtype fp32 -o " + out2).exit_code, 0);
  std::filesystem::remove(out2);
  auto clash = run_command(arfit_bin() + " ingest " + log + " --nranks 8 --dtype fp16 -o " + out2);
  EXPECT_EQ(clash.exit_code, 1) << clash.output;
  EXPECT_NE(clash.output.find("float_allreduce.txt:2: column 'dtype': the file states"), std::string::npos) << clash.output;
  EXPECT_FALSE(std::filesystem::exists(out2));
  EXPECT_EQ(run_command(arfit_bin() + " ingest " + table + " --dtype nibble -o " + out2).exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(out2));
}

// Read alone, runs/h100/allreduce.txt and runs/a100/allreduce.txt both label their samples machine 'allreduce'
// with source 'allreduce.txt': `ingest` and `fit` put two machines' points into one group and `fit` averaged
// them into one curve, exit 0; a file given twice counted every point twice. Both are bad input now, naming the
// two files, nothing written; --system says the inputs are one machine.
TEST(CliIngest, InputsThatCannotBeToldApartAreRefused) {
  TempDir d;
  std::filesystem::create_directories(d.file("h100"));
  std::filesystem::create_directories(d.file("a100"));
  const std::string a = d.write("h100/unit_allreduce.txt", kGood);
  std::string other = kGood;
  other.replace(other.find("10.00"), 5, "30.00");
  const std::string b = d.write("a100/unit_allreduce.txt", other);
  const std::string out = d.file("samples.csv");
  for (const auto& cmd : {" ingest " + a + " " + b + " -o " + out, " fit " + a + " " + b + " -o " + d.file("m.json")}) {
    const auto r = run_command(arfit_bin() + cmd);
    EXPECT_EQ(r.exit_code, 1) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find(b + ": its samples carry the machine label 'unit_allreduce' and source 'unit_allreduce.txt' as the input " + a),
              std::string::npos)
        << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(d.file("m.json")));
  // The same file twice, in another spelling.
  const auto twice = run_command("cd " + d.path().string() + " && " + arfit_bin() + " ingest h100/unit_allreduce.txt ./h100//unit_allreduce.txt -o " + out);
  EXPECT_EQ(twice.exit_code, 1) << twice.output;
  EXPECT_NE(twice.output.find("./h100//unit_allreduce.txt: the same file as the input h100/unit_allreduce.txt: given twice"), std::string::npos)
      << twice.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  // Named one machine, they read together.
  const auto named = run_command(arfit_bin() + " ingest " + a + " " + b + " --system box -o " + out);
  EXPECT_EQ(named.exit_code, 0) << named.output;
  EXPECT_EQ(arfit::read_samples_csv(out).samples.size(), 12u);
  // Sample CSVs keep the labels they carry: two arbench runs of one machine started within one second share
  // a source, even in files of one name.
  const std::string csv = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us,source\n"
                          "allreduce,NCCL,NONE,bf16,8,1024,10,arbench 2026-01-01T00:00:00Z\n";
  const std::string c1 = d.write("h100/run.csv", csv), c2 = d.write("a100/run.csv", csv);
  const auto runs = run_command(arfit_bin() + " ingest " + c1 + " " + c2 + " -o " + d.file("runs.csv"));
  EXPECT_EQ(runs.exit_code, 0) << runs.output;
}
