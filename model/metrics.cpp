#include "model/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "model/group_model.h"
#include "model/seed.h"

namespace arfit {

double relative_error(double predicted, double measured) { return std::fabs(predicted - measured) / measured; }

double gmae(const std::vector<double>& e) {
  if (e.empty()) return 0;
  double acc = 0;
  for (double v : e) acc += std::log(std::fabs(v) + kGmaeEps);
  return std::exp(acc / static_cast<double>(e.size()));
}

double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

ErrorSummary summarize_errors(const std::vector<double>& e) {
  ErrorSummary s;
  s.points = static_cast<int>(e.size());
  if (e.empty()) return s;
  s.gmae = gmae(e);
  s.median = percentile(e, 50);
  s.p90 = percentile(e, 90);
  s.max = *std::max_element(e.begin(), e.end());
  return s;
}

double size_median(std::vector<double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double student_t90(std::size_t dof) {
  static const double q[] = {6.314, 6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812};
  return dof < sizeof q / sizeof q[0] ? q[dof] : kZ90;
}

}  // namespace arfit
