// nccl-tests text logs: hand-written inputs covering the awkward cases (not copied from any data set).
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>

#include "ingest/ingest.h"
#include "model/errors.h"

using arfit::Collective;
using arfit::InputError;
using arfit::Sample;
using arfit::ingest::ingest_text;
using arfit::ingest::IngestResult;
using arfit::ingest::Options;

namespace {

// A 4-GPU all-reduce run in the current layout. busbw = algbw * 1.5 (2*(4-1)/4).
const char* kAllReduce4 = R"(# nThread 1 nGpus 4 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1000 on   nodeA device  0 [0000:01:00] Fancy GPU 9000
#  Rank  1 Group  0 Pid   1000 on   nodeA device  1 [0000:02:00] Fancy GPU 9000
#  Rank  2 Group  0 Pid   1000 on   nodeA device  2 [0000:03:00] Fancy GPU 9000
#  Rank  3 Group  0 Pid   1000 on   nodeA device  3 [0000:04:00] Fancy GPU 9000
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    20.00    0.05    0.08      0    21.00    0.05    0.07      0
        2048           512     float     sum      -1    25.00    0.08    0.12      0      N/A     N/A     N/A      0
        4096          1024     float     sum      -1    40.00    0.10    0.15      3    41.00    0.10    0.15      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.1
#
)";

const Sample* find(const IngestResult& r, std::int64_t bytes, bool in_place) {
  for (const auto& s : r.samples)
    if (s.bytes == bytes && s.in_place == in_place) return &s;
  return nullptr;
}

}  // namespace

TEST(NcclTestsText, BothPlacementsFailedRowsAndHeaderFacts) {
  IngestResult r = ingest_text(kAllReduce4, "logs/node7_allreduce.txt", Options{});
  EXPECT_EQ(r.format, arfit::ingest::Format::NcclTests);
  EXPECT_EQ(r.rows, 3u);
  ASSERT_EQ(r.samples.size(), 6u);
  const Sample* s = find(r, 1024, false);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->collective, Collective::AllReduce);  // from the file name
  EXPECT_EQ(s->nranks, 4);
  EXPECT_DOUBLE_EQ(s->time_us, 20.0);
  EXPECT_EQ(s->dtype, "fp32");
  EXPECT_EQ(s->device, "Fancy GPU 9000");
  EXPECT_EQ(s->source, "node7_allreduce.txt");
  EXPECT_EQ(s->extra.at("system"), "node7_allreduce");
  EXPECT_EQ(s->extra.at("hosts"), "nodeA");  // where the ranks ran: one machine whatever the file (crosshw)
  EXPECT_EQ(s->backend, "nccl-tests");
  EXPECT_EQ(s->strategy, "NCCL");
  EXPECT_EQ(s->iterations, 20);
  EXPECT_EQ(s->nnodes, 1);
  EXPECT_FALSE(s->in_place);
  const Sample* in = find(r, 1024, true);
  ASSERT_NE(in, nullptr);
  EXPECT_DOUBLE_EQ(in->time_us, 21.0);
  // N/A timing -> failed, no timing.
  const Sample* na = find(r, 2048, true);
  ASSERT_NE(na, nullptr);
  EXPECT_FALSE(na->ok());
  EXPECT_EQ(na->time_us, 0.0);
  // #wrong > 0 -> failed, wrong count kept, no timing.
  const Sample* wrong = find(r, 4096, false);
  ASSERT_NE(wrong, nullptr);
  EXPECT_FALSE(wrong->ok());
  EXPECT_EQ(wrong->wrong, 3);
  EXPECT_EQ(wrong->time_us, 0.0);
  EXPECT_TRUE(find(r, 4096, true)->ok());
  EXPECT_EQ(r.failed, 2u);
  // A count beyond any integer saturates (converting it would be undefined behaviour); still failed.
  std::string huge = kAllReduce4;
  const std::string row = "40.00    0.10    0.15      3";
  huge.replace(huge.find(row), row.size(), "40.00    0.10    0.15   1e30");
  const IngestResult h = ingest_text(huge, "logs/node7_allreduce.txt", Options{});
  ASSERT_NE(find(h, 4096, false), nullptr);
  EXPECT_FALSE(find(h, 4096, false)->ok());
  EXPECT_EQ(find(h, 4096, false)->wrong, std::numeric_limits<std::int64_t>::max());
}

