// The benchmark grid: which cases arbench measures, and which of them the sampling plan keeps.
//
// A grid is a cross product of categorical axes (collective, strategy, fusion, dtype, TP size) and numeric
// size axes: either tokens x hidden (a [tokens, hidden] activation, as TensorRT-LLM's all-reduce benchmark
// sweeps it) or plain message byte sizes (as nccl-tests' -b/-e/-f sweep does). The sampling plan thins
// the numeric axes only — every strategy is measured at the same size points, so they stay comparable —
// and is recorded in the output so fit/eval know which points were held out.
//
// Nothing here talks to MPI or a device: the grid is pure data, testable in unit tests.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/sample.h"

namespace arfit::bench {

// A bad command line, spec file or impossible grid. `option` names the offending option ("--tp",
// "spec.json: key 'hidden'"); the message reads "option --tp: TP 4 is larger than the world size 2".
class GridError : public std::runtime_error {
 public:
  GridError(std::string option, const std::string& what)
      : std::runtime_error("option " + option + ": " + what), option_(std::move(option)) {}
  const std::string& option() const { return option_; }

 private:
  std::string option_;
};

// Sampling plan over the numeric size axes.
struct Plan {
  enum class Kind { Full, Lattice, Random, Anchors, Adaptive };
  Kind kind = Kind::Full;
  int stride = 1;           // lattice:K keeps every K-th point per axis, plus both ends; anchors:K: K sizes
  double fraction = 1.0;    // random:FRACTION:SEED keeps round(FRACTION * points), corners always
  std::uint64_t seed = 0;

  // "full", "lattice:K", "random:FRACTION:SEED", "anchors:K" (K message sizes per curve, spread as
  // model/anchors.h says: a quick calibration of a new machine), "adaptive" (every point a candidate, measured in
  // rounds chosen by the models: bench/adaptive.h). Throws GridError naming `option`.
  static Plan parse(const std::string& text, const std::string& option = "--plan");
  std::string to_string() const;  // canonical form, parse(to_string()) round-trips
};

struct GridSpec {
  std::string backend = "host";
  std::vector<Collective> collectives;
  std::vector<std::string> strategies;  // empty: every strategy the backend has for each collective
  std::vector<FusionOp> fusions;
  std::vector<std::string> dtypes;      // canonical names (bf16, fp16, fp32)
  std::vector<int> tp;                  // empty: 2, 4, ... up to the world size (and the world size)
  std::vector<std::int64_t> tokens, hidden;  // tokens x hidden mode when both are set
  std::vector<std::int64_t> bytes;           // byte-size mode otherwise
  // All-to-allv split patterns (bench/alltoallv_splits.h), canonical spellings; empty: "cyclic" when the grid
  // has all-to-allv. Other collectives ignore them.
  std::vector<std::string> splits;
  Plan plan;
  bool skip_unsupported = false;  // drop (strategy, fusion, dtype) combinations a strategy lacks, instead of failing
  bool every_fusion = false;      // --fusion all: each strategy runs every fusion it supports (others dropped, noted)
  std::string preset;             // name of the preset the spec started from, "" for none
  // Where each axis came from, for error messages: axis name -> option ("--tp", "--preset trtllm", ...).
  std::map<std::string, std::string> origin;

  std::string option_for(const std::string& axis) const;
  bool token_mode() const { return !tokens.empty() && !hidden.empty(); }
  // Compact JSON of the axes and the plan: recorded in the output header; --resume compares it.
  std::string to_json() const;
};

// One measured case.
struct Case {
  int index = 0;  // position in the planned list
  std::string backend;
  Collective collective = Collective::AllReduce;
  std::string strategy;
  FusionOp fusion = FusionOp::None;
  std::string dtype;   // canonical
  int tp = 0;
  std::int64_t tokens = 0, hidden = 0;  // 0 in byte-size mode
  std::int64_t count = 0;  // elements of the message (see message_count)
  std::int64_t bytes = 0;  // message bytes as nccl-tests defines them for the collective
  std::string split;       // all-to-allv: the split pattern (canonical, bench/alltoallv_splits.h); "" otherwise

