#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <tuple>

#include "io/input_file.h"
#include "model/errors.h"
#include "trace/breakdown.h"
#include "trace/load.h"
#include "trace/nsys_csv.h"
#include "trace_test_util.h"

using namespace arfit::trace;

namespace {
double class_time(const PhaseBreakdown& p, const std::string& id) {
  for (const auto& c : p.classes)
    if (c.id == id) return c.time_us;
  return -1;
}
}  // namespace

TEST(NsysCsv, KernelSummary) {
  Profile p = load_profile(trace_data("nsys_kern_sum.csv"));
  EXPECT_EQ(p.format, "nsys-kern-sum");
  ASSERT_EQ(p.phases.size(), 1u);
  EXPECT_EQ(p.phases[0].name, "all");
  ASSERT_EQ(p.phases[0].roots.size(), 6u);
  EXPECT_DOUBLE_EQ(p.phases[0].roots[0].cuda_time_us, 520.0);  // ns -> us
  EXPECT_EQ(p.phases[0].roots[0].invocations, 64);
  // Quoted names with commas survive.
  EXPECT_EQ(p.phases[0].roots[1].name.rfind("void vllm::cross_device_reduce_1stage<__nv_bfloat16, (int)4>", 0), 0u);
  Breakdown b = compute_breakdown(p, RuleTable::defaults(), {});
  EXPECT_DOUBLE_EQ(b.phases[0].total_us, 1000.0);
  EXPECT_DOUBLE_EQ(b.phases[0].comm_us, 280.0);
  EXPECT_DOUBLE_EQ(class_time(b.phases[0], "custom_ar_1stage"), 200.0);
  EXPECT_DOUBLE_EQ(class_time(b.phases[0], "nccl_all_gather"), 80.0);
  ASSERT_EQ(b.unmatched.size(), 1u);
  EXPECT_EQ(b.unmatched[0].name, "my_private_fused_op_kernel");
}

TEST(NsysCsv, GpuTraceWithoutNvtxIsOnePhase) {
  Profile p = load_profile(trace_data("nsys_gpu_trace.csv"));
  EXPECT_EQ(p.format, "nsys-gpu-trace");
  ASSERT_EQ(p.phases.size(), 1u);
  Breakdown b = compute_breakdown(p, RuleTable::defaults(), {});
  EXPECT_DOUBLE_EQ(b.phases[0].total_us, 2 + 40 + 15 + 40 + 15 + 5 + 4 + 5 + 3 + 1);
  EXPECT_DOUBLE_EQ(class_time(b.phases[0], "memory"), 2.0);
}

TEST(NsysCsv, NvtxRangesSplitPhases) {
  LoadOptions lo;
  lo.nvtx_path = trace_data("nsys_nvtx_gpu_proj.csv");
  Profile p = load_profile(trace_data("nsys_gpu_trace.csv"), lo);
  ASSERT_EQ(p.phases.size(), 4u);
  EXPECT_EQ(p.phases[0].name, "prefill");
  EXPECT_EQ(p.phases[0].kind, PhaseKind::Prefill);
  EXPECT_EQ(p.phases[1].name, "decode_1");
  EXPECT_EQ(p.phases[2].name, "decode_2");
  EXPECT_EQ(p.phases[2].step, 2);
  EXPECT_EQ(p.phases[3].name, "outside_nvtx");  // the memcpy before the first range is kept
  Breakdown b = compute_breakdown(p, RuleTable::defaults(), {});
  EXPECT_DOUBLE_EQ(b.phases[0].total_us, 110.0);
  EXPECT_DOUBLE_EQ(b.phases[0].comm_us, 30.0);
  EXPECT_DOUBLE_EQ(b.phases[1].total_us, 9.0);
  EXPECT_DOUBLE_EQ(b.phases[1].comm_us, 4.0);
  EXPECT_DOUBLE_EQ(b.phases[2].total_us, 9.0);
  EXPECT_DOUBLE_EQ(b.phases[3].total_us, 2.0);
  // Invocations counted per launch.
  EXPECT_EQ(p.phases[0].roots[0].invocations, 2);
  // Phase selection works on NVTX phases too.
  Profile d = select_phases(p, {"decode_2"});
  ASSERT_EQ(d.phases.size(), 1u);
  EXPECT_EQ(d.phases[0].roots.size(), 3u);
}

