// libFuzzer target: one ingest reader (ARFIT_FUZZ_FORMAT) on arbitrary bytes. A reader may reject input
// only with arfit::InputError; anything else (another exception, a crash, a sanitizer report, a hang) is a
// bug. Accepted input must give usable samples: rank count >= 1, and either a positive finite time or
// status Failed with no time.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ingest/ingest.h"
#include "model/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace arfit;
  using namespace arfit::ingest;
  Options options;
  // The first byte picks the flags, so --collective/--nranks paths are fuzzed too.
  if (size > 0) {
    if (data[0] & 1) options.collective = Collective::AllReduce;
    if (data[0] & 2) options.nranks = 1 + (data[0] >> 4);
    ++data;
    --size;
  }
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    IngestResult r = ingest_as(Format::ARFIT_FUZZ_FORMAT, text, "fuzz_input.txt", options);
    for (const Sample& s : r.samples) {
      if (s.nranks < 1 || s.bytes < 0) std::abort();
      if (s.ok() && !(std::isfinite(s.time_us) && s.time_us > 0)) std::abort();
      if (!s.ok() && s.time_us != 0 && r.format != Format::ArfitCsv) std::abort();
    }
    if (r.failed > r.samples.size()) std::abort();
  } catch (const InputError&) {
    // rejected with a file:line message: fine
  }
  return 0;
}
