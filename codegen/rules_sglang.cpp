#include "codegen/rules_sglang.h"

#include "codegen/consumer_version.h"
#include "model/text.h"

namespace arfit::codegen {

const std::vector<std::string>& sglang_snapshots() {
  static const std::vector<std::string> s{"s1-0fbab45d", "s2-09e7d8ed", "s3-dict-configs", "s4-two-shot-push"};
  return s;
}

std::vector<std::string> sglang_versions(const std::string& given) {
  return check_consumer_snapshot(given, "SGLang's configs/custom_all_reduce_v2.py", sglang_snapshots(),
                                 "a later shape (row tables without Heuristic, or the config/ package that replaces "
                                 "configs/) would be misread");
}

std::vector<std::string> sglang_engine_notes(const std::vector<std::string>& snapshots) {
  return {"For SGLang's configs/custom_all_reduce_v2.py of the shapes " + join(snapshots, ", ") + "; install() recognises "
          "the shape and refuses any other. It clips every band and threshold of SGLang's tuned Heuristics (lamport and "
          "two_shot_push too) to the crossover, so that custom runs exactly while nbytes <= crossover.",
          "SGLang reads its config once, when each TP worker builds CustomAllReduceV2: install() must run before (a "
          "sglang.srt.plugins entry point does). Every custom algorithm is capped at its 16 MiB pull workspace "
          "(SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB); above the crossover SGLang runs NCCL unless torch symmetric memory, "
          "mscclpp or quick all-reduce is enabled; multinode push bands (s4) stay SGLang's."};
}

}  // namespace arfit::codegen
