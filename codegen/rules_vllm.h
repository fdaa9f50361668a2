// vLLM's rules around CUSTOM_ALL_REDUCE_MAX_SIZES, as its code applies them -- the one place they are stated;
// format_vllm.cpp follows them. Read in vllm-project/vllm: the 0.33.0 release (commit 4ba787ec9; all_reduce_utils.py,
// custom_all_reduce.py, cuda_communicator.py, symm_mem.py, plugins/__init__.py), 00d618aa, and the 0.10.2 and 0.11.0
// releases for the history:
//   * CustomAllreduce.__init__ reads CUSTOM_ALL_REDUCE_MAX_SIZES[capability][world_size] only when torch symmetric
//     memory runs (VLLM_ALLREDUCE_USE_SYMM_MEM, default on from 0.11.0; the capability and world size in
//     SYMM_MEM_ALL_REDUCE_MAX_SIZES; multicast), and takes min(value, max_size = 8 MiB): the table can lower the
//     bound, never raise it above 8 MiB; without symmetric memory the bound is 8 MiB whatever the table says;
//   * before 0.33.0 a capability key without the running world size raises KeyError while the communicator is
//     built; the value is read once, when the communicator is built, from the dict object custom_all_reduce.py
//     imported (rebinding the module attribute has no effect);
//   * all_reduce tries, in order: NCCL symmetric memory (off by default), FlashInfer's all-reduce (on by default
//     in 0.33.0, 2-D inputs up to FI_ALLREDUCE_FUSION_MAX_SIZE_MB), the custom all-reduce while inp_size < bound,
//     torch symmetric memory while inp_size <= SYMM_MEM_ALL_REDUCE_MAX_SIZES[capability][world_size] (bf16 only:
//     two-shot at 2 GPUs, multimem above), then NCCL. So above the custom bound a bf16 message runs symmetric
//     memory, not NCCL, up to 64 MiB on 9.0.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace arfit::codegen {

// --consumer-version for vLLM: 0.10.2 to 0.33.0; "" = 0.33.0. Throws std::invalid_argument naming the option.
std::string vllm_version(const std::string& given);
std::vector<std::string> vllm_version_range();

// {capability: {world size: bytes}}.
using VllmSizes = std::map<std::string, std::map<int, double>>;
// vLLM 0.33.0's CUSTOM_ALL_REDUCE_MAX_SIZES and SYMM_MEM_ALL_REDUCE_MAX_SIZES (9.0, 10.0, 10.3, 10.7).
const VllmSizes& vllm_default_custom_sizes();
const VllmSizes& vllm_default_symm_mem_sizes();
// FlashInfer's all-reduce in vLLM 0.33.0 (FI_ALLREDUCE_FUSION_MAX_SIZE_MB), bytes; it runs before the custom one.
const VllmSizes& vllm_flashinfer_sizes();

// The world sizes vLLM's custom all-reduce runs (2, 4, 6, 8): every capability written holds all of them.
const std::vector<int>& vllm_world_sizes();
// CustomAllreduce's max_size: the table's value is capped at it.
inline constexpr double kVllmCustomMaxBytes = 8.0 * 1024 * 1024;
// The smallest bound written: "never custom". A 0 would size the shared buffer at 0 bytes (and divide by zero in
// batch-invariant mode); 16 bytes admits no message, since custom all-reduce needs a multiple of 16 bytes.
inline constexpr double kVllmNeverCustomBytes = 16;

// Banner lines for capability `cap` (symm-mem maximum per world size given).
std::vector<std::string> vllm_engine_notes(const std::string& version, const std::string& cap);

}  // namespace arfit::codegen
