// The consumers of `arfit codegen`'s files, re-implemented from their documented semantics so that the tests
// read the generated files the way the engines do (docs/codegen.md names the file and version of each):
//   * TensorRT-LLM's selectStrategyLookUpTable (cpp/tensorrt_llm/common/customAllReduceUtils.h), as C++ source
//     compiled together with the generated table;
//   * NCCL's example tuner plugin (plugins/tuner/example/plugin.c): loadConfig's 256-byte fgets loop and
//     pluginGetCollInfo's first-match rule;
//   * vLLM's should_custom_ar, SGLang's crossover, FlashInfer's _should_use_oneshot (the engines' own decision code
//     around them runs in engine_behaviour.h, over pinned replicas in tests/codegen/engines).
#pragma once

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace arfit::consumers {

// -------------------------------------------------------------------------------------------------------------
// TensorRT-LLM. Program text: reads "sm tp fusion_op hidden tokens" lines on stdin, prints the strategy code
// selectStrategyLookUpTable returns with the generated table (table.inc) as TensorRT-LLM's only table of its SM.
// The caller never asks for inputs where TensorRT-LLM's casts are undefined (tp < 2, tokens < 1, hidden <= 64).
inline std::string trtllm_lookup_program(int table_sm, bool with_header, int off_table_code = 0) {
  std::ostringstream s;
  s << R"(#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <unordered_map>
#include "table.inc"
)";
  if (with_header) s << "#include \"arfit_select.h\"\n";
  s << R"(
enum class AllReduceFusionOp : std::int8_t {
  NONE = 0, RESIDUAL_RMS_NORM = 1, LAST_PROCESS_FOR_UB = 2, RESIDUAL_RMS_PREPOST_NORM = 3,
  RESIDUAL_RMS_NORM_QUANT_FP8 = 4, RESIDUAL_RMS_NORM_QUANT_NVFP4 = 5, RESIDUAL_RMS_NORM_OUT_QUANT_FP8 = 6,
  RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4 = 7
};
static std::unordered_map<AllReduceFusionOp, int> mapFusionOpToIndex = {
    {AllReduceFusionOp::NONE, 0}, {AllReduceFusionOp::RESIDUAL_RMS_NORM, 1},
    {AllReduceFusionOp::RESIDUAL_RMS_NORM_QUANT_FP8, 2}, {AllReduceFusionOp::RESIDUAL_RMS_NORM_QUANT_NVFP4, 3},
    {AllReduceFusionOp::RESIDUAL_RMS_NORM_OUT_QUANT_FP8, 2}, {AllReduceFusionOp::RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4, 3}};
static const std::unordered_map<int, AllReduceBestStrategyTableType> AllReduceBestStrategyTable = {
    {)" << table_sm << ", AllReduceBestStrategyTableSM" << table_sm << R"(}};
static int selectStrategyLookUpTable(int sm_version, std::size_t num_tokens, std::size_t hidden_size, AllReduceFusionOp fusionOp, int tp_size) {
  auto tp_index = static_cast<std::size_t>(std::log2(tp_size) - 1);
  auto fusion_op_index = static_cast<std::size_t>(mapFusionOpToIndex.find(fusionOp)->second);
  auto num_token_index = static_cast<std::size_t>(std::log2(num_tokens));
  auto hidden_size_index = static_cast<std::size_t>(std::log2(hidden_size) - 7);
  if (sm_version < 100) sm_version = 90;
  if (sm_version >= 100) sm_version = 100;
  if (AllReduceBestStrategyTable.find(sm_version) == AllReduceBestStrategyTable.end()
      || tp_index >= AllReduceBestStrategyTable.at(sm_version).size()
      || fusion_op_index >= AllReduceBestStrategyTable.at(sm_version).at(tp_index).size()
      || hidden_size_index >= AllReduceBestStrategyTable.at(sm_version).at(tp_index).at(fusion_op_index).size()
      || num_token_index >= AllReduceBestStrategyTable.at(sm_version).at(tp_index).at(fusion_op_index).at(hidden_size_index).size())
    return )" << off_table_code << R"(;  // NCCL (NCCL_SYMMETRIC before TensorRT-LLM 01e2c361)
  return AllReduceBestStrategyTable.at(sm_version)[tp_index][fusion_op_index][hidden_size_index][num_token_index];
}
int main() {
  int sm, tp, op;
  long long hidden, tokens;
  while (std::scanf("%d %d %d %lld %lld", &sm, &tp, &op, &hidden, &tokens) == 5) {
    std::printf("%d", selectStrategyLookUpTable(sm, static_cast<std::size_t>(tokens), static_cast<std::size_t>(hidden),
                                                static_cast<AllReduceFusionOp>(op), tp));
)";
  if (with_header)
    s << R"(    std::printf(" %d %d", static_cast<int>(arfit_select::select(tp, arfit_select::fusion_from_trtllm(op), tokens, hidden, arfit_select::Bucketing::kTensorRtLlm)),
                static_cast<int>(arfit_select::select(tp, static_cast<arfit_select::Fusion>(op), tokens, hidden)));
)";
  s << R"(    std::printf("\n");
  }
}
)";
  return s.str();
}

