// The strategy descriptor: the one description of a collective implementation, read by kernels/ (its
// tests) and by bench/ (arbench plans, validates and runs every strategy through it), in the manner of
// nccl-tests' `struct testColl` (name, byte counts, bus factor, init, run, check). One descriptor per strategy,
// each defined in its own file (kernels/strategies/strategy_*.cpp for the GPU strategies, bench/host/*.cpp for
// the host backend's); all_strategies() lists kernels/'. bench's Descriptor (bench/descriptor.h) is this
// struct plus bench's per-case hooks over its own grid Case.
//
// This header has no CUDA dependency (streams are passed as void*), so code that only plans or validates
// grids can include it everywhere. The GPU descriptor objects live in the CUDA library arfit_kernels (only
// built when nvcc exists, ARFIT_HAVE_CUDA).
//
// Typical use (one case; error handling left out):
//   const StrategyDescriptor& s = *find_strategy("ONESHOT", Collective::AllReduce);
//   s.validate_case(c, limits);                          // plan time: KernelError naming the parameter
//   std::unique_ptr<StrategyState> st = s.init(ctx, c);  // buffers, seeded inputs, poisoned outputs
//   for (...) s.run(*st, stream);                        // timed region (CUDA-graph capturable)
//   CheckResult r = s.check(*st);                        // outside the timed region
#pragma once

#include <cstdint>
#include <functional>
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
  float fp8_scale = 1.0f;         // per-tensor scale of the e4m3 output: fp8 = e4m3(output / fp8_scale), output as stored
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

// Per-rank byte counts of one message, as nccl-tests' getCollByteCount gives them.
struct ByteCounts {
  std::int64_t send_bytes = 0;
  std::int64_t recv_bytes = 0;
};
// nccl-tests' convention for `count` elements of the message (all-gather: the gathered output; reduce-scatter,
// all-to-all(v): the input each rank holds; all-reduce: the tensor) of `elem` bytes on `nranks` ranks.
ByteCounts collective_byte_counts(Collective collective, std::int64_t count, int elem, int nranks);

// What a planned run offers, checked before anything is allocated.
struct StrategyLimits {
  int world = 1;                 // processes
  std::int64_t workspace = 0;    // the largest message a workspace strategy accepts, bytes per rank
  bool virtual_ranks = false;    // one process drives every rank of the team on one device
};

struct StrategyDescriptor {
  std::string backend;     // "custom", "nccl" (kernels/), "host" (bench/host)
  Collective collective = Collective::AllReduce;
  std::string strategy;    // as samples record it: "ONESHOT", "TWOSHOT", "NCCL", "MPI" (model/sample.h strategy::)
  std::vector<FusionOp> fusions;     // supported fusion ops (all-reduce); {None} for the others
  std::vector<std::string> dtypes;   // supported element types, canonical names (bf16, fp16, fp32)
  std::vector<int> rank_counts;      // supported team sizes; empty = any
  bool uses_workspace = false;       // needs a registered workspace (a Team) sized for the case
  bool needs_nccl = false;           // needs StrategyContext::nccl_comm
  // false: the result is within a stated error bound of the sum, not the rounding of it (LOWPRECISION's e4m3
  // transport). Such a strategy is never a default: arbench measures it only when --strategy names it, and its
  // samples carry its own strategy name, so no curve pools it with the exact ones.
  bool exact = true;
  // Per-rank send/receive bytes for `count` elements of `elem` bytes on `nranks` ranks.
  std::function<ByteCounts(std::int64_t count, int elem, int nranks)> byte_counts;

  // ---- the strategies kernels/ implements; null for the ones bench/host implements itself ----
  // Plan-time check (no team, no device): throws KernelError naming the parameter at fault.
  std::function<void(const StrategyCase& c, const StrategyLimits& limits)> validate_case;
  // Run-time check against the context (the team or communicator it was given).
  std::function<void(const StrategyContext& ctx, const StrategyCase& c)> validate_context;
  // Bytes of registered workspace each rank needs for this case (0 without a workspace).
  std::function<std::int64_t(const StrategyCase& c)> workspace;
  // Allocates buffers for the local ranks, fills inputs from ctx.seed, poisons outputs. Validates first.
  std::function<std::unique_ptr<StrategyState>(const StrategyContext& ctx, const StrategyCase& c)> init;
  // Enqueues one collective for all local ranks on `stream` (a cudaStream_t). Asynchronous; makes no
  // synchronous CUDA calls, so it is meant to be capturable in a CUDA graph (not yet tried on a GPU).
  std::function<void(StrategyState& state, void* stream)> run;
  // Synchronises the device, reloads fresh inputs, poisons the outputs, runs the collective once more
  // (legacy default stream), copies the outputs back and compares them with the double-precision CPU
  // reference. Because it runs a collective, every rank of a multi-process team must call it.
  std::function<CheckResult(StrategyState& state)> check;

  // busbw = algbw * bus_factor(nranks) (model/bus_factor.h).
  double bus_factor(int nranks) const;
  bool supports(FusionOp fusion) const;
  bool supports(const std::string& dtype) const;  // any name canonical_dtype understands
};

// Every strategy compiled into this build (NCCL ones only when NCCL was found).
const std::vector<const StrategyDescriptor*>& all_strategies();
// nullptr when no strategy of that name implements that collective.
const StrategyDescriptor* find_strategy(const std::string& name, Collective collective);

}  // namespace arfit::kernels
