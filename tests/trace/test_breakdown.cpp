#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "trace/breakdown.h"
#include "trace/vllm_profile.h"
#include "trace_test_util.h"

using namespace arfit::trace;

namespace {

const Profile& small() {
  static const Profile p = read_vllm_profile(trace_data("vllm_tp2_small.json"));
  return p;
}

double class_time(const PhaseBreakdown& p, const std::string& id) {
  for (const auto& c : p.classes)
    if (c.id == id) return c.time_us;
  return -1;
}

double entry_time(const PhaseBreakdown& p, const std::string& name) {
  for (const auto& e : p.entries)
    if (e.name == name) return e.time_us;
  return -1;
}

double entries_sum(const PhaseBreakdown& p) {
  double s = 0;
  for (const auto& e : p.entries) s += e.time_us;
  return s;
}

}  // namespace

TEST(Breakdown, ClassTimesOfThePrefillStep) {
  Breakdown b = compute_breakdown(small(), RuleTable::defaults(), {});
  ASSERT_EQ(b.phases.size(), 3u);
  const auto& pre = b.phases[0];
  EXPECT_DOUBLE_EQ(pre.total_us, 684.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "gemm"), 485.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "attention"), 54.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "rms_norm"), 10.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "elementwise"), 18.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "embedding"), 10.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "custom_ar_1stage"), 30.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "nccl_all_reduce"), 60.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "nccl_all_gather"), 9.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "reduce"), 5.0);
  EXPECT_DOUBLE_EQ(class_time(pre, kUnmatchedClass), 3.0);
  EXPECT_DOUBLE_EQ(pre.comm_us, 99.0);
  // Every class column is present in every phase (zeros in decode for the prefill-only classes).
  EXPECT_EQ(b.phases[1].classes.size(), b.class_ids.size());
  EXPECT_DOUBLE_EQ(class_time(b.phases[1], "attention"), 0.0);
  EXPECT_DOUBLE_EQ(b.phases[1].total_us, 24.0);
  EXPECT_DOUBLE_EQ(b.phases[1].comm_us, 11.0);
  EXPECT_DOUBLE_EQ(b.phases[2].comm_us, 12.0);
  // Unmatched is listed last and in the unmatched list, never dropped.
  EXPECT_EQ(b.class_ids.back(), kUnmatchedClass);
  ASSERT_EQ(b.unmatched.size(), 1u);
  EXPECT_NE(b.unmatched[0].name.find("sample_tokens_kernel"), std::string::npos);
  EXPECT_DOUBLE_EQ(b.unmatched[0].time_us, 3.0);
  EXPECT_EQ(b.unmatched[0].phases, std::vector<std::string>{"prefill"});
}

TEST(Breakdown, FoldingMakesANodeOneLeafAndClass) {
  BreakdownOptions opt;
  opt.fold = {"Sampler", "LogitsProcessor"};
  Breakdown b = compute_breakdown(small(), RuleTable::defaults(), opt);
  const auto& pre = b.phases[0];
  EXPECT_DOUBLE_EQ(pre.total_us, 684.0);                  // folding keeps the time
  EXPECT_DOUBLE_EQ(class_time(pre, "folded:Sampler"), 8.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "folded:LogitsProcessor"), 34.0);
  EXPECT_DOUBLE_EQ(class_time(pre, "nccl_all_gather"), -1);  // the gather sat inside LogitsProcessor
  EXPECT_DOUBLE_EQ(class_time(pre, "gemm"), 460.0);
  EXPECT_DOUBLE_EQ(pre.comm_us, 90.0);
  EXPECT_TRUE(b.unmatched.empty());  // the unmatched kernel was inside the Sampler
  auto leaves = collect_leaves(small().phases[0], opt.fold);
  auto it = std::find_if(leaves.begin(), leaves.end(), [](const Leaf& l) { return l.name == "Sampler"; });
  ASSERT_NE(it, leaves.end());
  EXPECT_TRUE(it->folded);
  EXPECT_TRUE(it->path.empty());
}

