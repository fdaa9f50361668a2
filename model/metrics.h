// Prediction-error metrics, as the DLRM performance-model paper reports them.
#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

namespace arfit {

// Relative error |pred − meas| / meas.
double relative_error(double predicted, double measured);

// GMAE = exp(mean(ln(e + 4e-4))) over relative errors e (fractions). 0 for an empty list.
double gmae(const std::vector<double>& rel_errors);

struct ErrorSummary {
  double gmae = 0, median = 0, p90 = 0, max = 0;  // fractions
  int points = 0;
};

// Percentiles by linear interpolation between order statistics (numpy's default).
double percentile(std::vector<double> values, double q);

// Two-sided 90 % quantile of Student's t with `dof` degrees of freedom (dof 0 as 1; the normal's 1.645 beyond
// 10): the half-width factor of an interval whose variance is estimated from few values (a transfer's K
// anchors, a handful of other machines).
double student_t90(std::size_t dof);

// The value of one size measured several times: the upper median v[n/2] of the sorted values. This is the
// reference evaluation's convention (../shared/reference/curves.py), and every curve arfit fits, plots and
// selects from is built with it, so a plotted measured point is exactly the knot the fit passes through.
// NaN for an empty list.
double size_median(std::vector<double> values);
ErrorSummary summarize_errors(const std::vector<double>& rel_errors);

}  // namespace arfit
