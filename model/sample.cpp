#include "model/sample.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <utility>

#include "model/stated_network.h"
#include "model/text.h"

namespace arfit {
namespace {

// Lower-case and drop '_', '-' and spaces so "all_reduce", "AllReduce" and "all-reduce" compare equal.
std::string squash(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '_' || ch == '-' || ch == ' ') continue;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  return out;
}

}  // namespace

std::string to_string(Collective c) {
  switch (c) {
    case Collective::AllReduce: return "allreduce";
    case Collective::AllGather: return "allgather";
    case Collective::ReduceScatter: return "reducescatter";
    case Collective::AllToAll: return "alltoall";
    case Collective::AllToAllV: return "alltoallv";
    case Collective::Broadcast: return "broadcast";
    case Collective::Reduce: return "reduce";
    case Collective::SendRecv: return "sendrecv";
    case Collective::Gather: return "gather";
    case Collective::Scatter: return "scatter";
  }
  return "?";
}

std::string to_string(FusionOp f) {
  switch (f) {
    case FusionOp::None: return "NONE";
    case FusionOp::ResidualRmsNorm: return "RESIDUAL_RMS_NORM";
    case FusionOp::ResidualRmsNormQuantFp8: return "RESIDUAL_RMS_NORM_QUANT_FP8";
    case FusionOp::ResidualRmsNormQuantNvfp4: return "RESIDUAL_RMS_NORM_QUANT_NVFP4";
    case FusionOp::ResidualRmsNormOutQuantFp8: return "RESIDUAL_RMS_NORM_OUT_QUANT_FP8";
    case FusionOp::ResidualRmsNormOutQuantNvfp4: return "RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4";
  }
  return "?";
}

const std::vector<Collective>& all_collectives() {
  static const std::vector<Collective> v = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                            Collective::AllToAll,  Collective::AllToAllV, Collective::Broadcast,
                                            Collective::Reduce,    Collective::SendRecv,  Collective::Gather,
                                            Collective::Scatter};
  return v;
}

const std::vector<FusionOp>& all_fusions() {
  static const std::vector<FusionOp> v = {FusionOp::None, FusionOp::ResidualRmsNorm, FusionOp::ResidualRmsNormQuantFp8,
                                          FusionOp::ResidualRmsNormQuantNvfp4};
  return v;
}

const std::vector<FusionOp>& all_fusion_ops() {
  static const std::vector<FusionOp> v = {FusionOp::None,
                                          FusionOp::ResidualRmsNorm,
                                          FusionOp::ResidualRmsNormQuantFp8,
                                          FusionOp::ResidualRmsNormQuantNvfp4,
                                          FusionOp::ResidualRmsNormOutQuantFp8,
                                          FusionOp::ResidualRmsNormOutQuantNvfp4};
  return v;
}

std::optional<Collective> try_parse_collective(const std::string& s) {
  const std::string k = squash(s);
  for (Collective c : all_collectives())
    if (k == to_string(c)) return c;
  if (k == "a2a" || k == "alltoallsingle") return Collective::AllToAll;
  if (k == "a2av") return Collective::AllToAllV;
  if (k == "bcast") return Collective::Broadcast;
  if (k == "sendrecvperf" || k == "p2p") return Collective::SendRecv;
  return std::nullopt;
}

std::string known_collectives() {
  std::vector<std::string> names;
  for (Collective c : all_collectives()) names.push_back(to_string(c));
  return join(names, ", ");
}

Collective parse_collective(const std::string& s) {
  if (auto c = try_parse_collective(s)) return *c;
  throw std::invalid_argument("unknown collective '" + s +
                              "' (known: " + known_collectives() + ")");
}

std::optional<FusionOp> try_parse_fusion(const std::string& s) {
  const std::string k = squash(s);
  if (k.empty() || k == "none" || k == "nofusion") return FusionOp::None;
  for (FusionOp f : all_fusion_ops())
    if (k == squash(to_string(f))) return f;
  if (k == "residualrmsnormfp8" || k == "residualrmsnormquantfp8") return FusionOp::ResidualRmsNormQuantFp8;
  if (k == "residualrmsnormnvfp4" || k == "residualrmsnormquantnvfp4") return FusionOp::ResidualRmsNormQuantNvfp4;
  if (k == "residualrmsnormoutfp8") return FusionOp::ResidualRmsNormOutQuantFp8;
  if (k == "residualrmsnormoutnvfp4") return FusionOp::ResidualRmsNormOutQuantNvfp4;
  return std::nullopt;
}

FusionOp parse_fusion(const std::string& s) {
  if (auto f = try_parse_fusion(s)) return *f;
  throw std::invalid_argument("unknown fusion op '" + s +
                              "' (known: NONE, RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8, RESIDUAL_RMS_NORM_QUANT_NVFP4, "
                              "RESIDUAL_RMS_NORM_OUT_QUANT_FP8, RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4)");
}

