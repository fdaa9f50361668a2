// Evaluation protocols: fit on part of each measured curve, predict the rest, compare with the measurements.
// Reused by `arfit eval` (cli/cmd_eval.cpp) and by other components' protocols (codegen's `select`).
//
//   interp2  fit the even-indexed sizes of each curve, predict the odd ones
//   sparse4  fit every 4th size plus the largest, predict the rest
//   extrap   fit sizes <= 64 MiB, predict the larger ones
//   crossn   for families measured at >= 3 GPU counts (2 when the larger is on more nodes), fit all but the
//            largest count, predict the largest; reported also by node count (`by_nodes`: the largest count on nodes measured, or on more nodes, and within
//            `same`, `more_gpus_per_node`: more GPUs per node on the measured nodes, more than one)
//   crosshw:K  leave one system out: each curve of a system that other systems measured too, from K of its
//            sizes and the other systems' curves (fit/transfer.h); reported also per target system
// A curve is one (source, collective, strategy, fusion, dtype, nranks, nnodes) group with >= 12 distinct sizes
// (duplicates -> median), out-of-place samples only. Curves whose training part has < 6 sizes or whose test
// part is empty are skipped (as the reference evaluation does).
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fit/fit.h"
#include "model/metrics.h"

namespace arfit::fit {

struct EvalPoint {
  GroupKey key;
  double bytes = 0, measured = 0;
  Prediction predicted;
};

struct EvalMethodResult {
  std::string name;
  ErrorSummary errors;
  int groups = 0;           // curves (or families, for crossn) predicted
  int failed_groups = 0;    // curves the method could not fit (their points are not counted)
  double coverage = -1;     // fraction of held-out points inside the 90 % interval; -1 = method has none
  int ceiling_points = -1;  // ceilings: held-out points other curves corrected (the rest keep auto's); -1 = not one
  std::vector<EvalPoint> points;
};

// The same methods over part of a protocol's curves (crossn's node-count subsets, crosshw's target systems).
struct EvalSubset {
  std::string name;
  int curves = 0;
  std::vector<EvalMethodResult> methods;
};

struct EvalResult {
  std::string protocol;
  std::vector<EvalMethodResult> methods;
  int curves = 0;
  std::string subsets_key;          // JSON key of the subsets ("by_nodes", "by_system"); "" = none
  std::vector<EvalSubset> subsets;
  int unmatched_curves = -1;        // crosshw: curves no other system measured (-1: not reported)
  // What the table does not show, one line each (the CLI prints them on stderr): a ceiling that kept auto's
  // prediction at some held-out points, or bounded nothing (EvalOptions::methods).
  std::vector<std::string> notes;
  // Why no curve qualified, in the protocol's own words, when the generic rule (>= 12 sizes) is not the reason
  // (crosshw: fewer than two systems, or no curve another system measured too); "" = the generic rule.
  std::string nothing_qualifies;

