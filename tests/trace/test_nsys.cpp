#include <gtest/gtest.h>

#include "model/atomic_file.h"
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
  // NVTX cannot split a kernel summary.
  LoadOptions lo;
  lo.nvtx_path = trace_data("nsys_nvtx_gpu_proj.csv");
  EXPECT_THROW(load_profile(trace_data("nsys_kern_sum.csv"), lo), arfit::InputError);
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
