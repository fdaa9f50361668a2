// Prediction-error metrics, as the DLRM performance-model paper reports them.
#pragma once

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
ErrorSummary summarize_errors(const std::vector<double>& rel_errors);

}  // namespace arfit
