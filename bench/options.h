// arbench's command line: flags, a JSON spec file and presets combine into one GridSpec.
// Precedence: --preset, then --spec (which may name its own preset), then the individual flags.
#pragma once

#include <limits>
#include <set>
#include <string>
#include <vector>

#include "bench/grid.h"
#include "bench/runner.h"

namespace arfit::bench {

// --cuda-graph bounds: collectives per graph, and collectives one case captures over all its graphs.
inline constexpr int kMaxCollectivesPerGraph = 1024;
inline constexpr std::int64_t kMaxCapturedCollectives = 65536;
// -n bound: the per-iteration times every rank keeps (8 bytes each, a few copies).
inline constexpr int kMaxIterations = 10'000'000;
// --timeout bound, seconds: a week.
inline constexpr double kMaxTimeoutSeconds = 7 * 24 * 3600;

// --plan adaptive's own options (bench/adaptive.h). Rank 0 reads them; the other ranks follow its batches.
inline constexpr double kDefaultUntilRegret = 0.01;
struct AdaptiveOptions {
  double until_regret = 0;  // a fraction; 0: none (kDefaultUntilRegret when --budget is not given either)
  double budget_s = std::numeric_limits<double>::infinity();
  std::vector<std::string> priors;  // --prior FILES
  std::string replay;  // test hook --test-replay FILE: record these samples' times and wall times, not the measured ones
};

struct Options {
  GridSpec spec;
  std::string output;
  std::string json_output;
  bool resume = false, overwrite = false, quiet = false, dry_run = false;
  std::int64_t workspace = std::int64_t{256} << 20;
  int device = -1;
  RunnerOptions runner;
  AdaptiveOptions adaptive;
  std::string command_line;
  bool help = false;          // --help was given; `help_text` holds it
  std::string help_text;
  bool version = false;       // --version was given; `version_text` holds it
  std::string version_text;
};

// Parses argv. Throws GridError (message names the option) for bad values and combinations; CLI11's own
// errors are converted to GridError as well. Does not touch MPI.
Options parse_options(int argc, const char* const* argv);

}  // namespace arfit::bench
