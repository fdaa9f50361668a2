#include "model/group_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "model/sm_targets.h"
#include "model/text.h"

namespace arfit {

nlohmann::json group_key_to_json(const GroupKey& k) {
  return {{"system", k.system}, {"collective", to_string(k.collective)}, {"strategy", k.strategy},
          {"fusion", to_string(k.fusion)}, {"dtype", k.dtype}, {"nranks", k.nranks}, {"nnodes", k.nnodes}};
}


GroupKey group_key_from_json(const JsonView& j, int min_nranks) {
  GroupKey k;
  k.system = j.at("system").name();
  const JsonView c = j.at("collective");
  const auto collective = try_parse_collective(c.string());
  if (!collective) c.fail("unknown collective '" + c.string() + "'");
  k.collective = *collective;
  k.strategy = j.at("strategy").name();
  if (k.strategy.empty()) j.at("strategy").fail("empty strategy name");
  const JsonView f = j.at("fusion");
  const auto fusion = try_parse_fusion(f.string());
  if (!fusion) f.fail("unknown fusion op '" + f.string() + "'");
  k.fusion = *fusion;
  k.dtype = j.at("dtype").name();
  k.nranks = j.at("nranks").integer<int>(min_nranks, kMaxModelRanks);
  k.nnodes = j.at("nnodes").integer<int>(1, kMaxModelRanks);
  return k;
}

namespace {

// The family's parameters: finite, as many as the family has, and inside its box bounds (the fit never leaves
// them; a value outside is a hand edit that would predict nonsense).
std::vector<double> read_params(const JsonView& j, const FamilySpec& spec) {
  const JsonView p = j.at("params");
  std::vector<double> params = p.numbers();
  if (spec.kind == FamilyKind::Seed) return params;
  if (static_cast<int>(params.size()) != spec.num_params())
    p.fail("family " + spec.name() + " needs " + std::to_string(spec.num_params()) + " params, got " + std::to_string(params.size()));
  std::vector<double> lo, hi;
  spec.bounds(lo, hi);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double slack = 1e-6 * std::max({1.0, std::fabs(lo[i]), std::fabs(hi[i])});
    if (params[i] < lo[i] - slack || params[i] > hi[i] + slack)
      p.at(i).fail(spec.param_names()[i] + " = " + p.at(i).json().dump() + " is outside the family's bounds [" +
                   nlohmann::json(lo[i]).dump() + ", " + nlohmann::json(hi[i]).dump() + "]");
  }
  return params;
}

// Row-major covariance of the parameters; empty when absent or of another size (files written before it). An
// entry the fit could not estimate is non-finite in memory and null in the file: kept as NaN, the delta
// method then leaves the covariance out (GroupModel::log_half_width).
std::vector<double> read_covariance(const JsonView& j, std::size_t np) {
  const auto c = j.find("covariance");
  if (!c) return {};
  std::vector<double> cov;
  for (std::size_t r = 0; r < c->size(); ++r) {
    const JsonView row = c->at(r);
    for (std::size_t k = 0; k < row.size(); ++k) {
      const nlohmann::json& v = row.at(k).json();
      if (!v.is_number() && !v.is_null()) row.at(k).fail("expected a number, got " + row.at(k).describe());
      cov.push_back(v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN());
    }
  }
  if (cov.size() != np * np) return {};
  return cov;
}

HermiteSpline read_correction(const JsonView& c) {
  const JsonView kind = c.at("kind");
  SplineKind k = SplineKind::Linear;
  try {
    k = parse_spline_kind(kind.string());
  } catch (const std::invalid_argument& e) {
    kind.fail(e.what());
  }
  const JsonView xs = c.at("log_bytes"), ys = c.at("log_resid");
  std::vector<double> x = xs.numbers(), y = ys.numbers();
  for (std::size_t i = 0; i < y.size(); ++i)
    if (std::fabs(y[i]) > kMaxLogResidual)
      ys.at(i).fail("a log residual beyond +-" + std::to_string(static_cast<int>(kMaxLogResidual)) + " (e^700, the largest double)");
  if (x.size() != y.size())
    ys.fail("has " + std::to_string(y.size()) + " values for " + std::to_string(x.size()) + " knots in log_bytes");
  for (std::size_t i = 1; i < x.size(); ++i)
    if (!(x[i] > x[i - 1])) xs.at(i).fail("knots must increase strictly");
  return HermiteSpline(std::move(x), std::move(y), k);
}

// The measured residuals at the sizes the correction set aside as spikes (fit/fit_group.cpp): transfer sources
// need what was actually measured there.
void read_spike_residuals(const JsonView& c, GroupModel& g) {
  const auto bytes = c.find("spike_bytes");
  const auto resid = c.find("spike_log_resid");
  if (!bytes || !resid) return;
  const std::vector<double> b = bytes->numbers();
  g.spike_log_resid = resid->numbers();
  if (b.size() != g.spike_log_resid.size())
    resid->fail("has " + std::to_string(g.spike_log_resid.size()) + " values for " + std::to_string(b.size()) + " spike_bytes");
  for (std::size_t i = 0; i < b.size(); ++i) {
    if (!(b[i] > 0)) bytes->at(i).fail("spike sizes must be positive");
    if (std::fabs(g.spike_log_resid[i]) > kMaxLogResidual) resid->at(i).fail("a log residual beyond +-700");
    g.spike_log_bytes.push_back(std::log(b[i]));
  }
}

// A group transferred from other machines' curves (fit/transfer.h): its source list and per-size log sigma.
void read_transfer(const JsonView& t, GroupModel& g) {
  g.transfer_how = t.at("how").string();
  const JsonView xs = t.at("log_bytes"), sig = t.at("log_sigma");
  g.transfer_log_bytes = xs.numbers();
  g.transfer_log_sigma = sig.numbers();
  if (g.transfer_log_bytes.empty()) xs.fail("a transferred group needs at least one size");
  if (g.transfer_log_bytes.size() != g.transfer_log_sigma.size())
    sig.fail("has " + std::to_string(g.transfer_log_sigma.size()) + " values for " + std::to_string(g.transfer_log_bytes.size()) +
             " sizes in log_bytes");
  for (std::size_t i = 0; i < g.transfer_log_bytes.size(); ++i) {
    if (i > 0 && !(g.transfer_log_bytes[i] > g.transfer_log_bytes[i - 1])) xs.at(i).fail("sizes must increase strictly");
    if (!(g.transfer_log_sigma[i] >= 0 && g.transfer_log_sigma[i] <= kMaxLogSigma))
      sig.at(i).fail("a log sigma must lie in [0, " + std::to_string(kMaxLogSigma) + "]");
  }
  if (const auto anchors = t.find("anchor_bytes")) {
    const std::vector<double> a = anchors->numbers();
    if (a.size() >= 2) {
      g.anchor_min_bytes = *std::min_element(a.begin(), a.end());
      g.anchor_max_bytes = *std::max_element(a.begin(), a.end());
    }
  }
}

// The corrected curve passes through the measured times at its knots (fit/fit_group.cpp: the residual is
// ln t_measured - ln t_model there), so the family's time times e^residual is a sample time at every knot, and at
// every spike the fit set aside: one outside the samples' bounds is a hand edit. Knot residuals within +-700
// predicted 1e307 us with an infinite upper bound (or 1e-304 us with an infinite bus bandwidth); a spike's, carried
// by fit --prior into a new machine's curve, 1.6e84 us. `what` names the point ("knot", "spike"). The time is
// read back through exp(ln model + residual), a few ulps from the measured one: a sample of exactly 1e9 us came
// back as 1.0000000000000002e9 and its group was refused, so the bounds get a relative slack of 1e-9.
void check_measured_times(const JsonView& resid, const std::vector<double>& log_bytes, const std::vector<double>& log_resid,
                          const GroupModel& g, const std::string& what) {
  constexpr double kRoundTripSlack = 1e-9;
  for (std::size_t i = 0; i < log_bytes.size() && i < log_resid.size(); ++i) {
    const double t = std::exp(g.model_log_time(knot_bytes(log_bytes[i])) + log_resid[i]);
    if (!(t >= kMinSampleTimeUs * (1 - kRoundTripSlack) && t <= kMaxSampleTimeUs * (1 + kRoundTripSlack)))
      resid.at(i).fail("puts the time at " + what + " " + std::to_string(i) + " (" + format_number(knot_bytes(log_bytes[i]), "%g") +
                       " bytes) at " + format_number(t, "%g") + " us, outside a measured time's bounds [" +
                       format_number(kMinSampleTimeUs, "%g") + ", " + format_number(kMaxSampleTimeUs, "%g") + "] us");
  }
}

}  // namespace