// A header that states the inter-node network (a curated log's "# HARDWARE:" line) holds for every sample of the
// file, in the canonical form; --network states it for a log that does not, over what the log says.
TEST(NcclTestsText, NetworkStatedInAHeaderOrByTheUser) {
  const std::string stated = std::string("# HARDWARE: 2 nodes x 4 Fancy GPU 9000 (NVLink intra-node; inter-node 4x 400 "
                                         "Gb/s InfiniBand per node)\n") + kAllReduce4;
  const IngestResult r = ingest_text(stated, "net_allreduce.txt", Options{});
  ASSERT_FALSE(r.samples.empty());
  for (const Sample& s : r.samples) EXPECT_EQ(s.extra.at("network"), "4x50GB/s");
  const IngestResult unstated = ingest_text(kAllReduce4, "net_allreduce.txt", Options{});
  for (const Sample& s : unstated.samples) EXPECT_EQ(s.extra.count("network"), 0u);
  Options o;
  o.network = "8x25GB/s";
  const IngestResult user = ingest_text(stated, "net_allreduce.txt", o);
  for (const Sample& s : user.samples) EXPECT_EQ(s.extra.at("network"), "8x25GB/s");
}

TEST(NcclTestsText, CollectiveMustBeKnown) {
  try {
    ingest_text(kAllReduce4, "x.txt", Options{});
    FAIL() << "expected an error asking for --collective";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--collective"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("x.txt:", 0), 0u) << e.what();
  }
  Options o;
  o.collective = Collective::ReduceScatter;
  IngestResult r = ingest_text(kAllReduce4, "x.txt", o);
  EXPECT_EQ(r.samples.size(), 6u);
  EXPECT_EQ(r.samples[0].collective, Collective::ReduceScatter);
}

// A pasted terminal session: fence, prompt, mpirun prefixes, two runs of different collectives, footers.
const char* kPasted = R"(Here is what I got:
```
$ mpirun -np 2 ./build/all_gather_perf -b 64 -e 128 -f 2 -g 1
[1,0]<stdout>:# nccl-tests version 2.17.6 nccl-headers=22005 nccl-library=22005
[1,0]<stdout>:# Collective test starting: all_gather_perf
[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 64 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 50 agg iters: 1 validation: 1 graph: 0
[1,0]<stdout>:#
[1,0]<stdout>:# Using devices
[1,0]<stdout>:#  Rank  0 Group  0 Pid   11 on  hostA device  0 [0000:0a:00] Widget X
[1,0]<stdout>:#  Rank  1 Group  0 Pid   12 on  hostB device  0 [0000:0a:00] Widget X
[1,0]<stdout>:#
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:          64             8     float    none      -1    30.00    0.00    0.00      0    31.00    0.00    0.00      0
[1,0]<stdout>:         128            16     float    none      -1    32.00    0.00    0.00      0    33.00    0.00    0.00      0
[1,0]<stdout>:# Out of bounds values : 0 OK
[1,0]<stdout>:# Avg bus bandwidth    : 0
[1,0]<stdout>:#
[1,0]<stdout>:# Collective test concluded: all_gather_perf
$ mpirun -np 2 ./build/all_reduce_perf -b 64 -e 64 -g 1 -d bfloat16
[1,0]<stdout>:# Collective test starting: all_reduce_perf
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
[1,0]<stdout>:          64            32  bfloat16     sum      -1    40.00    0.00    0.00    N/A    41.00    0.00    0.00    N/A
[1,0]<stdout>:# Out of bounds values : 0 OK
```
Thanks!
)";

