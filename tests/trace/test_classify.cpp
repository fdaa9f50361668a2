#include <gtest/gtest.h>

#include "model/errors.h"
#include "test_support.h"
#include "trace/classify.h"

using namespace arfit::trace;

namespace {
std::string cls(const std::string& kernel) {
  const OpClass* c = RuleTable::defaults().classify(kernel);
  return c ? c->id : "unmatched";
}
}  // namespace

TEST(Classify, DefaultRulesCoverTheOpClasses) {
  EXPECT_EQ(cls("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"), "gemm");
  EXPECT_EQ(cls("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)"), "gemm");
  EXPECT_EQ(cls("void gemv2T_kernel_val<int, int, __nv_bfloat16, __nv_bfloat16, float, 128, 16, 4, 4, false>(...)"), "gemm");
  EXPECT_EQ(cls("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>(...)"), "gemm");
  EXPECT_EQ(cls("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<...>>(flash::Flash_fwd_params)"), "attention");
  EXPECT_EQ(cls("void vllm::paged_attention_v2_kernel<__nv_bfloat16, 128>(...)"), "attention");
  EXPECT_EQ(cls("void vllm::reshape_and_cache_flash_kernel<__nv_bfloat16>(...)"), "attention");
  EXPECT_EQ(cls("fmha_v2_flash_attention_bf16_64_128_S_qkv_128_causal_sm90_kernel"), "attention");
  EXPECT_EQ(cls("void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(...)"), "rms_norm");
  EXPECT_EQ(cls("void vllm::dynamic_per_token_scaled_fp8_quant_kernel<c10::BFloat16>(...)"), "quant");
  EXPECT_EQ(cls("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(...)"), "elementwise");
  EXPECT_EQ(cls("void vllm::rotary_embedding_kernel<c10::BFloat16, true>(...)"), "elementwise");
  EXPECT_EQ(cls("[CUDA memcpy Host-to-Device]"), "memory");
  EXPECT_EQ(cls("[CUDA memset]"), "memory");
  EXPECT_EQ(cls("void at::native::(anonymous namespace)::indexSelectLargeIndex<c10::BFloat16, long>(...)"), "embedding");
  EXPECT_EQ(cls("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "nccl_all_reduce");
  EXPECT_EQ(cls("ncclKernel_AllReduce_RING_LL_Sum_half(ncclWorkElem)"), "nccl_all_reduce");
  EXPECT_EQ(cls("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "nccl_all_gather");
  EXPECT_EQ(cls("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "nccl_broadcast");
  EXPECT_EQ(cls("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), "nccl_other");
  EXPECT_EQ(cls("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 2>(...)"), "custom_ar_1stage");
  EXPECT_EQ(cls("void vllm::cross_device_reduce_2stage<__nv_bfloat16, 8>(...)"), "custom_ar_2stage");
  EXPECT_EQ(cls("void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(AllReduceParams)"), "trtllm_oneshot");
  EXPECT_EQ(cls("void tensorrt_llm::kernels::twoShotAllReduceKernel<__nv_bfloat16, 8>(AllReduceParams)"), "trtllm_twoshot");
  EXPECT_EQ(cls("void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8>(...)"), "trtllm_oneshot");
  EXPECT_EQ(cls("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::MaxOps<float>>>(...)"), "reduce");
  EXPECT_EQ(cls("void sample_tokens_kernel<float>(float const*, int*)"), "unmatched");
}

// Names as the engines' code and published traces show them: MoE expert GEMMs, routing and expert
// communication each get a class of their own; Inductor and Triton names are read for what they say.
TEST(Classify, MoeKernelsOfTodaysEngines) {
  // Expert GEMMs: vLLM / SGLang Triton fused MoE, TensorRT-LLM CUTLASS grouped GEMM (SM80 MoeFCGemm, SM90 grouped
  // problem shape), TensorRT-LLM-gen routed batched GEMM, DeepGEMM grouped GEMMs, vLLM Marlin / WNA16 MoE.
  for (const char* k : {"fused_moe_kernel", "fused_moe_kernel_gptq_awq",
                        "void cutlass::Kernel<cutlass::gemm::kernel::MoeFCGemm<cutlass::gemm::threadblock::MmaMultistage<...>>>(...)",
                        "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<long, long, long>>, ...>>(...)",
                        "bmm_Bfloat16_E2m1E2m1_Fp32_Ab16_Bb16_t128x128x256u2_s6_et128x128_m256x128x64_c2x1x1_rM_TN_transOut_schPd2x1x2x3_biasFp32M_bN_rgTma_clmp_dynB_sm100f",
                        "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 64u, 128u, 128u, 32u, 8u, 5u, 128u, 128u, 1u, 1u, (deep_gemm::GemmType)2>(...)",
                        "void marlin_moe_wna16::Marlin<__nv_bfloat16, 4, 8, 8, 1, 4, 2, true, 8>(...)", "moe_wna16_gemm_kernel",
                        "grouped_gemm_triton_kernel"})
    EXPECT_EQ(cls(k), "moe_gemm") << k;
  // Routing: top-k gating, alignment / sorting by expert, permute / finalize, the weighted sum of expert outputs.
  for (const char* k : {"void vllm::moe::topkGatingSoftmax<8, 8, 4, 16, int>(...)", "void vllm::moe::moe_align_block_size_kernel<int>(...)",
                        "void vllm::moe::moe_align_block_size_small_batch_expert_kernel<int>(...)",
                        "void vllm::moe::count_and_sort_expert_tokens_kernel<int>(...)", "void vllm::moe::moe_sum_kernel<c10::BFloat16, 2>(...)",
                        "moe_count_and_sort_expert_token_kenrel", "topk_with_k2_kernel", "group_idx_and_topk_idx_kernel",
                        "void moe_fused_gate_kernel<float, 8, 256, 8, 32>(...)", "_moe_sum_reduce_kernel",
                        "void tensorrt_llm::kernels::cutlass_kernels::expandInputRowsKernel<__nv_bfloat16>(...)",
                        "void tensorrt_llm::kernels::cutlass_kernels::finalizeMoeRoutingKernel<__nv_bfloat16>(...)",
                        "moe::dev::routing::routingCustom::routingIndicesHistogramScoresKernel", "moe::dev::finalize::finalizeKernelVecLoad",
                        "_fwd_kernel_ep_scatter_1", "deepep_permute_triton_kernel", "pre_reorder_triton_kernel", "aiter::opus_moe_sorting_entry"})
    EXPECT_EQ(cls(k), "moe_routing") << k;
  // Expert communication: DeepEP (normal, low-latency, elastic), NCCL EP, TensorRT-LLM MoE all-to-all.
  for (const char* k : {"void deep_ep::intranode::dispatch<8, 768, 8192>(...)", "void deep_ep::internode_ll::combine<false, 7168, 9, 7>(...)",
                        "void deep_ep::legacy::intranode::notify_dispatch<8>(...)", "deep_ep::elastic::dispatch_impl<...>",
                        "void nccl_ep::internode_ll::dispatch<true>(...)", "nccl_ep_jit_ll_combine",
                        "void tensorrt_llm::kernels::moe_comm::moeA2ADispatchKernel<...>(...)", "moeA2ACombineKernel"})
    EXPECT_EQ(cls(k), "moe_comm") << k;
  const OpClass* comm = RuleTable::defaults().find_class("moe_comm");
  ASSERT_NE(comm, nullptr);
  EXPECT_TRUE(comm->communication);
  EXPECT_FALSE(comm->collective.has_value());  // kept as measured by whatif, never re-predicted as an all-reduce
  // SGLang's DeepEP-layout permute kernel is local work, not communication.
  EXPECT_EQ(cls("deepep_post_reorder_triton_kernel"), "moe_routing");
}

TEST(Classify, InductorAndTritonNamesByWhatTheySay) {
  // rsqrt + mean + pow is an RMSNorm whatever else is fused and in whatever order the ops are listed.
  for (const char* k : {"triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0", "triton_per_fused__to_copy_mean_mul_pow_rsqrt_view_3",
                        "triton_red_fused__to_copy_add_mean_moe_forward_shared_mul_pow_rsqrt_0", "triton_per_fused_rsqrt_pow_mean_1"})
    EXPECT_EQ(cls(k), "rms_norm") << k;
  EXPECT_EQ(cls("triton_per_fused_native_layer_norm_0"), "rms_norm");
  EXPECT_EQ(cls("triton_red_fused_add_rsqrt_var_mean_2"), "rms_norm");  // LayerNorm decomposed
  EXPECT_EQ(cls("triton_red_fused_mean_mul_0"), "reduce");              // a mean alone is a reduction
  EXPECT_EQ(cls("triton_per_fused__softmax_1"), "reduce");
  EXPECT_EQ(cls("triton_poi_fused__to_copy_add_sigmoid_unsqueeze_0"), "elementwise");
  EXPECT_EQ(cls("triton_tem_fused_addmm_0"), "gemm");
  // Triton attention and its helpers.
  for (const char* k : {"kernel_unified_attention_2d", "kernel_unified_attention_3d", "reduce_segments", "_fwd_kernel",
                        "_fwd_grouped_kernel_stage1", "_fwd_kernel_stage2", "create_flashinfer_kv_indices_triton"})
    EXPECT_EQ(cls(k), "attention") << k;
  // CUB and ATen sorts and scans.
  for (const char* k : {"void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<...>(...)", "void cub::DeviceRadixSortHistogramKernel<...>(...)",
                        "void at_cuda_detail::cub::DeviceSegmentedRadixSortKernel<...>(...)",
                        "void at_cuda_detail::cub::detail::scan::DeviceScanKernel<...>(...)", "at_cuda_detail::cub::detail::scan::DeviceScanInitKernel",
                        "void at::native::bitonicSortKVInPlace<float, long, 2, -1>(...)", "void at::native::tensor_kernel_scan_innermost_dim<float>(...)"})
    EXPECT_EQ(cls(k), "sort_scan") << k;
  // FlashInfer ships norms, quantization and GEMMs as well as attention: its name alone is no class.
  EXPECT_EQ(cls("kernel_cutlass_kernel_flashinfernormkernelsrmsnormRMSNormKernel_object_at__tensorptrbf16gmemalign128"), "rms_norm");
  EXPECT_EQ(cls("kernel_cutlass_kernel_flashinferquantizationkernelsnvfp4_quantizeNVFP4QuantizeTMAKernel_object_at__CopyAtom"), "quant");
  EXPECT_EQ(cls("void flashinfer::BatchPrefillWithPagedKVCacheKernel<...>(...)"), "attention");
}

TEST(Classify, CollectiveClassesCarryWhatWhatIfNeeds) {
  const RuleTable& t = RuleTable::defaults();
  const OpClass* ar = t.find_class("custom_ar_2stage");
  ASSERT_NE(ar, nullptr);
  EXPECT_TRUE(ar->communication);
  ASSERT_TRUE(ar->collective.has_value());
  EXPECT_EQ(*ar->collective, arfit::Collective::AllReduce);
  EXPECT_EQ(ar->strategy, "TWOSHOT");
  EXPECT_FALSE(t.find_class("gemm")->communication);
  EXPECT_FALSE(t.find_class("nccl_other")->collective.has_value());
}

TEST(Classify, UserRulesComeFirstAndCanAddClasses) {
  arfit::testing::TempDir dir;
  std::string path = dir.write("rules.json", R"({
    "classes": [{"id": "sampling", "label": "Sampling"}],
    "rules": [{"class": "sampling", "regex": "sample_tokens"},
              {"class": "quant", "regex": "^sm90_xmma_gemm_fp8"}]})");
  RuleTable t = RuleTable::load_user(path);
  ASSERT_NE(t.classify("void sample_tokens_kernel<float>(float const*, int*)"), nullptr);
  EXPECT_EQ(t.classify("void sample_tokens_kernel<float>(float const*, int*)")->label, "Sampling");
  EXPECT_EQ(t.classify("sm90_xmma_gemm_fp8_something")->id, "quant");  // user rule beats the default gemm rule
  EXPECT_EQ(t.classify("sm90_xmma_gemm_bf16_something")->id, "gemm");   // defaults still there

  std::string only = dir.write("only.json", R"({"replace_defaults": true, "classes": [{"id": "x"}], "rules": [{"class": "x", "regex": "foo"}]})");
  RuleTable o = RuleTable::load_user(only);
  EXPECT_EQ(o.classify("sm90_xmma_gemm_bf16_something"), nullptr);
  EXPECT_EQ(o.classify("foo_kernel")->id, "x");
}

TEST(Classify, BadRuleFilesNameFileAndPath) {
  arfit::testing::TempDir dir;
  auto error_of = [&](const std::string& content) {
    std::string path = dir.write("r.json", content);
    try {
      RuleTable::load_user(path);
    } catch (const arfit::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string m = error_of(R"({"rules": [{"class": "gemm", "regex": "ok"},
    {"class": "nope", "regex": "x"}]})");
  EXPECT_NE(m.find("r.json:2:"), std::string::npos) << m;
  EXPECT_NE(m.find("rules[1].class"), std::string::npos) << m;
  EXPECT_NE(m.find("unknown class 'nope'"), std::string::npos) << m;
  m = error_of(R"({"rules": [{"class": "gemm", "regex": "(unclosed"}]})");
  EXPECT_NE(m.find("invalid regex"), std::string::npos) << m;
  m = error_of(R"({"classes": [{"id": "c", "collective": "allfoo"}]})");
  EXPECT_NE(m.find("unknown collective"), std::string::npos) << m;
  m = error_of(R"({"rules": [{"regex": "x"}]})");
  EXPECT_NE(m.find("missing field 'class'"), std::string::npos) << m;
}