TEST(Breakdown, DuplicateNamesAreMadeUniqueByCallPath) {
  BreakdownOptions opt;
  opt.level = Level::Kernel;
  opt.top_k = 0;
  Breakdown b = compute_breakdown(small(), RuleTable::defaults(), opt);
  // The same gemm kernel runs under QKVParallelLinear and MergedColumnParallelLinear.
  const auto& pre = b.phases[0];
  std::string qkv = "QKVParallelLinear(weight=bfloat16[1536, 2048])/sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
  std::string mlp = "MergedColumnParallelLinear(weight=bfloat16[8192, 2048])/sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
  EXPECT_DOUBLE_EQ(entry_time(pre, qkv), 100.0);
  EXPECT_DOUBLE_EQ(entry_time(pre, mlp), 200.0);
  std::set<std::string> names(b.entry_names.begin(), b.entry_names.end());
  EXPECT_EQ(names.size(), b.entry_names.size());
  EXPECT_DOUBLE_EQ(entries_sum(pre), 684.0);

  // Module level: RowParallelLinear names differ by their weight; RMSNorm occurs in the layer and at the top.
  opt.level = Level::Module;
  Breakdown m = compute_breakdown(small(), RuleTable::defaults(), opt);
  EXPECT_DOUBLE_EQ(entry_time(m.phases[0], "LlamaDecoderLayer/RMSNorm(weight=bfloat16[2048])"), 8.0);
  EXPECT_DOUBLE_EQ(entry_time(m.phases[0], "LlamaForCausalLM/RMSNorm(weight=bfloat16[2048])"), 2.0);
  EXPECT_DOUBLE_EQ(entry_time(m.phases[0], "Attention"), 54.0);
  EXPECT_DOUBLE_EQ(entries_sum(m.phases[0]), 684.0);
}

TEST(Breakdown, UniqueNamesDisambiguateWithTheShortestPathSuffix) {
  auto u = unique_names({{"k", {"A", "X", "P"}}, {"k", {"B", "X", "P"}}, {"k", {"C", "Q"}}, {"j", {"A"}}, {"k", {"C", "Q"}}});
  EXPECT_EQ(u[0], "A/X/P/k");
  EXPECT_EQ(u[1], "B/X/P/k");
  EXPECT_EQ(u[2], "C/Q/k");
  EXPECT_EQ(u[3], "j");
  EXPECT_EQ(u[4], "C/Q/k #2");  // identical name and path
}

TEST(Breakdown, TopKSumsTheRestIntoOthers) {
  BreakdownOptions opt;
  opt.top_k = 3;
  Breakdown b = compute_breakdown(small(), RuleTable::defaults(), opt);
  ASSERT_EQ(b.entry_names.size(), 4u);
  EXPECT_EQ(b.entry_names.back(), "others");
  for (const auto& p : b.phases) EXPECT_NEAR(entries_sum(p), p.total_us, 1e-9) << p.phase;
  // The largest entry overall is the MLP up-projection gemm (200 us).
  EXPECT_DOUBLE_EQ(b.phases[0].entries[0].time_us, 200.0);
  EXPECT_DOUBLE_EQ(b.phases[0].entries[3].time_us, 684.0 - 200.0 - 120.0 - 100.0);
}

TEST(Breakdown, PhaseSelection) {
  Profile p = select_phases(small(), {"decode_2", "prefill"});
  ASSERT_EQ(p.phases.size(), 2u);
  EXPECT_EQ(p.phases[0].name, "prefill");  // profile order kept
  EXPECT_EQ(p.phases[1].name, "decode_2");
  try {
    select_phases(small(), {"decode_9"});
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("decode_9"), std::string::npos);
    EXPECT_NE(m.find("decode_1"), std::string::npos);  // lists what exists
  }
}

TEST(Breakdown, DecodeStepsAreDecimatedKeepingTheLast) {
  std::vector<PhaseBreakdown> ph(1 + 100);
  ph[0].kind = PhaseKind::Prefill;
  for (int i = 1; i <= 100; ++i) {
    ph[i].kind = PhaseKind::Decode;
    ph[i].step = i;
  }
  auto sel = figure_phases(ph, 5);
  ASSERT_EQ(sel.size(), 6u);
  EXPECT_EQ(sel.front(), 0u);  // prefill
  EXPECT_EQ(sel[1], 1u);       // first decode step
  EXPECT_EQ(sel.back(), 100u); // last decode step always kept
  for (std::size_t i = 1; i < sel.size(); ++i) EXPECT_LT(sel[i - 1], sel[i]);
  auto one = figure_phases(ph, 1);
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[1], 100u);
  EXPECT_EQ(figure_phases(ph, 500).size(), 101u);
  EXPECT_EQ(figure_phases(ph, 0).size(), 1u);
}

TEST(Breakdown, ShortenedLegendNames) {
  // The template arguments go, the element type they name stays.
  EXPECT_EQ(shorten_name("void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*, float, int)"), "rms_norm_kernel<bf16>");
  EXPECT_EQ(shorten_name("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8::Params)", 80),
            "cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8");
  std::string s = shorten_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 30);
  EXPECT_LE(s.size(), 30u);
  EXPECT_EQ(s.rfind("sm90_xmma", 0), 0u);
  EXPECT_NE(s.find("..."), std::string::npos);
  EXPECT_EQ(shorten_name("LlamaAttention"), "LlamaAttention");
}

