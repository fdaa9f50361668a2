// Kernel summaries of today's engines (tests/trace/data, kernel names as vLLM, SGLang, TensorRT-LLM, DeepEP,
// DeepGEMM, FlashInfer, FlashAttention, CUTLASS, CUB and PyTorch Inductor name them; time shares plausible for
// each setup): at most 5 % of kernel time may stay unclassified, and the MoE, Inductor and Triton kernels land
// in their classes.
#include <gtest/gtest.h>

#include <map>

#include "trace/breakdown.h"
#include "trace/load.h"
#include "trace_test_util.h"

using namespace arfit::trace;

namespace {

struct EngineProfile {
  Breakdown breakdown;
  std::map<std::string, std::string> class_of;  // full kernel name -> class id

  double share_pct(const std::string& class_id) const {
    const PhaseBreakdown& p = breakdown.phases.at(0);
    for (const auto& c : p.classes)
      if (c.id == class_id) return 100.0 * c.time_us / p.total_us;
    return 0.0;
  }
  // The class of the one kernel whose name starts with `prefix`.
  std::string class_of_kernel(const std::string& prefix) const {
    std::string found = "(no kernel " + prefix + ")";
    int n = 0;
    for (const auto& [name, id] : class_of)
      if (name.rfind(prefix, 0) == 0) {
        found = id;
        ++n;
      }
    return n > 1 ? "(" + std::to_string(n) + " kernels start with " + prefix + ")" : found;
  }
};

EngineProfile load_engine_profile(const std::string& file) {
  EngineProfile e;
  Profile p = load_profile(trace_data(file));
  BreakdownOptions opt;
  opt.top_k = 0;  // every kernel is an entry
  e.breakdown = compute_breakdown(p, RuleTable::defaults(), opt);
  for (const auto& entry : e.breakdown.phases.at(0).entries) e.class_of[entry.full_name] = entry.class_id;
  return e;
}

void expect_at_most_5pct_unmatched(const EngineProfile& e) {
  EXPECT_LE(e.share_pct(kUnmatchedClass), 5.0);
  double unmatched_us = 0;
  for (const auto& u : e.breakdown.unmatched) unmatched_us += u.time_us;
  EXPECT_NEAR(100.0 * unmatched_us / e.breakdown.phases.at(0).total_us, e.share_pct(kUnmatchedClass), 1e-9);
}

}  // namespace

// vLLM, Mixtral-8x7B with expert parallelism on 4x A100, exported from the Nsight Systems GUI (units in cells).
TEST(EngineKernels, VllmMixtralExpertParallelGuiExport) {
  EngineProfile e = load_engine_profile("vllm_mixtral_ep4_a100_gui_kern_sum.csv");
  EXPECT_NEAR(e.breakdown.phases.at(0).total_us, 212e6, 1e3);  // a 212 s run
  expect_at_most_5pct_unmatched(e);
  EXPECT_EQ(e.class_of_kernel("fused_moe_kernel"), "moe_gemm");
  EXPECT_GT(e.share_pct("moe_gemm"), 45.0);
  for (const char* k : {"void vllm::moe::moe_align_block_size_kernel", "void vllm::moe::count_and_sort_expert_tokens_kernel",
                        "void vllm::moe::topkGatingSoftmax", "void vllm::moe::moe_sum_kernel"})
    EXPECT_EQ(e.class_of_kernel(k), "moe_routing") << k;
  EXPECT_EQ(e.class_of_kernel("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt"), "rms_norm");
  EXPECT_EQ(e.class_of_kernel("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt"), "rms_norm");
  EXPECT_EQ(e.class_of_kernel("void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel"), "sort_scan");
  EXPECT_EQ(e.class_of_kernel("void at_cuda_detail::cub::DeviceScanKernel"), "sort_scan");
  EXPECT_EQ(e.class_of_kernel("ncclDevKernel_ReduceScatter_Sum_bf16"), "nccl_reduce_scatter");
}

