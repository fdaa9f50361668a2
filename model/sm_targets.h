// Per-generation interconnect and memory bandwidths, used to transfer a model fitted on one SM target to
// another (flagged extrapolated, with a widened interval). Figures are vendor datasheet peaks per GPU, one
// direction; only their ratios are used.
//
//   sm   example GPU                   interconnect (GB/s, per direction)      memory (GB/s)   sources
//   80   A100 SXM4 80GB                NVLink 3: 300 (600 bidirectional)       2039            NVIDIA A100 datasheet (2021)
//   89   L40S / RTX 4090               PCIe 4.0 x16: 32 (no NVLink)            864             NVIDIA L40S datasheet (2023)
//   90   H100 SXM5 80GB                NVLink 4: 450 (900 bidirectional)       3350            NVIDIA H100 datasheet (2023)
//   100  B200 (HGX B200)               NVLink 5: 900 (1800 bidirectional)      8000            NVIDIA DGX B200 / HGX B200 datasheet (2024)
//   103  B300 / GB300                  NVLink 5: 900 (1800 bidirectional)      8000            NVIDIA GB300 NVL72 product page (2025)
//   120  RTX PRO 6000 Blackwell Server PCIe 5.0 x16: 64 (no NVLink)            1792            NVIDIA RTX PRO 6000 Blackwell datasheet (2025)
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/model_set.h"

namespace arfit {

struct SmTarget {
  int sm;
  const char* example;
  double interconnect_gbps;
  bool pcie;  // no NVLink: the interconnect figure is the PCIe slot's
  double memory_gbps;
  const char* source;
};

const std::vector<SmTarget>& sm_targets();
// SM version from a device name ("NVIDIA H100 80GB HBM3" -> 90, "NVIDIA B200" -> 100, ...); 0 when unknown.
int sm_from_device(const std::string& device);
// A GPU's name without its memory (capacity and kind: "NVIDIA A100-SXM4-40GB" -> "NVIDIA A100 SXM4", "NVIDIA H100
// 80GB HBM3" -> "NVIDIA H100"), upper case, the words joined by single spaces: the GPU and its form factor (SXM,
// PCIe, NVL), which decide its intra-node fabric, where the memory does not. Empty for an empty name.
std::string gpu_model_name(const std::string& device);
// SM version a machine label names: a GPU's name in it (sm_from_device: "h100_sxm" -> 90), else an "sm" word of two or
// three digits ("benchmark.tp8.sm90" -> 90: TensorRT-LLM's all-reduce benchmark names its CSV so); 0 when none.
int sm_from_label(const std::string& label);
// The datasheet SM of a machine: `sm` when known, else from its device name, else from its system label
// (sm_from_label): every reader of a machine's SM (fit, eval, a models file's groups) resolves it this way.
int datasheet_sm(int sm, const std::string& device, const std::string& system);
// Whether datasheet_sm(sm, device, system) has its SM from the system label alone: no SM and no device name the
// measurement reported says one. A label is often a file's name (nccl-tests, TensorRT-LLM, PARAM logs), which is not a
// measurement: a renamed log is another GPU by it. fit and predict say so wherever such an SM is used.
bool sm_from_label_only(int sm, const std::string& device, const std::string& system);
// Where the label of a machine whose SM is read from it (sm_from_label_only) came from.
struct LabelOnlyMachine {
  int sm = 0;             // the SM its label names (sm_from_label)
  std::string file_name;  // the file whose name the label is (label_file_name); "" where the label was stated
};
// The file among `sources` (the names of the files a curve's points came from) whose name the machine label `label`
// was made of: its name without the extension ("box_allreduce.txt" for "box_allreduce": nccl-tests, TensorRT-LLM and
// PARAM logs are labelled so). "" when none is: the label was stated (--system, a sample CSV's system column beside
// another source, an aiconfigurator table's system= note) or cut from a longer name (an aiconfigurator table without
// the note). A sample CSV written by `arfit ingest` keeps the log's name as its source, so a label made of that name
// is still known as one.
std::string label_file_name(const std::string& label, const std::vector<std::string>& sources);
// The machines of `models_groups` (a models file's "groups" array) whose SM is from their label alone
// (sm_from_label_only on each group's "sm", "device" and key.system), each with that SM and the file its label was
// made of (label_file_name over the group's "sources"); `system` keeps one machine (empty: all).
std::map<std::string, LabelOnlyMachine> machines_known_by_label_only(const nlohmann::json& models_groups,
                                                                     const std::string& system = "");
// What fit's report and predict's note say of such a machine, one line without its end: "machine 'box' taken from the
// file name box.txt; the file does not say its GPU (no device or SM): SM 90 is read from the name", or, for a stated
// label, "machine 'h100': SM 90 is read from its label; no file says its GPU (no device or SM)".
std::string label_only_machine_note(const std::string& label, const LabelOnlyMachine& m);
// What predict's `how` adds for such a machine: " (machine 'box' taken from the file name box.txt: SM 90)", or
// " (machine 'h100': SM 90 from its label only)".
std::string label_only_machine_how(const std::string& label, const LabelOnlyMachine& m);
std::optional<SmTarget> find_sm_target(int sm);

// Extra log half-width added (in quadrature) to a transferred prediction's interval: ratios of datasheet
// peaks carry over to achieved bandwidth only roughly (±30 %).
inline constexpr double kSmTransferLogSigma = 0.3;

// Transfers a prediction made for `from_sm` to `to_sm`: the latency part (latency_us, the model's time at its
// smallest measured size) stays, the bandwidth part (the rest) scales by interconnect(from)/interconnect(to).
// nullopt when either SM is not in the table.
std::optional<Prediction> transfer_prediction(const Prediction& p, double latency_us, int from_sm, int to_sm);

}  // namespace arfit
