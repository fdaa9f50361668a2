#include "planner/choose.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/metrics.h"

#include "codegen/table.h"

namespace arfit::planner {
namespace {

// A value below this (in ln time, summed over cells) changes no choice worth a measurement: 10^-9 is a
// billionth of a percent of one cell's time.
constexpr double kNoValue = 1e-9;

// The gaps m >= 0 (ln time) between each cell's choice and the candidates it is compared with, per case: a chosen
// case holds one gap per alternative, an alternative its gap to the choice.
std::vector<std::vector<double>> decision_gaps(const TargetTable& table, const std::vector<CaseEstimate>& est,
                                               const Assessment& a) {
  std::vector<std::vector<double>> gaps(table.size());
  for (std::size_t i = 0; i < table.cells().size(); ++i) {
    const int c = a.cells[i].choice;
    if (c < 0) continue;
    for (int k : table.cells()[i]) {
      if (k == c || est[static_cast<std::size_t>(k)].failed) continue;
      const double m = est[static_cast<std::size_t>(k)].log_us - est[static_cast<std::size_t>(c)].log_us;
      gaps[static_cast<std::size_t>(c)].push_back(m);
      gaps[static_cast<std::size_t>(k)].push_back(m);
    }
  }
  return gaps;
}

// One curve's state while a batch is chosen: its cases by size, which sizes are pinned (measured, or picked in
// this batch), and each case's remaining σ; and how a measurement at one size narrows the others.
//  * A curve the models predict (fitted or transferred): its error is a random walk in ln size pinned at the
//    measured sizes; measuring size p moves the estimate at q by ρ·σ_q, ρ the walk's correlation between them given
//    the pins (a Brownian bridge between two measured sizes, a random walk beyond the outermost, nothing across a
//    measured size; no length scale is assumed).
//  * A curve read from its measured sizes alone (planner/estimate.h's FallbackRule, fewer than four sizes): its
//    interval is the physical bound those sizes leave, so a measurement at p narrows q to the bound the sizes and p
//    leave together (p taken at its predicted time); the variance removed is the variance of the move, ρ² σ_q².
class CurveState {
 public:
  CurveState(const TargetTable& table, int curve, const std::vector<CaseEstimate>& est, const FallbackRule& rule)
      : members_(table.curve_cases(curve)), rule_(rule) {
    std::map<double, std::vector<double>> measured;  // ln bytes -> ln t, the fallback's points (spikes aside, as estimated)
    for (int k : members_) {
      const CaseEstimate& e = est[static_cast<std::size_t>(k)];
      x_.push_back(std::log(table.cases()[static_cast<std::size_t>(k)].bytes));
      mu_.push_back(e.log_us);
      sigma_.push_back(e.measured ? 0.0 : e.sigma);
      if (e.measured) pins_.push_back(x_.back());
      if (e.measured && !e.failed && !e.spike) measured[x_.back()].push_back(e.log_us);
      if (!e.measured && !e.fitted) fallback_ = true;
    }
    std::sort(pins_.begin(), pins_.end());
    for (auto& [x, ys] : measured) px_.push_back(x), py_.push_back(size_median(ys));
    fallback_ = fallback_ && !px_.empty();
  }

  const std::vector<int>& members() const { return members_; }
  double sigma(std::size_t i) const { return sigma_[i]; }

  // ρ² between member p (unpinned) and every member: the share of each one's variance a measurement at p removes.
  std::vector<double> rho2(std::size_t p) const {
    std::vector<double> r(x_.size(), 0.0);
    if (fallback_) {
      std::vector<double> px, py;
      with_point(p, px, py);
      for (std::size_t q = 0; q < x_.size(); ++q) {
        if (!(sigma_[q] > 0)) continue;
        const double after = q == p ? 0.0 : fallback_estimate(px, py, x_[q], rule_).sigma;
        r[q] = std::clamp(1.0 - (after * after) / (sigma_[q] * sigma_[q]), 0.0, 1.0);
      }
      return r;
    }
    for (std::size_t q = 0; q < x_.size(); ++q)
      if (sigma_[q] > 0) r[q] = walk_rho2(p, q);
    return r;
  }

  // Member p measured (at its predicted time): the others' σ shrink by what it removes, its size becomes a pin.
  void pin(std::size_t p) {
    const std::vector<double> r = rho2(p);
    for (std::size_t q = 0; q < x_.size(); ++q) sigma_[q] *= std::sqrt(std::max(0.0, 1.0 - r[q]));
    sigma_[p] = 0;
    pins_.insert(std::upper_bound(pins_.begin(), pins_.end(), x_[p]), x_[p]);
    if (fallback_) {
      std::vector<double> px, py;
      with_point(p, px, py);
      px_ = std::move(px), py_ = std::move(py);
    }
  }

 private:
  // The walk's squared correlation between members p and q given the pins.
  double walk_rho2(std::size_t p, std::size_t q) const {
    if (x_[p] == x_[q]) return 1.0;
    const double lo = std::min(x_[p], x_[q]), hi = std::max(x_[p], x_[q]);
    const auto first_above_lo = std::lower_bound(pins_.begin(), pins_.end(), lo);
    if (first_above_lo != pins_.end() && *first_above_lo <= hi) return 0.0;  // a measured size between them
    const bool has_a = first_above_lo != pins_.begin(), has_b = first_above_lo != pins_.end();
    const double a = has_a ? *(first_above_lo - 1) : 0, b = has_b ? *first_above_lo : 0;
    if (has_a && has_b) return (lo - a) * (b - hi) / ((hi - a) * (b - lo));
    if (has_b) return (b - hi) / (b - lo);
    if (has_a) return (lo - a) / (hi - a);
    return 1.0;  // nothing measured on the curve: one level shared by every size
  }
  // The fallback's points with member p added at its predicted time.
  void with_point(std::size_t p, std::vector<double>& px, std::vector<double>& py) const {
    px = px_, py = py_;
    const auto at = std::lower_bound(px.begin(), px.end(), x_[p]) - px.begin();
    if (at < static_cast<long>(px.size()) && px[static_cast<std::size_t>(at)] == x_[p]) return;
    px.insert(px.begin() + at, x_[p]);
    py.insert(py.begin() + at, mu_[p]);
  }

