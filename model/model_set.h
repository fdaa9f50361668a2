// The fitted models of a set of measurements, as stored in models.json, and prediction from them.
// Pure model/ code: evaluating a fitted model needs no Ceres (the families are templated functors that
// evaluate in double here and in ceres::Jet inside fit/).
//
// CONTRACT shared by fit/ (which produces ModelSets), codegen/, plots/ and trace/ (which consume them).
// Implemented in model/model_set.cpp by the fit engineer. Extend it; do not break it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/sample.h"

namespace arfit {

struct GroupModel;  // model/group_model.h

// One fitted curve: a (system, collective, strategy, fusion, dtype, nranks, nnodes) group.
struct GroupKey {
  std::string system;  // system label: aiconfigurator system name, device name or source file stem
  Collective collective = Collective::AllReduce;
  std::string strategy = "NCCL";
  FusionOp fusion = FusionOp::None;
  std::string dtype = "bf16";
  int nranks = 0;
  int nnodes = 1;

  std::string id() const;  // stable, human-readable: "system/allreduce/NCCL/NONE/bf16/n8/N1"
  bool operator<(const GroupKey& o) const;
  bool operator==(const GroupKey& o) const;
};

// The system a sample belongs to: Sample::extra["system"] (ingest sets it, e.g. "h100_sxm"), else the device
// name, else the stem of the source file, else "default". fit/, plots/ and codegen/ group samples by it.
std::string sample_system(const Sample& s);
// The group of a sample; `system` overrides sample_system(s) (the eval protocols group by source file).
GroupKey sample_group_key(const Sample& s);
GroupKey sample_group_key(const Sample& s, const std::string& system);

struct PredictQuery {
  std::string system;  // empty: the only system in the set (error when several)
  // More nodes than the machine measured: answered by the rule of model/scale_out.h (extrapolated) when true;
  // false keeps to the measured node counts (a tuner's rules for NCCL's variants must not rest on a guess).
  bool across_nodes = true;
  Collective collective = Collective::AllReduce;
  std::string strategy = "NCCL";
  FusionOp fusion = FusionOp::None;
  std::string dtype;  // empty: the group's dtype when only one
  int nranks = 0;
  int nnodes = 1;
  int sm = 0;           // 0: the measured SM; another value transfers the model (extrapolated)
  double bytes = 0;     // message size as nccl-tests defines it
  std::int64_t tokens = 0, hidden = 0;  // shape, when known (bytes = tokens*hidden*dtype size)
  std::string splits;   // all-to-allv: "B,T0-T1-...,D" or per-rank sizes
};

struct Prediction {
  double time_us = 0;
  double lo_us = 0, hi_us = 0;  // 90 % prediction interval
  bool extrapolated = false;    // outside the measured sizes, rank counts or SM
  bool transferred = false;     // from a curve carried from other machines' (fit/transfer.h; the group's `transfer`
                                // block), directly or through a rule over such curves (joint-n, across nodes)
  std::string how;              // e.g. "sigmoid+residual", "joint-n", "sm-transfer 90->100"
  double bytes = 0;             // the size answered: the query's bytes, tokens × hidden × the dtype's size, or an
                                // all-to-allv split's effective size (ModelSet::predict fills it)
};

// A fitted group as consumers see it (plots draw these).
struct GroupModelView {
  GroupKey key;
  std::string family;             // seed | alphabeta | sigmoid | regimes | ...
  double min_bytes = 0, max_bytes = 0;  // measured range
  int points = 0;
  double cv_gmae = 0;             // cross-validated GMAE, fraction (0.012 = 1.2 %)
  int sm = 0;                     // the machine's datasheet SM (model/sm_targets.h: datasheet_sm); 0 = unknown
  std::vector<std::pair<double, double>> seed_turning_points;  // seed family: (ln_p bytes, sats_p bytes)
};

// The query for a fitted group's own curve (its system, collective, strategy, fusion, dtype, count and nodes) at
// `bytes`: what plots and tests ask a models file about one of its groups.
PredictQuery group_query(const GroupKey& key, double bytes);

class ModelSet {
 public:
  // Reads and validates the whole set (docs/fit.md's schema; group_model.h lists the checks). from_json throws
  // InputError("<models>", 0, "", "/groups/3/params/1: ..."); load names the file and the line instead, and
  // bounds the nesting (model/json_input.h).
  static ModelSet from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  // The readers of a file (load, parse, from_document) also refuse one that holds no model, no fitted group and no
  // joint family (`groups: []`): InputError naming the file and the line of "groups". from_json takes it (a set
  // being built).
  static ModelSet load(const std::string& path);
  static ModelSet parse(const std::string& text, const std::string& name);  // load without the file
  // parse of a document already parsed from `text` (parse_json): checks it, errors naming `name` and a line.
  static ModelSet from_document(const nlohmann::json& j, const std::string& text, const std::string& name);
  void save(const std::string& path) const;             // atomic write

