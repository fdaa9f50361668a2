// A whole-model profile as arfit's trace/ component sees it: phases (one prefill, decode steps, or NVTX
// ranges), each a forest of nodes (modules with kernels as leaves, or a flat list of kernels).
// Readers: vLLM's layerwise profiler JSON (trace/vllm_profile.h) and Nsight Systems CSV (trace/nsys_csv.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/sample.h"

namespace arfit::trace {

// The largest time one profile cell may hold: 10^13 us, 116 days of kernel time. Beyond it a value is no
// profile's (a unit mix-up, a corrupted export), and such values summed to inf and nan in the tables.
inline constexpr double kMaxProfileTimeUs = 1e13;
inline constexpr const char* kMaxProfileTimeText = "116 days";
// The largest message size a profile may record for a node: the models' own size bound (model/sample.h).
inline constexpr double kMaxProfileMessageBytes = kMaxSampleBytes;

struct ProfileNode {
  std::string name;
  double cuda_time_us = 0;   // total over all invocations, children included
  double pct_cuda_time = 0;  // as recorded; 0 when the format has none
  std::int64_t invocations = 0;
  // Message size recorded with the node, when the profile carries one ("bytes", or "shape" [tokens, hidden]
  // and "dtype"); 0 = not recorded. Used by what-if to re-predict collectives at the same size.
  double bytes = 0;
  std::int64_t shape_tokens = 0, shape_hidden = 0;
  std::string dtype;
  std::string where;  // "file: JSON path" or "file:line", for messages
  std::vector<ProfileNode> children;
};

enum class PhaseKind { Prefill, Decode, Other };

struct Phase {
  std::string name;  // "prefill", "decode_1", ... or the NVTX range name
  PhaseKind kind = PhaseKind::Other;
  int step = 0;               // decode step number (1-based), 0 otherwise
  std::int64_t tokens = 0;    // tokens this phase processes (batch*prompt_len for prefill, batch for decode); 0 = unknown
  std::vector<ProfileNode> roots;
};

struct ProfileContext {
  std::string model;
  std::int64_t batch_size = 0, prompt_len = 0, output_len = 0;
  int tensor_parallel_size = 0;  // 0 = unknown
};

struct Profile {
  std::string source;  // file name
  std::string format;  // "vllm-layerwise", "nsys-kern-sum", "nsys-gpu-trace"
  ProfileContext context;
  std::vector<Phase> phases;  // prefill first, then decode steps in order, then others
};

std::string to_string(PhaseKind k);

}  // namespace arfit::trace