TEST(NcclTestsText, PastedSessionWithPrefixesFencesAndTwoRuns) {
  IngestResult r = ingest_text(kPasted, "paste.md", Options{});
  EXPECT_EQ(r.rows, 3u);
  ASSERT_EQ(r.samples.size(), 6u);
  EXPECT_EQ(r.samples[0].collective, Collective::AllGather);
  EXPECT_EQ(r.samples[0].nranks, 2);
  EXPECT_EQ(r.samples[0].nnodes, 2);  // two hosts in the device list
  EXPECT_EQ(r.samples[0].iterations, 50);
  EXPECT_EQ(r.samples[0].device, "Widget X");
  const Sample& ar = r.samples[4];
  EXPECT_EQ(ar.collective, Collective::AllReduce);
  EXPECT_EQ(ar.bytes, 64);
  EXPECT_EQ(ar.dtype, "bf16");
  EXPECT_EQ(ar.nranks, 2);       // -np 2 x -g 1 (the device list of the first run says 2 as well)
  EXPECT_TRUE(ar.ok());          // #wrong N/A = not validated, not a failure
  EXPECT_DOUBLE_EQ(ar.time_us, 40.0);
  bool has_version = false;
  for (const auto& [k, v] : r.meta)
    if (k == "nccl_version" && v == "2.20.5") has_version = true;
  EXPECT_TRUE(has_version);
}

// Old layout (no root column, float "error" column), old device lines, srun label prefixes.
const char* kOldBroadcast = R"(0: # nThread 1 nGpus 3 minBytes 8 maxBytes 32 step: 2(factor) warmup iters: 5 iters: 20 validation: 1
0: #
0: # Using devices
0: #   Rank  0 Pid  500 on oldbox device  0 [0x3d] Ancient GPU
0: #   Rank  1 Pid  500 on oldbox device  1 [0x3e] Ancient GPU
0: #   Rank  2 Pid  500 on oldbox device  2 [0x3f] Ancient GPU
0: #
0: #                                                     out-of-place                       in-place
0: #       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
0: #        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
0:            8             2   float     sum    11.00    0.00    0.00  0e+00    12.00    0.00    0.00  0e+00
0:           16             4   float     sum    11.50    0.00    0.00  1e-07    12.50    0.00    0.00  0e+00
0:           32             8   float     sum    12.00    0.00    0.00  0e+00    13.00    0.00    0.00  0e+00
)";

TEST(NcclTestsText, OldLayoutBroadcastRanksFromDeviceLines) {
  IngestResult r = ingest_text(kOldBroadcast, "bessie_broadcast.log", Options{});
  ASSERT_EQ(r.samples.size(), 6u);
  EXPECT_EQ(r.samples[0].collective, Collective::Broadcast);
  EXPECT_EQ(r.samples[0].nranks, 3);
  EXPECT_EQ(r.samples[2].bytes, 16);
  EXPECT_DOUBLE_EQ(r.samples[2].time_us, 11.5);
  EXPECT_EQ(r.samples[0].device, "Ancient GPU");
  // No units line problem, no failures.
  EXPECT_EQ(r.failed, 0u);
}

// No device list, no command: the rank count follows from busbw/algbw = (n-1)/n for all-gather.
const char* kAllGatherNoHeader = R"(#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576         32768     float    none      -1    50.00   20.97   18.35      0    50.00   20.97   18.35      0
     2097152         65536     float    none      -1    80.00   26.21   22.94      0    80.00   26.21   22.94      0
)";

TEST(NcclTestsText, RankCountFromBusFactorRatio) {
  IngestResult r = ingest_text(kAllGatherNoHeader, "ag.txt", [] {
    Options o;
    o.collective = Collective::AllGather;
    return o;
  }());
  ASSERT_EQ(r.samples.size(), 4u);
  EXPECT_EQ(r.samples[0].nranks, 8);  // 18.35 / 20.97 = 0.875 = 7/8
  EXPECT_EQ(r.samples[0].extra.count("hosts"), 0u);  // no device list: no hosts to tell the machine by
  // Broadcast has a bus factor of 1: nothing to infer from, so the reader asks for --nranks.
  Options b;
  b.collective = Collective::Broadcast;
  try {
    ingest_text(kAllGatherNoHeader, "bc.txt", b);
    FAIL() << "expected an error asking for --nranks";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--nranks"), std::string::npos) << e.what();
  }
  b.nranks = 5;
  EXPECT_EQ(ingest_text(kAllGatherNoHeader, "bc.txt", b).samples[0].nranks, 5);
}

