#include "fit/epilogue.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>

namespace arfit::fit {
namespace {

// Solves the normal equations of the columns in `use` (a bit mask over {1, bytes, tokens}); false when singular.
bool solve_subset(const std::vector<std::array<double, 3>>& X, const std::vector<double>& y, unsigned use,
                  std::array<double, 3>& coef) {
  std::vector<int> cols;
  for (int c = 0; c < 3; ++c)
    if (use & (1u << c)) cols.push_back(c);
  const size_t k = cols.size();
  coef = {0, 0, 0};
  if (k == 0) return true;
  // Columns are scaled to unit RMS so bytes (~1e6..1e9) and the constant are conditioned alike.
  std::array<double, 3> scale{1, 1, 1};
  for (int c : cols) {
    double ss = 0;
    for (const auto& r : X) ss += r[c] * r[c];
    scale[c] = ss > 0 ? std::sqrt(ss / X.size()) : 1;
  }
  double A[3][4] = {};
  for (size_t i = 0; i < X.size(); ++i)
    for (size_t a = 0; a < k; ++a) {
      const double xa = X[i][cols[a]] / scale[cols[a]];
      for (size_t b = 0; b < k; ++b) A[a][b] += xa * X[i][cols[b]] / scale[cols[b]];
      A[a][3] += xa * y[i];
    }
  for (size_t p = 0; p < k; ++p) {  // Gauss-Jordan with partial pivoting
    size_t piv = p;
    for (size_t r = p + 1; r < k; ++r)
      if (std::fabs(A[r][p]) > std::fabs(A[piv][p])) piv = r;
    if (std::fabs(A[piv][p]) < 1e-12) return false;
    for (int c = 0; c < 4; ++c) std::swap(A[p][c], A[piv][c]);
    for (size_t r = 0; r < k; ++r) {
      if (r == p) continue;
      const double m = A[r][p] / A[p][p];
      for (int c = 0; c < 4; ++c) A[r][c] -= m * A[p][c];
    }
  }
  for (size_t a = 0; a < k; ++a) coef[cols[a]] = A[a][3] / A[a][a] / scale[cols[a]];
  return true;
}

}  // namespace

nlohmann::json EpilogueFit::to_json() const {
  if (!ok) return {{"ok", false}, {"problem", problem}, {"base_group", base_group}};
  return {{"ok", true},          {"base_group", base_group}, {"a_us", a_us},           {"per_byte_us", per_byte_us},
          {"per_row_us", per_row_us}, {"points", points},   {"rms_us", rms_us},       {"median_rel_residual", median_rel},
          {"mean_share", mean_share}};
}

EpilogueFit fit_epilogue(const Curve& fused, const GroupModel& unfused) {
  EpilogueFit e;
  e.base_group = unfused.key.id();
  struct Point {
    double tokens, bytes, extra_us, time_us;  // extra_us: fused − unfused model at the same bytes
  };
  std::vector<Point> pts;
  std::vector<std::array<double, 3>> X;
  std::vector<double> y;
  std::map<std::pair<std::int64_t, std::int64_t>, int> shapes;
  for (const auto& p : fused.shape_points) {
    if (!(p.time_us > 0) || !(p.bytes > 0) || p.tokens <= 0) continue;
    const Point q{static_cast<double>(p.tokens), p.bytes, p.time_us - unfused.predict(p.bytes).time_us, p.time_us};
    pts.push_back(q);
    // Rows divided by the fused time: the least squares minimise relative residuals, so a 2 µs shape counts
    // as much as a 10 ms one (absolute residuals would let the largest shapes set the intercept).
    const double w = 1 / q.time_us;
    X.push_back({w, q.bytes * w, q.tokens * w});
    y.push_back(q.extra_us * w);
    ++shapes[{p.tokens, p.hidden}];
  }
  e.points = static_cast<int>(y.size());
  if (shapes.size() < 3) {
    e.problem = "needs >= 3 distinct token x hidden shapes, has " + std::to_string(shapes.size());
    return e;
  }
  // Non-negative least squares by enumeration of the 8 active sets: 3 unknowns make this exact and cheap.
  double best = 1e300;
  std::array<double, 3> best_coef{0, 0, 0};
  for (unsigned use = 0; use < 8; ++use) {
    std::array<double, 3> c;
    if (!solve_subset(X, y, use, c)) continue;
    if (c[0] < 0 || c[1] < 0 || c[2] < 0) continue;
    double sse = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      const double r = y[i] - (c[0] * X[i][0] + c[1] * X[i][1] + c[2] * X[i][2]);
      sse += r * r;
    }
    if (sse < best * (1 - 1e-12)) {
      best = sse;
      best_coef = c;
    }
  }
  e.ok = true;
  e.a_us = best_coef[0];
  e.per_byte_us = best_coef[1];
  e.per_row_us = best_coef[2];
  std::vector<double> rel;
  double share = 0, ss = 0;
  for (const Point& q : pts) {
    const double fit = e.time_us(q.tokens, q.bytes);
    const double r = q.extra_us - fit;  // µs
    ss += r * r;
    rel.push_back(std::fabs(r) / q.time_us);
    share += fit / q.time_us;
  }
  std::sort(rel.begin(), rel.end());
  e.rms_us = std::sqrt(ss / y.size());
  e.median_rel = rel[rel.size() / 2];
  e.mean_share = share / y.size();
  return e;
}

int add_epilogue_terms(const std::vector<Curve>& curves, std::vector<GroupFit>& fits) {
  if (curves.size() != fits.size()) return 0;
  std::map<GroupKey, size_t> by_key;
  for (size_t i = 0; i < curves.size(); ++i) by_key[curves[i].key] = i;
  int added = 0;
  for (size_t i = 0; i < curves.size(); ++i) {
    const Curve& c = curves[i];
    if (c.key.fusion == FusionOp::None || c.shape_points.empty() || !fits[i].ok) continue;
    GroupKey base = c.key;
    base.fusion = FusionOp::None;
    auto it = by_key.find(base);
    if (it == by_key.end() || !fits[it->second].ok) continue;
    const EpilogueFit e = fit_epilogue(c, GroupModel::from_json(fits[it->second].model));
    fits[i].model["epilogue"] = e.to_json();
    if (e.ok) ++added;
  }
  return added;
}

}  // namespace arfit::fit