// The definition of AllReduceBestStrategyTableSM<sm> alone from a generated file -- the table, or with --base a whole
// customAllReduceUtils.h, whose functions need TensorRT-LLM's headers -- as a compilable unit.
inline std::string trtllm_table_unit(const std::string& generated, int table_sm) {
  const std::string name = "inline AllReduceBestStrategyTableType AllReduceBestStrategyTableSM" + std::to_string(table_sm);
  const auto start = generated.find(name);
  if (start == std::string::npos) return generated;
  const auto end = generated.find("};", start);
  return "#include <vector>\nusing AllReduceBestStrategyTableType = std::vector<std::vector<std::vector<std::vector<int>>>>;\n" +
         generated.substr(start, end + 2 - start) + "\n";
}

// TensorRT-LLM around its lookup (cpp/tensorrt_llm/thop/allreduceOp.cpp, selectImplementation with strategy AUTO,
// and runFusionAllReduce): a message of more than the workspace size runs NCCL before the table is read; the
// table's value is cast unchecked; TWOSHOT with fewer tokens than GPUs fails TORCH_CHECK(input.size(0) >= tp_size);
// a value other than NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC throws "Invalid runtime strategy". Program text: reads
// "sm tp fusion_op hidden tokens element_size" lines, prints the strategy that runs, or -1 where TensorRT-LLM throws.
inline std::string trtllm_engine_program(int table_sm, int off_table_code, double workspace_tp2, double workspace) {
  std::string lookup = trtllm_lookup_program(table_sm, false, off_table_code);
  lookup = lookup.substr(0, lookup.find("int main() {"));
  std::ostringstream s;
  s << lookup << "static int runtime_strategy(int sm, int tp, int op, long long hidden, long long tokens, int esize) {\n"
    << "  if (static_cast<double>(tokens) * hidden * esize > (tp <= 2 ? " << std::fixed << workspace_tp2 << " : " << workspace
    << ")) return 0;  // ifFallbackToNCCL\n"
    << R"(  const int s = selectStrategyLookUpTable(sm, static_cast<std::size_t>(tokens), static_cast<std::size_t>(hidden),
                                          static_cast<AllReduceFusionOp>(op), tp);
  switch (s) {
    case 0: case 4: case 8: return s;
    case 5: return tokens < tp ? -1 : 5;  // runFusionAllReduce: TORCH_CHECK(input.size(0) >= tp_size)
    default: return -1;                   // TLLM_THROW("Invalid runtime strategy")
  }
}
int main() {
  int sm, tp, op, esize;
  long long hidden, tokens;
  while (std::scanf("%d %d %d %lld %lld %d", &sm, &tp, &op, &hidden, &tokens, &esize) == 6)
    std::printf("%d\n", runtime_strategy(sm, tp, op, hidden, tokens, esize));
}
)";
  return s.str();
}

// -------------------------------------------------------------------------------------------------------------
// NCCL's example tuner plugin.
struct PluginRule {
  std::string coll;
  std::uint64_t min_bytes = 0, max_bytes = 0;
  std::string algorithm, protocol;
  int channels = 0, nnodes = 0, nranks = 0, pipe_ops = -1, reg_buff = -1;
};

