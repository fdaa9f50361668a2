#include "kernels/strategies/nccl_collectives.h"

#include <string>

namespace arfit::kernels {

void throw_nccl_error(ncclResult_t status, const char* call, const char* file, int line) {
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                    ncclGetErrorString(status));
}

ncclDataType_t nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::BF16: return ncclBfloat16;
    case DType::FP16: return ncclFloat16;
    case DType::FP32: return ncclFloat32;
  }
  return ncclFloat32;
}

namespace {
std::size_t as_count(std::int64_t n, const char* what) {
  if (n < 0) throw KernelError(std::string("NCCL wrapper: negative ") + what + " " + std::to_string(n));
  return static_cast<std::size_t>(n);
}
}  // namespace

void nccl_all_reduce(const void* send, void* recv, std::int64_t count, DType dtype, ncclComm_t comm,
                     cudaStream_t stream) {
  ARFIT_NCCL_CHECK(ncclAllReduce(send, recv, as_count(count, "count"), nccl_dtype(dtype), ncclSum, comm, stream));
}

void nccl_all_gather(const void* send, void* recv, std::int64_t count_per_rank, DType dtype, ncclComm_t comm,
                     cudaStream_t stream) {
  ARFIT_NCCL_CHECK(ncclAllGather(send, recv, as_count(count_per_rank, "count"), nccl_dtype(dtype), comm, stream));
}

void nccl_reduce_scatter(const void* send, void* recv, std::int64_t recv_count, DType dtype, ncclComm_t comm,
                         cudaStream_t stream) {
  ARFIT_NCCL_CHECK(
      ncclReduceScatter(send, recv, as_count(recv_count, "count"), nccl_dtype(dtype), ncclSum, comm, stream));
}

void nccl_all_to_all(const void* send, void* recv, std::int64_t count_per_peer, DType dtype, ncclComm_t comm,
                     cudaStream_t stream) {
  int nranks = 0;
  ARFIT_NCCL_CHECK(ncclCommCount(comm, &nranks));
  std::vector<std::int64_t> counts(static_cast<std::size_t>(nranks), count_per_peer), offsets(counts.size());
  for (std::size_t p = 0; p < counts.size(); ++p) offsets[p] = static_cast<std::int64_t>(p) * count_per_peer;
  nccl_all_to_allv(send, counts, offsets, recv, counts, offsets, dtype, comm, stream);
}

void nccl_all_to_allv(const void* send, const std::vector<std::int64_t>& send_counts,
                      const std::vector<std::int64_t>& send_offsets, void* recv,
                      const std::vector<std::int64_t>& recv_counts, const std::vector<std::int64_t>& recv_offsets,
                      DType dtype, ncclComm_t comm, cudaStream_t stream) {
  int nranks = 0;
  ARFIT_NCCL_CHECK(ncclCommCount(comm, &nranks));
  const auto n = static_cast<std::size_t>(nranks);
  if (send_counts.size() != n || send_offsets.size() != n || recv_counts.size() != n || recv_offsets.size() != n) {
    throw KernelError("nccl_all_to_allv: per-peer count/offset vectors must have " + std::to_string(nranks) +
                      " entries (one per rank)");
  }
  const std::size_t element = static_cast<std::size_t>(dtype_bytes(dtype));
  const ncclDataType_t type = nccl_dtype(dtype);
  ARFIT_NCCL_CHECK(ncclGroupStart());
  for (std::size_t p = 0; p < n; ++p) {
    const int peer = static_cast<int>(p);
    if (send_counts[p] > 0) {
      ARFIT_NCCL_CHECK(ncclSend(static_cast<const char*>(send) + as_count(send_offsets[p], "offset") * element,
                                as_count(send_counts[p], "count"), type, peer, comm, stream));
    }
    if (recv_counts[p] > 0) {
      ARFIT_NCCL_CHECK(ncclRecv(static_cast<char*>(recv) + as_count(recv_offsets[p], "offset") * element,
                                as_count(recv_counts[p], "count"), type, peer, comm, stream));
    }
  }
  ARFIT_NCCL_CHECK(ncclGroupEnd());
}

void nccl_all_reduce_then_residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden,
                                            float rms_eps, float fp8_scale, void* reduced,
                                            const AllReduceBuffers& b, ncclComm_t comm, cudaStream_t stream) {
  validate_residual_rms_norm(dtype, fusion, count, hidden, rms_eps, fp8_scale, reduced, b);
  nccl_all_reduce(b.input, reduced, count, dtype, comm, stream);
  residual_rms_norm(dtype, fusion, count, hidden, rms_eps, fp8_scale, reduced, b, stream);
}

}  // namespace arfit::kernels
