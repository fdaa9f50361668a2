#include "codegen/rules_trtllm.h"

#include <stdexcept>

#include "codegen/consumer_version.h"
#include "model/text.h"

namespace arfit::codegen {

const std::vector<TrtllmVersion>& trtllm_versions() {
  // getMaxRequiredWorkspaceSize: 67108864 (64 MiB) for every world size at 10a94126; 16 * 1000 * 1000 for
  // worldSize <= 2 and 8 * 1000 * 1000 above at 01e2c361 and 005b299b (decimal bytes). The off-table return of
  // selectStrategyLookUpTable: NCCL at 10a94126 and 01e2c361, NCCL_SYMMETRIC at 005b299b.
  static const std::vector<TrtllmVersion> versions{
      {"10a94126", "workspace gate 64 MiB at every TP; off the table NCCL", 67108864.0, 67108864.0, 0},
      {"01e2c361", "workspace gate 16e6 bytes at TP 2, 8e6 above; off the table NCCL", 16e6, 8e6, 0},
      {"005b299b", "workspace gate 16e6 bytes at TP 2, 8e6 above; off the table NCCL_SYMMETRIC", 16e6, 8e6, 8},
  };
  return versions;
}

TrtllmVersion trtllm_version(const std::string& given) {
  std::vector<std::string> known;
  for (const auto& v : trtllm_versions()) known.push_back(v.commit);
  const std::string which = check_consumer_snapshot(
      given, "TensorRT-LLM", known,
      "another commit may gate sizes or answer off the table differently: give the engine's own "
      "customAllReduceUtils.h with --base, whose rules arfit reads from the file")
                                .front();
  for (const auto& v : trtllm_versions())
    if (v.commit == which) return v;
  return trtllm_versions().front();
}

std::string trtllm_strategy_name(int code) {
  static const char* const names[] = {"NCCL",    "MIN_LATENCY",  "UB",    "AUTO",          "ONESHOT",
                                      "TWOSHOT", "LOWPRECISION", "MNNVL", "NCCL_SYMMETRIC"};
  return code >= 0 && code <= 8 ? names[code] : "value " + std::to_string(code);
}

bool trtllm_table_value_runs(int code) { return code == 0 || code == 4 || code == 5 || code == 8; }

std::string trtllm_precondition(int sm, int tp, std::int64_t tokens, std::int64_t hidden, const std::string& strategy) {
  const std::string s = upper(strategy);
  if (s == "TWOSHOT" && tokens < tp)
    return "TWOSHOT needs at least as many tokens as GPUs (runFusionAllReduce: TORCH_CHECK(input.size(0) >= tp_size)); "
           "this cell covers " + std::to_string(tokens) + " token(s) at TP " + std::to_string(tp);
  if ((s == "ONESHOT" || s == "TWOSHOT") && sm >= 120 && hidden >= 8192)
    return s + " on SM " + std::to_string(sm) + " (read from the SM100 table) throws above hidden 8192: the fused "
           "kernel's block of hidden / 8 threads exceeds 1024, and this cell covers hidden " + std::to_string(hidden) +
           " to " + std::to_string(2 * hidden - 1);
  return "";
}

double trtllm_workspace_bytes(const TrtllmVersion& v, int tp) { return tp <= 2 ? v.workspace_tp2_bytes : v.workspace_bytes; }

GateCover trtllm_size_gate(const TrtllmVersion& v, int tp, std::int64_t tokens, std::int64_t hidden, int element_size) {
  const double limit = trtllm_workspace_bytes(v, tp);
  const double smallest = static_cast<double>(tokens) * static_cast<double>(hidden) * element_size;
  const double largest = (2.0 * static_cast<double>(tokens) - 1.0) * (2.0 * static_cast<double>(hidden) - 1.0) * element_size;
  if (smallest > limit) return GateCover::All;
  if (largest > limit) return GateCover::Part;
  return GateCover::None;
}

std::vector<std::string> trtllm_engine_notes(const TrtllmVersion& v, int table_sm, const std::string& dtype) {
  const auto bytes = [](double b) { return format_number(b, "%.0f"); };
  std::vector<std::string> notes;
  notes.push_back("Rules of TensorRT-LLM at " + v.commit + " (" + v.note + "); the PyTorch backend reads this table only "
                  "with strategy AUTO and TLLM_DISABLE_ALLREDUCE_AUTOTUNE=1 (or MPI disabled): otherwise its autotuner "
                  "chooses by measuring.");
  const std::string gate = trtllm_workspace_bytes(v, 2) == trtllm_workspace_bytes(v, 4)
                               ? bytes(trtllm_workspace_bytes(v, 2)) + " bytes at every TP"
                               : bytes(trtllm_workspace_bytes(v, 2)) + " bytes at TP 2 and " + bytes(trtllm_workspace_bytes(v, 4)) + " above";
  notes.push_back("TensorRT-LLM decides itself, before the table: NCCL for messages above " + gate +
                  " (TRTLLM_ALLREDUCE_FUSION_WORKSPACE_SIZE moves it; cells marked by the " + dtype + " size), and NCCL for TP "
                  "groups without NVLink or P2P or across nodes. Off the table (TP 16, hidden >= 16384, tokens >= 32768) it runs " +
                  (v.off_table_code == 8 ? std::string("NCCL_SYMMETRIC") : std::string("NCCL")) + ".");
  notes.push_back("TWOSHOT is never written where a cell holds fewer tokens than GPUs (TensorRT-LLM throws there)" +
                  std::string(table_sm >= 100 ? "; SM 120 and up read this SM100 table too" : "") + ".");
  return notes;
}

}  // namespace arfit::codegen
