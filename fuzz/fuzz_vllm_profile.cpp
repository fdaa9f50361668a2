// libFuzzer target: a vLLM layerwise profile (JSON) through parse_vllm_profile, the reader of breakdown and
// whatif. Bad content may only be rejected with arfit::InputError naming the file.
#include <cstdint>
#include <string>

#include "model/errors.h"
#include "trace/vllm_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    arfit::trace::parse_vllm_profile(text, "fuzz_profile.json");
  } catch (const arfit::InputError&) {
  }
  return 0;
}
