// libFuzzer target: a models file (arfit fit's models.json) through ModelSet::parse, the loading path of
// predict, codegen, suggest, whatif and plot. Bad content may only be rejected with arfit::InputError; an
// accepted set must predict sanely wherever it answers: a finite positive time inside an ordered 90 % interval
// (the semantic validation's promise: no nan, no lo90 > hi90 from a hand-edited file; the seed family, the
// unbounded reference predictor, only no nan and an ordered interval).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "model/errors.h"
#include "model/group_model.h"
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
  // The seed family is the DLRM paper's predictor, unbounded by design: it may overflow, never give nan. A joint
  // answer may rest on any group of the set, so one seed group exempts the set from the finiteness checks.
  bool any_seed = false;
  for (const GroupModelView& g : set.groups()) any_seed = any_seed || g.family == "seed";
  for (const GroupModelView& g : set.groups()) {
    PredictQuery q = group_query(g.key, g.min_bytes);
    // Inside the measured range, at its ends, a few octaves beyond and at the size bounds, and at other rank
    // counts down to one and up to the largest arfit models (joint fits: a hand-edited kappa of 4 carried a
    // trend to an infinite time at 2^20 ranks).
    for (double bytes : {1.0, g.min_bytes / 16, g.min_bytes, std::sqrt(g.min_bytes * g.max_bytes), g.max_bytes, g.max_bytes * 16,
                         kMaxModelBytes}) {
      for (int nranks : {1, g.key.nranks, 2 * g.key.nranks, kMaxModelRanks}) {
        q.bytes = std::min(std::max(bytes, 1.0), kMaxModelBytes);
        q.nranks = nranks;
        q.nnodes = std::min(q.nnodes, nranks);
        const auto p = set.predict(q);
        if (!p) continue;
        if (!any_seed && !(std::isfinite(p->time_us) && p->time_us > 0 && std::isfinite(p->hi_us))) std::abort();
        if (!(p->lo_us >= 0 && p->lo_us <= p->time_us && p->time_us <= p->hi_us)) std::abort();
      }
    }
  }
  return 0;
}
