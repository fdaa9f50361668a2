// multimem (NVLS) one-shot all-reduce kernels for fp32 (2, 4, 8 ranks x NONE). The multimem PTX exists only for sm_90
// and up (primitives.h); the sm_80 image of this unit traps, and the strategy is refused before a launch there.
#include "kernels/device/cuda_launch.h"

ARFIT_DEFINE_ALL_REDUCE_LAUNCHER(multimem_one_shot, MultimemOneShot, fp32, float)
