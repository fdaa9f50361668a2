#include "trace/load.h"

#include <stdexcept>

#include "io/input_file.h"
#include "model/errors.h"
#include "model/file_kind.h"
#include "trace/nsys_csv.h"
#include "trace/vllm_profile.h"

namespace arfit::trace {

namespace {

// A profile without a single kernel (an nsys report of the header alone, vLLM steps with empty summaries) is
// no measurement: read silently it gave tables of zeros and exit 0.
Profile require_kernels(Profile p) {
  for (const Phase& ph : p.phases)
    if (!ph.roots.empty()) return p;
  throw InputError(p.source, 0, "", "no kernel in any phase of the profile (" + p.format + "): nothing was measured");
}

}  // namespace

Profile load_profile(const std::string& path, const LoadOptions& opt) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const std::exception& e) {
    throw InputError(path, 0, "", std::string("cannot read the profile: ") + e.what());
  }
  std::string format = opt.format;
  if (format == "auto") {
    if (looks_like_vllm_profile(text)) format = "vllm";
    else if (looks_like_nsys_csv(text)) format = "nsys";
    else if (const auto k = arfit_file_kind(text))  // a models file or samples given as the profile
      throw InputError(path, 0, "", k->what + ", not a profile (a vLLM layerwise JSON or an nsys stats CSV)");
    else
      throw InputError(path, 0, "",
                       "unrecognised profile format: expected vLLM layerwise JSON (with 'context' and 'prefill') or an nsys "
                       "stats CSV (cuda_gpu_kern_sum / cuda_gpu_trace); force one with --format");
  }
  if (!opt.nvtx_path.empty()) {
    const char* const only = "NVTX ranges split only an nsys cuda_gpu_trace CSV into phases; ";
    if (format != "nsys") throw OptionNotForProfile(only + path + " is a vLLM layerwise profile (format vllm)");
    if (is_nsys_kernel_summary(text, path))
      throw OptionNotForProfile(only + path + " is an nsys kernel summary (cuda_gpu_kern_sum, format nsys), one row per "
                                "kernel name, which cannot be split by phase");
  }
  if (format == "vllm") return require_kernels(parse_vllm_profile(text, path));
  if (format == "nsys") {
    NsysOptions no;
    if (!opt.nvtx_path.empty()) {
      try {
        no.nvtx_text = read_file(opt.nvtx_path);
      } catch (const std::exception& e) {
        throw InputError(opt.nvtx_path, 0, "", std::string("cannot read the NVTX report: ") + e.what());
      }
      no.nvtx_name = opt.nvtx_path;
      if (no.nvtx_text.empty()) throw InputError(opt.nvtx_path, 0, "", "empty NVTX report");
    }
    return require_kernels(parse_nsys_csv(text, path, no));
  }
  throw std::invalid_argument("unknown profile format '" + format + "' (expected auto, vllm or nsys)");
}

}  // namespace arfit::trace
