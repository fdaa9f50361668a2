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

// The run header's `cuda_graph` value: "off", or "K collectives per replay" (--cuda-graph K). A file measured
// without the key predates graph mode and counts as "off".
std::string cuda_graph_header_value(int collectives_per_graph);

RunHeader make_run_header(const RunIdentity& id, const DeviceInfo& dev, const GridSpec& spec, const PlannedGrid& grid,
                          const std::string& command_line, int world, int warmup, int iters, int buffers,
                          double timeout_s, int cuda_graph = 0);

}  // namespace arfit::bench