TEST(NsysCsv, ErrorsNameFileLineAndColumn) {
  arfit::testing::TempDir dir;
  std::string text = arfit::read_file(trace_data("nsys_kern_sum.csv"));
  auto pos = text.find("200000,64");
  text.replace(pos, 6, "20x000");
  std::string bad = dir.write("bad_sum.csv", text);
  try {
    load_profile(bad);
    FAIL() << "no error";
  } catch (const arfit::InputError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("bad_sum.csv:5:"), std::string::npos) << m;
    EXPECT_NE(m.find("column 'Total Time (ns)'"), std::string::npos) << m;
  }
  std::string nohdr = dir.write("nohdr.csv", "a,b,c\n1,2,3\n");
  EXPECT_THROW(parse_nsys_csv(arfit::read_file(nohdr), nohdr), arfit::InputError);
  // NVTX cannot split a kernel summary: the request is wrong, not the file.
  LoadOptions lo;
  lo.nvtx_path = trace_data("nsys_nvtx_gpu_proj.csv");
  EXPECT_THROW(load_profile(trace_data("nsys_kern_sum.csv"), lo), OptionNotForProfile);
  EXPECT_THROW(load_profile(trace_data("vllm_tp2_small.json"), lo), OptionNotForProfile);
  // An NVTX report without phase ranges.
  std::string nv = dir.write("nv.csv", "Name,Projected Start (ns),Projected Duration (ns)\nlayer,1,2\n");
  lo.nvtx_path = nv;
  EXPECT_THROW(load_profile(trace_data("nsys_gpu_trace.csv"), lo), arfit::InputError);
  // Unknown content.
  std::string junk = dir.write("junk.txt", "hello\n");
  try {
    load_profile(junk);
    FAIL() << "no error";
  } catch (const arfit::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("junk.txt"), std::string::npos);
  }
}

namespace {
const ProfileNode* node_named(const Profile& p, const std::string& prefix) {
  for (const auto& n : p.phases.at(0).roots)
    if (n.name.rfind(prefix, 0) == 0) return &n;
  return nullptr;
}
}  // namespace

// The kernel summary as the Nsight Systems GUI exports it: no units in the header, each time cell with its own
// unit (every spelling: s, ms, us, µs U+00B5, μs U+03BC, ns), thousands separators, "0.00%" in Time, a UTF-8
// byte-order mark and CRLF line ends.
TEST(NsysCsv, GuiExportWithUnitsInEveryCell) {
  Profile p = load_profile(trace_data("nsys_gui_kern_sum_units.csv"));
  EXPECT_EQ(p.format, "nsys-kern-sum");
  ASSERT_EQ(p.phases.size(), 1u);
  ASSERT_EQ(p.phases[0].roots.size(), 8u);
  struct Expect {
    const char* name;
    double us;
    std::int64_t calls;
  };
  for (const Expect& e : {Expect{"fused_moe_kernel", 1.345e6, 1024},                   // "1.345 s", "1,024"
                          Expect{"ncclDevKernel_AllReduce", 1075794.0, 10240},          // "1,075.794 ms"
                          Expect{"void vllm::moe::moe_align_block_size", 5.819, 3},     // "5.819 μs" (Greek mu)
                          Expect{"void vllm::moe::moe_sum_kernel", 5.819, 2},           // "5.819 µs" (micro sign)
                          Expect{"triton_red_fused", 12.5, 4},                          // "12.5 us"
                          Expect{"reduce_segments", 0.241, 1},                          // "241 ns"
                          Expect{"[CUDA memcpy", 1234.567, 7},                          // "1,234,567 ns"
                          Expect{"void at_cuda_detail::cub::DeviceScanInitKernel", 0.999, 1}}) {  // Time "0.00%"
    const ProfileNode* n = node_named(p, e.name);
    ASSERT_NE(n, nullptr) << e.name;
    EXPECT_NEAR(n->cuda_time_us, e.us, 1e-9 * e.us) << e.name;
    EXPECT_EQ(n->invocations, e.calls) << e.name;
  }
  Breakdown b = compute_breakdown(p, RuleTable::defaults(), {});
  EXPECT_NEAR(b.phases[0].total_us, 1.345e6 + 1075794.0 + 5.819 * 2 + 12.5 + 0.241 + 1234.567 + 0.999, 1e-6);
  EXPECT_NEAR(b.phases[0].comm_us, 1075794.0, 1e-6);
  EXPECT_TRUE(b.unmatched.empty());
}

