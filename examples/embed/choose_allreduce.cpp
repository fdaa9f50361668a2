// choose_allreduce MODELS.json TP TOKENS HIDDEN [FUSION] [DTYPE]
//
// What an inference engine does at start-up with arfit's model library: load the models file that
// `arfit fit` wrote, predict the all-reduce of one (tokens x hidden) tensor at TP GPUs for every strategy
// that has a model, with its 90 % interval, and choose the fastest. Prints one line per strategy and the choice:
//   NCCL 12.345678901234567 11.1 13.9 satbw+residual
//   choice ONESHOT
// Times are printed with 17 significant digits so that a test can compare them with `arfit predict --json`.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "model/model_set.h"
#include "model/sample.h"

int main(int argc, char** argv) {
  if (argc < 5 || argc > 7) {
    std::fprintf(stderr, "usage: %s MODELS.json TP TOKENS HIDDEN [FUSION] [DTYPE]\n", argv[0]);
    return 2;
  }
  try {
    const arfit::ModelSet models = arfit::ModelSet::load(argv[1]);  // throws arfit::InputError on bad files

    arfit::PredictQuery query;
    query.collective = arfit::Collective::AllReduce;
    query.nranks = std::atoi(argv[2]);
    query.tokens = std::atoll(argv[3]);
    query.hidden = std::atoll(argv[4]);
    query.fusion = arfit::parse_fusion(argc > 5 ? argv[5] : "NONE");
    query.dtype = argc > 6 ? argv[6] : "bf16";

    std::optional<std::string> best;
    double best_us = 0;
    // The strategies with a model for this system (the file's only one), fusion and GPU count.
    for (const std::string& strategy :
         models.strategies(query.system, query.collective, query.fusion, query.nranks)) {
      query.strategy = strategy;
      // A strategy without a model of this dtype is asked for another of its element size, as `arfit predict` and
      // `arfit codegen` ask it (aiconfigurator's NCCL tables are fp16 next to bf16 kernels).
      const std::optional<arfit::Prediction> p = arfit::predict_same_element_size(
          [&](const arfit::PredictQuery& q) { return models.predict(q); }, query);
      if (!p) continue;  // no model of this dtype nor of its element size
      std::printf("%s %.17g %.17g %.17g %s\n", strategy.c_str(), p->time_us, p->lo_us, p->hi_us, p->how.c_str());
      if (!best || p->time_us < best_us) {
        best = strategy;
        best_us = p->time_us;
      }
    }
    if (!best) {
      std::fprintf(stderr, "no model in %s answers this cell\n", argv[1]);
      return 1;
    }
    std::printf("choice %s\n", best->c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
