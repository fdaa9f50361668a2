/* Tuner API v3 (NCCL 2.22.3-1 and later look for it): NCCL's cost table replaces choosing the algorithm directly.
 * collCostTable is NCCL's contiguous float[numAlgo][numProto] passed as float**: cast it back, never index it as
 * rows of pointers. */
#ifndef ARFIT_TUNER_ABI_TUNER_V3_H
#define ARFIT_TUNER_ABI_TUNER_V3_H

#include "tuner/abi/nccl_common.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v3_t;

#endif