  // {"protocol": P, "methods": {NAME: {"gmae": %, "median": %, "p90": %, "max": %, "points": N, "groups": G,
  //   "coverage90": % (methods with intervals), "ceiling_points": N (ceilings: points other curves corrected)}}};
  //   percentages as numbers. With subsets also
  //   SUBSETS_KEY: {SUBSET: {"curves": N, "methods": {NAME: {...}}}}, and "unmatched_curves" where reported.
  nlohmann::json to_json() const;
  std::string to_table() const;
  // Every kept point (EvalOptions::keep_points) as CSV with a header:
  // method,group,bytes,measured_us,predicted_us,lo_us,hi_us,rel_error,how
  std::string points_csv() const;
  const EvalMethodResult* method(const std::string& name) const;
};

struct EvalOptions {
  // "auto" (arfit's default: CV-selected family + residual correction + sibling pooling, fit/siblings.h),
  // "auto-solo" (the same, each curve alone), the baselines "seed", "alphabeta",
  // "loglog"; also any family name ("sigmoid", "regimes", "satbw", ...) fitted alone, and NAME+c for the
  // family with the residual correction. Size protocols also take two diagnostics that are not predictors:
  // "ceiling-others" and "ceiling-otherhw" multiply auto's prediction at each held-out point by the median
  // held-out error exp(median ln(measured / predicted)) of auto at the same collective, strategy, fusion, rank
  // and node count and size on at least three other curves, from other source files (other dtypes, versions
  // and machines) or from other machines only. They use measurements every protocol withholds, so they bound
  // what sharing structure across curves could add to auto, rather than predict. Where fewer than three other
  // curves share a held-out point, auto's prediction is kept there and EvalResult::notes says at how many
  // points; where no point has three, the ceiling has no points (no errors to show) and a note says what the
  // inputs hold. Unknown names throw std::invalid_argument.
  std::vector<std::string> methods = {"auto", "seed", "alphabeta", "loglog"};
  // False when the caller chose `methods`: a protocol with methods of its own (crosshw) replaces the generic
  // list only while it is the default, never a list asked for that happens to equal it.
  bool methods_chosen = false;
  int threads = 1;
  int min_sizes = 12;
  bool keep_points = false;  // fill EvalMethodResult::points
  // The protocol's parameter, from "NAME:ARG" (crosshw:K: the number of sizes measured per target curve).
  std::string protocol_arg;
};

// The size protocols' split of one curve's indices (ascending sizes) into training and test sets.
void split_sizes(const std::string& protocol, const std::vector<double>& bytes, std::vector<size_t>& train,
                 std::vector<size_t>& test);
// Curves as the protocols define them.
std::vector<Curve> eval_curves(const std::vector<Sample>& samples, int min_sizes = 12);

// Predictions of one method for the test sizes from a training curve. Throws on unknown methods; returns
// an empty vector when the method cannot fit the curve.
std::vector<Prediction> predict_method(const std::string& method, const Curve& train, const std::vector<double>& test_bytes);
// Predictions of an already fitted group (arfit's default: a failed fit falls back to log-log interpolation
// of `train`, flagged in Prediction::how).
std::vector<Prediction> predict_fitted(const GroupFit& fit, const Curve& train, const std::vector<double>& test_bytes);

EvalResult eval_sizes(const std::vector<Sample>& samples, const std::string& protocol, const EvalOptions& options = {});
EvalResult eval_crossn(const std::vector<Sample>& samples, const EvalOptions& options = {});
// crosshw:K (K = anchors >= 0). Methods: "auto" (fit/transfer.h), the baselines "loglog" (the K sizes alone,
// K >= 2) and "scale" (today's --sm rule from the most similar other system: the nearest datasheet
// interconnect bandwidth, then the same SM, then name order; geometric mean over that system's matching
// curves). Other names throw std::invalid_argument.
EvalResult eval_crosshw(const std::vector<Sample>& samples, int anchors, const EvalOptions& options = {});
// eval_crosshw's checks of `anchors` and the methods, which need no samples: throws std::invalid_argument.
void check_crosshw_options(int anchors, const EvalOptions& options);

// Dispatch table of the protocols this library knows (interp2, sparse4, extrap, crossn, crosshw; the last
// takes its K as EvalOptions::protocol_arg, "crosshw:K" on the command line).
using ProtocolRunner = std::function<EvalResult(const std::vector<Sample>&, const EvalOptions&)>;
// The checks of a runner that need no samples (the protocol's argument, the methods), so that a caller refuses
// a bad request before reading its inputs: throws std::invalid_argument as the runner would.
using ProtocolCheck = std::function<void(const EvalOptions&)>;
struct ProtocolEntry {
  std::string name;
  std::string help;
  ProtocolRunner run;
  ProtocolCheck check;
  bool takes_arg = false;  // named NAME:ARG, the argument in EvalOptions::protocol_arg
};
const std::vector<ProtocolEntry>& fit_protocols();

// How a command line names a protocol (`arfit eval --protocol`, `arfit plot errors --protocol`): "crosshw:3" is
// crosshw with the argument "3", "interp2" interp2 with none ("crosshw:" has an empty one).
struct ProtocolSpec {
  std::string name;
  std::optional<std::string> arg;
};
ProtocolSpec parse_protocol_spec(const std::string& text);

// The entry of `entries` (a protocol table: entries with `name` and `takes_arg`, fit_protocols() or a command's
// own) that `text`, --protocol as written, names. std::invalid_argument naming --protocol for an unknown name
// (listing the table's, `for_what` saying whose: " for plot errors") or a ':' argument the protocol takes none of.
template <class Entry>
const Entry& find_protocol(const std::vector<Entry>& entries, const std::string& text, const std::string& for_what = "") {
  const ProtocolSpec spec = parse_protocol_spec(text);
  std::string known;
  for (const Entry& e : entries) {
    known += (known.empty() ? "" : ", ") + e.name + (e.takes_arg ? ":K" : "");
    if (e.name != spec.name) continue;
    if (!e.takes_arg && spec.arg) throw std::invalid_argument("--protocol " + text + ": " + e.name + " takes no ':' argument");
    return e;
  }
  throw std::invalid_argument("unknown --protocol '" + text + "'" + for_what + " (known: " + known + ")");
}

// Why a fit protocol (`text` as the command line names it) had nothing to evaluate, in its own words: its
// reason (EvalResult::nothing_qualifies) where it gave one, else its rule. What eval and plot errors say (exit 1).
std::string nothing_to_evaluate_message(const std::string& text, const std::string& reason);

}  // namespace arfit::fit