TEST(Breakdown, ShortenedLegendNamesKeepDtypeAndAlgorithm) {
  // NCCL: collective, type, algorithm and protocol (and the reduction op unless it is Sum), both generations.
  EXPECT_EQ(shorten_name("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 36), "nccl AllReduce bf16 RING_LL");
  EXPECT_EQ(shorten_name("ncclKernel_AllReduce_RING_LL128_Sum_half(ncclWorkElem)", 36), "nccl AllReduce half RING_LL128");
  EXPECT_EQ(shorten_name("ncclDevKernel_ReduceScatter_Sum_f32_TREE_LL128(ncclDevKernelArgsStorage<4096ul>)", 36),
            "nccl ReduceScatter f32 TREE_LL128");
  EXPECT_EQ(shorten_name("ncclDevKernel_AllReduce_Max_u32_NVLS_SIMPLE(ncclDevKernelArgsStorage<4096ul>)", 36), "nccl AllReduce Max u32 NVLS_SIMPLE");
  // Cut in the middle, the type and algorithm are appended when the cut took them away.
  std::string s = shorten_name("ncclDevKernel_ReduceScatter_Sum_f32_TREE_LL128(ncclDevKernelArgsStorage<4096ul>)", 28);
  EXPECT_LE(s.size(), 28u) << s;
  EXPECT_NE(s.find("fp32"), std::string::npos) << s;
  EXPECT_NE(s.find("TREE_LL128"), std::string::npos) << s;
  EXPECT_EQ(shorten_name("void vllm::cross_device_reduce_1stage<__nv_bfloat16, (int)8>(vllm::RankData *, vllm::RankSignals)", 36),
            "cross_device_reduce_1stage<bf16>");
  EXPECT_EQ(shorten_name("void vllm::moe::moe_sum_kernel<c10::Half, (int)2>(T1 *, const T1 *, int)", 36), "moe_sum_kernel<fp16>");
  s = shorten_name("void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, (int)8, (bool)1>(P)", 30);
  EXPECT_LE(s.size(), 30u) << s;
  EXPECT_NE(s.find("bf16"), std::string::npos) << s;
  EXPECT_NE(s.find("oneshot"), std::string::npos) << s;
  // Types in the name itself count; scale types in the parameter list do not.
  EXPECT_EQ(shorten_name("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas", 36)
                .rfind("sm90_xmma_gemm_bf16", 0), 0u);
  EXPECT_EQ(shorten_name("void vllm::moe::count_and_sort_expert_tokens_kernel<int>(const int *, int *, float *)", 40),
            "count_and_sort_expert_tokens_kernel");
  EXPECT_EQ(shorten_name("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<X, cutlass::float_e4m3_t>>(P)", 40),
            "GemmUniversal<fp8_e4m3>");
}

TEST(Breakdown, KernelNameFactsForWhatIf) {
  KernelNameFacts f = kernel_name_facts("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(f.dtype, "bf16");
  EXPECT_EQ(f.reduce_op, "Sum");
  EXPECT_EQ(f.algorithm, "RING_LL");
  f = kernel_name_facts("ncclKernel_AllReduce_RING_LL_Sum_uint32_t(ncclWorkElem)");
  EXPECT_EQ(f.dtype, "uint32");
  f = kernel_name_facts("ncclDevKernel_AllReduce_Max_u32_TREE_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(f.dtype, "uint32");
  EXPECT_EQ(f.reduce_op, "Max");
  EXPECT_EQ(f.algorithm, "TREE_LL");
  f = kernel_name_facts("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)");
  EXPECT_EQ(f.dtype, "");  // a gather moves bytes: NCCL names no type
  EXPECT_EQ(f.reduce_op, "");
  EXPECT_EQ(kernel_name_facts("void vllm::cross_device_reduce_2stage<half, 4>(...)").dtype, "fp16");
  EXPECT_EQ(kernel_name_facts("void vllm::cross_device_reduce_2stage<half, 4>(...)").algorithm, "2stage");
}

TEST(Breakdown, CsvTablesCarryEveryPhaseAndClass) {
  Breakdown b = compute_breakdown(small(), RuleTable::defaults(), {});
  std::string csv = class_table_csv(b);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "phase,kind,step,class,label,communication,time_us,share_pct,invocations");
  EXPECT_NE(csv.find("prefill,prefill,0,nccl_all_reduce,NCCL all-reduce,1,60.000,8.77,2\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("decode_2,decode,2,custom_ar_1stage,Custom AR 1-stage,1,6.000,24.00,2\n"), std::string::npos) << csv;
  std::size_t rows = static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')) - 1;
  EXPECT_EQ(rows, b.phases.size() * b.class_ids.size());
  std::string comm = comm_share_csv(b);
  EXPECT_NE(comm.find("prefill,prefill,0,684.000,99.000,14.47\n"), std::string::npos) << comm;
  std::string un = unmatched_csv(b);
  EXPECT_NE(un.find("\"void sample_tokens_kernel<float>(float const*, int*, unsigned long)\",3.000,1,prefill"), std::string::npos) << un;
}
