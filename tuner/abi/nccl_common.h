/* NCCL's types a tuner plugin sees, re-declared from NVIDIA/nccl v2.30.7-1 (src/nccl.h.in, src/include/nccl_common.h,
 * src/include/plugin/nccl_tuner.h): a plugin is built without NCCL's internal headers. Values 0..7 of ncclFunc_t and
 * every constant here are the same in every release with tuner API v3 (2.22.3) and later; the number of algorithms
 * is 6 before 2.23.4 (no PAT), so a plugin bounds its loops by the numAlgo / numProto NCCL passes. */
#ifndef ARFIT_TUNER_ABI_NCCL_COMMON_H
#define ARFIT_TUNER_ABI_NCCL_COMMON_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

/* Subsystem flags of a log line; NCCL prints INFO lines only of the subsystems NCCL_DEBUG_SUBSYS names (INIT, ENV,
 * BOOTSTRAP by default). */
#define ARFIT_NCCL_INIT 0x1
#define ARFIT_NCCL_TUNING 0x40

typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclFuncAlltoAll = 8,  /* 2.28.3 */
  ncclFuncScatter = 9,
  ncclFuncGather = 10,
  ncclNumFuncs = 15      /* 2.29.2: AllGatherV, PutSignal, Signal, WaitSignal follow */
} ncclFunc_t;

#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
/* An entry NCCL marked unavailable (not supported, or disabled by NCCL_ALGO / NCCL_PROTO): never to be given a cost. */
#define NCCL_ALGO_PROTO_IGNORE -1.0

#endif
