// init/run/check shared by the NCCL data-movement strategies (all-gather, reduce-scatter, all-to-all,
// all-to-allv): each supplies its buffer sizes, its launch and its reference check. Also the descriptor fields and
// the checks that every NCCL strategy, all-reduce included, shares.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>
#include <vector>

#include "kernels/reference/check.h"
#include "kernels/strategy.h"

namespace arfit::kernels::detail {

struct NcclCollectiveOps {
  const char* what;  // "NCCL all-gather", for messages
  Collective collective;
  // Elements rank `rank` sends / receives.
  std::int64_t (*send_count)(const StrategyCase& c, int rank);
  std::int64_t (*recv_count)(const StrategyCase& c, int rank);
  // Throws KernelError for impossible shapes (beyond dtype / rank / context checks).
  void (*validate_shape)(const StrategyCase& c);
  void (*launch)(const StrategyCase& c, int rank, const void* send, void* recv, ncclComm_t comm, cudaStream_t stream);
  // Compares `recv` of `rank` with what the seeded inputs of all ranks imply.
  void (*check)(const StrategyCase& c, int rank, std::uint64_t seed, const std::vector<unsigned char>& recv,
                CheckResult& result);
};

void validate_nccl_collective(const NcclCollectiveOps& ops, const StrategyContext& ctx, const StrategyCase& c);
std::unique_ptr<StrategyState> init_nccl_collective(const NcclCollectiveOps& ops, const StrategyContext& ctx,
                                                    const StrategyCase& c);
void run_nccl_collective(StrategyState& state, void* stream);
CheckResult check_nccl_collective(StrategyState& state);

// Plan-time checks shared by every NCCL strategy: one rank per process (no virtual ranks), the collective, a
// fusion the strategy lists, at least one rank.
void validate_nccl_case(Collective collective, const std::vector<FusionOp>& fusions, const StrategyCase& c,
                        const StrategyLimits& limits);

// What an NCCL strategy supplies itself: the StrategyDescriptor fields of the same names.
struct NcclStrategyFunctions {
  decltype(StrategyDescriptor::validate_case) validate_case;
  decltype(StrategyDescriptor::validate_context) validate_context;
  decltype(StrategyDescriptor::init) init;
  decltype(StrategyDescriptor::run) run;
  decltype(StrategyDescriptor::check) check;
};

// An NCCL descriptor: what every NCCL strategy shares (backend "nccl", `collective` and its byte counts,
// bf16/fp16/fp32, an NCCL communicator, no workspace) with the strategy's name, fusions and functions.
StrategyDescriptor nccl_descriptor(Collective collective, const std::string& strategy, std::vector<FusionOp> fusions,
                                   NcclStrategyFunctions functions);

// The descriptor of an NCCL data-movement collective (backend "nccl", bf16/fp16/fp32, any rank count, no fusion).
StrategyDescriptor nccl_collective_descriptor(const NcclCollectiveOps& ops);

// ---- shared by the all-reduce strategies NCCL and NCCL_SYMMETRIC ----

// KernelError (Count), the message starting with `who`, unless the case has a positive element count.
void require_positive_count(const char* who, const StrategyCase& c);
// The context checks of an NCCL all-reduce, the messages starting with `who`: the collective, a communicator, a fusion
// in `fusions`.
void validate_nccl_all_reduce_context(const char* who, const std::vector<FusionOp>& fusions, const StrategyContext& ctx,
                                      const StrategyCase& c);
// One rank's outputs of an NCCL all-reduce against the reference, with NCCL's rounding allowance (ring and tree round
// to the element type after every step: up to nranks - 1 roundings); ranks are not required to agree bitwise.
CheckResult check_nccl_all_reduce_outputs(const StrategyCase& c, std::uint64_t seed, RankOutputs outputs);

// Offsets (prefix sums) of a row or column of the all-to-allv count matrix.
std::vector<std::int64_t> exclusive_prefix_sum(const std::vector<std::int64_t>& counts);

}  // namespace arfit::kernels::detail