// vLLM on A100 with the Triton attention backend and Inductor fusions (nsys stats --format csv).
TEST(EngineKernels, VllmQwen3MoeTritonAttention) {
  EngineProfile e = load_engine_profile("vllm_qwen3moe_a100_kern_sum.csv");
  expect_at_most_5pct_unmatched(e);
  EXPECT_EQ(e.class_of_kernel("reduce_segments"), "attention");  // split-KV reduction of unified attention
  EXPECT_EQ(e.class_of_kernel("kernel_unified_attention_2d"), "attention");
  EXPECT_EQ(e.class_of_kernel("kernel_unified_attention_3d"), "attention");
  EXPECT_EQ(e.class_of_kernel("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt"), "rms_norm");
  EXPECT_EQ(e.class_of_kernel("triton_per_fused__to_copy_mean_mul_pow_rsqrt_view"), "rms_norm");
  EXPECT_EQ(e.class_of_kernel("triton_poi_fused_mul_silu_slice"), "elementwise");
  EXPECT_EQ(e.class_of_kernel("void at_cuda_detail::cub::DeviceSegmentedRadixSortKernel"), "sort_scan");
  EXPECT_EQ(e.class_of_kernel("void at::native::tensor_kernel_scan_innermost_dim"), "sort_scan");
  EXPECT_EQ(e.class_of_kernel("fused_moe_kernel"), "moe_gemm");
  EXPECT_GT(e.share_pct("attention"), 15.0);
}

// SGLang, DeepSeek-V3 with DeepEP expert parallelism and DeepGEMM grouped GEMMs on 8x H200.
TEST(EngineKernels, SglangDeepSeekDeepEp) {
  EngineProfile e = load_engine_profile("sglang_dsv3_ep8_h200_kern_sum.csv");
  expect_at_most_5pct_unmatched(e);
  for (const char* k : {"void deep_ep::internode_ll::dispatch", "void deep_ep::internode_ll::combine", "void deep_ep::intranode::dispatch",
                        "void deep_ep::intranode::combine", "void deep_ep::intranode::notify_dispatch"})
    EXPECT_EQ(e.class_of_kernel(k), "moe_comm") << k;
  // Expert communication is communication: what-if and the communication share count it.
  EXPECT_GT(e.share_pct("moe_comm"), 15.0);
  EXPECT_NEAR(e.breakdown.phases[0].comm_us / e.breakdown.phases[0].total_us * 100,
              e.share_pct("moe_comm") + e.share_pct("nccl_all_reduce") + e.share_pct("nccl_all_gather"), 1e-9);
  // DeepGEMM: grouped (contiguous = 1, masked = 2) GEMMs are expert GEMMs, a normal one (0) is a GEMM.
  EXPECT_EQ(e.class_of_kernel("void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 64u"), "moe_gemm");
  EXPECT_EQ(e.class_of_kernel("void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u"), "moe_gemm");
  EXPECT_EQ(e.class_of_kernel("void deep_gemm::fp8_gemm_kernel<2112u"), "gemm");
  for (const char* k : {"void moe_fused_gate_kernel", "_fwd_kernel_ep_scatter_1", "_fwd_kernel_ep_gather"})
    EXPECT_EQ(e.class_of_kernel(k), "moe_routing") << k;
  EXPECT_EQ(e.class_of_kernel("void flash::flash_fwd_splitkv_mla_kernel"), "attention");
  EXPECT_EQ(e.class_of_kernel("void flashinfer::norm::FusedAddRMSNormKernel"), "rms_norm");  // FlashInfer is not only attention
  EXPECT_EQ(e.class_of_kernel("void per_token_group_quant_8bit_kernel"), "quant");
}

// TensorRT-LLM, Mixtral-8x7B at TP=4 on 4x H100: CUTLASS grouped-GEMM MoE, its routing kernels, fused all-reduce.
TEST(EngineKernels, TensorRtLlmCutlassMoe) {
  EngineProfile e = load_engine_profile("trtllm_mixtral_tp4_h100_kern_sum.csv");
  expect_at_most_5pct_unmatched(e);
  EXPECT_EQ(e.class_of_kernel("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape"), "moe_gemm");
  EXPECT_EQ(e.class_of_kernel("void cutlass::Kernel<cutlass::gemm::kernel::MoeFCGemm"), "moe_gemm");
  for (const char* k : {"void tensorrt_llm::kernels::cutlass_kernels::expandInputRowsKernel",
                        "void tensorrt_llm::kernels::cutlass_kernels::finalizeMoeRoutingKernel",
                        "void tensorrt_llm::kernels::cutlass_kernels::computeStridesTmaWarpSpecializedKernel",
                        "void tensorrt_llm::kernels::cutlass_kernels::fusedBuildExpertMapsSortFirstTokenKernel",
                        "void tensorrt_llm::kernels::topkGatingSoftmax"})
    EXPECT_EQ(e.class_of_kernel(k), "moe_routing") << k;
  EXPECT_EQ(e.class_of_kernel("void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport"), "trtllm_oneshot");
  EXPECT_EQ(e.class_of_kernel("void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_twoshot_sync"), "trtllm_twoshot");
  EXPECT_EQ(e.class_of_kernel("void tensorrt_llm::kernels::mmha::masked_multihead_attention_kernel"), "attention");
  EXPECT_GT(e.share_pct("moe_gemm"), 45.0);
}
