// From a grid spec to the list of cases to run, with every check that can be made before anything runs:
// unknown or unavailable backends, TP larger than the world, strategies a backend lacks, fusion/dtype
// pairs a strategy lacks, sizes above the workspace or memory. Failures are GridErrors naming the option.
#pragma once

#include <string>
#include <vector>

#include "bench/descriptor.h"
#include "bench/grid.h"

namespace arfit::bench {

// Input buffers a case rotates through: `requested` when > 0; otherwise enough 4 KiB-aligned buffers to
// span 64 MiB (so consecutive iterations do not hit a warm cache), between 2 and 16, and 1 from 64 MiB up.
int rotation_buffers(std::int64_t bytes, int requested);

struct PlanOptions {
  Limits limits;
  int buffers = 0;                   // --buffers (0 = automatic)
  int ranks_per_node = 1;            // for the memory estimate
  std::int64_t memory_bytes = 0;     // physical memory of the node, 0 = do not check
  // What this process may still map under its address-space limit (ulimit -v), 0 = no limit. A case beyond it
  // fails in an allocation: bad_alloc, or inside MPI (a fatal MPI error, a crash in the shared-memory window).
  std::int64_t address_space_bytes = 0;
};

// Fills defaults (collective allreduce, fusion NONE, dtype bf16, TP 2,4,..,world), validates, expands
// and applies the plan. Notes about dropped combinations go to `notices`.
PlannedGrid plan_cases(GridSpec& spec, const PlanOptions& options, std::vector<std::string>* notices);

// Default TP list for a world size: 2, 4, 8, ... up to the world, plus the world itself; {1} for one rank.
std::vector<int> default_tp(int world);

}  // namespace arfit::bench
