// Opening a profile of any supported format (vLLM layerwise JSON, nsys CSV), by content.
#pragma once

#include <stdexcept>
#include <string>

#include "trace/profile.h"

namespace arfit::trace {

struct LoadOptions {
  std::string format = "auto";  // auto | vllm | nsys
  std::string nvtx_path;        // NVTX range report for an nsys cuda_gpu_trace; empty = none
};

// An option of LoadOptions that does not apply to the profile given: NVTX ranges with a vLLM profile or an nsys
// kernel summary. The caller's request is wrong, not the file: a usage error (arfit: exit 2). what() says why
// and names the profile and its format; the caller names its option.
class OptionNotForProfile : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Throws arfit::InputError naming the file for unreadable or unrecognised input, OptionNotForProfile (before
// the NVTX report is read) for an nvtx_path the profile's format cannot use.
Profile load_profile(const std::string& path, const LoadOptions& opt = {});

}  // namespace arfit::trace
