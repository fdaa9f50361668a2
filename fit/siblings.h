// Sibling pooling: curves of the same hardware, collective, strategy, fusion, rank and node count that differ
// only in dtype or in the file/software version that measured them are the same communication measured
// twice, sometimes on different size grids (nccl-tests runs of two NCCL versions that start at different
// sizes; aiconfigurator's NCCL tables, by contrast, measure int8 and half at the same byte sizes). A
// sibling's measurement at a size the target did not measure says more about the target there than any
// interpolation of the target's own points, once the (smooth) ratio between the two curves is known.
//
// After each curve has been fitted alone, pool_siblings() adds "sibling knots" to each target's in-range
// residual correction: at every size a sibling measured strictly inside the target's measured range and
// the target did not, the pseudo-measurement
//     ln t_target(s) ≈ ln t_sibling(s) + ρ(s)
// where ρ is the log-ratio target/sibling smoothed across sizes by a Gaussian-kernel-weighted median in log2
// size (width kSiblingBandwidthOctaves): each ratio sample pairs one curve's measurement with the other
// curve's own fitted prediction at that size, and the sample at s itself is left out (it contains the target's
// interpolation error at s, which is what the knot is meant to fix). Several siblings at one size are
// averaged. The pseudo-knot is then blended with the target's own prediction, weighted by their error
// variances (own: the target's cross-validated in-range scale; transfer: the sibling's measurement noise
// plus the weighted median absolute deviation of the ratio samples around ρ).
//
// Nothing changes outside the target's measured range, and the target's own measurements stay knots (but its
// spikes, fit.h's spike_indices, which neither curve's knots nor ratio samples use), so the model still passes
// through everything else the target measured. Only measured (training) points of siblings are
// used: the evaluation protocols hand pool_siblings their training curves, so held-out points of one curve
// never inform another.
#pragma once

#include <string>
#include <vector>

#include "fit/fit.h"

namespace arfit::fit {

// Kernel width (standard deviation, octaves of size) of the log-ratio smoother; chosen on the public data's
// interp2 and sparse4 protocols (docs/fit.md).
inline constexpr double kSiblingBandwidthOctaves = 1.0;

// The sibling set a curve belongs to: hardware/collective/strategy/fusion/nranks/nnodes (no dtype, no source).
std::string sibling_set_key(const Curve& c);

struct SiblingPoolStats {
  int targets = 0;       // groups that received at least one sibling knot
  int knots = 0;         // sibling knots added in total
};

// `curves[i]` is the data `fits[i]` was fitted on (same order, same length). Fits that are not ok, and
// sibling sets of one curve, are left alone. Deterministic: the result does not depend on the order of the
// curves within a sibling set.
SiblingPoolStats pool_siblings(const std::vector<Curve>& curves, std::vector<GroupFit>& fits);

}  // namespace arfit::fit
