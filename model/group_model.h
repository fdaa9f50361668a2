// One fitted group of models.json, parsed for evaluation: family + parameters, the in-range residual
// correction, and the prediction interval. Pure model/ code: fit/ produces the JSON, ModelSet and fit/'s
// evaluation read it through this class, so there is one prediction code path.
//
// Group JSON (the "groups" array of models.json; docs/fit.md):
//   id, key{system, collective, strategy, fusion, dtype, nranks, nnodes}, ok, problem?,
//   family ("alphabeta" | "sigmoid" | "satbw" | "regimes1".."regimes4" | "seed"), params[], param_names[],
//   covariance[[...]] (or null), seed{...} (seed family only), bus_factor,
//   cv_gmae, cv{family: gmae}, correction{kind, log_bytes[], log_resid[], spike_bytes[]?, spike_log_resid[]?}
//   (or null),
//   range{min_bytes, max_bytes, points}, sm, device,
//   interval{z, sigma_in, sigma_floor, sigma_out_per_octave}, tail{a_us, b_us_per_byte}, diagnostics{...},
//   transfer{how, anchors, anchor_bytes[], sources[{system, id, weight}], log_bytes[], log_sigma[]} (optional:
//   a curve of a new machine carried from other machines' curves, fit/transfer.h)
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/families.h"
#include "model/interp.h"
#include "model/json_input.h"
#include "model/model_set.h"
#include "model/sample.h"
#include "model/stated_network.h"
#include "model/seed.h"

namespace arfit {

nlohmann::json group_key_to_json(const GroupKey& k);
// Largest rank/node count and SM version a models file may name (beyond them a value is a hand edit or a
// wrapped integer, not a machine).
inline constexpr int kMaxModelRanks = kMaxSampleRanks;
inline constexpr int kMaxSmVersion = 1000;
// Bounds of the other values a models file holds, far beyond anything fitted (the public data's largest
// sigma_out_per_octave is 5.5; the seed family, unbounded by design, needs log residuals beyond 30) but short
// of overflowing the prediction arithmetic in range: sizes up to 1e18 bytes, times up to 1e9 us, log-space
// sigmas up to 50, log residual corrections whose exponential is a double.
inline constexpr double kMaxModelBytes = kMaxSampleBytes;
inline constexpr double kMaxModelTimeUs = kMaxSampleTimeUs;
inline constexpr double kMaxLogSigma = 50;
inline constexpr double kMaxLogResidual = 700;
// Widest 90 % half-width in ln t: e^34.5 either way spans every time a sample can have ([1e-6, 1e9] us). A wider
// band says nothing more, and the seed's unclipped band (sigma_out_per_octave x octaves beyond the range) grew past
// e^709: an upper bound of inf and a lower one of 0 (null in --json) with exit 0.
inline const double kMaxLogHalfWidth = std::log(kMaxSampleTimeUs / kMinSampleTimeUs);

// Both throw JsonError (a std::invalid_argument naming the JSON pointer of the bad value).
GroupKey group_key_from_json(const JsonView& j, int min_nranks = 1);  // joint models' keys hold nranks 0

// z of a two-sided 90 % normal interval.
inline constexpr double kZ90 = 1.6448536269514722;

struct GroupModel {
  GroupKey key;
  bool ok = false;
  std::string family;
  FamilySpec spec;
  SeedModel seed;
  std::vector<double> params;
  std::vector<double> covariance;  // row-major, may be empty
  double bus_factor = 1;
  HermiteSpline correction;  // empty: none
  // Sizes the correction set aside as spikes (correction.spike_bytes) and their ln t − ln model
  // (correction.spike_log_resid; absent in older files: then empty).
  std::vector<double> spike_log_bytes, spike_log_resid;
  double min_bytes = 0, max_bytes = 0;
  int points = 0;
  double z = kZ90, sigma_in = 0.02, sigma_out_per_octave = 0.03;
  int sm = 0;  // measured SM; when the samples did not say, from the device name, else the system label (datasheet_sm)
  std::string device;
  std::optional<StatedNetwork> network;  // the inter-node network its samples stated ("network", model/stated_network.h)
  double cv_gmae = 0;
  // Tail regime above the measured range: t = tail_a_us + tail_b_us_per_byte · s (has_tail).
  bool has_tail = false;
  double tail_a_us = 0, tail_b_us_per_byte = 0;
  // Transferred group (fit/transfer.h): `how` names the source machines, σ of ln t varies with the size (the
  // sources' spread and the anchors' leave-one-out errors), and sizes outside the measured anchors are
  // extrapolated. Empty how: a group fitted on its own measurements.
  std::string transfer_how;
  std::vector<double> transfer_log_bytes, transfer_log_sigma;
  double anchor_min_bytes = 0, anchor_max_bytes = 0;  // span of the anchors (0, 0: fewer than two)

  // Reads and validates one group: types, finite values, parameters inside the family's bounds, a positive bus
  // factor, non-negative sigmas, an ordered range. Throws JsonError naming the pointer of the bad value.
  static GroupModel from_json(const nlohmann::json& j);
  static GroupModel from_json(const JsonView& j);

  // ln t of the family alone (no correction), for a bus factor `f` (the group's own by default).
  double model_log_time(double bytes, double f = -1) const;
  // ln t at `bytes` of the family's piece that holds at `at_bytes`: the seed's pieces meet in steps (model/seed.h),
  // the other families are one smooth piece (model_log_time). The residual correction's knots read it.
  double model_log_time_on_piece(double bytes, double at_bytes) const;
  // ln bytes where the family's pieces meet (SeedModel::step_log_bytes; none for the smooth families).
  std::vector<double> model_steps() const;
  // Gradient of model_log_time w.r.t. the parameters (central differences), for the delta method.
  std::vector<double> model_log_time_gradient(double bytes) const;

  // ln t of the model that answers outside the range: the tail line above, the family below.
  double out_of_range_log_time(double bytes) const;
  // Prediction at `bytes`: model × correction in range, model alone outside (the tail regime above the
  // largest measured size); 90 % interval from
  // sigma_in, the parameter covariance (delta method) and sigma_out_per_octave × octaves outside the range.
  Prediction predict(double bytes) const;
  // Log half-width of the 90 % interval at `bytes`.
  double log_half_width(double bytes) const;
  // σ of ln t in range: sigma_in, or a transferred group's σ at that size (held at the ends).
  double sigma_at(double bytes) const;
};

}  // namespace arfit
