// Opening a profile of any supported format (vLLM layerwise JSON, nsys CSV), by content.
#pragma once

#include <string>

#include "trace/profile.h"

namespace arfit::trace {

struct LoadOptions {
  std::string format = "auto";  // auto | vllm | nsys
  std::string nvtx_path;        // NVTX range report for an nsys cuda_gpu_trace; empty = none
};

// Throws arfit::InputError naming the file for unreadable or unrecognised input.
Profile load_profile(const std::string& path, const LoadOptions& opt = {});

}  // namespace arfit::trace
