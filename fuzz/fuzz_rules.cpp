// libFuzzer target: a kernel-classification rule file (JSON, breakdown/whatif --rules) through
// RuleTable::parse. Bad content may only be rejected with arfit::InputError naming the file. Kept thin: the
// matcher behind the rules belongs to trace/classify.cpp; this checks the loading path only.
#include <cstdint>
#include <string>

#include "model/errors.h"
#include "trace/classify.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    arfit::trace::RuleTable::parse(text, "fuzz_rules.json");
  } catch (const arfit::InputError&) {
  }
  return 0;
}