// `nsys stats --format csv` names the unit in the header; every spelling reads, and the GUI's cell units
// override a header unit.
TEST(NsysCsv, CliExportWithEachHeaderUnit) {
  struct Unit {
    const char* header;
    double us;
  };
  for (const Unit& u : {Unit{"ns", 1e-3}, Unit{"us", 1.0}, Unit{"\xc2\xb5s", 1.0}, Unit{"\xce\xbcs", 1.0}, Unit{"ms", 1e3}, Unit{"s", 1e6}}) {
    std::string h = std::string(" (") + u.header + ")";
    std::string text = "Time (%),Total Time" + h + ",Instances,Avg" + h + ",Med" + h + ",Min" + h + ",Max" + h + ",StdDev" + h +
                       ",Name\n75.0,\"1,500\",3,500,500,400,600,100,fused_moe_kernel\n25.0,500.25,\"1,000\",0.5,0.5,0.5,0.5,0,my_kernel\n"
                       "0.0,2 ms,1,2 ms,2 ms,2 ms,2 ms,0 ns,cell_unit_wins\n";
    Profile p = parse_nsys_csv(text, std::string("cli_") + u.header + ".csv");
    ASSERT_EQ(p.phases.at(0).roots.size(), 3u) << u.header;
    EXPECT_DOUBLE_EQ(p.phases[0].roots[0].cuda_time_us, 1500 * u.us) << u.header;
    EXPECT_DOUBLE_EQ(p.phases[0].roots[1].cuda_time_us, 500.25 * u.us) << u.header;
    EXPECT_EQ(p.phases[0].roots[1].invocations, 1000) << u.header;
    EXPECT_DOUBLE_EQ(p.phases[0].roots[2].cuda_time_us, 2000.0) << u.header;
  }
}

TEST(NsysCsv, CountsBeyondInt64AreAnErrorNamingTheCell) {
  std::string text = "Total Time (ns),Instances,Name\n";
  for (int i = 0; i < 2000; ++i) text += "1000,9000000000000000,k\n";  // 2000 rows of 9e15 calls: the sum is beyond int64
  try {
    parse_nsys_csv(text, "huge.csv");
    FAIL() << "a summed count beyond int64 was accepted";
  } catch (const arfit::InputError& e) {
    EXPECT_EQ(e.file(), "huge.csv");
    EXPECT_EQ(e.field(), "Instances");
    EXPECT_GT(e.line(), 2);  // the row whose count no longer fits, not the first
  }
  EXPECT_THROW(parse_nsys_csv("Total Time (ns),Instances,Name\n1000,1e17,k\n", "too_many.csv"), arfit::InputError);
}

TEST(NsysCsv, GuiGpuTraceWithUnitsInEveryCell) {
  std::string text =
      "Start,Duration,CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem,DynSMem,Bytes,Throughput,SrcMemKd,DstMemKd,Device,Ctx,Strm,Name\n"
      "1.000500 s,40.000 \xce\xbcs,120,132,1,1,384,1,1,168,0 B,213 B,,,,,H100 (0),1,7,fused_moe_kernel\n"
      "1.000541 s,\"1,500 ns\",121,64,1,1,512,1,1,40,0 B,0 B,,,,,H100 (0),1,7,ncclDevKernel_AllReduce_Sum_bf16_RING_LL\n";
  Profile p = parse_nsys_csv(text, "gui_trace.csv");
  EXPECT_EQ(p.format, "nsys-gpu-trace");
  ASSERT_EQ(p.phases.at(0).roots.size(), 2u);
  EXPECT_DOUBLE_EQ(p.phases[0].roots[0].cuda_time_us, 40.0);
  EXPECT_DOUBLE_EQ(p.phases[0].roots[1].cuda_time_us, 1.5);
}

