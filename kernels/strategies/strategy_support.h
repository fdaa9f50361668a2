// Shared plumbing of the strategy descriptors (kernels/strategies/strategy_*.cpp): device buffers, seeded
// uploads and context checks; the comparisons with the CPU references are in kernels/reference/check.h.
// Host code linking the CUDA runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference/check.h"
#include "kernels/strategy.h"

namespace arfit::kernels::detail {

// One cudaMalloc'ed buffer (at least 16 bytes, 256-byte aligned), freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  void upload(const void* host, std::size_t bytes);
  void download(void* host, std::size_t bytes) const;
  void fill(int byte_value);

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Uploads seeded values (seeded_host) into `buffer`.
void upload_seeded(DeviceBuffer& buffer, DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank);
std::vector<unsigned char> download(const DeviceBuffer& buffer, std::size_t bytes);

// Throws KernelError unless `c.collective` is `expected` and the context has what the strategy needs.
void require_collective(const char* strategy, const StrategyCase& c, Collective expected);
void require_nccl_context(const char* strategy, const StrategyContext& ctx);
void require_fusion_listed(const char* strategy, const std::vector<FusionOp>& fusions, const StrategyCase& c);

}  // namespace arfit::kernels::detail
