// The run header arbench writes above the samples: where, on what and how the samples were measured.
#pragma once

#include <mpi.h>
#include <string>
#include <vector>

#include "bench/backend.h"
#include "bench/grid.h"
#include "bench/record.h"

namespace arfit::bench {

struct RunIdentity {
  std::vector<std::string> hostnames;  // unique, in rank order
  int nnodes = 1;
  std::string mpi_version;             // first line of MPI_Get_library_version
  std::string started_utc;             // ISO 8601
};

// Collective over `world`.
RunIdentity identify_run(MPI_Comm world);

RunHeader make_run_header(const RunIdentity& id, const DeviceInfo& dev, const GridSpec& spec, const PlannedGrid& grid,
                          const std::string& command_line, int world, int warmup, int iters, int buffers,
                          double timeout_s);

}  // namespace arfit::bench
