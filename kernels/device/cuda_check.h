// Error checking for CUDA runtime calls: a failed call throws DeviceError naming the call, file:line and
// the CUDA error string. Host code only.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/kernel_types.h"

namespace arfit::kernels {

[[noreturn]] void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line);

// "" when at least one CUDA device is usable; otherwise why not, e.g.
// "no CUDA device: cudaGetDeviceCount returned 100 (cudaErrorNoDevice: no CUDA-capable device is detected)".
std::string cuda_device_unavailable_reason();

// The CUDA driver's entry point `name` at `cuda_version` (cudaGetDriverEntryPointByVersion), so that nothing links
// libcuda (the unit tests load the kernels library on machines without a driver); nullptr, with the runtime's error
// cleared, when the driver lacks it.
void* cuda_driver_entry_point(const char* name, int cuda_version);

}  // namespace arfit::kernels

#define ARFIT_CUDA_CHECK(call)                                                         \
  do {                                                                                 \
    const cudaError_t arfit_cuda_status_ = (call);                                     \
    if (arfit_cuda_status_ != cudaSuccess)                                             \
      ::arfit::kernels::throw_cuda_error(arfit_cuda_status_, #call, __FILE__, __LINE__); \
  } while (0)