TEST(NcclTestsText, RatioWinsOverATruncatedDeviceListWithAWarning) {
  std::string text = std::string("# Using devices\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] G\n") + kAllGatherNoHeader;
  Options o;
  o.collective = Collective::AllGather;
  IngestResult r = ingest_text(text, "ag.txt", o);
  EXPECT_EQ(r.samples[0].nranks, 8);
  bool warned = false;
  for (const auto& w : r.warnings)
    if (w.find("'Using devices'") != std::string::npos) warned = true;
  EXPECT_TRUE(warned);
}

namespace {
std::string table(const std::string& rows, const std::string& units = "(us)") {
  return "# Collective test starting: all_reduce_perf\n# Using devices\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] G\n"
         "#  Rank  1 Group  0 Pid 1 on h device  1 [0x02] G\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
         "#        (B)    (elements)                               " + units + "  (GB/s)  (GB/s)            " + units +
         "  (GB/s)  (GB/s)\n" + rows;
}
// The InputError reading `text` as file `name` gives, "" when it reads.
std::string error_of(const std::string& text, const std::string& name = "bad.txt", const Options& options = {}) {
  try {
    ingest_text(text, name, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(NcclTestsText, ErrorsNameFileAndLine) {
  // A row with a column missing (line 8).
  std::string e = error_of(table("  8  2  float  sum  -1  10.0  0.00  0.00  0  11.0  0.00  0.00  0\n"
                                 " 16  4  float  sum  -1  10.0  0.00  0.00  0  11.0  0.00  0.00\n"));
  EXPECT_EQ(e.rfind("bad.txt:8:", 0), 0u) << e;
  EXPECT_NE(e.find("columns"), std::string::npos) << e;
  // Sizes that go down within a run.
  e = error_of(table(" 16  4  float  sum  -1  10.0  0.00  0.00  0  11.0  0.00  0.00  0\n"
                     "  8  2  float  sum  -1  10.0  0.00  0.00  0  11.0  0.00  0.00  0\n"));
  EXPECT_EQ(e.rfind("bad.txt:8:", 0), 0u) << e;
  EXPECT_NE(e.find("increase"), std::string::npos) << e;
  // Unknown time unit.
  e = error_of(table("  8  2  float  sum  -1  10.0  0.00  0.00  0  11.0  0.00  0.00  0\n", "(min)"));
  EXPECT_EQ(e.rfind("bad.txt:6:", 0), 0u) << e;
  EXPECT_NE(e.find("unit"), std::string::npos) << e;
  // Non-finite numbers.
  e = error_of(table("  8  2  float  sum  -1  inf  0.00  0.00  0  11.0  0.00  0.00  0\n"));
  EXPECT_EQ(e.rfind("bad.txt:7:", 0), 0u) << e;
  EXPECT_NE(e.find("non-finite"), std::string::npos) << e;
  e = error_of(table("  8  2  float  sum  -1  10.0  nan  0.00  0  11.0  0.00  0.00  0\n"));
  EXPECT_NE(e.find("non-finite"), std::string::npos) << e;
  // A data row after the footer without a new header.
  e = error_of(table("  8  2  float  sum  -1  10.0  0.00  0.00  0  11.0  0.00  0.00  0\n# Out of bounds values : 0 OK\n"
                     " 16  4  float  sum  -1  10.0  0.00  0.00  0  11.0  0.00  0.00  0\n"));
  EXPECT_EQ(e.rfind("bad.txt:9:", 0), 0u) << e;
  // Garbage in a number column.
  e = error_of(table("  8  2  float  sum  -1  1O.0  0.00  0.00  0  11.0  0.00  0.00  0\n"));
  EXPECT_EQ(e.rfind("bad.txt:7:", 0), 0u) << e;
  EXPECT_NE(e.find("column 'time'"), std::string::npos) << e;
}

TEST(NcclTestsText, DuplicatesZeroBytesMillisecondsAndNewRuns) {
  std::string text = table("  0  0  float  sum  -1  5.0  0.00  0.00  0  5.0  0.00  0.00  0\n"
                           "  8  2  float  sum  -1  0.010  0.00  0.00  0  0.011  0.00  0.00  0\n"
                           "  8  2  float  sum  -1  0.012  0.00  0.00  0  0.013  0.00  0.00  0\n",
                           "(ms)") +
                     "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
                     "  4  1  float  sum  -1  7.0  0.00  0.00  0  7.0  0.00  0.00  0\n";
  IngestResult r = ingest_text(text, "dups_allreduce.txt", Options{});
  EXPECT_EQ(r.rows, 4u);
  ASSERT_EQ(r.samples.size(), 8u);
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_FALSE(r.samples[0].ok());  // 0 bytes: kept, failed
  EXPECT_EQ(r.samples[0].time_us, 0.0);
  EXPECT_DOUBLE_EQ(r.samples[2].time_us, 10.0);  // 0.010 ms
  EXPECT_DOUBLE_EQ(r.samples[6].time_us, 7.0);   // second run: no units line -> nccl-tests' us (warned)
  bool dup_warned = false, zero_warned = false, units_warned = false;
  for (const auto& w : r.warnings) {
    if (w.find("duplicated size 8") != std::string::npos) dup_warned = true;
    if (w.find("0 bytes") != std::string::npos) zero_warned = true;
    if (w.find("no units line") != std::string::npos) units_warned = true;
  }
  EXPECT_TRUE(dup_warned);
  EXPECT_TRUE(zero_warned);
  EXPECT_TRUE(units_warned);
}

// Condensed table (columns removed by hand, sizes with digit separators).
const char* kCondensed = R"(# COMMAND: ./build/all_reduce_perf -b 32k -e 64k -f 2 -g 4
           size    time   algbw   busbw
            (B)    (us)  (GB/s)  (GB/s)
         32_768   40.00    0.82    1.23
         65_536   50.00    1.31    1.97
)";

TEST(NcclTestsText, CondensedTableWithDigitSeparators) {
  IngestResult r = ingest_text(kCondensed, "condensed.txt", Options{});
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[1].bytes, 65536);
  EXPECT_EQ(r.samples[1].collective, Collective::AllReduce);
  EXPECT_EQ(r.samples[1].nranks, 4);
  EXPECT_FALSE(r.samples[1].in_place);
}

// Markdown bandwidth tables.
const char* kPipe = R"(# COLLECTIVE: all_reduce measured with a torch script
| payload | busbw | algbw |
| ---: | ---: | ---: |
| 64KiB | 3.00GBps | 2.00GBps |
| 1MiB | 30.00GBps | 20.00GBps |
)";

TEST(NcclTestsText, MarkdownBandwidthTable) {
  IngestResult r = ingest_text(kPipe, "pipe.md", Options{});
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.rows, 2u);
  EXPECT_EQ(r.samples[0].bytes, 65536);
  EXPECT_EQ(r.samples[0].nranks, 4);  // busbw/algbw = 1.5 = 2*3/4
  // time = bytes / algbw: 65536 B / 2 GB/s = 32.768 us
  EXPECT_NEAR(r.samples[0].time_us, 32.768, 1e-9);
  EXPECT_EQ(r.samples[0].extra.at("time_from"), "algbw");
  // A heading made of '#' only (found by the fuzzer) is just a heading.
  EXPECT_EQ(ingest_text(std::string("##\n###   \n") + kPipe, "pipe.md", Options{}).samples.size(), 2u);
  // A decimal-ambiguous unit is refused.
  std::string bad = kPipe;
  bad.replace(bad.find("64KiB"), 5, "64KB ");
  try {
    ingest_text(bad, "pipe.md", Options{});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("pipe.md:4:", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("ambiguous"), std::string::npos);
  }
}