TEST(NsysCsv, UnreadableGuiCellsNameFileLineAndColumn) {
  const std::string header = "Time,Total Time,Instances,Avg,Med,Min,Max,StdDev,Name\n";
  struct Case {
    std::string row, column, expect;
  };
  for (const Case& c : {Case{"1.00%,75.794 mx,3,1 ms,1 ms,1 ms,1 ms,0 ns,k\n", "Total Time", "got '75.794 mx'"},
                        Case{"1.00%,\"75,79 ms\",3,1 ms,1 ms,1 ms,1 ms,0 ns,k\n", "Total Time", "got '75,79 ms'"},
                        Case{"1.00%,\"1,2345 ms\",3,1 ms,1 ms,1 ms,1 ms,0 ns,k\n", "Total Time", "got '1,2345 ms'"},
                        Case{"1.00%,ms,3,1 ms,1 ms,1 ms,1 ms,0 ns,k\n", "Total Time", "got 'ms'"},
                        Case{"1.00%,75 ms,3.5,1 ms,1 ms,1 ms,1 ms,0 ns,k\n", "Instances", "expected a whole number of calls, got '3.5'"},
                        Case{"1.00%,75 ms,\"1,00\",1 ms,1 ms,1 ms,1 ms,0 ns,k\n", "Instances", "got '1,00'"}}) {
    try {
      parse_nsys_csv(header + "2.00%,1 ms,1,1 ms,1 ms,1 ms,1 ms,0 ns,ok\n" + c.row, "gui.csv");
      ADD_FAILURE() << "no error for " << c.row;
    } catch (const arfit::InputError& e) {
      std::string m = e.what();
      EXPECT_NE(m.find("gui.csv:3: column '" + c.column + "'"), std::string::npos) << m;
      EXPECT_NE(m.find(c.expect), std::string::npos) << m;
    }
  }
}

// A time cell beyond 10^13 us (116 days; here 1e308 ns) used to be read, and sums of such cells wrote "inf"
// and "-nan" into the breakdown tables with exit 0. Now it is an error naming the line and the column.
TEST(NsysCsv, TimesBeyondAnyProfileAreErrorsNamingTheCell) {
  const std::string header = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n";
  try {
    parse_nsys_csv(header + "50.0,1e308,1,1,1,1,1,1,k1\n50.0,1e308,1,1,1,1,1,1,k2\n", "huge.csv");
    FAIL() << "no error";
  } catch (const arfit::InputError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("huge.csv:2: column 'Total Time (ns)':", 0), 0u) << m;
    EXPECT_NE(m.find("beyond 1e13 us"), std::string::npos) << m;
  }
  // The GUI layout with its own unit in the cell: 117 days in seconds is over, 115 days is not.
  const std::string gui = "Time,Total Time,Instances,Avg,Med,Min,Max,StdDev,Name\n";
  EXPECT_THROW(parse_nsys_csv(gui + "1%,10108800 s,1,1 s,1 s,1 s,1 s,0 s,k\n", "gui.csv"), arfit::InputError);
  const Profile p = parse_nsys_csv(gui + "1%,9936000 s,1,1 s,1 s,1 s,1 s,0 s,k\n", "gui.csv");
  EXPECT_DOUBLE_EQ(p.phases.at(0).roots.at(0).cuda_time_us, 9.936e12);
}

// Every row of every nsys report has the header's cells (issue 43). The NVTX reader goes through the same row check
// as the kernel reports: a truncated last row lost its phase (its kernels counted outside every phase) and a
// repeated header (two reports concatenated) made phantom phases; both are refused naming file, line and, for a
// missing cell, the column.
namespace {
const char* const kNvtxHeader = "Name,Projected Start (ns),Projected Duration (ns)\n";
const char* const kTraceText = "Start (ns),Duration (ns),Name\n1500,100,gemm_kernel\n2500,100,gemm_kernel\n";

arfit::InputError nsys_error(const std::string& trace, const std::string& nvtx) {
  try {
    parse_nsys_csv(trace, "trace.csv", nvtx.empty() ? NsysOptions{} : NsysOptions{nvtx, "nvtx.csv"});
  } catch (const arfit::InputError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted:\n" << trace << "\n" << nvtx;
  return arfit::InputError("", 0, "", "");
}
}  // namespace

TEST(NsysCsv, NvtxTruncatedLastRowIsRefusedNamingLineAndColumn) {
  const std::string whole = std::string(kNvtxHeader) + "prefill,1000,1000\ndecode step,2000,1000\n";
  // Accepted whole: two phases, each with its kernel.
  const Profile p = parse_nsys_csv(kTraceText, "trace.csv", {whole, "nvtx.csv"});
  ASSERT_EQ(p.phases.size(), 2u);
  EXPECT_EQ(p.phases[1].name, "decode_1");
  // Cut after the start of the last range: the decode phase would vanish.
  const auto e = nsys_error(kTraceText, std::string(kNvtxHeader) + "prefill,1000,1000\ndecode step,2000\n");
  EXPECT_EQ(e.file(), "nvtx.csv");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "Projected Duration (ns)");
  EXPECT_NE(e.reason().find("truncated"), std::string::npos) << e.what();
  // Cut inside a quoted name: as many cells as the header, but the quote never closes.
  const auto q = nsys_error(kTraceText, std::string(kNvtxHeader) + "prefill,1000,1000\n2000,1000,\"decode ste\n");
  EXPECT_EQ(q.line(), 3);
  EXPECT_NE(q.reason().find("never closed"), std::string::npos) << q.what();
}

