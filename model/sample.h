// One measured point of a collective, the record every part of arfit exchanges.
// model/ holds pure data types and math: no Ceres, no CUDA, no MPI.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace arfit {

// Gather and Scatter: NCCL 2.28's ncclGather/ncclScatter (nccl-tests' gather_perf, scatter_perf); the message is the
// whole buffer (nranks x the per-rank count), as nccl-tests' size column gives it.
enum class Collective { AllReduce, AllGather, ReduceScatter, AllToAll, AllToAllV, Broadcast, Reduce, SendRecv, Gather, Scatter };

// Fusion ops in TensorRT-LLM's order (the order of the codegen table's fusion axis: the first four), then the
// OUT_QUANT variants, which also write the unquantised norm output. TensorRT-LLM's AllReduceFusionOp numbers them
// NONE 0, RESIDUAL_RMS_NORM 1, ..._QUANT_FP8 4, ..._QUANT_NVFP4 5, ..._OUT_QUANT_FP8 6, ..._OUT_QUANT_NVFP4 7
// (codegen/format_trtllm.cpp); its strategy table has rows for the first four only and looks the OUT_QUANT ones up
// in the QUANT rows.
enum class FusionOp {
  None,
  ResidualRmsNorm,
  ResidualRmsNormQuantFp8,
  ResidualRmsNormQuantNvfp4,
  ResidualRmsNormOutQuantFp8,
  ResidualRmsNormOutQuantNvfp4,
};

// Canonical names ("allreduce", "NONE", ...); parse accepts common aliases
// ("all_reduce", "AllReduce", "RESIDUAL_RMS_NORM", ...). Both throw std::invalid_argument on unknowns.
std::string to_string(Collective c);
std::string to_string(FusionOp f);
Collective parse_collective(const std::string& s);
FusionOp parse_fusion(const std::string& s);
std::optional<Collective> try_parse_collective(const std::string& s);
std::optional<FusionOp> try_parse_fusion(const std::string& s);
const std::vector<Collective>& all_collectives();
std::string known_collectives();  // "allreduce, allgather, ...": all_collectives' names, for messages
// The codegen table's fusion axis: NONE, RESIDUAL_RMS_NORM, ..._QUANT_FP8, ..._QUANT_NVFP4 (TensorRT-LLM's table).
const std::vector<FusionOp>& all_fusions();
// Every fusion op: all_fusions() and the OUT_QUANT variants (what a sample or arbench may name).
const std::vector<FusionOp>& all_fusion_ops();

// Known strategy names; strategies are open-ended strings, these are the ones codegen numbers.
namespace strategy {
inline constexpr const char* kNccl = "NCCL";
inline constexpr const char* kOneShot = "ONESHOT";
inline constexpr const char* kTwoShot = "TWOSHOT";
// Quantised transport (e4m3, TensorRT-LLM AllReduceStrategy.LOWPRECISION): not exact, never pooled with the others.
inline constexpr const char* kLowPrecision = "LOWPRECISION";
inline constexpr const char* kNcclSymmetric = "NCCL_SYMMETRIC";
// NVLS all-reduces over a multicast object (kernels/strategies/strategy_multimem_*.cpp): PyTorch symmetric memory's
// multimem_one_shot_all_reduce / multimem_all_reduce_ (vLLM runs them above its custom all-reduce bound).
inline constexpr const char* kMultimemOneShot = "MULTIMEM_ONESHOT";
inline constexpr const char* kMultimemTwoShot = "MULTIMEM_TWOSHOT";
}  // namespace strategy

// Bytes per element for a dtype name ("bf16", "bfloat16", "half", "fp16", "float", "fp32", "int8", "fp8", "f8e5m2",
// ...). Returns 0 for unknown names, sub-byte types (fp4, int4) among them: their packing is the format's own.
int dtype_size(const std::string& dtype);
// Canonical dtype name ("bf16", "fp16", "fp32", "fp64", "int8", "int16", "int32", "int64", "fp8_e4m3", "fp8_e5m2",
// "uint8", ...; nccl-tests' f8e4m3/f8e5m2 and PyTorch's float8_e4m3fn/float8_e5m2 among the aliases); unknown
// names pass through.
std::string canonical_dtype(const std::string& dtype);

enum class SampleStatus { Ok, Failed };