const char* kSweep = R"(# COLLECTIVE: all_reduce, fixed payload, varying GPU count
## node X, 1GiB payload
| GPUs | algo | busbw | busbw, tweak off |
| ---: | :--- | ---: | ---: |
|    2 | Ring | 100.0GBps | 90.0GBps |
|    4 | Ring | 150.0GBps | 140.0GBps |

## node X, 2GiB payload, 4 GPUs, by collective
| collective | busbw |
| :--- | ---: |
| all-reduce, `TWEAK=1` | 120.0GBps |
| all-gather | 60.0GBps |

# NOTES: busbw only (GBps); column "1 box" = 8 GPUs; column "2 boxes" = 16 GPUs
| payload | 1 box | 2 boxes |
| ---: | ---: | ---: |
| 1MiB | 10.0GBps | 5.0GBps |
)";

TEST(NcclTestsText, MarkdownTablesWithHeadingsGpuColumnsAndAnnotatedColumns) {
  IngestResult r = ingest_text(kSweep, "sweep.md", Options{});
  EXPECT_EQ(r.rows, 5u);
  ASSERT_EQ(r.samples.size(), 8u);
  const Sample& a = r.samples[0];
  EXPECT_EQ(a.bytes, 1073741824);
  EXPECT_EQ(a.nranks, 2);
  EXPECT_EQ(a.extra.at("time_from"), "busbw");
  // busbw 100 GB/s at n=2 -> algbw 100 -> time = 2^30 / 100e9 s
  EXPECT_NEAR(a.time_us, 1073741824.0 / 100e3, 1e-6);
  EXPECT_EQ(a.extra.at("algo"), "Ring");
  EXPECT_EQ(a.extra.at("section"), "node X, 1GiB payload");
  const Sample& off = r.samples[1];
  EXPECT_EQ(off.extra.at("variant"), "tweak off");
  EXPECT_EQ(off.extra.at("bw_column"), "busbw, tweak off");
  EXPECT_EQ(a.extra.count("bw_column"), 0u);
  EXPECT_EQ(off.nranks, 2);
  const Sample& tw = r.samples[4];
  EXPECT_EQ(tw.collective, Collective::AllReduce);
  EXPECT_EQ(tw.nranks, 4);
  EXPECT_EQ(tw.bytes, 2147483648);
  EXPECT_EQ(tw.extra.at("variant"), "TWEAK=1");
  EXPECT_EQ(r.samples[5].collective, Collective::AllGather);
  // busbw 60 at n=4, all-gather factor 3/4 -> algbw 80
  EXPECT_NEAR(r.samples[5].time_us, 2147483648.0 / 80e3, 1e-6);
  EXPECT_EQ(r.samples[6].nranks, 8);
  EXPECT_EQ(r.samples[7].nranks, 16);
  EXPECT_EQ(r.samples[7].nnodes, 1);
  EXPECT_EQ(r.samples[7].extra.at("variant"), "2 boxes");
  EXPECT_EQ(r.samples[6].extra.count("bw_column"), 0u);  // first bandwidth column of its row: primary
  EXPECT_EQ(r.samples[7].extra.at("bw_column"), "2 boxes");
}

