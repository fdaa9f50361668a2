#include "kernels/strategy_support.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "kernels/cuda_check.h"

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

std::vector<unsigned char> seeded_host(DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank) {
  std::vector<unsigned char> host(static_cast<std::size_t>(count) * static_cast<std::size_t>(dtype_bytes(dtype)));
  fill_seeded(dtype, host.data(), count, seed, role, rank);
  return host;
}

void upload_seeded(DeviceBuffer& buffer, DType dtype, std::int64_t count, std::uint64_t seed, InputRole role, int rank) {
  const auto host = seeded_host(dtype, count, seed, role, rank);
  buffer.upload(host.data(), host.size());
}

std::vector<unsigned char> download(const DeviceBuffer& buffer, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  buffer.download(host.data(), bytes);
  return host;
}

void record(CheckResult& result, bool ok, double error, const std::string& where, double got, double expected) {
  ++result.checked;
  if (std::isfinite(error)) result.max_error = std::max(result.max_error, error);
  if (!ok) {
    ++result.wrong;
    if (result.first_wrong.empty()) {
      std::ostringstream s;
      s.precision(9);
      s << where << ": got ";
      if (std::isnan(got)) {
        s << "NaN (the poison pattern: never written, or a NaN result)";
      } else {
        s << got;
      }
      s << ", expected " << expected;
      result.first_wrong = s.str();
    }
  }
}

void compare_elements(CheckResult& result, DType dtype, const std::vector<unsigned char>& got,
                      const std::vector<double>& expected, const std::vector<double>& scale, double tolerance,
                      const std::string& what) {
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double g = element_at(dtype, got.data(), static_cast<std::int64_t>(i));
    const bool ok = within_tolerance(g, expected[i], scale[i], tolerance);
    const double error = scale[i] > 0 ? std::fabs(g - expected[i]) / scale[i] : std::fabs(g - expected[i]);
    if (!ok || !result.first_wrong.empty()) {
      record(result, ok, ok ? error : INFINITY, what + "[" + std::to_string(i) + "]", g, expected[i]);
    } else {
      ++result.checked;
      result.max_error = std::max(result.max_error, error);
    }
  }
}

void compare_exact(CheckResult& result, DType dtype, const std::vector<unsigned char>& got, std::int64_t got_offset,
                   const std::vector<unsigned char>& expected, std::int64_t expected_offset, std::int64_t count,
                   const std::string& what) {
  const std::size_t size = static_cast<std::size_t>(dtype_bytes(dtype));
  for (std::int64_t i = 0; i < count; ++i) {
    const unsigned char* g = got.data() + static_cast<std::size_t>(got_offset + i) * size;
    const unsigned char* e = expected.data() + static_cast<std::size_t>(expected_offset + i) * size;
    const bool ok = std::memcmp(g, e, size) == 0;
    ++result.checked;
    if (!ok) {
      --result.checked;
      record(result, false, INFINITY, what + "[" + std::to_string(got_offset + i) + "]",
             element_at(dtype, got.data(), got_offset + i), element_at(dtype, expected.data(), expected_offset + i));
    }
  }
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

void require_dtype_listed(const char* strategy, const StrategyDescriptor& d, const StrategyCase& c) {
  if (std::find(d.dtypes.begin(), d.dtypes.end(), c.dtype) == d.dtypes.end()) {
    throw KernelError(std::string(strategy) + ": dtype " + to_string(c.dtype) + " is not supported");
  }
  if (std::find(d.fusions.begin(), d.fusions.end(), c.fusion) == d.fusions.end()) {
    throw KernelError(std::string(strategy) + ": fusion " + to_string(c.fusion) + " with dtype " + to_string(c.dtype) +
                      " is not supported by " + to_string(c.collective));
  }
  if (c.nranks < 1) throw KernelError(std::string(strategy) + ": nranks must be >= 1, got " + std::to_string(c.nranks));
}

}  // namespace arfit::kernels::detail
