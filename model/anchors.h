// The spread rule of a quick calibration: which K sizes of a curve to measure. Shared by `arbench --plan
// anchors:K` (what is measured) and `arfit eval --protocol crosshw:K` (what the protocol keeps), so that the
// evaluation measures exactly what a user's calibration run would have.
#pragma once

#include <cmath>
#include <cstddef>
#include <vector>

namespace arfit {

// Indices round(linspace(0, n − 1, K)) of a curve's n sorted distinct sizes (numpy's linspace and rounding,
// half to even), duplicates removed, ascending. K = 1 keeps the smallest size, K >= 2 both ends; K <= 0 or
// n == 0 keeps nothing; K >= n keeps every index.
inline std::vector<std::size_t> anchor_indices(std::size_t n, int K) {
  std::vector<std::size_t> out;
  if (n == 0 || K <= 0) return out;
  const double step = K > 1 ? static_cast<double>(n - 1) / (K - 1) : 0.0;
  for (int i = 0; i < K; ++i) {
    // numpy sets the last value to the stop exactly; std::nearbyint rounds half to even like np.round.
    const double x = i + 1 == K && K > 1 ? static_cast<double>(n - 1) : i * step;
    const auto k = static_cast<std::size_t>(std::nearbyint(x));
    if (out.empty() || k != out.back()) out.push_back(k);
  }
  return out;
}

}  // namespace arfit
