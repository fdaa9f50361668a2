// The "seed": a faithful port of the sigmoid bus-bandwidth predictor of the DLRM performance-model paper
// (Lin et al., "Building a Performance Model for Deep Learning Recommendation Model Training on GPUs";
// owensgroup/ml_perf_model analysis/memory_bw_utils.py), in the form the project's reference evaluation uses
// (shared/reference/seed_sigmoid.py), kept as the baseline users know.
//
// Method, on a curve of sizes s_i (ascending, bytes), latencies t_i (µs) and bus bandwidths bw_i (GB/s):
//   - saturation index `sat`: from the second-largest size downwards, the first i with bw_i < 95 % of max bw;
//     sat = min(i + 2, n − 1) (n − 1 when none);
//   - latency-bound index `lin`: the first i >= 5 (i < n − 1) whose central latency ratio
//     (t_{i+1} − t_{i−1}) / (2 t_i) exceeds 0.1 in magnitude, minus one (4 when none); lin <= n − 1;
//   - ln_p = log2 s_lin, sats_p = log2 s_sat, max_bw = max bw, overhead = t_{max(lin−1, 0)};
//   - a logistic y = L / (1 + e^(−k (x − x0))) + b of y = log10(bw) against x = log2 s is fitted on the sizes
//     between ln_p and sats_p (inclusive), started from (L, x0, k, b) = (max x, median x, 1, min y);
//     with fewer than 4 such sizes the start values are kept (as scipy's curve_fit refuses to fit);
//   - prediction: log2 s <= ln_p -> overhead; log2 s > sats_p -> f·s / max_bw + overhead;
//     otherwise f·s / 10^logistic(log2 s).
// Known weaknesses (why arfit's own families exist): the prediction jumps at both turning points (constant
// overhead below ln_p, a sudden "+ overhead" above sats_p), the constant-latency segment ignores the small
// growth of latency with size, and the turning points depend on single noisy measurements.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "model/json_input.h"

namespace arfit {

inline constexpr double kGmaeEps = 4e-4;  // the DLRM paper's epsilon, also added to bw before log10

struct SeedTurningPoints {
  int lin = 4;  // index of the latency-bound end
  int sat = 0;  // index of the saturation point
};

struct SeedModel {
  double ln_p = 0, sats_p = 0;  // log2 bytes
  double max_bw = 0;            // GB/s (bus bandwidth, + kGmaeEps as in the reference)
  double overhead = 0;          // µs
  double L = 0, x0 = 0, k = 1, b = 0;  // logistic of log10 busbw against log2 bytes

  // The paper's three pieces and the one that holds at a size (log2 s <= ln_p: the overhead; above sats_p: the
  // line; between: the logistic).
  enum class Piece { Overhead, Logistic, Line };
  Piece piece(double bytes) const;
  double logistic(double x) const;
  double time_us(double bytes, double bus_factor) const;  // the paper's predictor: the piece that holds at `bytes`
  // `piece` evaluated at `bytes`, also where another piece holds there (arfit's residual correction takes a knot's
  // residual against the piece that holds beside it, model/interp.h).
  double piece_time_us(Piece piece, double bytes, double bus_factor) const;
  // ln bytes of the sizes where the pieces meet (2^ln_p, then 2^sats_p when above it), ascending, each the last
  // size of the piece below it: the steps the residual correction bridges (HermiteSpline::corrected).
  std::vector<double> step_log_bytes() const;
  nlohmann::json to_json() const;
  static SeedModel from_json(const JsonView& j);  // throws JsonError on missing, non-finite or absurd values
};

// Turning points of a curve (sizes ascending). Needs n >= 2.
SeedTurningPoints seed_turning_points(const std::vector<double>& sizes, const std::vector<double>& lat_us,
                                      const std::vector<double>& bw_gbps);

// Everything but the logistic fit: turning points, ln_p, sats_p, max_bw, overhead, start values, and the
// points (x = log2 s, y = log10 bw) the logistic is fitted on. bw_gbps are raw bus bandwidths (the eps is
// added here).
struct SeedSetup {
  SeedModel model;  // L, x0, k, b hold the start values
  SeedTurningPoints tp;
  std::vector<double> x, y;
};
SeedSetup seed_setup(const std::vector<double>& sizes, const std::vector<double>& lat_us, double bus_factor);

}  // namespace arfit
