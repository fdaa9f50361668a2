// libFuzzer target: a models file (arfit fit's models.json) through ModelSet::parse, the loading path of
// predict, codegen, suggest, whatif and plot. Bad content may only be rejected with arfit::InputError; an
// accepted set must predict sanely wherever it answers: a finite positive time inside an ordered 90 % interval
// (the semantic validation's promise: no nan, no lo90 > hi90 from a hand-edited file; the seed family, the
// unbounded reference predictor, only no nan and an ordered interval).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/errors.h"
#include "model/model_set.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace arfit;
  const std::string text(reinterpret_cast<const char*>(data), size);
  ModelSet set;
  try {
    set = ModelSet::parse(text, "fuzz_models.json");
  } catch (const InputError&) {
    return 0;
  }
  for (const GroupModelView& g : set.groups()) {
    PredictQuery q = group_query(g.key, g.min_bytes);
    // Inside the measured range, at its ends and a few octaves beyond, and at another rank count (joint fits).
    for (double bytes : {g.min_bytes / 16, g.min_bytes, std::sqrt(g.min_bytes * g.max_bytes), g.max_bytes, g.max_bytes * 16}) {
      for (int nranks : {g.key.nranks, 2 * g.key.nranks}) {
        q.bytes = bytes;
        q.nranks = nranks;
        const auto p = set.predict(q);
        if (!p) continue;
        // The seed family is the DLRM paper's predictor, unbounded by design: it may overflow, never give nan.
        if (g.family != "seed" && !(std::isfinite(p->time_us) && p->time_us > 0)) std::abort();
        if (!(p->lo_us >= 0 && p->lo_us <= p->time_us && p->time_us <= p->hi_us)) std::abort();
      }
    }
  }
  return 0;
}
