#include "codegen/rules_vllm.h"

#include "codegen/consumer_version.h"

namespace arfit::codegen {

namespace {
const VersionRange kRange{"0.10.2", "0.33.0"};
constexpr double KiB = 1024, MiB = 1024 * 1024;
}  // namespace

std::string vllm_version(const std::string& given) {
  return check_consumer_version(given, "vLLM", kRange,
                                "before 0.10.2 vLLM has no CUSTOM_ALL_REDUCE_MAX_SIZES (its custom all-reduce runs below 8 MiB, "
                                "fixed): nothing reads this file",
                                "a later vLLM may read the table or dispatch around it differently");
}

std::vector<std::string> vllm_version_range() { return {kRange.first, kRange.last}; }

const VllmSizes& vllm_default_custom_sizes() {
  static const VllmSizes s{{"9.0", {{2, 64 * MiB}, {4, 32 * MiB}, {6, MiB / 2}, {8, MiB / 4}}},
                           {"10.0", {{2, 2 * MiB}, {4, 2 * MiB}, {6, 1 * MiB}, {8, 1 * MiB}}},
                           {"10.3", {{2, 4 * MiB}, {4, 4 * MiB}, {6, 8 * MiB}, {8, 4 * MiB}}},
                           {"10.7", {{2, 4 * MiB}, {4, 4 * MiB}, {6, 8 * MiB}, {8, 4 * MiB}}}};
  return s;
}

const VllmSizes& vllm_default_symm_mem_sizes() {
  static const VllmSizes s{{"9.0", {{2, 64 * MiB}, {4, 32 * MiB}, {6, 64 * MiB}, {8, 64 * MiB}}},
                           {"10.0", {{2, 8 * MiB}, {4, 32 * MiB}, {6, 128 * MiB}, {8, 128 * MiB}}},
                           {"10.3", {{2, 4 * MiB}, {4, 32 * MiB}, {6, 32 * MiB}, {8, 64 * MiB}}},
                           {"10.7", {{2, 4 * MiB}, {4, 32 * MiB}, {6, 32 * MiB}, {8, 64 * MiB}}}};
  return s;
}

const VllmSizes& vllm_flashinfer_sizes() {
  // FI_ALLREDUCE_FUSION_MAX_SIZE_MB (vllm/compilation/passes/fusion/allreduce_rms_fusion.py), "MB" meaning MiB.
  static const VllmSizes s{{"9.0", {{2, 64 * MiB}, {4, 2 * MiB}, {8, 512 * KiB}}},
                           {"10.0", {{2, 64 * MiB}, {4, 32 * MiB}, {8, 1 * MiB}}},
                           {"10.3", {{2, 64 * MiB}, {4, 64 * MiB}, {8, 4 * MiB}}}};
  return s;
}

const std::vector<int>& vllm_world_sizes() {
  static const std::vector<int> w{2, 4, 6, 8};
  return w;
}

std::vector<std::string> vllm_engine_notes(const std::string& version, const std::string& cap) {
  return {"For vLLM 0.10.2 to " + version + " on compute capability " + cap + ". vLLM reads this table only when torch "
          "symmetric memory runs (VLLM_ALLREDUCE_USE_SYMM_MEM=1, the default from 0.11.0, and multicast), once, when it "
          "builds its communicators, and caps it at 8 MiB; without symmetric memory the custom all-reduce runs below 8 "
          "MiB whatever the table says.",
          "Above the bound vLLM runs torch symmetric memory for bf16 messages up to SYMM_MEM_ALL_REDUCE_MAX_SIZES (two-shot "
          "at 2 GPUs, multimem above), NCCL beyond it and for other types: the bounds below compare the custom all-reduce "
          "with what runs there.",
          "vLLM 0.33.0 tries FlashInfer's all-reduce first (VLLM_ALLREDUCE_USE_FLASHINFER=1 is its default) for 2-D inputs "
          "up to FI_ALLREDUCE_FUSION_MAX_SIZE_MB: there the bound matters only with it off.",
          "Every world size vLLM's custom all-reduce runs (2, 4, 6, 8) is written (vLLM before 0.33.0 raises KeyError "
          "for a missing one); \"never custom\" is 16 bytes, not 0 (a 0 would size its buffer at 0)."};
}

}  // namespace arfit::codegen
