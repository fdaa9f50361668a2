// unit_normal: a keyed standard normal draw (the simulation's measurement noise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "model/splitmix64.h"

using arfit::unit_normal;

TEST(UnitNormal, IsAPureFunctionOfItsKey) {
  EXPECT_EQ(unit_normal(42), unit_normal(42));
  EXPECT_NE(unit_normal(42), unit_normal(43));
  EXPECT_TRUE(std::isfinite(unit_normal(0)));
}

TEST(UnitNormal, HasTheStandardNormalsMomentsAndTails) {
  const int n = 200000;
  double sum = 0, sum2 = 0;
  int beyond = 0;  // |z| > 1.645: 10 % of a standard normal
  std::vector<double> z(n);
  for (int i = 0; i < n; ++i) {
    z[i] = unit_normal(static_cast<std::uint64_t>(i));
    sum += z[i], sum2 += z[i] * z[i];
    beyond += std::abs(z[i]) > 1.6448536269514722;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);  // 4.5 standard errors
  EXPECT_NEAR(var, 1.0, 0.015);
  EXPECT_NEAR(static_cast<double>(beyond) / n, 0.10, 0.004);
  std::nth_element(z.begin(), z.begin() + n / 2, z.end());
  EXPECT_NEAR(z[n / 2], 0.0, 0.01);
}
