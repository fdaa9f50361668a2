// splitmix64 (Steele, Lea and Flood; the seeding step of java.util.SplittableRandom and of xoshiro): one
// 64-bit value well mixed into another. The one portable hash behind every seeded draw arfit makes — the
// random plan and all-to-allv split generators (bench/), the kernels' input patterns (kernels/reference) and
// the host executor's fiber schedules — because std:: distributions differ between standard libraries and
// these draws must be the same on every rank and machine for a given seed.
#pragma once

#include <cmath>
#include <cstdint>

namespace arfit {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A standard normal draw keyed by `key` (Box–Muller on two uniforms splitmix64 makes of it): a pure function of
// the key, with no engine state, so a draw is the same whichever thread or order asks for it (the simulation's
// measurement noise, planner/simulate.h).
inline double unit_normal(std::uint64_t key) {
  const std::uint64_t a = splitmix64(key), b = splitmix64(a ^ 0x5851f42d4c957f2dULL);
  const double u1 = (static_cast<double>(a >> 11) + 0.5) * 0x1p-53;  // in (0, 1): the log below stays finite
  const double u2 = static_cast<double>(b >> 11) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace arfit