GroupModel GroupModel::from_json(const nlohmann::json& j) { return from_json(JsonView(j)); }

GroupModel GroupModel::from_json(const JsonView& j) {
  GroupModel g;
  g.key = group_key_from_json(j.at("key"));
  if (const auto ok = j.find("ok")) g.ok = ok->boolean();
  if (!g.ok) return g;
  const JsonView family = j.at("family");
  g.family = family.string();
  try {
    g.spec = parse_family(g.family);
  } catch (const std::invalid_argument& e) {
    family.fail(e.what());
  }
  g.params = read_params(j, g.spec);
  if (g.spec.kind == FamilyKind::Seed) g.seed = SeedModel::from_json(j.at("seed"));
  g.covariance = read_covariance(j, g.params.size());
  // nccl-tests' bus factors lie in (0, 2) (fit stores 1 for one rank, which moves no data).
  g.bus_factor = j.at("bus_factor").number();
  if (!(g.bus_factor > 0 && g.bus_factor <= 2))
    j.at("bus_factor").fail("the bus factor must lie in (0, 2], got " + j.at("bus_factor").json().dump());
  // Optional parts are absent (or null), else what they say they are: a correction that is not an object is a
  // broken file, not a fit without a correction.
  if (const auto c = j.find("correction")) {
    c->expect_object();
    g.correction = read_correction(*c);
    read_spike_residuals(*c, g);
    check_measured_times(c->at("log_resid"), g.correction.x(), g.correction.y(), g, "knot");
    if (!g.spike_log_bytes.empty()) check_measured_times(c->at("spike_log_resid"), g.spike_log_bytes, g.spike_log_resid, g, "spike");
  }
  const JsonView r = j.at("range");
  g.min_bytes = r.at("min_bytes").number();
  if (!(g.min_bytes > 0)) r.at("min_bytes").fail("the smallest measured size must be positive, got " + r.at("min_bytes").json().dump());
  g.max_bytes = r.at("max_bytes").number(0, kMaxModelBytes);
  if (g.max_bytes < g.min_bytes)
    r.at("max_bytes").fail("the range is reversed: max_bytes " + r.at("max_bytes").json().dump() + " is below min_bytes " +
                           r.at("min_bytes").json().dump());
  g.points = r.at("points").integer<int>(0);
  if (const auto iv = j.find("interval")) {
    if (const auto z = iv->find("z")) g.z = z->number(1e-3, 10);
    if (const auto s = iv->find("sigma_in")) g.sigma_in = s->number(0, kMaxLogSigma);
    if (const auto s = iv->find("sigma_out_per_octave")) g.sigma_out_per_octave = s->number(0, kMaxLogSigma);
  }
  if (const auto t = j.find("tail")) {
    t->expect_object();
    g.has_tail = true;
    g.tail_a_us = t->at("a_us").number(-kMaxModelTimeUs, kMaxModelTimeUs);
    // The tail carries the time above the measured range: it never falls with size.
    g.tail_b_us_per_byte = t->at("b_us_per_byte").number(0, 1e3);  // up to 1 ms per byte
  }
  if (const auto d = j.find("device")) g.device = d->name();
  if (const auto n = j.find("network")) {
    g.network = parse_stated_network(n->name());
    if (!g.network) n->fail("not a network (RAILSxBANDWIDTH, as 8x50GB/s)");
  }
  if (const auto sm = j.find("sm")) g.sm = sm->integer<int>(0, kMaxSmVersion);
  g.sm = datasheet_sm(g.sm, g.device, g.key.system);
  // A diagnostic: a cross-validation that could not run is non-finite in memory and null in the file.
  if (const auto cv = j.find("cv_gmae"); cv && !(cv->json().is_number() && !std::isfinite(cv->json().get<double>())))
    g.cv_gmae = cv->number(0, std::numeric_limits<double>::max());
  if (const auto t = j.find("transfer")) {
    t->expect_object();
    read_transfer(*t, g);
  }
  return g;
}

