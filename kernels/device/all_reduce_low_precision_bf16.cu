// LOWPRECISION all-reduce kernels for bf16 (2, 4, 8 ranks; NONE only): e4m3 transport, fp32 sums
// (kernels/device/low_precision_kernels.h). One translation unit per dtype, as the other algorithms.
#include "kernels/device/cuda_launch.h"

ARFIT_DEFINE_LOW_PRECISION_LAUNCHER(bf16, bf16_t)
