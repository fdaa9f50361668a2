// TensorRT-LLM's rules around its all-reduce strategy table, as its code applies them -- the one place they are
// stated; format_trtllm.cpp (the table), format_header.cpp and format_json.cpp (which use TensorRT-LLM's
// numbering) follow them. Read in NVIDIA/TensorRT-LLM at the commits of trtllm_versions():
//   cpp/tensorrt_llm/common/customAllReduceUtils.h  selectStrategyLookUpTable, getMaxRequiredWorkspaceSize
//   cpp/tensorrt_llm/thop/allreduceOp.cpp            ifFallbackToNCCL, selectImplementation, runFusionAllReduce
//   tensorrt_llm/_torch/distributed/ops.py           AllReduce.forward (when AUTO reaches the C++ op)
//   tensorrt_llm/_torch/custom_ops/torch_custom_ops.py  AllReduceRunner (the autotuner's tactics)
//
// What the engine does around the lookup, in order (allreduceOp.cpp, selectImplementation):
//   1. a message of more than getMaxRequiredWorkspaceSize(tp) bytes (tokens x hidden x element size, strict >),
//      a TP group without NVLink or P2P, or one spanning nodes: NCCL, before the table is read;
//   2. the table cell [log2(tp) - 1][fusion row][log2(hidden) - 7][log2(tokens)], floors of log2; off the table
//      (TP 16, hidden >= 16384, tokens >= 32768, a fusion op without a row) the version's off-table strategy;
//   3. the value is cast to AllReduceStrategyType unchecked: UB (2), AUTO (3), MNNVL (7) and anything outside
//      0..8 throw "Invalid runtime strategy"; LOWPRECISION (6) needs buffers only allocated when it is the
//      module's strategy; TWOSHOT (5) runs runFusionAllReduce, whose TORCH_CHECK(input.size(0) >= tp_size)
//      throws for fewer tokens than GPUs -- the seq_len < tp downgrade to ONESHOT applies only to a TWOSHOT the
//      user forced, never to a table value.
// The PyTorch backend reaches the table only with strategy AUTO and either TLLM_DISABLE_ALLREDUCE_AUTOTUNE=1 or
// MPI disabled; otherwise its autotuner picks among NCCL_SYMMETRIC, NCCL, ONESHOT and TWOSHOT by measuring.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arfit::codegen {

struct TrtllmVersion {
  std::string commit;             // the commit read (8 hex digits)
  std::string note;               // how it differs from the others
  double workspace_tp2_bytes = 0; // getMaxRequiredWorkspaceSize(world size <= 2)
  double workspace_bytes = 0;     // ... for larger world sizes
  int off_table_code = 0;         // what selectStrategyLookUpTable returns off its table: 0 NCCL, 8 NCCL_SYMMETRIC
};

// The versions read, newest first.
const std::vector<TrtllmVersion>& trtllm_versions();
// --consumer-version for TensorRT-LLM: a commit of trtllm_versions() (7 or more hex digits of it), "" = the newest.
// Throws std::invalid_argument naming --consumer-version.
TrtllmVersion trtllm_version(const std::string& given);

// AllReduceStrategyType's name of a value (NCCL 0, MIN_LATENCY 1, UB 2, AUTO 3, ONESHOT 4, TWOSHOT 5, LOWPRECISION 6,
// MNNVL 7, NCCL_SYMMETRIC 8), "value N" for others.
std::string trtllm_strategy_name(int code);

// Whether TensorRT-LLM runs a table value without throwing: NCCL 0, ONESHOT 4, TWOSHOT 5 (within its
// precondition), NCCL_SYMMETRIC 8.
bool trtllm_table_value_runs(int code);

// Why TensorRT-LLM would throw running `strategy` (a TensorRT-LLM name) in the table cell of (sm, tp, tokens,
// hidden) -- the cell covers tokens [tokens, 2 tokens) and hidden [hidden, 2 hidden) -- or "" when it runs:
//   TWOSHOT with tokens < tp: runFusionAllReduce's TORCH_CHECK(input.size(0) >= tp_size);
//   ONESHOT or TWOSHOT in the hidden 8192 row on SM 120 and up, which reads the SM100 table: the fused kernels'
//   block of hidden / 8 threads exceeds 1024 above hidden 8192 there.
std::string trtllm_precondition(int sm, int tp, std::int64_t tokens, std::int64_t hidden, const std::string& strategy);

// The size gate of ifFallbackToNCCL: messages of more than this many bytes run NCCL whatever the table says.
double trtllm_workspace_bytes(const TrtllmVersion& v, int tp);
// How much of a table cell the gate takes: the cell's messages run from tokens x hidden x element_size to
// (2 tokens - 1) x (2 hidden - 1) x element_size bytes.
enum class GateCover { None, Part, All };
GateCover trtllm_size_gate(const TrtllmVersion& v, int tp, std::int64_t tokens, std::int64_t hidden, int element_size);

// Banner lines for a table of `table_sm`: when TensorRT-LLM reads the table at all and what it decides itself.
std::vector<std::string> trtllm_engine_notes(const TrtllmVersion& v, int table_sm, const std::string& dtype);

}  // namespace arfit::codegen
