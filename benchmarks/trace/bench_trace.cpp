// How long arfit breakdown takes on a profile of realistic size: a 32-layer model, one prefill and 128
// decode steps (the JSON is built in memory, about 10 MB), read, classified and broken down.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "trace/breakdown.h"
#include "trace/classify.h"
#include "trace/nsys_csv.h"
#include "trace/range_index.h"
#ifdef ARFIT_TRACE_HAVE_PLOTS
#include "trace/report.h"  // the report writer is built with plots/
#endif
#include "trace/vllm_profile.h"

namespace {

std::string node(const std::string& name, double t, int inv, const std::string& children) {
  return "{\"entry\": {\"name\": \"" + name + "\", \"cuda_time_us\": " + std::to_string(t) +
         ", \"pct_cuda_time\": 0.1, \"invocations\": " + std::to_string(inv) + "}, \"children\": [" + children + "]}";
}

std::string step(double scale) {
  const char* gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
  std::string layers;
  for (int l = 0; l < 32; ++l) {
    std::string attn = node("QKVParallelLinear", 10 * scale, 1, node(gemm, 10 * scale, 1, "")) + "," +
                       node("Attention", 8 * scale, 1, node("void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>(flash::Flash_fwd_params)", 8 * scale, 1, "")) + "," +
                       node("RowParallelLinear", 9 * scale, 1,
                            node(gemm, 5 * scale, 1, "") + "," +
                                node("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)", 4 * scale, 1, ""));
    std::string mlp = node("MergedColumnParallelLinear", 20 * scale, 1, node(gemm, 20 * scale, 1, "")) + "," +
                      node("SiluAndMul", 2 * scale, 1, node("void vllm::act_and_mul_kernel<c10::BFloat16>(c10::BFloat16*, c10::BFloat16 const*, int)", 2 * scale, 1, "")) + "," +
                      node("RowParallelLinear", 14 * scale, 1,
                           node(gemm, 10 * scale, 1, "") + "," + node("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 4 * scale, 1, ""));
    layers += (l ? "," : "") + node("LlamaDecoderLayer", 63 * scale, 1,
                                    node("RMSNorm", 1 * scale, 2, node("void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)", 1 * scale, 2, "")) + "," +
                                        node("LlamaAttention", 27 * scale, 1, attn) + "," + node("LlamaMLP", 36 * scale, 1, mlp));
  }
  return "{\"summary_stats\": [" + node("LlamaForCausalLM", 32 * 64 * scale, 1, layers) + "]}";
}

const std::string& profile_text() {
  static const std::string text = [] {
    std::string t = "{\"context\": {\"model\": \"bench\", \"batch_size\": 8, \"prompt_len\": 1024, \"output_len\": 128, "
                    "\"tensor_parallel_size\": 8}, \"prefill\": " + step(10.0);
    for (int d = 1; d <= 128; ++d) t += ", \"decode_" + std::to_string(d) + "\": " + step(0.1);
    return t + "}";
  }();
  return text;
}

void BM_ReadVllmProfile(benchmark::State& state) {
  const std::string& text = profile_text();
  for (auto _ : state) {
    auto p = arfit::trace::parse_vllm_profile(text, "bench.json");
    benchmark::DoNotOptimize(p);
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(text.size()));
}
BENCHMARK(BM_ReadVllmProfile)->Unit(benchmark::kMillisecond);

void BM_BreakdownKernelLevel(benchmark::State& state) {
  auto p = arfit::trace::parse_vllm_profile(profile_text(), "bench.json");
  for (auto _ : state) {
    auto b = arfit::trace::compute_breakdown(p, arfit::trace::RuleTable::defaults(), {});
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_BreakdownKernelLevel)->Unit(benchmark::kMillisecond);

// Classification alone (the rule table is RE2: linear in the name's length): names of today's engines, each
// matched against the whole built-in table (no cache), and one hostile 40,000-character name that scans every
// ".*" of the table (std::regex overflowed its stack on it).
void BM_ClassifyEngineKernelNames(benchmark::State& state) {
  static const char* names[] = {
      "fused_moe_kernel",
      "void vllm::moe::moe_align_block_size_kernel<int>(const T1 *, int *, int *, int *, int, int, int, int, unsigned long, int *, int)",
      "void vllm::cross_device_reduce_1stage<__nv_bfloat16, (int)4>(vllm::RankData *, vllm::RankSignals, vllm::Signal *, __nv_bfloat16 *, int, int)",
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
      "triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_1",
      "kernel_unified_attention_2d",
      "reduce_segments",
      "void deep_ep::intranode::dispatch<(int)8, (int)768, (int)8192>(int4 *, float *, int *, long *)",
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
      "void at_cuda_detail::cub::DeviceRadixSortOnesweepKernel<at_cuda_detail::cub::DeviceRadixSortPolicy<float, int, int>::Policy800>(T5 *)",
      "void flashinfer::norm::FusedAddRMSNormKernel<(unsigned int)8, __nv_bfloat16>(T2 *, T2 *, T2 *, unsigned int)",
      "_compute_slot_mapping_kernel",  // matches nothing: every rule is tried
  };
  const auto& rules = arfit::trace::RuleTable::defaults();
  for (auto _ : state)
    for (const char* n : names) benchmark::DoNotOptimize(rules.classify(n));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(sizeof names / sizeof names[0]));
}
BENCHMARK(BM_ClassifyEngineKernelNames)->Unit(benchmark::kMicrosecond);

void BM_ClassifyHostileName(benchmark::State& state) {
  std::string name = "ncclDevKernel_one_shot_";
  while (name.size() < static_cast<std::size_t>(state.range(0))) name += "ab";
  const auto& rules = arfit::trace::RuleTable::defaults();
  for (auto _ : state) benchmark::DoNotOptimize(rules.classify(name));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(name.size()));
}
BENCHMARK(BM_ClassifyHostileName)->Arg(4000)->Arg(40000)->Arg(400000)->Unit(benchmark::kMicrosecond);

// NVTX phase assignment (issue 43's goal: 10^6 kernels with 10^5 ranges under 5 s): the index alone, then the whole
// nsys reader on a generated cuda_gpu_trace with its NVTX report. Ranges: decode steps of 10 us each, every one with
// a nested layer range, so that every kernel lies in two ranges.
std::pair<std::vector<double>, std::vector<double>> nested_ranges(std::size_t n) {
  std::vector<double> starts, ends;
  for (std::size_t i = 0; i < n / 2; ++i) {
    const double s = 10.0 * static_cast<double>(i);
    starts.push_back(s), ends.push_back(s + 10);          // the step
    starts.push_back(s + 1), ends.push_back(s + 9);       // a layer inside it
  }
  return {starts, ends};
}

void BM_NvtxRangeIndex(benchmark::State& state) {
  const std::size_t kernels = static_cast<std::size_t>(state.range(0)), ranges = static_cast<std::size_t>(state.range(1));
  auto [starts, ends] = nested_ranges(ranges);
  const double span = 10.0 * static_cast<double>(ranges / 2);
  for (auto _ : state) {
    const arfit::trace::RangeIndex index(starts, ends);
    long sum = 0;
    for (std::size_t k = 0; k < kernels; ++k) sum += index.innermost(span * static_cast<double>(k) / static_cast<double>(kernels));
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kernels));
}
BENCHMARK(BM_NvtxRangeIndex)->Args({1000000, 100000})->Args({1000000, 30000})->Unit(benchmark::kMillisecond);

void BM_NsysTraceWithNvtx(benchmark::State& state) {
  const std::size_t kernels = static_cast<std::size_t>(state.range(0)), ranges = static_cast<std::size_t>(state.range(1));
  std::string nvtx = "Name,Projected Start (ns),Projected Duration (ns)\n";
  for (std::size_t i = 0; i < ranges / 2; ++i) {
    const long s = 10000L * static_cast<long>(i);
    nvtx += "decode step " + std::to_string(i) + "," + std::to_string(s) + ",10000\n";
    nvtx += "decode inner " + std::to_string(i) + "," + std::to_string(s + 1000) + ",8000\n";
  }
  std::string trace = "Start (ns),Duration (ns),Name\n";
  const long span = 10000L * static_cast<long>(ranges / 2);
  for (std::size_t k = 0; k < kernels; ++k)
    trace += std::to_string(span * static_cast<long>(k) / static_cast<long>(kernels)) + ",500,kernel_" + std::to_string(k % 64) + "\n";
  arfit::trace::NsysOptions opt{nvtx, "nvtx.csv"};
  for (auto _ : state) benchmark::DoNotOptimize(arfit::trace::parse_nsys_csv(trace, "trace.csv", opt));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kernels));
}
BENCHMARK(BM_NsysTraceWithNvtx)->Args({1000000, 100000})->Unit(benchmark::kMillisecond)->Iterations(1);

