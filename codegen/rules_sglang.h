// SGLang's rules around its custom all-reduce v2 configuration, as its code applies them -- the one place they
// are stated; format_sglang.cpp follows them. Read in sgl-project/sglang python/sglang/srt/distributed/
// device_communicators/configs/custom_all_reduce_v2.py and custom_all_reduce_v2.py at four shapes of the configs
// file (sglang_snapshots()); SGLang's own version at each is not recorded in the file, so the generated install()
// recognises the snapshot by its shape:
//   s1-0fbab45d       _sm90_config/_sm100_config(world_size, num_sm) build an AllReduceConfig of two Heuristics
//                     (graph, eager): 1shot_push while nbytes <= one_shot_push_threshold, 1shot_pull while <=
//                     one_shot_pull_threshold, multicast 2shot_pull inside `mc`, 2shot_pull while <=
//                     two_shot_pull_threshold, NCCL above; get_all_reduce_config(world_size) is @cache'd;
//   s2-09e7d8ed       the same names, a `lamport` band tried FIRST (2shot_lamport: SM100 4 GPUs 1.125-8 MiB in
//                     graph mode), world size 16 on SM100;
//   s3-dict-configs   _sm90_configs/_sm100_configs/_sm107_configs(num_sm) -> {world_size: AllReduceConfig}, each
//                     @cache'd, with _get_all_reduce_configs and get_supported_world_sizes (also cached);
//   s4-two-shot-push  s3 plus two_shot_push and two_shot_push_mc bands tried first, and multinode push bands that
//                     get_all_reduce_config(world_size, multinode=True) swaps in after the per-arch tables.
// Around all of them: every custom algorithm is capped by the pull workspace (16 MiB by default,
// SGLANG_CUSTOM_ALL_REDUCE_V2_MAX_SIZE_KB), so a crossover above 16 MiB acts as 16 MiB; the config is read once,
// when CustomAllReduceV2 is built in each TP worker; "graph" applies only while a CUDA graph is captured;
// above the crossover SGLang runs NCCL unless torch symmetric memory, mscclpp or quick all-reduce is enabled.
// A crossover C means custom exactly while nbytes <= C only if EVERY band and threshold is clipped to C: an apply()
// that clips the four fields of s1 leaves s2's lamport and s4's two_shot_push bands running above C.
#pragma once

#include <string>
#include <vector>

namespace arfit::codegen {

// The configs snapshots whose shape arfit knows, oldest first.
const std::vector<std::string>& sglang_snapshots();
// --consumer-version for SGLang: one of sglang_snapshots() (or 7+ hex digits of its commit); "" = all of them.
// Throws std::invalid_argument naming the option.
std::vector<std::string> sglang_versions(const std::string& given);

// SGLang's pull workspace: no custom algorithm runs above it.
inline constexpr double kSglangPullWorkspaceBytes = 16.0 * 1024 * 1024;

std::vector<std::string> sglang_engine_notes(const std::vector<std::string>& snapshots);

}  // namespace arfit::codegen