  int elem_size() const;
  // Identity for --resume: collective, strategy, fusion, dtype, nranks, tokens, hidden, bytes, and for
  // all-to-allv the recorded split.
  std::string key() const;
  std::string describe() const;  // one line for progress and errors
};

// Identity of an already written sample, in Case::key's format.
std::string sample_key(const Sample& s);
// The sample fields a case's identity holds (collective, strategy, fusion, dtype, nranks = TP, tokens, hidden,
// bytes): what the runner's record starts from, and the inverse of case_of_sample.
Sample sample_of_case(const Case& c);
// The case a written sample measured, as far as its row tells (its key fields; no split pattern): for messages
// that name a row (--resume) and for tests.
Case case_of_sample(const Sample& s);

// Elements of the message for a collective, nccl-tests style: all-gather, reduce-scatter and all-to-all(v)
// move `count` elements in total per rank, so count is rounded down to a multiple of the rank count.
std::int64_t message_count(Collective c, std::int64_t elements, int nranks);

// The largest value a size parser accepts (bytes, tokens, hidden): 10^15, far above any message, and low
// enough that products of sizes and element counts stay well inside int64.
inline constexpr std::int64_t kMaxSize = 1'000'000'000'000'000;

// Parsers for axis values, each throwing GridError naming `option`.
//  sizes:   "8,16,1K"  "8:8G" (x2 steps)  "8:8G:x4"  "128:1024:+128"; suffixes K, M, G, T are powers of 1024;
//           whole numbers in 1..kMaxSize
std::vector<std::int64_t> parse_size_list(const std::string& text, const std::string& option);
std::int64_t parse_size(const std::string& text, const std::string& option);
std::vector<std::int64_t> geometric_sizes(std::int64_t lo, std::int64_t hi, double factor, const std::string& option);
std::vector<int> parse_int_list(const std::string& text, const std::string& option);
// Comma-separated items, blanks around them dropped; an empty item ("a,,b", "") is a GridError naming `option`.
std::vector<std::string> split_list(const std::string& text, const std::string& option);
std::string format_bytes(std::int64_t bytes);                   // 1K, 64M, 1536 ...

// Presets: "trtllm" (tokens 1..16384 x hidden 128..8192, powers of two, TP 2/4/8, the four fusion ops,
// all-reduce), "nccl-tests" (allreduce/allgather/reducescatter/alltoall, -b 8 -e 8G -f 2),
// "host-main" (the CPU-only main job: host all-reduce MPI/ONESHOT/TWOSHOT x NONE/RESIDUAL_RMS_NORM,
// tokens 1..1024 x hidden 256..4096 in powers of two, lattice:2 plan, TP 2), and "host-alltoallv" (the
// main job's all-to-all + all-to-allv set; docs/bench.md).
GridSpec preset(const std::string& name);
const std::vector<std::string>& preset_names();

// Applies a JSON spec (text of `file`) over `spec`: keys backend, collectives, strategies, fusions, dtypes,
// tp, tokens, hidden, bytes, splits, plan, skip_unsupported, preset. Sizes are lists (numbers or "1K" strings), a
// range string "8:8G:x2", or {"min":..., "max":..., "factor":...}. Unknown keys are errors naming the key.
void apply_json_spec(GridSpec& spec, const std::string& text, const std::string& file);

// The planned cases, in measurement order: TP, collective, dtype, fusion, split pattern (all-to-allv only),
// size point, strategy (strategy innermost so competing strategies are measured close together in time).
// `strategies_for` lists the strategies of the backend for a collective (used when spec.strategies is empty).
// Plan thinning applies to the size points; a dlrm split pattern is one case whatever the size axis.
struct PlannedGrid {
  std::vector<Case> cases;
  std::size_t full_points = 0;     // size points before the plan
  std::size_t planned_points = 0;  // size points the plan keeps
  std::size_t full_cases = 0;      // cases before the plan
  std::size_t repeated_cases = 0;  // cases left out because an earlier case has the same key (Case::key)
};

PlannedGrid expand_grid(const GridSpec& spec, const std::function<std::vector<std::string>(Collective)>& strategies_for);

// Size points the plan keeps from axes of the given lengths (1-D when `ny` is 0): indices (ix, iy).
std::vector<std::pair<std::size_t, std::size_t>> plan_points(const Plan& plan, std::size_t nx, std::size_t ny);
// anchors:K over size axes x (and y, token x hidden grids; empty for byte sizes): the points of K distinct
// message sizes (x·y, or x) at model/anchors.h's indices of the sorted distinct sizes — what `arfit eval
// --protocol crosshw:K` keeps of a curve — each the first point in axis order with that size.
std::vector<std::pair<std::size_t, std::size_t>> anchor_points(int K, const std::vector<std::int64_t>& x,
                                                               const std::vector<std::int64_t>& y);

}  // namespace arfit::bench
