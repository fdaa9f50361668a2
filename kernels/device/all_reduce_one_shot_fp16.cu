// one-shot all-reduce kernels for fp16 (2, 4, 8 ranks x NONE / RESIDUAL_RMS_NORM / RESIDUAL_RMS_NORM_QUANT_FP8).
// One translation unit per (algorithm, dtype) keeps each nvcc invocation small and lets them build in parallel.
#include "kernels/device/cuda_launch.h"

ARFIT_DEFINE_ALL_REDUCE_LAUNCHER(one_shot, OneShot, fp16, fp16_t)
