// Shared plumbing of the strategy descriptors (kernels/strategy_*.cpp): device buffers, seeded uploads,
// poisoning, and element comparison against the CPU references. Host code linking the CUDA runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/reference.h"
#include "kernels/strategy.h"

namespace arfit::kernels::detail {

// Byte pattern written over outputs before a checked run: all-ones is NaN in bf16, fp16, fp32 and e4m3, so an
// element the kernel never wrote fails the comparison.
inline constexpr int kPoisonByte = 0xff;

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

// Seeded host values of one rank's buffer, rounded to dtype (kernels/reference.h: fill_seeded).
std::vector<unsigned char> seeded_host(DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank);
// Uploads seeded values into `buffer`.
void upload_seeded(DeviceBuffer& buffer, DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank);
std::vector<unsigned char> download(const DeviceBuffer& buffer, std::size_t bytes);

// Adds one comparison to `result` (keeps the first failure's description).
void record(CheckResult& result, bool ok, double error, const std::string& where, double got, double expected);

// Compares `count` elements of `got` (dtype) against `expected` with tolerance * scale[i].
void compare_elements(CheckResult& result, DType dtype, const std::vector<unsigned char>& got,
                      const std::vector<double>& expected, const std::vector<double>& scale, double tolerance,
                      const std::string& what);
// Exact comparison (data movement collectives): got[i] must equal expected[i] bit for bit after rounding to dtype.
void compare_exact(CheckResult& result, DType dtype, const std::vector<unsigned char>& got, std::int64_t got_offset,
                   const std::vector<unsigned char>& expected, std::int64_t expected_offset, std::int64_t count,
                   const std::string& what);

// Throws KernelError unless `c.collective` is `expected` and the context has what the strategy needs.
void require_collective(const char* strategy, const StrategyCase& c, Collective expected);
void require_nccl_context(const char* strategy, const StrategyContext& ctx);
void require_dtype_listed(const char* strategy, const StrategyDescriptor& d, const StrategyCase& c);

}  // namespace arfit::kernels::detail