double GroupModel::model_log_time(double bytes, double f) const {
  if (f < 0) f = bus_factor;
  if (spec.kind == FamilyKind::Seed) return std::log(seed.time_us(bytes, f));
  return families::log_time<double>(spec, params.data(), bytes, f);
}

double GroupModel::model_log_time_on_piece(double bytes, double at_bytes) const {
  if (spec.kind == FamilyKind::Seed) return std::log(seed.piece_time_us(seed.piece(at_bytes), bytes, bus_factor));
  return model_log_time(bytes);
}

std::vector<double> GroupModel::model_steps() const {
  return spec.kind == FamilyKind::Seed ? seed.step_log_bytes() : std::vector<double>{};
}

std::vector<double> GroupModel::model_log_time_gradient(double bytes) const {
  std::vector<double> g(params.size(), 0.0);
  if (spec.kind == FamilyKind::Seed) return g;
  std::vector<double> p = params;
  for (size_t i = 0; i < p.size(); ++i) {
    const double h = 1e-6 * std::max(1.0, std::fabs(p[i]));
    const double keep = p[i];
    p[i] = keep + h;
    const double up = families::log_time<double>(spec, p.data(), bytes, bus_factor);
    p[i] = keep - h;
    const double dn = families::log_time<double>(spec, p.data(), bytes, bus_factor);
    p[i] = keep;
    g[i] = (up - dn) / (2 * h);
  }
  return g;
}