  std::vector<int> members_;
  FallbackRule rule_;
  bool fallback_ = false;
  std::vector<double> x_, mu_, sigma_, pins_;
  std::vector<double> px_, py_;  // fallback: the measured (and pinned) sizes, ln t
};

// The value of measuring member p of the curve: expected_shortfall(m, ρ σ_q) over the members' gaps.
double member_value(const CurveState& s, std::size_t p, const std::vector<std::vector<double>>& gaps) {
  double v = 0;
  const std::vector<double> r = s.rho2(p);
  for (std::size_t q = 0; q < r.size(); ++q) {
    if (!(r[q] > 0)) continue;
    const double tau = std::sqrt(r[q]) * s.sigma(q);
    for (double m : gaps[static_cast<std::size_t>(s.members()[q])]) v += codegen::expected_shortfall(m, tau);
  }
  return v;
}

void value_curve(const CurveState& s, const std::vector<std::vector<double>>& gaps, const std::vector<CaseEstimate>& est,
                 std::vector<double>& values) {
  for (std::size_t p = 0; p < s.members().size(); ++p) {
    const int k = s.members()[p];
    values[static_cast<std::size_t>(k)] = est[static_cast<std::size_t>(k)].measured || s.sigma(p) <= 0 ? 0.0 : member_value(s, p, gaps);
  }
}

}  // namespace

std::vector<double> measurement_values(const TargetTable& table, const std::vector<CaseEstimate>& est, const Assessment& a,
                                       const FallbackRule& fallback) {
  const auto gaps = decision_gaps(table, est, a);
  std::vector<double> values(table.size(), 0.0);
  for (std::size_t c = 0; c < table.curves(); ++c) value_curve(CurveState(table, static_cast<int>(c), est, fallback), gaps, est, values);
  return values;
}

Batch choose_batch(const TargetTable& table, const std::vector<CaseEstimate>& est, const Assessment& a,
                   const BatchOptions& options) {
  const auto gaps = decision_gaps(table, est, a);
  std::vector<CurveState> curves;
  std::vector<double> values(table.size(), 0.0), cost(table.size(), 0.0);
  for (std::size_t c = 0; c < table.curves(); ++c) {
    curves.emplace_back(table, static_cast<int>(c), est, options.fallback);
    value_curve(curves.back(), gaps, est, values);
  }
  for (std::size_t k = 0; k < table.size(); ++k) {
    cost[k] = options.cost.seconds(std::exp(est[k].log_us));
  }
  const auto excluded = [&](int k) { return options.excluded && (*options.excluded)[static_cast<std::size_t>(k)]; };
  std::vector<bool> picked(table.size(), false);
  Batch b;
  double left = options.budget_left_s;
  while (b.cases.size() < options.max_cases) {
    int best = -1;
    for (std::size_t k = 0; k < table.size(); ++k) {
      if (picked[k] || est[k].measured || !(values[k] > kNoValue) || cost[k] > left || excluded(static_cast<int>(k))) continue;
      if (best < 0 || values[k] / cost[k] > values[static_cast<std::size_t>(best)] / cost[static_cast<std::size_t>(best)])
        best = static_cast<int>(k);
    }
    if (best < 0) break;
    // The case and the other candidates of its cells at that size: a cell is decided by the difference of its
    // candidates, which measuring them all at one size gives exactly (their models' errors there do not cancel),
    // and arbench measures them back to back (strategy innermost in the grid's order).
    std::vector<int> group = {best};
    double group_cost = cost[static_cast<std::size_t>(best)];
    for (int cell : table.cells_of(best))
      for (int o : table.cells()[static_cast<std::size_t>(cell)]) {
        const std::size_t u = static_cast<std::size_t>(o);
        if (o == best || picked[u] || est[u].measured || excluded(o) || std::find(group.begin(), group.end(), o) != group.end() ||
            group_cost + cost[u] > left)
          continue;
        group.push_back(o);
        group_cost += cost[u];
      }
    for (int g : group) {
      picked[static_cast<std::size_t>(g)] = true;
      b.cases.push_back(g);
      b.predicted_s += cost[static_cast<std::size_t>(g)];
      left -= cost[static_cast<std::size_t>(g)];
      CurveState& s = curves[static_cast<std::size_t>(table.curve_of(g))];
      s.pin(static_cast<std::size_t>(std::find(s.members().begin(), s.members().end(), g) - s.members().begin()));
      value_curve(s, gaps, est, values);
      for (int k : s.members())
        if (picked[static_cast<std::size_t>(k)]) values[static_cast<std::size_t>(k)] = 0;
    }
  }
  for (std::size_t k = 0; k < table.size(); ++k)
    if (!picked[k] && !est[k].measured && values[k] > kNoValue && (cost[k] > left || excluded(static_cast<int>(k)))) b.valuable_left = true;
  return b;
}

}  // namespace arfit::planner
