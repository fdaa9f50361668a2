// splitmix64 (Steele, Lea and Flood; the seeding step of java.util.SplittableRandom and of xoshiro): one
// 64-bit value well mixed into another. The one portable hash behind every seeded draw arfit makes — the
// random plan and all-to-allv split generators (bench/), the kernels' input patterns (kernels/reference) and
// the host executor's fiber schedules — because std:: distributions differ between standard libraries and
// these draws must be the same on every rank and machine for a given seed.
#pragma once

#include <cstdint>

namespace arfit {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace arfit
