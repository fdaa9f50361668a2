// fit/siblings.h: sibling knots from other dtypes / versions of one machine's group.
#include <gtest/gtest.h>

#include <cmath>

#include "fit/fit.h"
#include "fit/siblings.h"
#include "model/group_model.h"

using namespace arfit;
using namespace arfit::fit;

namespace {

// A latency curve with a protocol switch the α-β families cannot follow: a 35 % bump centred at 2^15 bytes,
// one octave wide. Interpolating across it from measurements two octaves apart misses it.
double true_time(double s) {
  const double u = std::log2(s);
  const double bump = 0.3 * std::exp(-0.5 * (u - 15) * (u - 15));
  return (6.0 + s / 2e4) * std::exp(bump);
}

Curve curve(const std::string& dtype, int first_exp, double scale, const std::string& hardware = "box",
            int nranks = 8) {
  Curve c;
  c.key.system = hardware + "-" + dtype;  // eval groups by source: systems differ, the machine is the same
  c.key.collective = Collective::AllReduce;
  c.key.strategy = "NCCL";
  c.key.dtype = dtype;
  c.key.nranks = nranks;
  c.hardware = hardware;
  for (int e = first_exp; e <= 26; e += 2) {
    const double s = std::ldexp(1.0, e);
    c.bytes.push_back(s);
    c.time_us.push_back(scale * true_time(s));
  }
  return c;
}

double err_at(const GroupFit& g, double scale, double s) {
  const GroupModel m = GroupModel::from_json(g.model);
  return std::fabs(m.predict(s).time_us / (scale * true_time(s)) - 1);
}

}  // namespace

TEST(FitSiblings, InterleavedSiblingFillsTheGapsOfTheTarget) {
  // fp16 measured at even octaves, int8 (10 % slower: a different reduction) at odd octaves of the same box.
  std::vector<Curve> curves = {curve("fp16", 8, 1.0), curve("int8", 9, 1.1)};
  std::vector<GroupFit> solo, pooled;
  for (const Curve& c : curves) solo.push_back(fit_curve(c));
  pooled = solo;
  const SiblingPoolStats st = pool_siblings(curves, pooled);
  EXPECT_EQ(st.targets, 2);
  EXPECT_GT(st.knots, 10);
  ASSERT_TRUE(pooled[0].model.contains("sibling_knots"));
  EXPECT_EQ(pooled[0].model["sibling_knots"]["siblings"][0].get<std::string>(), curves[1].key.id());

  // At the bump (2^15: fp16 did not measure it, int8 did), solo interpolation misses by > 5 %; pooled within 3 %.
  const double s = std::ldexp(1.0, 15);
  EXPECT_GT(err_at(solo[0], 1.0, s), 0.05);
  EXPECT_LT(err_at(pooled[0], 1.0, s), 0.03);
  // Over all odd octaves inside the range, pooling is better on average.
  double e_solo = 0, e_pool = 0;
  for (int e = 9; e <= 25; e += 2) {
    e_solo += err_at(solo[0], 1.0, std::ldexp(1.0, e));
    e_pool += err_at(pooled[0], 1.0, std::ldexp(1.0, e));
  }
  EXPECT_LT(e_pool, 0.5 * e_solo);
  // The target still passes through its own measurements.
  const GroupModel m = GroupModel::from_json(pooled[0].model);
  for (size_t i = 0; i < curves[0].bytes.size(); ++i)
    EXPECT_NEAR(m.predict(curves[0].bytes[i]).time_us / curves[0].time_us[i], 1.0, 1e-9);
}

TEST(FitSiblings, OnlySameMachineAndShapeArePooledAndOrderDoesNotMatter) {
  std::vector<Curve> curves = {curve("fp16", 8, 1.0), curve("int8", 9, 1.1, "other-box"), curve("int8", 9, 1.1, "box", 4)};
  std::vector<GroupFit> fits;
  for (const Curve& c : curves) fits.push_back(fit_curve(c));
  const SiblingPoolStats st = pool_siblings(curves, fits);
  EXPECT_EQ(st.targets, 0);  // another machine, another rank count: no siblings
  EXPECT_FALSE(fits[0].model.contains("sibling_knots"));

  std::vector<Curve> a = {curve("fp16", 8, 1.0), curve("int8", 9, 1.1), curve("fp32", 9, 1.3)};
  std::vector<Curve> b = {a[2], a[0], a[1]};
  std::vector<GroupFit> fa, fb;
  for (const Curve& c : a) fa.push_back(fit_curve(c));
  for (const Curve& c : b) fb.push_back(fit_curve(c));
  pool_siblings(a, fa);
  pool_siblings(b, fb);
  EXPECT_EQ(fa[0].model.dump(), fb[1].model.dump());
  EXPECT_EQ(fa[1].model.dump(), fb[2].model.dump());
}

TEST(FitSiblings, SameGridSiblingsAddNothing) {
  // Same sizes measured twice: nothing the target did not measure, so its model is unchanged.
  std::vector<Curve> curves = {curve("fp16", 8, 1.0), curve("int8", 8, 1.1)};
  std::vector<GroupFit> fits;
  for (const Curve& c : curves) fits.push_back(fit_curve(c));
  const std::string before = fits[0].model.dump();
  EXPECT_EQ(pool_siblings(curves, fits).knots, 0);
  EXPECT_EQ(fits[0].model.dump(), before);
}
