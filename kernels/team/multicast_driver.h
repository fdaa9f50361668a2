// The CUDA driver calls the multicast staging makes (kernels/team/multicast_staging.h), as a table of function
// pointers: the library finds the real ones at run time (cuda_multicast_driver(), no libcuda at link time), and the
// tests hand MulticastStaging an emulation to check its collective logic where there is no GPU.
#pragma once

#include <cuda.h>

namespace arfit::kernels {

struct MulticastDriver {
  decltype(&cuGetErrorName) error_name;
  decltype(&cuDeviceGet) device_get;
  decltype(&cuMemGetAllocationGranularity) allocation_granularity;
  decltype(&cuMulticastGetGranularity) multicast_granularity;
  decltype(&cuMemCreate) create;
  decltype(&cuMemRelease) release;
  decltype(&cuMemAddressReserve) address_reserve;
  decltype(&cuMemAddressFree) address_free;
  decltype(&cuMemMap) map;
  decltype(&cuMemUnmap) unmap;
  decltype(&cuMemSetAccess) set_access;
  decltype(&cuMemExportToShareableHandle) export_handle;
  decltype(&cuMemImportFromShareableHandle) import_handle;
  decltype(&cuMulticastCreate) multicast_create;
  decltype(&cuMulticastAddDevice) multicast_add_device;
  decltype(&cuMulticastBindMem) multicast_bind_mem;
  decltype(&cuMulticastUnbind) multicast_unbind;
};

// The driver's own entry points (cudaGetDriverEntryPointByVersion at the version of the cuda.h they are typed by),
// looked up once per process. Throws DeviceError naming a call the driver lacks.
const MulticastDriver& cuda_multicast_driver();

}  // namespace arfit::kernels