TEST(NsysCsv, NvtxRepeatedHeaderIsRefusedNamingItsLine) {
  const std::string one = std::string(kNvtxHeader) + "prefill,1000,1000\n";
  const auto e = nsys_error(kTraceText, one + "\n" + one);  // a blank line between: still line 4
  EXPECT_EQ(e.file(), "nvtx.csv");
  EXPECT_EQ(e.line(), 4);
  EXPECT_NE(e.reason().find("repeated"), std::string::npos) << e.what();
  // The kernel trace alike.
  const auto k = nsys_error(std::string(kTraceText) + "Start (ns),Duration (ns),Name\n", "");
  EXPECT_EQ(k.file(), "trace.csv");
  EXPECT_EQ(k.line(), 4);
}

// A row with more cells than the header (an unquoted comma in a kernel or range name) is refused in each report,
// naming file and line; quoted, the comma is part of the name.
TEST(NsysCsv, RowsWithMoreCellsThanTheHeaderAreRefusedInEveryReport) {
  const std::string sum_header = "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n";
  const std::string sum_row = "50.0,1000,2,500,500,400,600,10.0,";
  const auto sum = nsys_error(sum_header + sum_row + "gemm\n" + sum_row + "void foo<int, float>(int)\n", "");
  EXPECT_EQ(sum.line(), 3);
  EXPECT_NE(sum.reason().find("10 cells"), std::string::npos) << sum.what();
  EXPECT_NE(sum.reason().find("unquoted comma"), std::string::npos) << sum.what();
  const auto trace = nsys_error(std::string(kTraceText) + "3000,5,void foo<int, float>(int)\n", "");
  EXPECT_EQ(trace.file(), "trace.csv");
  EXPECT_EQ(trace.line(), 4);
  const auto nvtx = nsys_error(kTraceText, std::string(kNvtxHeader) + "prefill,1000,1000\ndecode, step 1,2000,1000\n");
  EXPECT_EQ(nvtx.file(), "nvtx.csv");
  EXPECT_EQ(nvtx.line(), 3);

  const Profile s = parse_nsys_csv(sum_header + sum_row + "\"void foo<int, float>(int)\"\n", "sum.csv");
  ASSERT_EQ(s.phases.at(0).roots.size(), 1u);
  EXPECT_EQ(s.phases[0].roots[0].name, "void foo<int, float>(int)");
  const Profile t = parse_nsys_csv(std::string(kTraceText) + "3000,5,\"void foo<int, float>(int)\"\n", "trace.csv",
                                   {std::string(kNvtxHeader) + "prefill,1000,1000\n\"decode, step 1\",2000,2000\n", "nvtx.csv"});
  ASSERT_EQ(t.phases.size(), 2u);
  ASSERT_EQ(t.phases[1].roots.size(), 2u);
  EXPECT_EQ(t.phases[1].roots[1].name, "void foo<int, float>(int)");
}

// Ranges starting together (a projected range starts at its first kernel, so nested ranges often do): the shorter
// one is the innermost, wherever the report lists it.
TEST(NsysCsv, OfNvtxRangesStartingTogetherTheShorterHoldsTheKernel) {
  const std::string trace = "Start (ns),Duration (ns),Name\n1000,10,first\n1600,10,later\n";
  for (const bool inner_first : {true, false}) {
    const std::string outer = "decode step,1000,1000\n", inner = "prefill,1000,500\n";
    const Profile p = parse_nsys_csv(trace, "trace.csv",
                                     {std::string(kNvtxHeader) + (inner_first ? inner + outer : outer + inner), "nvtx.csv"});
    ASSERT_EQ(p.phases.size(), 2u) << inner_first;
    EXPECT_EQ(p.phases[0].name, "prefill");
    ASSERT_EQ(p.phases[0].roots.size(), 1u) << inner_first;
    EXPECT_EQ(p.phases[0].roots[0].name, "first");
    ASSERT_EQ(p.phases[1].roots.size(), 1u) << inner_first;
    EXPECT_EQ(p.phases[1].roots[0].name, "later");
  }
}

