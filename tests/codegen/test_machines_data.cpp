// "A new machine in minutes" down to the files engines read: every public aiconfigurator machine (system),
//   1. fitted in full (all its files, as `arfit fit aic_<system>_*.txt`), and
//   2. cut to its anchors:3 sizes (`arbench --plan anchors:3`; tests/fit/public_files.h) and fitted with every
//      other aiconfigurator machine's full fit as priors (`arfit fit anchors.csv --prior ...`: transferred groups),
// each models file written and read back as `arfit codegen` reads it; for each, every `arfit codegen` format at
// the machine's SM:
//   * json: every number finite, every time inside its interval, the summary counting its cells; on every cell
//     of the default grid and of a wide one (TP 2-16 incl. 3 and 6, hidden 64-16384, tokens 1-32768; bf16 and
//     int8) predict / suggest / json / header agree (agreement_checks.h: the choice is predict's fastest, a cell
//     predict cannot answer is a counted fallback cell, a prediction is marked `transferred` as predict's is);
//     the anchors fits mark transferred predictions, the full fits none; the header's Cells line counts them;
//   * trtllm (mapped: vLLM's CUDA-graph kernel as ONESHOT, SGLang's as TWOSHOT, the rest ignored), header, vllm,
//     sglang, flashinfer: the consumer checks of consumer_checks.h (the file read the way the engine reads it
//     chooses the json's choice); a format whose strategies the machine lacks is refused with
//     std::invalid_argument, never written half; nccl-tuner is refused (the tables have no NCCL variants);
//   * every file's banner names the generator, the models file and its hash.
// The priors are the aiconfigurator machines' fits only: the nccl-tests tables' all-reduce curves are fp32 (two
// files untyped), and a prior lends only curves of the same element size, so they would lend none of these
// machines' (1- and 2-byte) curves. Each models file is fitted once per program (ctest runs each test as its own
// program: the full fits, the priors, in both); no machine is left out. Label
// data; skipped when ../shared/data/public is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "../fit/public_files.h"
#include "agreement_checks.h"
#include "consumer_checks.h"
#include "fit/fit.h"
#include "model/sm_targets.h"

using namespace arfit;
using namespace arfit::consumer_checks;
using codegen::Request;
using codegen::StrategyTable;

