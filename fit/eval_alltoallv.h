// `arfit eval --protocol alltoallv`: all-to-allv predicted end to end from the uniform all-to-all, as the DLRM
// performance model does (model/alltoallv.h).
//
// For every all-to-allv group (system, strategy, fusion, dtype, rank and node count; measured splits with their
// `splits` column, duplicates of one split collapsed to the median) the uniform all-to-all curve of the same
// system, strategy, rank and node count (the same dtype when there is one) is fitted on all its sizes, and
// every all-to-allv sample is predicted from it at its effective size in each mode (sum, max_of_max,
// max_of_sum). Rows, one per method and mode:
//   auto:MODE        arfit's model of the all-to-all curve (CV-selected family + residual correction), with its
//                    90 % interval
//   auto             arfit's automatic choice: every sample predicted in the mode with the lowest auto GMAE over
//                    the system's all-to-allv samples (the mode `arfit fit` stores, reported as chosen_mode), its
//                    interval widened by that mode's scatter (RMS log error) on them
//   auto-loo         the same choice made without the sample itself (leave one out; max_of_sum, the default
//                    without all-to-allv samples, when it is the system's only one): the held-out estimate of
//                    the choice, which flips between modes whose errors are close
//   seed:MODE        the DLRM paper's sigmoid predictor (model/seed.h) at arfit's effective sizes
//   seed-paper:MODE  the same predictor at the paper's own effective sizes (self traffic left out, not
//                    normalised: paper_effective_bytes)
//   METHOD:MODE      any other method `eval` knows (loglog, alphabeta, a family name, FAMILY+c)
// Groups without a uniform curve (or with fewer than 4 sizes) are listed with the reason and left out.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/eval.h"

namespace arfit::fit {

struct AllToAllvGroupStatus {
  GroupKey key;         // the all-to-allv group
  int samples = 0;      // distinct splits measured
  std::string curve;    // id of the uniform all-to-all curve it is predicted from; "" when none
  std::string problem;  // why it was left out; "" when predicted
};

struct AllToAllvEval {
  EvalResult result;  // protocol "alltoallv"; methods named "METHOD:MODE", "auto" and "auto-loo"
  std::vector<AllToAllvGroupStatus> groups;
  std::map<std::string, std::string> chosen_mode;  // per system: the mode with the lowest auto GMAE on all samples

  // EvalResult's JSON plus "groups" (id, samples, curve, status) and "chosen_mode".
  nlohmann::json to_json() const;
  std::string to_table() const;
};

// Default methods of the protocol (EvalOptions::methods replaces them when given).
const std::vector<std::string>& alltoallv_default_methods();

// Throws std::invalid_argument for unknown methods, arfit::InputError for a split that does not parse or does not
// match the sample's rank count.
AllToAllvEval eval_alltoallv(const std::vector<Sample>& samples, const EvalOptions& options);
// eval_alltoallv's check of the methods, which needs no samples: throws std::invalid_argument naming the first
// one it does not know.
void check_alltoallv_methods(const EvalOptions& options);

}  // namespace arfit::fit
