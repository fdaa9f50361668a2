// A backend owns what outlives one case: communicators, registered workspaces, streams, the timer kind.
#pragma once

#include <functional>
#include <memory>
#include <mpi.h>
#include <string>
#include <vector>

#include "bench/descriptor.h"

namespace arfit::bench {

// Per-iteration timestamps: host clock for the host backend, device events for the GPU backends.
class IterationTimer {
 public:
  virtual ~IterationTimer() = default;
  virtual void start() = 0;  // before the first timed iteration
  virtual void mark() = 0;   // after each timed iteration
  // Waits for the work to finish and returns one duration per mark(), microseconds.
  virtual std::vector<double> finish_us() = 0;
};

// Iterations captured once into a CUDA graph and replayed (--cuda-graph). Destroying it frees the graph.
class CapturedIterations {
 public:
  virtual ~CapturedIterations() = default;
  // Enqueues one replay of the whole captured sequence on the backend's stream (asynchronous). Aborted when
  // the abort flag ended the case and the graph was already freed.
  virtual RunStatus launch() = 0;
};

struct DeviceInfo {
  std::string device;  // "NVIDIA H100 80GB HBM3", or the CPU model for the host backend
  int sm = 0;
  std::string driver, cuda_runtime, nccl;  // versions, "" when not applicable
};

struct BackendOptions {
  std::int64_t workspace = 0;  // largest message for workspace strategies, bytes
  bool virtual_ranks = false;
  int device = -1;             // GPU to use; -1: local rank modulo device count
  int cuda_graph = 0;          // --cuda-graph: collectives per graph replay, 0 = eager launches
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual DeviceInfo device_info() = 0;
  // Collective over `group`: prepares for the listed cases (workspace sized for the largest of them).
  virtual void begin_group(MPI_Comm group, const std::vector<const Case*>& cases) = 0;
  virtual void end_group() = 0;
  virtual std::unique_ptr<IterationTimer> make_timer() = 0;
  // Records what `enqueue` puts on the backend's stream into a CUDA graph without running it, and returns the
  // instantiated (and uploaded) graph. Only the GPU backends have graphs; the others throw (the command line
  // already refuses --cuda-graph for them).
  virtual std::unique_ptr<CapturedIterations> capture(const std::function<void()>& enqueue);
  // Profiling hooks around a case (NVTX range, cudaProfilerStart/Stop when `profile`).
  virtual void begin_case(const Case&, bool /*profile*/) {}
  virtual void end_case(const Case&, bool /*profile*/) {}
  // Collective over the group after a case ended by the abort flag: restores the synchronisation state.
  virtual void recover(MPI_Comm /*group*/) {}
};

// Throws GridError naming --backend when the backend is unknown or not compiled in.
std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options);

// Host clock timer (steady_clock), also used by tests.
std::unique_ptr<IterationTimer> make_host_timer();

}  // namespace arfit::bench