// nccl-tests 2.19's per-iteration report (-I 1), with the trailing timestamp (-Z), laid out by its printf formats:
// each placement's time, algbw, busbw and #wrong are followed by i_min, i_max, i_p99 (us) and i_cv% (%).
const char* kPerIteration = R"(# nccl-tests version 2.19.6 nccl-headers=22902 nccl-library=22902
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0
# Per-Iteration Report: CUDA event timing; i_* uses max over process rows 
#
#                                                                 out-of-place (+ per-iteration)                                in-place (+ per-iteration)
#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%           timestamp
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)             (us)     (us)     (us)      (%)   %Y-%m-%d %H:%M:%S
        1024           256     float     sum      -1    20.00    0.05    0.09       0    18.00    26.00    25.00     3.40    21.00    0.05    0.09       0    19.00    27.00    26.00     3.50  2026-07-09 12:00:01
        2048           512     float     sum      -1    25.00    0.08    0.14       2    23.00    30.00    29.00     2.10      N/A     N/A     N/A       0      N/A      N/A      N/A      N/A  2026-07-09 12:00:02
# Out of bounds values : 2 FAILED
# Avg bus bandwidth    : 0.1
#
# Collective test concluded: all_reduce_perf
# GPU memory usage     : 1.2 GiB
)";