namespace {

struct MachineModels {
  std::string system;
  int sm = 0;     // the machine's datasheet SM; 0 unknown
  ModelSet models;
};

// As `arfit codegen` reads them: the models file `arfit fit` writes, read back.
ModelSet written(const ModelSet& set, const std::string& name) { return ModelSet::parse(set.raw().dump(1), name); }

const std::map<std::string, std::vector<Sample>>& aiconfigurator_samples() {
  static const auto by_system = arfit::testing::public_samples_by_system("/aiconfigurator/");
  return by_system;
}

fit::FitOptions fit_options() {
  fit::FitOptions fo;
  fo.threads = 2;
  return fo;
}

// Each aiconfigurator machine fitted in full, once per program; empty when the data is absent.
const std::map<std::string, ModelSet>& full_fits() {
  static const std::map<std::string, ModelSet> full = [] {
    std::map<std::string, ModelSet> out;
    for (const auto& [system, samples] : aiconfigurator_samples())
      out[system] = written(fit::fit_model_set(samples, fit_options()), system + ".json");
    return out;
  }();
  return full;
}

// The machines fitted in full, or from anchors:3 with the others' full fits as priors (once per program).
const std::vector<MachineModels>& machines(bool from_anchors) {
  static std::map<bool, std::vector<MachineModels>> cache;
  auto it = cache.find(from_anchors);
  if (it != cache.end()) return it->second;
  std::vector<MachineModels> v;
  for (const auto& [system, samples] : aiconfigurator_samples()) {
    MachineModels m;
    m.system = system;
    const ModelSet& full = full_fits().at(system);
    for (const GroupModelView& g : full.groups())
      if (g.key.system == system && g.sm > 0) m.sm = g.sm;
    m.models = from_anchors ? written(arfit::testing::fit_with_other_machines_as_priors(
                                          arfit::testing::samples_at_anchors(samples, 3), system, full_fits(), fit_options()),
                                      system + "_anchors.json")
                            : full;
    v.push_back(std::move(m));
  }
  return cache[from_anchors] = std::move(v);
}

// Groups of a models file with a transfer block.
int transferred_groups(const ModelSet& models) {
  int n = 0;
  for (const auto& g : models.raw().at("groups")) n += g.value("ok", false) && g.contains("transfer");
  return n;
}

// The SM the machine's engines would be asked for: its own where arfit knows it (`--sm`'s values), else Hopper's
// (b60, an Intel GPU).
int consumer_sm(int sm) { return find_sm_target(sm) ? sm : 90; }

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// `generate` for a format the machine's strategies cannot serve: refused as a usage error (nothing written).
// Returns 1 (one refusal).
int expect_refused(const ModelSet& models, const Request& r, const std::string& format, const std::string& what) {
  try {
    generate(models, r, format);
    ADD_FAILURE() << what << " " << format << ": written although its strategies are missing";
  } catch (const std::invalid_argument& e) {
    EXPECT_FALSE(std::string(e.what()).empty()) << what << " " << format;
  }
  return 1;
}

struct Counts {
  int files = 0, cells = 0, predictions = 0, transferred_predictions = 0, fallback_cells = 0, lookups = 0, refused = 0;
};

// Every format of one models file (the header comment says what is checked).
void check_models_file(const ModelSet& models, const std::string& system, int sm, const std::string& what, Counts& n) {
  SCOPED_TRACE(what);
  Request r;
  r.system = system;
  r.sm = consumer_sm(sm);
  const std::vector<std::string> strategies = codegen::system_strategies(models, system);

  // json: numbers, banner, and every cell against predict and suggest.
  const std::string json_text = generate(models, r, "json");
  expect_banner(json_text, "json", "");
  const json j = json::parse(json_text);
  n.predictions += check_json_numbers(j);
  for (const auto& c : j["cells"])
    for (const auto& [name, p] : c["predicted"].items()) n.transferred_predictions += p["transferred"].get<bool>();
  n.fallback_cells += j["summary"]["fallback"].get<int>();
  // The default grid, and one reaching off the measured one (TP 3, 6 and 16 through the joint fit across GPU
  // counts, hidden 64 and 16384, tokens 32768) in bf16 (the custom kernels; the fp16 NCCL tables answer by the
  // same-element-size rule, so fp16 asks the same models) and int8 (NCCL's own int8 curves).
  auto every_cell = [](const StrategyTable& t) {
    std::vector<std::size_t> all(t.cells.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  };
  Request agree = r;
  agree.date = "2026-01-02";
  agree.models_path = "models.json";
  n.cells += agreement_checks::check_commands_agree(models, system, agree, every_cell);
  for (const std::string dtype : {"bf16", "int8"}) {
    Request wide = agree;
    wide.tp = "2,3,4,6,8,16";
    wide.hidden = "64:16384";
    wide.tokens = "1:32768";
    wide.dtype = dtype;
    const json wj = generate_json(models, wide);
    n.predictions += check_json_numbers(wj);
    n.cells += agreement_checks::check_commands_agree(models, system, wide, every_cell);
  }
  // The header's Cells line counts the cells chosen from transferred curves (when there are any).
  const int transferred_cells = j["summary"]["transferred"].get<int>();
  const std::string transferred_line = ", chosen from curves transferred from other machines: " + std::to_string(transferred_cells);
  EXPECT_EQ(generate(models, r, "header").find(transferred_line) != std::string::npos, transferred_cells > 0);

  // trtllm: refused while a strategy has no TensorRT-LLM number, then mapped; refused still when nothing maps
  // (b60: oneCCL and vLLM's eager kernel).
  Request tr = r;
  bool numbered = false;
  for (const auto& s : strategies) {
    if (codegen::trtllm_strategy_number(s)) {
      numbered = true;
      continue;
    }
    const std::string target = s == "vLLM_custom_graph" ? "ONESHOT" : s == "SGLang_CustomAllReduce_graph" ? "TWOSHOT" : "ignore";
    numbered = numbered || target != "ignore";
    tr.map.push_back(s + "=" + target);
  }
  if (!tr.map.empty()) n.refused += expect_refused(models, r, "trtllm", what);
  if (numbered) {
    expect_banner(generate(models, tr, "trtllm"), "trtllm", "// ");
    n.lookups += check_trtllm(models, tr);
  } else {
    n.refused += expect_refused(models, tr, "trtllm", what);
  }

  expect_banner(generate(models, r, "header"), "header", "// ");
  n.lookups += check_header(models, r);

  // nccl-tuner: the tables have one NCCL curve per count, no algorithm/protocol variants.
  n.refused += expect_refused(models, r, "nccl-tuner", what);

  // The engines' thresholds, where the machine has both of a format's strategies.
  // vLLM: its table is read only with torch symmetric memory (capabilities 9.0, 10.0, 10.3, ...), which runs above
  // the bound; TensorRT-LLM's all-reduce stands in for it (a demonstration mapping), else the format is refused.
  Request vr = r;
  vr.map = {"TRTLLM=symm_mem"};
  if (has(strategies, "vLLM_custom_graph") && has(strategies, "NCCL") && has(strategies, "TRTLLM") &&
      codegen::vllm_default_symm_mem_sizes().count(codegen::vllm_capability(r.sm))) {
    n.lookups += check_vllm(models, vr, "vLLM_custom_graph", "TRTLLM", "NCCL");
    expect_banner(engine_file(models, vr, "vllm").text, "vllm", "# ");
  } else {
    n.refused += expect_refused(models, vr, "vllm", what);
  }
  if (has(strategies, "SGLang_CustomAllReduce_graph") && has(strategies, "NCCL") && (r.sm / 10 == 9 || r.sm / 10 == 10)) {
    n.lookups += check_sglang(models, r, "SGLang_CustomAllReduce_graph",
                              has(strategies, "SGLang_CustomAllReduce_eager") ? "SGLang_CustomAllReduce_eager" : "", "NCCL");
    expect_banner(engine_file(models, r, "sglang").text, "sglang", "# ");
  } else {
    n.refused += expect_refused(models, r, "sglang", what);
  }
  // FlashInfer: vLLM's custom all-reduce stands in for one-shot, TensorRT-LLM's for two-shot (a demonstration
  // mapping, as PublicConsumers' test).
  Request fr = r;
  fr.map = {"vLLM_custom_graph=oneshot", "TRTLLM=twoshot"};
  if (has(strategies, "vLLM_custom_graph") && has(strategies, "TRTLLM")) {
    n.lookups += check_flashinfer(models, fr, "vLLM_custom_graph", "TRTLLM");
    expect_banner(engine_file(models, fr, "flashinfer").text, "flashinfer", "# ");
  } else {
    n.refused += expect_refused(models, r, "flashinfer", what);
  }
  ++n.files;
}

#define PUBLIC_MACHINES(var, from_anchors)                                     \
  const auto& var = machines(from_anchors);                                    \
  if (var.empty()) GTEST_SKIP() << "public aiconfigurator tables absent"

}  // namespace

TEST(MachineConsumersData, EveryMachineFittedInFullServesEveryFormat) {
  PUBLIC_MACHINES(ms, false);
  Counts n;
  for (const MachineModels& m : ms) {
    EXPECT_EQ(transferred_groups(m.models), 0) << m.system;
    check_models_file(m.models, m.system, m.sm, m.system + " (full fit)", n);
  }
  std::cout << n.files << " machines fitted in full: " << n.cells << " cells agree, " << n.predictions
            << " predictions finite, " << n.fallback_cells << " fallback cells, " << n.lookups << " consumer lookups, "
            << n.refused << " formats refused\n";
  EXPECT_EQ(n.transferred_predictions, 0) << "a full fit has no transferred curve";
  EXPECT_GE(n.files, 9);
}

TEST(MachineConsumersData, EveryMachineFromThreeAnchorsWithTheOthersAsPriorsServesEveryFormat) {
  PUBLIC_MACHINES(ms, true);
  Counts n;
  for (const MachineModels& m : ms) {
    EXPECT_GT(transferred_groups(m.models), 0) << m.system << ": no group transferred from the priors";
    const int before = n.transferred_predictions;
    check_models_file(m.models, m.system, m.sm, m.system + " (anchors:3, other machines as priors)", n);
    EXPECT_GT(n.transferred_predictions, before) << m.system << ": no json prediction marked transferred";
  }
  std::cout << n.files << " machines from anchors:3 with priors: " << n.cells << " cells agree, " << n.predictions
            << " predictions finite (" << n.transferred_predictions << " transferred), " << n.fallback_cells
            << " fallback cells, " << n.lookups << " consumer lookups, " << n.refused << " formats refused\n";
  EXPECT_GE(n.files, 9);
}
