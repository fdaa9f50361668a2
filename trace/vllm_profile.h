// Reader for the layerwise profile JSON that vLLM's offline profiler writes (--json):
//   { "context": { "model": ..., "batch_size": ..., "prompt_len": ..., "output_len": ...,
//                  "tensor_parallel_size": ... (or the same keys inside "engine_args") },
//     "prefill":  { "summary_stats": [ node, ... ], ... },
//     "decode_1": { "summary_stats": [ ... ] }, "decode_2": ..., ... }
//   node = { "entry": { "name", "cuda_time_us", "pct_cuda_time", "invocations" }, "children": [ node, ... ] }
// Optional per-entry message size (written by some forks/post-processors): "bytes", or "shape"
// [tokens, hidden] with "dtype"; what-if uses it instead of --hidden.
#pragma once

#include <string>

#include "trace/profile.h"

namespace arfit::trace {

// Deepest nesting accepted; deeper trees are reported as cyclic (a self-containing node written out).
inline constexpr int kMaxProfileDepth = 128;

// Parses `text` read from `name`. Throws arfit::InputError naming the file, the line and the JSON path on:
// invalid JSON, missing "context", no "prefill" step, a step without "summary_stats", missing or non-numeric
// entry fields, negative or non-finite times, and cyclic trees (a node that repeats an ancestor's entry, or
// nesting deeper than kMaxProfileDepth).
Profile parse_vllm_profile(const std::string& text, const std::string& name);
Profile read_vllm_profile(const std::string& path);

// True when the text looks like a vLLM layerwise profile (a JSON object with "context"/"prefill"/"summary_stats").
bool looks_like_vllm_profile(const std::string& text);

}  // namespace arfit::trace