Options eight_ranks() {
  Options o;
  o.nranks = 8;
  return o;
}

TEST(NcclTestsText, PerIterationReportGivesEachPlacementsSpread) {
  IngestResult r = ingest_text(kPerIteration, "h100_allreduce.txt", eight_ranks());
  EXPECT_EQ(r.rows, 2u);
  // The units line ends with the timestamp's strftime format: still the units line (it read as none, warned).
  for (const auto& w : r.warnings) EXPECT_EQ(w.find("no units line"), std::string::npos) << w;
  ASSERT_EQ(r.samples.size(), 4u);
  const Sample* out = find(r, 1024, false);
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(out->ok());
  EXPECT_DOUBLE_EQ(out->time_us, 20.0);  // the time column, not a per-iteration statistic
  EXPECT_DOUBLE_EQ(out->min_us, 18.0);
  EXPECT_DOUBLE_EQ(out->max_us, 26.0);
  EXPECT_EQ(out->extra.at("p99_us"), "25.00");
  EXPECT_EQ(out->extra.at("cv_pct"), "3.40");
  const Sample* in = find(r, 1024, true);  // the in-place half's own statistics
  ASSERT_NE(in, nullptr);
  EXPECT_DOUBLE_EQ(in->time_us, 21.0);
  EXPECT_DOUBLE_EQ(in->min_us, 19.0);
  EXPECT_DOUBLE_EQ(in->max_us, 27.0);
  EXPECT_EQ(in->extra.at("p99_us"), "26.00");
  // #wrong > 0: failed, and a failed sample carries no timing, the per-iteration ones included.
  const Sample* wrong = find(r, 2048, false);
  ASSERT_NE(wrong, nullptr);
  EXPECT_FALSE(wrong->ok());
  EXPECT_EQ(wrong->min_us, 0.0);
  EXPECT_EQ(wrong->max_us, 0.0);
  EXPECT_EQ(wrong->extra.count("p99_us"), 0u);
  EXPECT_EQ(wrong->extra.at("cv_pct"), "2.10");
  // N/A everywhere: failed, nothing recorded.
  const Sample* na = find(r, 2048, true);
  ASSERT_NE(na, nullptr);
  EXPECT_FALSE(na->ok());
  EXPECT_EQ(na->min_us, 0.0);
  EXPECT_EQ(na->extra.count("cv_pct"), 0u);

  // A statistic's own unit converts: i_min in ms.
  std::string ms = kPerIteration;
  const std::string units = "(us)     (us)     (us)      (%)     (us)";
  ms.replace(ms.find(units), units.size(), "(ms)     (us)     (us)      (%)     (us)");
  EXPECT_DOUBLE_EQ(find(ingest_text(ms, "h100_allreduce.txt", eight_ranks()), 1024, false)->min_us, 18000.0);
  // Only the per-iteration times go with a failed sample: a pipe table's own column that ends in _us stays.
  const IngestResult pipe = ingest_text("# COLLECTIVE: all_reduce\n| payload | busbw | algbw | wait_us |\n"
                                        "| ---: | ---: | ---: | ---: |\n| 1MiB | N/A | N/A | 7 |\n",
                                        "pipe.md", eight_ranks());
  ASSERT_EQ(pipe.samples.size(), 1u);
  EXPECT_FALSE(pipe.samples[0].ok());
  EXPECT_EQ(pipe.samples[0].extra.at("wait_us"), "7");
  // A statistic named like a sample column keeps its i_ (a second time_us column would make the CSV unreadable); i_p10
  // is the sample's p10_us.
  std::string renamed = kPerIteration;
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"  i_p99", " i_time"}, {"   i_cv%", "   i_p10"}})
    for (std::size_t at; (at = renamed.find(from)) != std::string::npos;) renamed.replace(at, from.size(), to);
  renamed.replace(renamed.find("(%)     (us)"), 3, "(s)");  // the out-of-place i_p10's unit: seconds
  const Sample* r1 = find(ingest_text(renamed, "h100_allreduce.txt", eight_ranks()), 1024, false);
  EXPECT_EQ(r1->extra.at("i_time_us"), "25.00");
  EXPECT_EQ(r1->extra.count("time_us"), 0u);
  EXPECT_DOUBLE_EQ(r1->p10_us, 3.4e6);
  // An unknown unit, or a negative or non-numeric statistic, is bad input naming the line and the column.
  std::string bad_unit = kPerIteration;
  bad_unit.replace(bad_unit.find(units), units.size(), "(us)     (us)     (us)     (GB)     (us)");
  std::string e = error_of(bad_unit, "h100_allreduce.txt", eight_ranks());
  EXPECT_EQ(e.rfind("h100_allreduce.txt:8:", 0), 0u) << e;
  EXPECT_NE(e.find("i_cv%"), std::string::npos) << e;
  std::string negative = kPerIteration;
  negative.replace(negative.find("18.00"), 5, "-18.0");
  e = error_of(negative, "h100_allreduce.txt", eight_ranks());
  EXPECT_EQ(e.rfind("h100_allreduce.txt:9:", 0), 0u) << e;
  EXPECT_NE(e.find("column 'i_min'"), std::string::npos) << e;
}