std::string canonical_dtype(const std::string& dtype) {
  const std::string k = squash(dtype);
  if (k == "bf16" || k == "bfloat16") return "bf16";
  if (k == "fp16" || k == "half" || k == "float16") return "fp16";
  if (k == "fp32" || k == "float" || k == "float32") return "fp32";
  if (k == "fp64" || k == "double" || k == "float64") return "fp64";
  if (k == "int8" || k == "char") return "int8";
  if (k == "uint8") return "uint8";
  if (k == "int16" || k == "short") return "int16";
  if (k == "uint16") return "uint16";
  if (k == "int32" || k == "int") return "int32";
  if (k == "uint32") return "uint32";
  if (k == "int64") return "int64";
  if (k == "uint64") return "uint64";
  // nccl-tests' names (f8e4m3, f8e5m2), PyTorch's (float8_e4m3fn, float8_e5m2) and the short ones.
  if (k == "fp8" || k == "fp8e4m3" || k == "e4m3" || k == "f8e4m3" || k == "fp8e4m3fn" || k == "float8e4m3fn" ||
      k == "e4m3fn")
    return "fp8_e4m3";
  if (k == "fp8e5m2" || k == "e5m2" || k == "f8e5m2" || k == "float8e5m2") return "fp8_e5m2";
  return dtype;
}

int dtype_size(const std::string& dtype) {
  const std::string c = canonical_dtype(dtype);
  if (c == "bf16" || c == "fp16" || c == "int16" || c == "uint16") return 2;
  if (c == "fp32" || c == "int32" || c == "uint32") return 4;
  if (c == "fp64" || c == "int64" || c == "uint64") return 8;
  if (c == "int8" || c == "uint8" || c == "fp8_e4m3" || c == "fp8_e5m2") return 1;
  return 0;
}

std::optional<SampleBoundProblem> sample_name_problem(const Sample& s) {
  const auto system = s.extra.find("system");
  const auto hosts = s.extra.find("hosts");
  for (const auto& [field, value] : {std::pair<const char*, const std::string*>{"strategy", &s.strategy},
                                     {"dtype", &s.dtype},
                                     {"device", &s.device},
                                     {"backend", &s.backend},
                                     {"system", system == s.extra.end() ? nullptr : &system->second},
                                     {"hosts", hosts == s.extra.end() ? nullptr : &hosts->second}})
    if (value)
      if (std::string why = name_problem(*value); !why.empty()) return SampleBoundProblem{field, std::move(why)};
  return std::nullopt;
}

double message_bytes(double tokens, double hidden, const std::string& dtype) { return tokens * hidden * dtype_size(dtype); }

double dlrm_element_bytes(const std::string& dtype) {
  const int size = dtype_size(dtype);
  return size > 0 ? size : 4;
}

std::string byte_bound_problem(const std::string& option, const std::string& what, double bytes) {
  if (bytes <= kMaxSampleBytes) return {};
  return option + ": " + what + " is " + format_number(bytes, "%.3g") + " bytes, above " + format_number(kMaxSampleBytes, "%.0e") +
         ", the largest size arfit models";
}

std::optional<SampleBoundProblem> sample_bound_problem(const Sample& s) {
  auto number = [](double v) { return format_number(v, "%.6g"); };
  if (s.nranks > kMaxSampleRanks)
    return SampleBoundProblem{"nranks", std::to_string(s.nranks) + " ranks, more than the " + std::to_string(kMaxSampleRanks) + " arfit models"};
  if (s.nnodes > s.nranks && s.nranks > 0)
    return SampleBoundProblem{"nnodes", std::to_string(s.nnodes) + " nodes for " + std::to_string(s.nranks) + " ranks"};
  if (static_cast<double>(s.bytes) > kMaxSampleBytes)
    return SampleBoundProblem{"bytes", std::to_string(s.bytes) + " bytes, more than the " + number(kMaxSampleBytes) + " arfit models"};
  // The network a machine states (model/stated_network.h): what models files and the scale-out steps read it by.
  if (const auto n = s.extra.find("network"); n != s.extra.end() && !n->second.empty() && !parse_stated_network(n->second))
    return SampleBoundProblem{"network", "'" + visible_control_chars(n->second) +
                                             "' is not a network: RAILSxBANDWIDTH, as 8x50GB/s or 8x400Gb (arfit ingest --network)"};
  if (s.ok() && !(s.time_us >= kMinSampleTimeUs && s.time_us <= kMaxSampleTimeUs))
    return SampleBoundProblem{"time_us", "time " + number(s.time_us) + " us is outside [" + number(kMinSampleTimeUs) + ", " +
                                             number(kMaxSampleTimeUs) + "] us"};
  return std::nullopt;
}

void require_nodes_within_ranks(int nnodes, int nranks, const std::string& ranks_option) {
  if (nranks == 0 || nnodes <= nranks) return;
  throw std::invalid_argument("--nnodes " + std::to_string(nnodes) + " is more nodes than " + ranks_option + " " +
                              std::to_string(nranks) + " has GPUs");
}

}  // namespace arfit