struct Sample {
  Collective collective = Collective::AllReduce;
  std::string strategy = strategy::kNccl;
  FusionOp fusion = FusionOp::None;
  std::string dtype = "bf16";
  int nranks = 0;
  int nnodes = 1;
  std::string device;        // e.g. "NVIDIA H100 80GB HBM3"; free text
  int sm = 0;                // SM version, e.g. 90; 0 = unknown
  std::int64_t tokens = 0;   // 0 when the point is a plain byte size
  std::int64_t hidden = 0;
  std::int64_t bytes = 0;    // message size as nccl-tests defines it per collective
  double time_us = 0;        // central value (median) of the iterations
  double p10_us = 0, p90_us = 0;  // spread; 0 = not recorded
  double min_us = 0, max_us = 0;  // 0 = not recorded
  int iterations = 0;        // 0 = unknown
  bool in_place = false;
  SampleStatus status = SampleStatus::Ok;  // Failed rows never carry timings that are used
  std::int64_t wrong = 0;    // wrong-element count reported by the correctness check
  std::string backend;       // nccl-tests, aiconfigurator, arbench-host, arbench-nccl, ...
  std::string source;        // free-form: file name, run id
  std::string splits;        // all-to-allv split "B,T0-T1-...,D" or per-rank bytes; empty otherwise
  std::map<std::string, std::string> extra;  // unknown columns, kept on round-trip
  long line = 0;             // line of the input it was read from (1-based), for messages; 0 = none (a measurement,
                             // a JSON document: its reader names the value's pointer). Not a sample CSV column

  bool ok() const { return status == SampleStatus::Ok; }
};

// What a sample may say, far beyond any machine but short of what the fit and the models file cannot hold (a
// time of 1e-300 µs underflows the fit's logs; group_model.h bounds a models file by the same values): up to
// 2^20 ranks, 1e18 bytes, and times of an ok sample within [1e-6, 1e9] µs (a picosecond to a quarter hour).
inline constexpr int kMaxSampleRanks = 1 << 20;
inline constexpr double kMaxSampleBytes = 1e18;
inline constexpr double kMinSampleTimeUs = 1e-6;
inline constexpr double kMaxSampleTimeUs = 1e9;

// Bytes of a message of tokens x hidden elements of `dtype`, as predict, codegen's grid, plot's cells, whatif and
// the curves (fit/curves.h curve_bytes) size a shaped message; 0 when the type's element size is unknown
// (dtype_size): a guess (one byte an element, as before) put an fp4 message at twice its size, silently.
double message_bytes(double tokens, double hidden, const std::string& dtype);
// Bytes of one element of a DLRM all-to-allv split ("B,T0-T1-...,D", model/alltoallv.h) of a sample or query of
// `dtype`: its element size, else 4 (fp32, the DLRM embeddings' type). The one rule the samples reader, the fit,
// predict and plot read such a split by (they took 4 or 1 for a type of unknown size).
double dlrm_element_bytes(const std::string& dtype);
// Why a size an option asks for is beyond kMaxSampleBytes, the largest a sample or a model holds (no model could
// ever answer it): "OPTION: WHAT is B bytes, above 1e+18, the largest size arfit models", WHAT as the user gave
// it ("size '2e18'", "1099511627776 x 1099511627776 x bf16"); "" within the bound. One message for every option.
std::string byte_bound_problem(const std::string& option, const std::string& what, double bytes);

// Two counts an option pair gives that cannot both hold: `nnodes` nodes for `nranks` GPUs (more nodes than GPUs).
// Throws std::invalid_argument "--nnodes N is more nodes than RANKS_OPTION M has GPUs" (ingest, predict and the
// Python package with --nranks, whatif with --tp); nothing when `nranks` is 0, not given.
void require_nodes_within_ranks(int nnodes, int nranks, const std::string& ranks_option);

// A value of `s` beyond those bounds (or more nodes than ranks): the field and why, for the reader's message.
struct SampleBoundProblem {
  std::string field, reason;
};
std::optional<SampleBoundProblem> sample_bound_problem(const Sample& s);
// A name `s` carries into models files, generated tables and figure scripts (strategy, dtype, device, backend,
// the `system` label; `hosts`, the machine crosshw tells apart) that holds a control character (name_problem): the
// field and why.
std::optional<SampleBoundProblem> sample_name_problem(const Sample& s);

}  // namespace arfit
