#include "model/predict_answer.h"

#include <algorithm>
#include <stdexcept>

#include "model/bus_factor.h"
#include "model/sample.h"
#include "model/scale_out.h"
#include "model/text.h"

namespace arfit {
namespace {

// --strategy: checked where the file models the collective at all (a file without it answers nothing, whatever
// the strategy).
void require_strategy_of_collective(const ModelSet& set, const PredictRequest& r, const PredictQuery& base) {
  const Collective modelled = r.first_split.empty() ? base.collective : Collective::AllToAll;
  const std::vector<std::string> held = set.strategies(base.system, modelled);
  if (held.empty()) return;
  require_held_strategy(r.strategy, held,
                        "a strategy of " + r.models_name + " for " + to_string(modelled) +
                            (base.system.empty() ? std::string() : " on " + base.system));
}

// A --dtype of no known size that none of the file's groups has is a typo, not a type without a model.
void require_known_dtype(const ModelSet& set, const PredictRequest& r) {
  if (r.dtype.empty() || dtype_size(r.dtype) > 0) return;
  const std::string asked = canonical_dtype(r.dtype);
  const auto groups = set.groups();
  if (std::none_of(groups.begin(), groups.end(), [&](const GroupModelView& g) { return canonical_dtype(g.key.dtype) == asked; }))
    throw std::invalid_argument("--dtype: '" + r.dtype + "' is neither a known element type (bf16, fp16, fp32, fp64, int8, " +
                                "fp8, ...) nor a dtype of " + r.models_name);
}

// Without --nranks, the only GPU count the file has for the query (that of the type that will answer: a same-size
// type when --dtype has no model of its own); with several, which one is meant is the user's to say. 0 when none.
int only_gpu_count(const ModelSet& set, const PredictRequest& r, PredictQuery asked) {
  std::vector<int> counts = set.gpu_counts(asked);
  for (const std::string& d : r.dtype.empty() ? std::vector<std::string>{} : same_size_dtypes(r.dtype)) {
    if (!counts.empty()) break;
    asked.dtype = d;
    counts = set.gpu_counts(asked);
  }
  if (counts.size() > 1)
    throw std::invalid_argument("--nranks: " + r.models_name + " has " + std::to_string(counts.size()) +
                                " GPU counts for this query (" + join(counts, ", ") + "); say which");
  return counts.empty() ? 0 : counts.front();
}

}  // namespace

ResolvedPredict resolve_predict_request(const ModelSet& set, const PredictRequest& r) {
  require_nodes_within_ranks(r.nnodes, r.nranks, "--nranks");
  ResolvedPredict out;
  PredictQuery& base = out.base;
  base.collective = parse_collective(r.collective);  // std::invalid_argument naming the value
  base.fusion = parse_fusion(r.fusion);
  base.strategy = r.strategy;
  base.dtype = r.dtype;
  base.nranks = r.nranks;
  base.nnodes = r.nnodes;
  base.sm = r.sm;
  base.system = requested_system(set, r.system);
  require_strategy_of_collective(set, r, base);
  require_known_dtype(set, r);
  if (!r.first_split.empty() && base.collective != Collective::AllToAllV && base.collective != Collective::AllToAll)
    throw std::invalid_argument("--splits is an all-to-allv split: it needs --collective alltoallv (or alltoall), not " +
                                r.collective);
  PredictQuery asked = base;  // the query without its sizes, as the models file is asked about it
  asked.splits = r.first_split;
  // Without --dtype the answer is from the only element type the file has for the query; with several (the
  // aiconfigurator NCCL tables hold fp16 and int8), which one is meant is the user's to say.
  const std::vector<std::string> file_types = r.dtype.empty() ? set.dtypes(asked) : std::vector<std::string>{};
  if (file_types.size() > 1)
    throw std::invalid_argument("--dtype: " + r.models_name + " has " + std::to_string(file_types.size()) +
                                " element types for this query (" + join(file_types, ", ") + "); say which");
  // A split names its ranks (one entry each): that is its count, per query.
  out.busbw_nranks = r.nranks > 0 || !r.first_split.empty() ? r.nranks : only_gpu_count(set, r, asked);
  if (r.shaped) {
    // A shaped message is tokens x hidden elements of the type that answers: a type arfit cannot size gets no guess.
    const std::string shape_dtype = !r.dtype.empty() ? r.dtype : file_types.size() == 1 ? file_types.front() : "";
    if (!shape_dtype.empty() && dtype_size(shape_dtype) == 0)
      throw std::invalid_argument("--tokens/--hidden: the element size of dtype '" + shape_dtype + "'" +
                                  (r.dtype.empty() ? " (the models' type for this query)" : "") +
                                  " is unknown to arfit, so a tokens x hidden message has no size; give it in bytes "
                                  "with --bytes");
    out.sized_as = shape_dtype.empty() ? "bf16" : shape_dtype;  // bf16 when the file has none for the query
  }
  return out;
}

PredictAnswer answer_predict_query(const ModelSet& set, const std::vector<ModelSet>& lenders, const PredictQuery& q,
                                   int busbw_nranks) {
  PredictAnswer a;
  a.prediction = predict_same_element_size([&](const PredictQuery& x) { return set.predict(x, lenders); }, q);
  if (!a.prediction) {
    const std::string refused = set.across_nodes_refusal(q, lenders);
    a.refused_across_nodes = !refused.empty();
    a.error = refused.empty() ? "no model answers this query" : refused;
    return a;
  }
  const Prediction& p = *a.prediction;
  a.unknown_network = p.how.find(kNoMultiNodePrior) != std::string::npos;
  a.busbw_gbps = busbw_nranks > 0 ? bus_bw_gbps(q.collective, busbw_nranks, p.bytes, p.time_us) : alg_bw_gbps(p.bytes, p.time_us);
  return a;
}

}  // namespace arfit
