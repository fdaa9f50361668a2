// Fitting the topology family (model/topology.h) jointly over one machine's curves of one kind, at several GPUs
// per node and node counts, with Ceres (issue 41). Used by `arfit eval --protocol crossn` for a count with more GPUs
// per node on the nodes the machine measured (docs/fit.md, "More GPUs per node").
#pragma once

#include <optional>
#include <vector>

#include "fit/fit.h"
#include "model/topology.h"

namespace arfit::fit {

// The family fitted on `curves` (one machine, one collective; each curve's key.nranks a multiple of key.nnodes, the
// rest skipped), minimising the soft-L1 loss of ln t. `stated_rails` > 0: the rails a log or the user stated, kept;
// else the rails are chosen among the GPUs-per-node counts measured on more than one node (the lowest cost, a larger
// count on a tie within 1 %): a ceiling the measurements showed, or the largest count measured when they showed
// none. nullopt when no curve spans nodes or the solver fails.
std::optional<TopologyModel> fit_topology(const std::vector<const Curve*>& curves, double stated_rails = 0);

}  // namespace arfit::fit
