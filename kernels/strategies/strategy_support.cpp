#include "kernels/strategies/strategy_support.h"

#include <cuda_runtime_api.h>

#include <algorithm>

#include "kernels/device/cuda_check.h"

namespace arfit::kernels::detail {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  ARFIT_CUDA_CHECK(cudaMalloc(&data_, std::max<std::size_t>(bytes, 16)));
}
DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept : data_(other.data_), bytes_(other.bytes_) {
  other.data_ = nullptr;
  other.bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFree(data_);
    data_ = other.data_;
    bytes_ = other.bytes_;
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}
void DeviceBuffer::upload(const void* host, std::size_t bytes) {
  ARFIT_CUDA_CHECK(cudaMemcpy(data_, host, bytes, cudaMemcpyHostToDevice));
}
void DeviceBuffer::download(void* host, std::size_t bytes) const {
  ARFIT_CUDA_CHECK(cudaMemcpy(host, data_, bytes, cudaMemcpyDeviceToHost));
}
void DeviceBuffer::fill(int byte_value) { ARFIT_CUDA_CHECK(cudaMemset(data_, byte_value, std::max<std::size_t>(bytes_, 16))); }

void upload_seeded(DeviceBuffer& buffer, DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank) {
  const auto host = seeded_host(dtype, count, seed, role, rank);
  buffer.upload(host.data(), host.size());
}

std::vector<unsigned char> download(const DeviceBuffer& buffer, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  buffer.download(host.data(), bytes);
  return host;
}

void require_collective(const char* strategy, const StrategyCase& c, Collective expected) {
  if (c.collective != expected) {
    throw KernelError(std::string(strategy) + " implements " + to_string(expected) + ", not " + to_string(c.collective));
  }
}

void require_nccl_context(const char* strategy, const StrategyContext& ctx) {
  if (!ctx.nccl_comm) throw KernelError(std::string(strategy) + " needs an NCCL communicator (StrategyContext::nccl_comm)");
  if (ctx.local_ranks != 1) {
    throw KernelError(std::string(strategy) + " drives one rank per process (NCCL allows one rank per GPU); got " +
                      std::to_string(ctx.local_ranks) + " local ranks");
  }
  if (ctx.nranks < 1) throw KernelError(std::string(strategy) + ": nranks must be >= 1");
}

void require_fusion_listed(const char* strategy, const std::vector<FusionOp>& fusions, const StrategyCase& c) {
  if (std::find(fusions.begin(), fusions.end(), c.fusion) == fusions.end()) {
    throw KernelError(std::string(strategy) + ": fusion " + to_string(c.fusion) + " with dtype " + to_string(c.dtype) +
                          " is not supported by " + to_string(c.collective),
                      KernelParam::Fusion);
  }
  if (c.nranks < 1) {
    throw KernelError(std::string(strategy) + ": nranks must be >= 1, got " + std::to_string(c.nranks), KernelParam::Ranks);
  }
}

}  // namespace arfit::kernels::detail