// nccl-tests' gather_perf and scatter_perf (NCCL 2.28's ncclGather/ncclScatter) are collectives of their own; a
// program of no collective arfit models (hypercube_perf) is named as such, and a run of it is never read as an earlier
// run's collective or as the one the file name names.
TEST(NcclTestsText, GatherScatterAndProgramsOfNoModelledCollective) {
  // 8 GPUs: busbw = algbw x 7/8 for gather and scatter, which pins the rank count.
  const auto run = [](const std::string& program, const std::string& busbw = "11.47") {
    return "# Collective test starting: " + program +
           "\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
           "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
           "     1048576        262144     float    none      0    80.00   13.11   " + busbw + "      0    80.00   13.11   " + busbw + "      0\n"
           "# Out of bounds values : 0 OK\n";
  };
  for (const auto& [program, collective] :
       {std::pair<std::string, Collective>{"gather_perf", Collective::Gather}, {"scatter_perf", Collective::Scatter}}) {
    const IngestResult r = ingest_text(run(program), "node.txt", Options{});
    ASSERT_EQ(r.samples.size(), 2u) << program;
    EXPECT_EQ(r.samples[0].collective, collective) << program;
    EXPECT_EQ(r.samples[0].nranks, 8) << program;
    EXPECT_EQ(arfit::parse_collective(arfit::to_string(collective)), collective);
  }
  // Alone, and after a run of all_reduce_perf in a file whose name says allreduce: the hypercube run is refused,
  // naming its program and line (it was read as all-reduce, its sizes 'duplicates' of the first run's).
  std::string e = error_of(run("hypercube_perf"), "node.txt");
  EXPECT_NE(e.find("node.txt:4: the log is of hypercube_perf (line 1), which measures no collective arfit models"),
            std::string::npos) << e;
  e = error_of(run("all_reduce_perf", "22.94") + run("hypercube_perf"), "node_allreduce.txt");  // all-reduce: x 7/4
  EXPECT_NE(e.find("node_allreduce.txt:9: the log is of hypercube_perf (line 6)"), std::string::npos) << e;
  EXPECT_NE(e.find("gather, scatter); pass --collective"), std::string::npos) << e;
}
