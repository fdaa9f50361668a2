// Thin NCCL wrappers for the collectives arbench measures, with arfit's dtype mapping and errors that name
// the call: all-reduce, all-gather, reduce-scatter, all-to-all, all-to-allv (grouped send/recv with per-peer
// counts), and the unfused "NCCL all-reduce, then residual + RMSNorm (+ e4m3) kernel" path that the fused
// custom kernels are compared against. Only built when NCCL is found (ARFIT_HAVE_NCCL).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdint>
#include <vector>

#include "kernels/all_reduce.h"
#include "kernels/kernel_types.h"

namespace arfit::kernels {

[[noreturn]] void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line);

ncclDataType_t nccl_dtype(DType dtype);

// Element counts as in kernels/strategy.h (nccl-tests' conventions).
void nccl_all_reduce(const void* send, void* recv, std::int64_t count, DType dtype, ncclComm_t comm,
                     cudaStream_t stream);
void nccl_all_gather(const void* send, void* recv, std::int64_t count_per_rank, DType dtype, ncclComm_t comm,
                     cudaStream_t stream);
void nccl_reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ncclComm_t comm,
                         cudaStream_t stream);
// count_per_peer elements to and from every rank (send and recv hold nranks * count_per_peer elements).
void nccl_all_to_all(const void* send, void* recv, std::int64_t count_per_peer, DType dtype, ncclComm_t comm,
                     cudaStream_t stream);
// send_counts[p] elements at send_offsets[p] go to rank p; recv_counts[p] elements from rank p land at
// recv_offsets[p] (element offsets). One ncclGroupStart/End around all sends and receives.
void nccl_all_to_allv(const void* send, const std::vector<std::int64_t>& send_counts,
                      const std::vector<std::int64_t>& send_offsets, void* recv,
                      const std::vector<std::int64_t>& recv_counts, const std::vector<std::int64_t>& recv_offsets,
                      DType dtype, ncclComm_t comm, cudaStream_t stream);

// The unfused fused-op baseline: ncclAllReduce(input -> reduced), then the residual + RMSNorm (+ e4m3)
// kernel reading `reduced` (b.input is the all-reduce input; `reduced` is a scratch buffer of count elements,
// it may be b.output).
void nccl_all_reduce_then_residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden,
                                            float rms_eps, float fp8_scale, void* reduced,
                                            const AllReduceBuffers& b, ncclComm_t comm, cudaStream_t stream);

}  // namespace arfit::kernels

#define ARFIT_NCCL_CHECK(call)                                                          \
  do {                                                                                  \
    const ncclResult_t arfit_nccl_status_ = (call);                                     \
    if (arfit_nccl_status_ != ncclSuccess)                                              \
      ::arfit::kernels::throw_nccl_error(arfit_nccl_status_, #call, __FILE__, __LINE__); \
  } while (0)