// loadConfig: fgets(line, 256) per line; lines starting with '#' or '\n' are skipped; the rest is split at ','
// (strtok_r, blanks trimmed) and kept when it has 8 to 10 fields.
inline std::vector<PluginRule> load_tuner_config(const std::string& text, int* lines_read = nullptr) {
  std::vector<PluginRule> rules;
  std::size_t pos = 0;
  int reads = 0;
  while (pos < text.size()) {
    // fgets: at most 255 characters, up to and including a newline.
    std::size_t n = 0;
    while (pos + n < text.size() && n < 255) {
      ++n;
      if (text[pos + n - 1] == '\n') break;
    }
    std::string line = text.substr(pos, n);
    pos += n;
    ++reads;
    if (line.empty() || line[0] == '#' || line[0] == '\n') continue;
    line = line.substr(0, line.find('\n'));
    std::vector<std::string> tokens;
    std::string copy = line;
    char* save = nullptr;
    for (char* t = strtok_r(copy.data(), ",", &save); t && tokens.size() < 10; t = strtok_r(nullptr, ",", &save)) {
      std::string tok = t;
      const auto a = tok.find_first_not_of(" \t"), b = tok.find_last_not_of(" \t");
      tokens.push_back(a == std::string::npos ? "" : tok.substr(a, b - a + 1));
    }
    if (tokens.size() < 8 || tokens.size() > 10) continue;
    PluginRule r;
    r.coll = tokens[0];
    r.min_bytes = std::strtoull(tokens[1].c_str(), nullptr, 10);
    r.max_bytes = std::strtoull(tokens[2].c_str(), nullptr, 10);
    r.algorithm = tokens[3];
    r.protocol = tokens[4];
    r.channels = std::atoi(tokens[5].c_str());
    r.nnodes = std::atoi(tokens[6].c_str());
    r.nranks = std::atoi(tokens[7].c_str());
    if (tokens.size() >= 9) r.pipe_ops = std::atoi(tokens[8].c_str());
    if (tokens.size() >= 10) r.reg_buff = std::atoi(tokens[9].c_str());
    rules.push_back(r);
  }
  if (lines_read) *lines_read = reads;
  return rules;
}

// pluginGetCollInfo for an all-reduce: the first matching rule, and the nChannels it hands back to NCCL (1 on
// entry, the rule's value unless -1).
struct PluginChoice {
  const PluginRule* rule = nullptr;
  int channels = 1;
};
inline PluginChoice tuner_choice(const std::vector<PluginRule>& rules, std::uint64_t bytes, int nranks, int nnodes) {
  PluginChoice c;
  for (const auto& r : rules) {
    if (r.coll != "allreduce" || bytes < r.min_bytes || bytes > r.max_bytes) continue;
    if (r.nnodes != -1 && r.nnodes != nnodes) continue;
    if (r.nranks != -1 && r.nranks != nranks) continue;
    c.rule = &r;
    if (r.channels != -1) c.channels = r.channels;
    return c;
  }
  return c;
}

// -------------------------------------------------------------------------------------------------------------
// Python dict entries of the engine files: `N: VALUE,` lines after `marker` up to the closing brace; nullopt
// when the marker is followed by None.
inline std::optional<std::map<int, double>> python_tp_entries(const std::string& text, const std::string& marker) {
  auto at = text.find(marker);
  if (at == std::string::npos) return std::nullopt;
  at += marker.size();
  if (text.compare(at, 4, "None") == 0) return std::nullopt;
  std::map<int, double> out;
  std::istringstream in(text.substr(at));
  std::string line;
  std::getline(in, line);  // rest of the marker line ("{")
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '}') break;
    const auto colon = line.find(':');
    const auto comma = line.find(',');
    if (colon == std::string::npos || comma == std::string::npos) continue;
    out[std::stoi(line.substr(first, colon - first))] = std::stod(line.substr(colon + 1, comma - colon - 1));
  }
  return out;
}

// vLLM: should_custom_ar -> inp_size < max_size (the generated table's value).
inline bool vllm_uses_custom(double bytes, double max_size) { return bytes < max_size; }
// SGLang after apply(): custom while nbytes <= crossover (every algorithm threshold and the multicast range are
// clipped to it). The Python check below runs the real apply() against _pick_algo.
inline bool sglang_uses_custom(double bytes, double crossover) { return bytes <= crossover; }
// FlashInfer: _should_use_oneshot.
inline bool flashinfer_uses_oneshot(double bytes, int world_size, double threshold_mib) {
  return bytes * 2 * world_size / 1024 / 1024 <= threshold_mib;
}

// -------------------------------------------------------------------------------------------------------------
// Python: the engines read these files with Python, so when python3 is present the tests also execute them.
inline std::string python3() {
  for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3"})
    if (::access(p, X_OK) == 0) return p;
  return "";
}

// Runs `script` (Python source) with python3 after `module` was exec'd into its globals; returns stdout.
inline testing::CommandResult run_python(const testing::TempDir& dir, const std::string& module, const std::string& script) {
  dir.write("generated.py", module);
  dir.write("check.py", "exec(open(" + std::string("'") + dir.file("generated.py") + "').read())\n" + script);
  return testing::run_command(python3() + " " + dir.file("check.py"));
}

}  // namespace arfit::consumers
