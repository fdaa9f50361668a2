// The strategy descriptor: how bench/ (and the tests) drive every collective implementation of kernels/
// without special cases, in the manner of nccl-tests' `struct testColl` (name, byte counts, bus factor,
// init, run, check). One descriptor per strategy, each defined in its own file (kernels/strategy_*.cpp);
// all_strategies() lists them.
//
// This header has no CUDA dependency (streams are passed as void*), so code that only plans or validates
// grids can include it everywhere. The descriptor objects themselves live in the CUDA library
// arfit_kernels (only built when nvcc exists, ARFIT_HAVE_CUDA).
//
// Typical use (one case; error handling left out):
//   const StrategyDescriptor& s = *find_strategy("ONESHOT", Collective::AllReduce);
//   s.validate(ctx, c);                                  // throws KernelError with the reason
//   std::unique_ptr<StrategyState> st = s.init(ctx, c);  // buffers, seeded inputs, poisoned outputs
//   for (...) s.run(*st, stream);                        // timed region (CUDA-graph capturable)
//   CheckResult r = s.check(*st);                        // outside the timed region
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel_types.h"
#include "model/sample.h"

namespace arfit::kernels {

class Team;  // kernels/team.h: registered workspaces of a team of ranks (IPC or virtual-node)

// One case to run. Element counts follow nccl-tests' conventions per collective:
//   AllReduce      count = elements of the tensor every rank contributes and receives
//   AllGather      count = elements each rank contributes (it receives count * nranks)
//   ReduceScatter  count = elements each rank receives (it contributes count * nranks)
//   AllToAll       count = elements each rank sends in total (count / nranks to each peer)
//   AllToAllV      alltoallv_counts[i * nranks + j] = elements rank i sends to rank j; count is unused
// For fused all-reduce epilogues the tensor is count / hidden rows of `hidden` elements.
struct StrategyCase {
  Collective collective = Collective::AllReduce;
  DType dtype = DType::BF16;
  FusionOp fusion = FusionOp::None;
  int nranks = 0;
  std::int64_t count = 0;
  std::int64_t hidden = 0;        // row length; required (> 0) for fused epilogues, ignored otherwise
  double rms_eps = 1e-6;          // RMSNorm epsilon
  float fp8_scale = 1.0f;         // per-tensor scale of the e4m3 output: fp8 = e4m3(normed / fp8_scale)
  std::vector<std::int64_t> alltoallv_counts;  // nranks * nranks, row = sender
  bool in_place = false;          // output buffer == input buffer where the collective allows it
};

// Who runs the case. With MPI each process drives one rank on its own GPU (local_ranks = 1); in
// virtual-node mode one process drives all ranks on one device (first_rank = 0, local_ranks = nranks).
struct StrategyContext {
  int nranks = 0;
  int first_rank = 0;
  int local_ranks = 1;
  int device = 0;
  Team* team = nullptr;        // required by the custom kernels (ONESHOT, TWOSHOT); nullptr otherwise
  void* nccl_comm = nullptr;   // ncclComm_t; required by the NCCL strategies (local_ranks must be 1)
  std::uint64_t seed = 1;      // inputs are a pure function of (seed, rank, index), so check() can rebuild peers' inputs
};

// What check() found. A case with wrong > 0 is a failed case, never a timing.
struct CheckResult {
  std::int64_t checked = 0;     // output elements compared (all local ranks, all outputs)
  std::int64_t wrong = 0;       // outside tolerance, or still holding the poison pattern
  std::int64_t not_identical = 0;  // ONESHOT: elements that differ bitwise between local ranks
  double max_error = 0;         // largest |got - ref| / scale seen (see docs/kernels.md for the scale)
  std::string first_wrong;      // "rank 1 output[123]: got 0.5, expected 0.25" or empty
  bool ok() const { return wrong == 0 && not_identical == 0; }
};

// Per-case state created by init: device buffers and whatever the run needs. Destroying it frees them.
class StrategyState {
 public:
  virtual ~StrategyState() = default;
};

struct StrategyDescriptor {
  const char* name;            // as samples record it: "ONESHOT", "TWOSHOT", "NCCL" (model/sample.h strategy::)
  Collective collective;
  std::vector<DType> dtypes;           // supported element types
  std::vector<int> rank_counts;        // supported team sizes; empty = any
  std::vector<FusionOp> fusions;       // supported fusion ops (all-reduce); {None} for the others
  bool needs_team;                     // needs StrategyContext::team (registered IPC/virtual workspace)
  bool needs_nccl;                     // needs StrategyContext::nccl_comm

  // Throws KernelError naming the offending parameter when the case or context cannot run.
  void (*validate)(const StrategyContext& ctx, const StrategyCase& c);
  // Bytes of registered workspace each rank needs for this case (0 for NCCL).
  std::int64_t (*workspace_bytes)(const StrategyCase& c);
  // Message size as nccl-tests reports it (the `bytes` column of a sample).
  std::int64_t (*message_bytes)(const StrategyCase& c);
  // busbw = algbw * bus_factor(nranks) (model/bus_factor.h).
  double (*bus_factor)(int nranks);
  // Allocates buffers for the local ranks, fills inputs from ctx.seed, poisons outputs. Validates first.
  std::unique_ptr<StrategyState> (*init)(const StrategyContext& ctx, const StrategyCase& c);
  // Enqueues one collective for all local ranks on `stream` (a cudaStream_t). Asynchronous; makes no
  // synchronous CUDA calls, so it is meant to be capturable in a CUDA graph (not yet tried on a GPU).
  void (*run)(StrategyState& state, void* stream);
  // Synchronises the device, reloads fresh inputs, poisons the outputs, runs the collective once more
  // (legacy default stream), copies the outputs back and compares them with the double-precision CPU
  // reference. Because it runs a collective, every rank of a multi-process team must call it.
  CheckResult (*check)(StrategyState& state);
};

// Every strategy compiled into this build (NCCL ones only when NCCL was found).
const std::vector<const StrategyDescriptor*>& all_strategies();
// nullptr when no strategy of that name implements that collective.
const StrategyDescriptor* find_strategy(const std::string& name, Collective collective);

}  // namespace arfit::kernels