// `arfit breakdown` of a 10^6-row cuda_gpu_trace as nsys writes it (21 columns, about 240 MB), without gnuplot: read,
// classified with the built-in rules, broken down at kernel level with --top 0 and the CSV tables written. Six kernel
// names of today's engines (GEMM, custom and NCCL all-reduce, attention, norm, elementwise), quoted as nsys quotes.
std::string gpu_trace_21_columns(std::size_t rows) {
  static const char* const names[] = {
      "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
      "void vllm::cross_device_reduce_1stage<__nv_bfloat16, (int)4>(vllm::RankData *, vllm::RankSignals, vllm::Signal *, "
      "__nv_bfloat16 *, int, int)",
      "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<(unsigned long)4096>)",
      "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false, cutlass::bfloat16_t>, false, "
      "false, false, false, true, false, false>(Flash_fwd_params)",
      "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16 *, const c10::BFloat16 *, const c10::BFloat16 *, float, int, int)",
      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char *, 1>>(int, "
      "at::native::FillFunctor<float>, at::detail::Array<char *, 1>)"};
  std::string text = "Start (ns),Duration (ns),CorrId,GrdX,GrdY,GrdZ,BlkX,BlkY,BlkZ,Reg/Trd,StcSMem (MB),DynSMem (MB),"
                     "Bytes (MB),Throughput (MB/s),SrcMemKd,DstMemKd,Device,Ctx,GreenCtx,Strm,Name\n";
  text.reserve(rows * 250);
  long start = 1000;
  for (std::size_t i = 0; i < rows; ++i) {
    const long duration = 1000 + static_cast<long>((i * 7919) % 49000);
    text += std::to_string(start) + "," + std::to_string(duration) + "," + std::to_string(100 + i) +
            ",132,1,1,384,1,1,168,0.000,0.213,,,,,NVIDIA H100 80GB HBM3 (0),1,,7,\"" + names[i % 6] + "\"\n";
    start += duration + 200;
  }
  return text;
}

void BM_BreakdownNsysTrace(benchmark::State& state) {
  const std::string text = gpu_trace_21_columns(static_cast<std::size_t>(state.range(0)));
  const auto rules = arfit::trace::RuleTable::defaults();
  arfit::trace::BreakdownOptions opt;
  opt.top_k = 0;
  std::string dir = (std::filesystem::temp_directory_path() / "arfit-bench-XXXXXX").string();
  if (!::mkdtemp(dir.data())) {
    state.SkipWithError("no temporary folder");
    return;
  }
  for (auto _ : state) {
    const auto profile = arfit::trace::parse_nsys_csv(text, "trace.csv");
    const auto b = arfit::trace::compute_breakdown(profile, rules, opt);
#ifdef ARFIT_TRACE_HAVE_PLOTS
    arfit::trace::ReportOptions report;
    report.figures = false;
    benchmark::DoNotOptimize(arfit::trace::write_breakdown_report(b, dir, report));
#else  // the tables the report would write
    benchmark::DoNotOptimize(arfit::trace::class_table_csv(b) + arfit::trace::entry_table_csv(b) +
                             arfit::trace::comm_share_csv(b) + arfit::trace::unmatched_csv(b));
#endif
  }
  std::filesystem::remove_all(dir);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_BreakdownNsysTrace)->Arg(1000000)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
