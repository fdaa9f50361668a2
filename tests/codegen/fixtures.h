// Fitted model sets for the codegen consumer tests: synthetic measurements with known crossovers, fitted by fit/
// exactly as `arfit fit` would, in three systems:
//   fx_trtllm   NCCL, ONESHOT, TWOSHOT x all four fusions x TP 2/4/8, token x hidden shapes;
//   fx_engines  NCCL, vLLM_custom_graph, vLLM_symm_mem, SGLang_CustomAllReduce_graph/_eager, ONESHOT, TWOSHOT (no
//               fusion);
//   fx_tuner    NCCL algorithm/protocol variants on 1 node (2, 4, 8 ranks) and 2 nodes (16 ranks).
// And the public H100 / B200 models, fitted from ../shared/data/public/aiconfigurator (data tests).
#pragma once

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "fit/fit.h"
#include "model/model_set.h"
#include "test_support.h"

namespace arfit::fixtures {

// ONESHOT has the lowest latency, TWOSHOT is in between, NCCL has the highest bandwidth; fusion costs the custom
// kernels per byte.
inline double trtllm_time(const std::string& s, int tp, FusionOp f, double b) {
  const double fuse = 0.2 * static_cast<int>(f) * b / 1e5;
  if (s == "ONESHOT") return 3.0 + (tp - 1) * b / 5e4 + fuse;
  if (s == "TWOSHOT") return 6.0 + 2.0 * b / 1.5e5 + fuse;
  return 15.0 + 2.0 * b / 4e5;
}

inline double engine_time(const std::string& s, int tp, double b) {
  if (s == "vLLM_custom_graph") return 3.0 + tp * b / 1e5;
  if (s == "vLLM_symm_mem") return 8.0 + tp * b / 2.5e5;  // vLLM's torch symmetric memory: between custom and NCCL
  if (s == "SGLang_CustomAllReduce_graph") return 2.5 + tp * b / 1.2e5;
  if (s == "SGLang_CustomAllReduce_eager") return 10.0 + tp * b / 1.2e5;
  if (s == "ONESHOT" || s == "TWOSHOT") return trtllm_time(s, tp, FusionOp::None, b);
  return 15.0 + 2.0 * b / 4e5;  // NCCL
}

inline double tuner_time(const std::string& s, int nranks, int nnodes, double b) {
  const double hop = nnodes > 1 ? 12.0 : 0.0;
  if (s == "NCCL_RING_LL") return 4.0 + hop + 0.5 * nranks + b / 2e3;
  if (s == "NCCL_RING_LL128") return 8.0 + hop + 0.5 * nranks + b / 1.2e4;
  if (s == "NCCL_TREE_SIMPLE") return 14.0 + 2 * hop + b / 2.5e4;
  return 20.0 + hop + nranks + b / 4e4;  // NCCL_RING_SIMPLE
}

inline Sample make(const std::string& system, const std::string& strategy, int nranks, double time_us) {
  Sample x;
  x.strategy = strategy;
  x.nranks = nranks;
  x.device = "synthetic";
  x.extra["system"] = system;
  x.time_us = time_us;
  return x;
}

inline const ModelSet& fitted() {
  static const ModelSet models = [] {
    std::vector<Sample> v;
    for (int tp : {2, 4, 8})
      for (FusionOp f : all_fusions())
        for (const char* s : {"NCCL", "ONESHOT", "TWOSHOT"})
          for (std::int64_t tok = 1; tok <= 16384; tok *= 4)
            for (std::int64_t h : {128, 1024, 8192}) {
              Sample x = make("fx_trtllm", s, tp, 0);
              x.fusion = f;
              x.tokens = tok;
              x.hidden = h;
              x.bytes = tok * h * 2;
              // a small deterministic wiggle, as measurements have
              x.time_us = trtllm_time(s, tp, f, double(x.bytes)) * (1 + 0.01 * std::sin(double(tok * h)));
              v.push_back(x);
            }
    for (int tp : {2, 4, 8})
      for (const char* s : {"NCCL", "vLLM_custom_graph", "vLLM_symm_mem", "SGLang_CustomAllReduce_graph",
                            "SGLang_CustomAllReduce_eager", "ONESHOT", "TWOSHOT"})
        for (int k = 6; k <= 30; ++k) {
          Sample x = make("fx_engines", s, tp, 0);
          x.bytes = std::int64_t{1} << k;
          x.time_us = engine_time(s, tp, double(x.bytes)) * (1 + 0.01 * std::sin(1.7 * k));
          v.push_back(x);
        }
    for (const auto& [nranks, nnodes] : {std::pair<int, int>{2, 1}, {4, 1}, {8, 1}, {16, 2}})
      for (const char* s : {"NCCL_RING_LL", "NCCL_RING_LL128", "NCCL_RING_SIMPLE", "NCCL_TREE_SIMPLE"})
        for (int k = 3; k <= 32; ++k) {
          Sample x = make("fx_tuner", s, nranks, 0);
          x.nnodes = nnodes;
          x.dtype = "fp32";
          x.bytes = std::int64_t{1} << k;
          x.time_us = tuner_time(s, nranks, nnodes, double(x.bytes)) * (1 + 0.01 * std::sin(1.3 * k));
          v.push_back(x);
        }
    fit::FitOptions o;
    o.threads = 2;
    return fit::fit_model_set(v, o);
  }();
  return models;
}

// The public aiconfigurator tables of one system, newest file of each framework (NCCL, vLLM, SGLang, TensorRT-LLM);
// empty when the folder is absent.
inline std::vector<std::string> public_files(const std::string& system, const std::vector<std::string>& names) {
  const std::string root = testing::public_data_dir();
  if (root.empty()) return {};
  std::vector<std::string> files;
  for (const auto& n : names) {
    const auto p = std::filesystem::path(root) / "aiconfigurator" / ("aic_" + system + "_" + n + ".txt");
    if (!std::filesystem::is_regular_file(p)) return {};
    files.push_back(p.string());
  }
  return files;
}

}  // namespace arfit::fixtures