  std::vector<GroupModelView> groups() const;
  // Strategies with a model for this (system, collective, fusion, nranks), possibly via the joint-n or SM transfer.
  std::vector<std::string> strategies(const std::string& system, Collective c, FusionOp f, int nranks) const;
  // Strategies with a model for this (system, collective) at any fusion and GPU count: fitted groups and joint-n
  // families (a file may hold only joint entries; they answer every count). Sorted; an empty system means any.
  std::vector<std::string> strategies(const std::string& system, Collective c) const;
  std::vector<std::string> systems() const;

  // The GPU counts of the fitted groups that answer `q` at their own count, the groups predict chooses among
  // first: the query's system (the set's only one when empty), collective (all-to-all for an all-to-allv split,
  // as predict reads it), strategy, fusion, dtype (any when empty; spelled any way canonical_dtype reads) and node
  // count. q.nranks and the size fields are not read. Empty when the system is empty and the set has several.
  std::vector<int> gpu_counts(const PredictQuery& q) const;
  // The element types (canonical names, sorted) of the fitted groups and joint families of `q`'s curve kind
  // (system resolved as gpu_counts does, collective, strategy, fusion): what a query without a dtype chooses among.
  // Several make such a query ambiguous (predict answers nothing), so `arfit predict` asks for --dtype.
  std::vector<std::string> dtypes(const PredictQuery& q) const;

  // nullopt when nothing in the set can answer the query.
  std::optional<Prediction> predict(const PredictQuery& q) const;
  // The same, where a query on more nodes than its machine measured may also borrow the scale-out steps of the
  // machines in `lenders` (other models files: `arfit predict --prior`); they answer nothing else.
  std::optional<Prediction> predict(const PredictQuery& q, const std::vector<ModelSet>& lenders) const;
  // Why predict(q, lenders) has no answer when it refuses a strategy on more nodes than the query's machine measured
  // it on: only NCCL's own strategies run across nodes by construction, any other only where the query's machine or
  // a lender (this set's groups, then `lenders`) measured it, same collective, on more than one node (docs/fit.md,
  // "Across node boundaries"). One line naming the strategy; empty when predict answers or refuses nothing.
  std::string across_nodes_refusal(const PredictQuery& q, const std::vector<ModelSet>& lenders = {}) const;

  const nlohmann::json& raw() const { return json_; }

 private:
  struct Parsed;  // the groups and joint families of json_, parsed once by from_json (model_set.cpp)
  static ModelSet parse_checked(const nlohmann::json& j);  // throws JsonError
  // `q` as predict reads it: an all-to-allv split asks the all-to-all groups, an empty system the set's only one
  // (nullopt when it has several).
  std::optional<PredictQuery> resolve_query(const PredictQuery& q) const;
  // The groups other machines' scale-out steps may come from: this set's (every group), then those of `lenders`.
  std::vector<const GroupModel*> lender_pool(const std::vector<ModelSet>& lenders) const;

  nlohmann::json json_;  // the models file, the single source of truth (round-trips exactly)
  std::shared_ptr<const Parsed> parsed_;  // derived from json_; read-only, so copies share it
};

// The system a query is about: `requested`, or the set's only system when it is empty. Throws std::invalid_argument
// naming --system and listing the set's systems when `requested` is not one of them, or is empty and the set holds
// several (a usage error in every command that takes --system: predict, whatif, codegen, suggest).
std::string resolve_system(const ModelSet& models, const std::string& requested);

// --system as predict and whatif read it: resolve_system, except that an empty `requested` stays empty where the set
// holds one machine or none (the query then names no machine and every group of the file may answer).
std::string requested_system(const ModelSet& models, const std::string& requested);

// --strategy as predict and whatif read it: a strategy the models file has no model of (a misspelt one) is the
// user's to correct, not a query without an answer (predict) nor every collective kept as measured (whatif).
// Throws std::invalid_argument "--strategy: 'X' is not OF_WHAT (strategies: HELD...)" unless `held` (what
// ModelSet::strategies lists) holds `requested`.
void require_held_strategy(const std::string& requested, const std::vector<std::string>& held,
                           const std::string& of_what);

// Element types of the same size as `dtype` (read any way canonical_dtype spells it), itself left out, in the
// order a query without a model of `dtype` asks them: floating point first (bf16, fp16, fp32, fp8_e4m3, fp8_e5m2,
// int8, uint8, int16, uint16, int32, uint32, fp64, int64, uint64). Empty for an unknown type. The one rule `arfit predict`, codegen
// (and so suggest and plot's grids) and whatif answer by: aiconfigurator's NCCL tables are fp16 next to bf16
// kernels, and a message of the same bytes is the same communication.
std::vector<std::string> same_size_dtypes(const std::string& dtype);

// `predict(q)`, else `predict` of q with each of same_size_dtypes(q.dtype) in turn: the first that answers, its
// `how` ending in "no bf16 model: used fp16 (same element size)". `*used` (when given) is the canonical dtype that
// answered. A query without a dtype is asked as it is.
std::optional<Prediction> predict_same_element_size(const std::function<std::optional<Prediction>(const PredictQuery&)>& predict,
                                                    const PredictQuery& q, std::string* used = nullptr);

}  // namespace arfit
