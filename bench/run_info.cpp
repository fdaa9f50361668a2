#include "bench/run_info.h"

#include <chrono>
#include <ctime>
#include <set>
#include <string>

#include "model/text.h"

namespace arfit::bench {

RunIdentity identify_run(MPI_Comm world) {
  RunIdentity id;
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, world);
  std::set<std::string> seen;
  for (int r = 0; r < size; ++r) {
    std::string h(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
    if (seen.insert(h).second) id.hostnames.push_back(h);
  }
  id.nnodes = static_cast<int>(id.hostnames.size());
  char ver[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  MPI_Get_library_version(ver, &len);
  id.mpi_version = ver;
  if (auto nl = id.mpi_version.find_first_of("\r\n"); nl != std::string::npos) id.mpi_version.resize(nl);
  if (auto comma = id.mpi_version.find(", package"); comma != std::string::npos) id.mpi_version.resize(comma);
  std::time_t now = std::time(nullptr);
  if (rank == 0) {
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    id.started_utc = buf;
  }
  // Every rank records the same start time.
  char buf[32] = {};
  std::snprintf(buf, sizeof buf, "%s", id.started_utc.c_str());
  MPI_Bcast(buf, sizeof buf, MPI_CHAR, 0, world);
  id.started_utc = buf;
  return id;
}

std::string cuda_graph_header_value(int collectives_per_graph) {
  if (collectives_per_graph <= 0) return "off";
  return std::to_string(collectives_per_graph) + (collectives_per_graph == 1 ? " collective" : " collectives") +
         " per replay";
}

RunHeader make_run_header(const RunIdentity& id, const DeviceInfo& dev, const GridSpec& spec, const PlannedGrid& grid,
                          const std::string& command_line, int world, int warmup, int iters, int buffers,
                          double timeout_s, int cuda_graph) {
  RunHeader h;
  std::string hosts;
  for (const auto& x : id.hostnames) hosts += (hosts.empty() ? "" : " ") + x;
  h.emplace_back("generator", std::string("arbench ") + ARFIT_VERSION);
  h.emplace_back("command", command_line);
  h.emplace_back("started", id.started_utc);
  h.emplace_back("hostnames", hosts);
  h.emplace_back("nnodes", std::to_string(id.nnodes));
  h.emplace_back("world_size", std::to_string(world));
  h.emplace_back("backend", spec.backend);
  h.emplace_back("device", dev.device);
  h.emplace_back("sm", dev.sm ? std::to_string(dev.sm) : std::string("n/a"));
  h.emplace_back("driver", dev.driver.empty() ? "n/a" : dev.driver);
  h.emplace_back("cuda_runtime", dev.cuda_runtime.empty() ? "n/a" : dev.cuda_runtime);
  h.emplace_back("nccl", dev.nccl.empty() ? "n/a" : dev.nccl);
  h.emplace_back("mpi", id.mpi_version);
  if (!spec.preset.empty()) h.emplace_back("preset", spec.preset);
  h.emplace_back("plan", spec.plan.to_string());
  h.emplace_back("grid", spec.to_json());
  h.emplace_back("full_points", std::to_string(grid.full_points));
  h.emplace_back("planned_points", std::to_string(grid.planned_points));
  h.emplace_back("full_cases", std::to_string(grid.full_cases));
  h.emplace_back("planned_cases", std::to_string(grid.cases.size()));
  const std::string iteration =
      cuda_graph > 0 ? " timed iterations, each one CUDA-graph replay (" + cuda_graph_header_value(cuda_graph) +
                           ") timed by events around it and divided by " + std::to_string(cuda_graph) +
                           ", after the eager warm-up and one untimed replay of each graph"
                     : std::string(" timed iterations");
  h.emplace_back("timing", "warmup " + std::to_string(warmup) + ", " + std::to_string(iters) + iteration +
                               ", per-iteration times maxed across ranks; time_us = median, "
                               "p10/p90/min/max over iterations; input buffers rotated (" +
                               (buffers > 0 ? std::to_string(buffers) : std::string("automatic")) + ")");
  h.emplace_back("cuda_graph", cuda_graph_header_value(cuda_graph));
  h.emplace_back("timeout_s", format_number(timeout_s, "%g"));
  return h;
}

}  // namespace arfit::bench
