// libFuzzer target: an nsys stats CSV export (cuda_gpu_kern_sum / cuda_gpu_trace) through parse_nsys_csv, the
// public entry of the reader (its internals are trace/'s). The first byte splits the input: when odd, the
// bytes after a NUL are an NVTX range report. Bad content may only be rejected with arfit::InputError.
#include <cstdint>
#include <string>

#include "model/errors.h"
#include "trace/nsys_csv.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool with_nvtx = data[0] & 1;
  std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  arfit::trace::NsysOptions options;
  if (with_nvtx) {
    const auto nul = text.find('\0');
    if (nul != std::string::npos) {
      options.nvtx_text = text.substr(nul + 1);
      options.nvtx_name = "fuzz_nvtx.csv";
      text.resize(nul);
    }
  }
  try {
    arfit::trace::parse_nsys_csv(text, "fuzz_nsys.csv", options);
  } catch (const arfit::InputError&) {
  }
  return 0;
}
