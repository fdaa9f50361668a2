// libFuzzer target: an arbench --spec file (JSON grid spec) through apply_json_spec. Bad content may only be
// rejected with GridError (arbench's usage error naming the option and key); accepted sizes are positive.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bench/grid.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  arfit::bench::GridSpec spec;
  try {
    arfit::bench::apply_json_spec(spec, text, "fuzz_spec.json");
  } catch (const arfit::bench::GridError&) {
    return 0;
  }
  for (auto v : {&spec.tokens, &spec.hidden, &spec.bytes})
    for (std::int64_t x : *v)
      if (x < 1) std::abort();
  for (int tp : spec.tp)
    if (tp < 1) std::abort();
  return 0;
}
