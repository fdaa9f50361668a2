// FlashInfer's rules around _use_oneshot_heuristics, as its code applies them -- the one place they are stated;
// format_flashinfer.cpp follows them. Read in flashinfer-ai/flashinfer flashinfer/comm/trtllm_ar.py at fb28d724
// (0.6.18, 2026-08-22; the nightly of 2026-08-19, 0.6.18rc7 and 0.6.17 are the same), with its history from
// 4512a6c7 (0.5.0rc1), where the dict first appears:
//   * _should_use_oneshot: one-shot while token_num * hidden_dim * 2 * world_size * itemsize / MiB <=
//     _use_oneshot_heuristics[world_size] ("MiB" of that comm size, which counts each element twice), two-shot
//     above; read only when the caller passes use_oneshot=None (SGLang's default);
//   * trtllm_allreduce_fusion then asserts token_num > world_size for two-shot: a threshold below the comm size
//     of a message of token_num = world_size tokens fails every decode step with an AssertionError;
//   * a world size missing from the dict raises KeyError; the kernel runs 2, 4, 8 and 16 GPUs;
//   * above MAX_COMM_SIZE (2145386496 bytes of Lamport payload, 4092 in the heuristic's units) one-shot is
//     downgraded to two-shot, so a larger threshold acts as 4092;
//   * the dict is not read for an MNNVL workspace (backend "auto" picks it where multicast works) nor before 0.5.0
//     (one-shot while token_num <= 128).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace arfit::codegen {

// --consumer-version for FlashInfer: 0.5.0 to 0.6.18; "" = 0.6.18. Throws std::invalid_argument naming the option.
std::string flashinfer_version(const std::string& given);
// The range as a Python tuple's items: ("0.5.0", "0.6.18").
std::vector<std::string> flashinfer_version_range();

// The world sizes FlashInfer's fused all-reduce runs (every one gets a value: a missing key raises KeyError).
const std::vector<int>& flashinfer_world_sizes();
// FlashInfer's own _use_oneshot_heuristics (0.5.0 to 0.6.18): {2: 512, 4: 64, 8: 42}.
const std::map<int, double>& flashinfer_default_heuristics();

// The heuristic's comm size ("MiB") of a message of `bytes` per rank.
double flashinfer_comm_mib(double bytes, int world_size);
// The smallest threshold that never sends token_num <= world_size to two-shot (its assert) at any hidden size
// one-shot launches (hidden / (16 / itemsize) <= 8 x 1024 threads: 65536 in 2-byte types, 32768 in fp32):
// world_size^2 / 4.
double flashinfer_floor_mib(int world_size);
// The largest threshold that changes anything: MAX_COMM_SIZE in the heuristic's units, 4092.
double flashinfer_cap_mib();

// Banner lines: when FlashInfer reads the dict at all.
std::vector<std::string> flashinfer_engine_notes(const std::string& version);

}  // namespace arfit::codegen