// Phase assignment (trace/range_index.h, O((kernels + ranges) log ranges)) against a brute-force reference written
// from the definition: for each kernel, of the phase ranges holding its start, the latest-starting, then the
// shortest, then the later in the report; phases numbered in that order. Random reports with nested and
// overlapping ranges, shared starts and ends, empty ranges, ranges that are no phase, and kernels outside every range.
namespace {

struct RandomRange {
  long start, end;
  std::string name;
  std::size_t row;  // position in the report
};

// phase name -> kernel name -> (launches, total ns)
using PhaseKernels = std::map<std::string, std::map<std::string, std::pair<std::int64_t, long>>>;

PhaseKernels brute_force_phases(const std::vector<RandomRange>& ranges, const std::vector<std::pair<long, std::string>>& kernels,
                                long duration_ns) {
  const auto is_prefill = [](const RandomRange* r) { return r->name.find("prefill") != std::string::npos; };
  const auto is_decode = [](const RandomRange* r) {  // names are matched without case: "Decode" too
    return r->name.find("decode") != std::string::npos || r->name.find("Decode") != std::string::npos;
  };
  std::vector<const RandomRange*> phase_ranges;
  for (const auto& r : ranges)
    if (is_prefill(&r) || is_decode(&r)) phase_ranges.push_back(&r);
  const auto before = [](const RandomRange* a, const RandomRange* b) {  // time order of numbering and of "innermost"
    return std::make_tuple(a->start, -a->end, a->row) < std::make_tuple(b->start, -b->end, b->row);
  };
  std::sort(phase_ranges.begin(), phase_ranges.end(), before);
  std::map<const RandomRange*, std::string> phase_of;
  int nprefill = 0, ndecode = 0;
  for (const RandomRange* r : phase_ranges)
    phase_of[r] = is_prefill(r) ? (++nprefill == 1 ? "prefill" : "prefill_" + std::to_string(nprefill))
                      : "decode_" + std::to_string(++ndecode);
  PhaseKernels out;
  for (const auto& [t, k] : kernels) {
    const RandomRange* holder = nullptr;
    for (const RandomRange* r : phase_ranges)
      if (r->start <= t && t < r->end && (!holder || before(holder, r))) holder = r;
    auto& cell = out[holder ? phase_of[holder] : "outside_nvtx"][k];
    cell.first += 1;
    cell.second += duration_ns;
  }
  return out;
}

}  // namespace

TEST(NsysCsv, NvtxPhasesMatchABruteForceAssignmentOnRandomReports) {
  std::mt19937_64 rng(43);
  const auto pick = [&](long n) { return static_cast<long>(rng() % static_cast<std::uint64_t>(n)); };
  const char* const names[] = {"prefill", "decode step", "layer 3", "nccl AllReduce", "Decode"};
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<RandomRange> ranges;
    std::string nvtx = "Start (ns),End (ns),Name\n";
    const long nranges = 1 + pick(30);
    for (long i = 0; i < nranges; ++i) {
      RandomRange r;
      r.start = 10 * pick(40);  // on a coarse grid, so that starts and ends coincide often
      r.end = r.start + 10 * pick(25);
      r.name = names[pick(5)];
      r.row = ranges.size();
      nvtx += std::to_string(r.start) + "," + std::to_string(r.end) + "," + r.name + "\n";
      ranges.push_back(r);
    }
    std::vector<std::pair<long, std::string>> kernels;
    std::string trace = "Start (ns),Duration (ns),Name\n";
    for (int k = 0, n = 1 + static_cast<int>(pick(60)); k < n; ++k) {
      const long t = pick(700);  // also past every range's end
      kernels.emplace_back(t, "kernel_" + std::to_string(pick(4)));
      trace += std::to_string(t) + ",7," + kernels.back().second + "\n";
    }
    const PhaseKernels expected = brute_force_phases(ranges, kernels, 7);
    const bool any_phase_range = std::any_of(ranges.begin(), ranges.end(), [](const RandomRange& r) {
      return r.name != "layer 3" && r.name != "nccl AllReduce";
    });
    if (!any_phase_range) continue;  // refused: nothing to tell phases apart (NsysCsv.ErrorsNameFileLineAndColumn)
    const Profile p = parse_nsys_csv(trace, "trace.csv", {nvtx, "nvtx.csv"});
    PhaseKernels got;
    for (const Phase& ph : p.phases)
      for (const ProfileNode& n : ph.roots) got[ph.name][n.name] = {n.invocations, std::lround(n.cuda_time_us * 1000)};
    ASSERT_EQ(got, expected) << "trial " << trial << "\n" << nvtx << trace;
  }
}
