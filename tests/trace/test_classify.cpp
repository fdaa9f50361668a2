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
