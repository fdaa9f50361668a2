// arbench's command line: flags, a JSON spec file and presets combine into one GridSpec.
// Precedence: --preset, then --spec (which may name its own preset), then the individual flags.
#pragma once

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

struct Options {
  GridSpec spec;
  std::string output;
  std::string json_output;
  bool resume = false, overwrite = false, quiet = false, dry_run = false;
  std::int64_t workspace = std::int64_t{256} << 20;
  int device = -1;
  RunnerOptions runner;
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
