// The kernels compiled as host C++ with 1 thread(s) per block.
#include "kernels/device/host_all_reduce.h"

ARFIT_INSTANTIATE_HOST_KERNELS(1)
