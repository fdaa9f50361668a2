#include "model/group_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/sm_targets.h"

namespace arfit {

nlohmann::json group_key_to_json(const GroupKey& k) {
  return {{"system", k.system}, {"collective", to_string(k.collective)}, {"strategy", k.strategy},
          {"fusion", to_string(k.fusion)}, {"dtype", k.dtype}, {"nranks", k.nranks}, {"nnodes", k.nnodes}};
}

GroupKey group_key_from_json(const nlohmann::json& j) {
  GroupKey k;
  k.system = j.at("system").get<std::string>();
  k.collective = parse_collective(j.at("collective").get<std::string>());
  k.strategy = j.at("strategy").get<std::string>();
  k.fusion = parse_fusion(j.at("fusion").get<std::string>());
  k.dtype = j.at("dtype").get<std::string>();
  k.nranks = j.at("nranks").get<int>();
  k.nnodes = j.at("nnodes").get<int>();
  return k;
}

GroupModel GroupModel::from_json(const nlohmann::json& j) {
  GroupModel g;
  g.key = group_key_from_json(j.at("key"));
  g.ok = j.value("ok", false);
  if (!g.ok) return g;
  g.family = j.at("family").get<std::string>();
  g.spec = parse_family(g.family);
  g.params = j.at("params").get<std::vector<double>>();
  if (g.spec.kind == FamilyKind::Seed) {
    g.seed = SeedModel::from_json(j.at("seed"));
  } else if (static_cast<int>(g.params.size()) != g.spec.num_params()) {
    throw std::invalid_argument("family " + g.family + " needs " + std::to_string(g.spec.num_params()) + " params, got " +
                                std::to_string(g.params.size()));
  }
  if (j.contains("covariance") && j["covariance"].is_array()) {
    for (const auto& row : j["covariance"])
      for (const auto& v : row) g.covariance.push_back(v.get<double>());
    if (g.covariance.size() != g.params.size() * g.params.size()) g.covariance.clear();
  }
  g.bus_factor = j.at("bus_factor").get<double>();
  if (j.contains("correction") && j["correction"].is_object()) {
    const auto& c = j["correction"];
    g.correction = HermiteSpline(c.at("log_bytes").get<std::vector<double>>(), c.at("log_resid").get<std::vector<double>>(),
                                 parse_spline_kind(c.at("kind").get<std::string>()));
    if (c.contains("spike_bytes") && c.contains("spike_log_resid")) {
      const auto b = c["spike_bytes"].get<std::vector<double>>();
      g.spike_log_resid = c["spike_log_resid"].get<std::vector<double>>();
      if (b.size() != g.spike_log_resid.size()) throw std::invalid_argument("correction: spike_bytes and spike_log_resid differ in length");
      for (double x : b) {
        if (!(x > 0)) throw std::invalid_argument("correction: spike_bytes must be > 0");
        g.spike_log_bytes.push_back(std::log(x));
      }
    }
  }
  const auto& r = j.at("range");
  g.min_bytes = r.at("min_bytes").get<double>();
  g.max_bytes = r.at("max_bytes").get<double>();
  g.points = r.at("points").get<int>();
  if (j.contains("interval")) {
    const auto& iv = j["interval"];
    g.z = iv.value("z", kZ90);
    g.sigma_in = iv.value("sigma_in", g.sigma_in);
    g.sigma_out_per_octave = iv.value("sigma_out_per_octave", g.sigma_out_per_octave);
  }
  if (j.contains("tail") && j["tail"].is_object()) {
    g.has_tail = true;
    g.tail_a_us = j["tail"].at("a_us").get<double>();
    g.tail_b_us_per_byte = j["tail"].at("b_us_per_byte").get<double>();
  }
  g.device = j.value("device", std::string());
  g.sm = j.value("sm", 0);
  if (g.sm == 0) g.sm = sm_from_device(g.device);
  g.cv_gmae = j.value("cv_gmae", 0.0);
  if (j.contains("transfer") && j["transfer"].is_object()) {
    const auto& t = j["transfer"];
    g.transfer_how = t.at("how").get<std::string>();
    g.transfer_log_bytes = t.at("log_bytes").get<std::vector<double>>();
    g.transfer_log_sigma = t.at("log_sigma").get<std::vector<double>>();
    if (g.transfer_log_bytes.size() != g.transfer_log_sigma.size() || g.transfer_log_bytes.empty())
      throw std::invalid_argument("transfer: log_bytes and log_sigma must be non-empty and of one length");
    for (size_t i = 0; i < g.transfer_log_bytes.size(); ++i)
      if ((i > 0 && !(g.transfer_log_bytes[i] > g.transfer_log_bytes[i - 1])) || !(g.transfer_log_sigma[i] >= 0))
        throw std::invalid_argument("transfer: log_bytes must increase and log_sigma be >= 0");
    const auto anchors = t.value("anchor_bytes", std::vector<double>{});
    if (anchors.size() >= 2) {
      g.anchor_min_bytes = *std::min_element(anchors.begin(), anchors.end());
      g.anchor_max_bytes = *std::max_element(anchors.begin(), anchors.end());
    }
  }
  return g;
}

double GroupModel::model_log_time(double bytes, double f) const {
  if (f < 0) f = bus_factor;
  if (spec.kind == FamilyKind::Seed) return std::log(seed.time_us(bytes, f));
  return families::log_time<double>(spec, params.data(), bytes, f);
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
  const std::vector<double>& x = transfer_log_bytes;
  if (x.empty()) return sigma_in;
  const double lx = std::log(bytes);
  const std::vector<double>& y = transfer_log_sigma;
  if (lx <= x.front()) return y.front();
  if (lx >= x.back()) return y.back();
  const size_t i = static_cast<size_t>(std::upper_bound(x.begin(), x.end(), lx) - x.begin());
  return y[i - 1] + (lx - x[i - 1]) / (x[i] - x[i - 1]) * (y[i] - y[i - 1]);
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
  return z * std::sqrt(var);
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
  // The correction needs the family's ln t at its knots (additive rule).
  auto model_at = [this](double x) { return model_log_time(std::exp(x)); };
  if (in_range && !correction.x().empty()) lt = correction.corrected(lx, lt, model_at);
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
    if (!correction.x().empty()) l_edge = correction.corrected(std::log(edge), l_edge, model_at);
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
    p.extrapolated = p.extrapolated || !(bytes >= anchor_min_bytes && bytes <= anchor_max_bytes && anchor_max_bytes > 0);
  }
  return p;
}

}  // namespace arfit
