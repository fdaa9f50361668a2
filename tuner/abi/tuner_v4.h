/* Tuner API v4 (NCCL 2.24.3-1 and later): v3 with regBuff (whether the user buffers can be registered) before
 * nChannels. */
#ifndef ARFIT_TUNER_ABI_TUNER_V4_H
#define ARFIT_TUNER_ABI_TUNER_V4_H

#include "tuner/abi/nccl_common.h"

typedef struct {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* context);
} ncclTuner_v4_t;

#endif
