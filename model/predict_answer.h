// What `arfit predict` answers, as one library call per query, for every front end that answers predictions: the
// command line prints it, the Python package returns it as arrays. The rules live here once: which system, strategy,
// element type and GPU count a query means when the request leaves them open, a type without a model answered by
// one of the same element size, the bus bandwidth's GPU count, and why nothing answers.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/model_set.h"

namespace arfit {

// A prediction request without its sizes, as the options of `arfit predict` give it ("" = left open).
struct PredictRequest {
  std::string models_name;  // the models file, for messages
  std::string collective = "allreduce", strategy = "NCCL", system, fusion = "NONE", dtype;
  int nranks = 0, nnodes = 1, sm = 0;
  std::string first_split;  // an all-to-allv split of the request, if it asks by splits ("" otherwise)
  bool shaped = false;      // sizes are tokens x hidden
};

// The request resolved against the models file: the query every size of it starts from.
struct ResolvedPredict {
  PredictQuery base;
  int busbw_nranks = 0;   // the GPU count of a byte or shaped query's bus bandwidth (0: none known, algorithm bandwidth)
  std::string sized_as;   // shaped requests: the element type a tokens x hidden message is sized by
};

// Resolves `request` against `set` as `arfit predict` does. Throws std::invalid_argument (a usage error, the
// message naming the option) for a collective, fusion, system or strategy the request names wrongly, a dtype that is
// neither a known type nor one of the file's, several element types or GPU counts where the request named none, and a
// shaped request whose element type has no known size.
ResolvedPredict resolve_predict_request(const ModelSet& set, const PredictRequest& request);

// One query's answer: the prediction and its bus bandwidth, or why nothing answers.
struct PredictAnswer {
  std::optional<Prediction> prediction;
  double busbw_gbps = 0;
  std::string error;             // no prediction: why ("no model answers this query", or predict's refusal across nodes)
  bool refused_across_nodes = false;  // the error is ModelSet::across_nodes_refusal's
  bool unknown_network = false;  // answered across nodes with an unknown network's interval (kNoMultiNodePrior)
};

// Answers `q` as `arfit predict` does: ModelSet::predict with `lenders`, a type without a model answered by one of the
// same element size (predict_same_element_size), the bus bandwidth for `busbw_nranks` GPUs (the algorithm bandwidth
// when 0).
PredictAnswer answer_predict_query(const ModelSet& set, const std::vector<ModelSet>& lenders, const PredictQuery& q,
                                   int busbw_nranks);

}  // namespace arfit
