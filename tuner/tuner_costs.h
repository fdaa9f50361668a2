// What arfit's NCCL tuner plugin knows: a models file written by `arfit fit` (NCCL's forced algorithm/protocol
// variants, strategies named NCCL_<ALGO>_<PROTO>, as measured) or a rules file written by `arfit codegen --format
// nccl-tuner`, and how it changes NCCL's cost table for one call -- only the entries arfit has a model (or a rule)
// for, only entries NCCL marked available, never the channel count unless a rule names one. The C ABI around it is
// tuner/plugin.cpp.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include "model/model_set.h"
#include "tuner/tuner_rules.h"

namespace arfit::tuner {

// One call of NCCL's getCollInfo: the collective (ncclFunc_t), its size as NCCL counts it (the whole buffer for
// all-gather and reduce-scatter, as nccl-tests' size column), the communicator, numPipeOps and regBuff.
struct CollCall {
  int function = 4;
  std::size_t bytes = 0;
  std::size_t nranks = 0, nnodes = 1;
  int pipe_ops = 1, reg_buff = 0;
};

class TunerCosts {
 public:
  // Reads `path`: a models file (a JSON object) or a rules file; `system` picks one of several systems of a models
  // file ("" = its only one). Throws InputError (the file, the line, the field) or std::invalid_argument (`system`).
  static TunerCosts load(const std::string& path, const std::string& system);

  // What was loaded, for the log: "models file F, system S: 16 NCCL variant models (allreduce)" / "rules file F: 4 rules".
  const std::string& description() const { return description_; }

  // Changes `table` (NCCL's contiguous float[num_algo][num_proto]) for `call`:
  //   models: every entry NCCL marked available (>= 0) whose algorithm/protocol variant the models predict for this
  //           collective, communicator size and node count without extrapolating (sizes, counts and nodes measured)
  //           gets the predicted time in microseconds -- the unit of NCCL's own estimates beside it, so NCCL's minimum
  //           chooses among arfit's measured curves and its own model for the entries arfit has none of;
  //   rules:  the first rule that matches makes its entry the cheapest (0), if NCCL marked it available, and hands
  //           NCCL its channel count when the rule gives one (> 0).
  // Entries NCCL marked unavailable (-1) stay so; *nchannels is left as NCCL set it otherwise. Returns the number of
  // entries changed.
  int apply(const CollCall& call, float* table, int num_algo, int num_proto, int* nchannels) const;

 private:
  struct Variant {
    Collective collective;
    int algorithm, protocol;
    std::string strategy, dtype;
  };
  int apply_models(const CollCall& call, float* table, int num_algo, int num_proto) const;
  // Each variant's predicted time for a call (NaN: no answer), computed once per (collective, ranks, nodes, bytes):
  // a job repeats its message sizes on every step, and a prediction costs about a microsecond.
  std::vector<float> variant_times(const CollCall& call, Collective collective) const;
  int apply_rules(const CollCall& call, float* table, int num_algo, int num_proto, int* nchannels) const;

  std::optional<ModelSet> models_;
  std::string system_;
  std::vector<Variant> variants_;
  std::vector<TunerRule> rules_;
  std::string description_;
  // Bounded (kMaxCachedCalls, then cleared); a mutex, since NCCL may call communicators from several threads.
  using CallKey = std::tuple<int, std::size_t, std::size_t, std::size_t>;
  static constexpr std::size_t kMaxCachedCalls = 4096;
  struct Cache {
    std::mutex mutex;
    std::map<CallKey, std::vector<float>> times;
  };
  std::shared_ptr<Cache> cache_ = std::make_shared<Cache>();
};

// The arfit collective of an ncclFunc_t value (broadcast, reduce, all-gather, reduce-scatter, all-reduce); nullopt
// for the others (send/recv, all-to-all, ... : no opinion).
std::optional<Collective> collective_of_nccl_function(int function);

}  // namespace arfit::tuner
