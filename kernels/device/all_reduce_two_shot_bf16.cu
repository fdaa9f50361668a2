// two-shot all-reduce kernels for bf16 (2, 4, 8 ranks x NONE / RESIDUAL_RMS_NORM / RESIDUAL_RMS_NORM_QUANT_FP8).
// One translation unit per (algorithm, dtype) keeps each nvcc invocation small and lets them build in parallel.
#include "kernels/device/cuda_launch.h"

ARFIT_DEFINE_ALL_REDUCE_LAUNCHER(two_shot, TwoShot, bf16, bf16_t)
