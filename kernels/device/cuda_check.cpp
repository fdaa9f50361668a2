#include "kernels/device/cuda_check.h"

namespace arfit::kernels {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                    cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

std::string cuda_device_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return "no CUDA device: cudaGetDeviceCount returned " + std::to_string(static_cast<int>(status)) + " (" +
           cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device: cudaGetDeviceCount returned 0 devices";
  return "";
}

void* cuda_driver_entry_point(const char* name, int cuda_version) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &entry, cuda_version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess || !entry) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return entry;
}

}  // namespace arfit::kernels