double GroupModel::sigma_at(double bytes) const {
  if (transfer_log_bytes.empty()) return sigma_in;
  return linear_hold_at(transfer_log_bytes, transfer_log_sigma, std::log(bytes));
}

double GroupModel::log_half_width(double bytes) const {
  const bool in_range = bytes >= min_bytes && bytes <= max_bytes;
  const double sigma = sigma_at(bytes);
  double var = sigma * sigma;
  if (!covariance.empty() && !in_range && !(bytes > max_bytes && has_tail)) {
    // Delta method: the covariance of the parameters carried to ln t. In range the residual correction pins
    // the prediction to the measurements, so only the residual scale counts there.
    const std::vector<double> g = model_log_time_gradient(bytes);
    const size_t n = g.size();
    double v = 0;
    for (size_t a = 0; a < n; ++a)
      for (size_t b = 0; b < n; ++b) v += g[a] * covariance[a * n + b] * g[b];
    if (std::isfinite(v) && v > 0) var += v;
  }
  if (!in_range) {
    const double oct = bytes > max_bytes ? std::log2(bytes / max_bytes) : std::log2(min_bytes / bytes);
    const double d = sigma_out_per_octave * oct;
    var += d * d;
  }
  return std::min(z * std::sqrt(var), kMaxLogHalfWidth);
}

double GroupModel::out_of_range_log_time(double bytes) const {
  if (bytes > max_bytes && has_tail) {
    const double t = tail_a_us + tail_b_us_per_byte * bytes;
    if (t > 0) return std::log(t);
  }
  return model_log_time(bytes);
}

Prediction GroupModel::predict(double bytes) const {
  Prediction p;
  const double lx = std::log(bytes);
  const bool in_range = bytes >= min_bytes && bytes <= max_bytes;
  double lt = in_range ? model_log_time(bytes) : out_of_range_log_time(bytes);
  // The correction needs the family's ln t at its knots (additive rule), on the piece that holds at the query.
  auto model_at = [this](double x, double at) { return model_log_time_on_piece(knot_bytes(x), knot_bytes(at)); };
  const std::vector<double> steps = model_steps();
  if (in_range && !correction.x().empty()) lt = correction.corrected(lx, lt, model_at, steps);
  const double h = log_half_width(bytes);
  double lo = lt - h, hi = lt + h;
  // The seed family is the DLRM paper's predictor, kept faithful as the reference: it is not clipped.
  if (!in_range && max_bytes > 0 && min_bytes > 0 && spec.kind != FamilyKind::Seed) {
    // Physical bounds outside the measured range. A collective's latency does not fall as the message grows
    // (monotone), and does not grow faster than the message (k*s bytes can always be sent as k messages of s
    // bytes: subadditive). So below the range t(s) lies in [t(min) * s/min, t(min)], above it in
    // [t(max), t(max) * s/max], each widened by the in-range noise. The delta-method band is a linearisation
    // that an ill-conditioned covariance can blow up to absurd widths a few octaves out; these bounds hold
    // whatever the parameters, so the interval (and, rarely, the centre) is clipped to them.
    const double edge = bytes < min_bytes ? min_bytes : max_bytes;
    double l_edge = model_log_time(edge);
    if (!correction.x().empty()) l_edge = correction.corrected(std::log(edge), l_edge, model_at, steps);
    const double noise = z * sigma_at(edge);
    const double ratio = std::log(bytes / edge);  // < 0 below the range, > 0 above
    const double floor_lt = (bytes < min_bytes ? l_edge + ratio : l_edge) - noise;
    const double ceil_lt = (bytes < min_bytes ? l_edge : l_edge + ratio) + noise;
    lt = std::min(std::max(lt, floor_lt), ceil_lt);
    lo = std::min(std::max(lo, floor_lt), lt);
    hi = std::max(std::min(hi, ceil_lt), lt);
  }
  p.time_us = std::exp(lt);
  p.lo_us = std::exp(lo);
  p.hi_us = std::exp(hi);
  p.extrapolated = !in_range;
  p.how = in_range ? family + (!correction.x().empty() ? "+residual" : "") : (bytes > max_bytes && has_tail ? "tail" : family);
  if (!transfer_how.empty()) {
    // A transferred curve: what it borrowed from, and whether the size lies between its own anchors.
    p.how = transfer_how + (in_range ? "" : " (" + p.how + ")");
    p.transferred = true;
    p.extrapolated = p.extrapolated || !(bytes >= anchor_min_bytes && bytes <= anchor_max_bytes && anchor_max_bytes > 0);
  }
  return p;
}

}  // namespace arfit
