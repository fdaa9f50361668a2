// init/run/check shared by the NCCL data-movement strategies (all-gather, reduce-scatter, all-to-all,
// all-to-allv): each supplies its buffer sizes, its launch and its reference check.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <vector>

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

// The descriptor of an NCCL data-movement collective (backend "nccl", bf16/fp16/fp32, any rank count, no fusion).
StrategyDescriptor nccl_collective_descriptor(const NcclCollectiveOps& ops);

// Offsets (prefix sums) of a row or column of the all-to-allv count matrix.
std::vector<std::int64_t> exclusive_prefix_sum(const std::vector<std::int64_t>& counts);

}  // namespace arfit::kernels::detail
