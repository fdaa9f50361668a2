// How a collective/strategy plugs into arbench: one Descriptor per (backend, collective, strategy), one
// source file each, as nccl-tests has one file per collective (name, byte counts, bus factor, init, run,
// check). The runner knows nothing about any particular collective; it only drives CollectiveOps.
//
// A Descriptor is kernels/' StrategyDescriptor (kernels/strategy.h: name, collective, supported dtypes,
// fusions and team sizes, byte counts, validation, init/run/check) plus bench's per-case hooks over its grid
// Case. The GPU strategies are kernels/' own descriptors, seen through bench/gpu's generic hooks; the host
// strategies (bench/host) fill the same fields.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mpi.h>
#include <optional>
#include <string>
#include <vector>

#include "bench/grid.h"
#include "kernels/strategy.h"
#include "model/bus_factor.h"

namespace arfit::bench {

class Backend;

// What a case may use while it runs.
struct RunContext {
  MPI_Comm comm = MPI_COMM_NULL;  // the TP group (ranks 0..tp-1 of the world)
  int rank = 0, nranks = 1;
  int buffers = 1;                // input buffers to rotate through
  const std::atomic<bool>* abort = nullptr;  // set by the watchdog when the case runs past its timeout
  Backend* backend = nullptr;
  // Test-only fault injection: this rank withholds itself from the case's first synchronisation point and
  // waits (kWithhold: for the abort flag, so the timeout path is exercised; kForever: forever, so only the
  // hard timeout can end it).
  enum class Inject { kNone, kWithhold, kForever };
  Inject inject = Inject::kNone;
};

enum class RunStatus { Ok, Aborted };

// One case's buffers and work. Created per case, destroyed after it.
class CollectiveOp {
 public:
  virtual ~CollectiveOp() = default;
  // Allocates ctx.buffers input buffers plus outputs and fills them (deterministic, rank-dependent data).
  virtual void init(const Case& c, RunContext& ctx) = 0;
  // One iteration on input buffer `buffer` (0 <= buffer < ctx.buffers). Returns Aborted only when the
  // watchdog's abort flag ended a wait; GPU ops enqueue and return (the timer synchronises).
  virtual RunStatus run(int buffer) = 0;
  // Outside the timed region: poisons the outputs, runs once on buffer 0, waits, and counts output
  // elements that differ from the reference beyond the dtype's tolerance.
  virtual RunStatus check(std::int64_t* wrong) = 0;
};

// A reason a case cannot run, naming the option to change.
struct CaseIssue {
  std::string option;
  std::string what;
};

using Limits = kernels::StrategyLimits;
using kernels::ByteCounts;

struct Descriptor : kernels::StrategyDescriptor {
  // Bytes each rank allocates for the case's workspace, signals and scratch included (0 when uses_workspace is
  // false): one allocation per group, sized for its largest case (kernels::workspace_allocation_bytes).
  std::function<std::int64_t(const Case&)> workspace_bytes;
  // Further checks before anything runs (e.g. hidden a multiple of the vector width); nullopt when fine.
  std::function<std::optional<CaseIssue>(const Case&, const Limits&)> validate;
  std::function<std::unique_ptr<CollectiveOp>(const Case&)> make;
  // All-to-allv only: the per-peer split recorded in the sample's `splits` column.
  std::function<std::string(const Case&)> splits;
};

// The command-line option behind a kernels/ request parameter (KernelError::parameter()), for the CaseIssue of
// a kernels/ validation error.
std::string option_for(kernels::KernelParam parameter, const Case& c);

// Every descriptor compiled into this build (host always; nccl and custom when CUDA/NCCL were found).
const std::vector<const Descriptor*>& all_descriptors();
const Descriptor* find_descriptor(const std::string& backend, Collective c, const std::string& strategy);
std::vector<std::string> strategies_of(const std::string& backend, Collective c);
// The strategies a grid without --strategy measures: strategies_of less the inexact ones (LOWPRECISION), which run
// only when named.
std::vector<std::string> default_strategies_of(const std::string& backend, Collective c);
// Backends compiled into this build, and why the others are missing.
std::vector<std::string> available_backends();
std::string backend_unavailable_reason(const std::string& backend);  // "" when available

}  // namespace arfit::bench
