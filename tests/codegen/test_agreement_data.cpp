// One models file, one answer: what `arfit predict`, `arfit suggest` and `arfit codegen` (its json and header
// formats) say about the same cell must agree, through the library functions the commands call: predict's
// predict_same_element_size over ModelSet::predict with the query it builds from --tokens/--hidden/--dtype,
// suggest's build_request_table + suggest_cells + suggestions_json, codegen's generate. Models fitted to every
// public aiconfigurator system (all its files, as `arfit fit aic_<system>_*.txt`); a seeded random set of cells of
// a grid reaching off the measured one (TP 3, 6 and 16 through the joint fit across GPU counts, hidden 64 and
// 16384, tokens 32768), the cells where two strategies are within 1 %, and bf16 / fp16 / int8 (the NCCL tables are
// fp16 and int8, the custom kernels fp16 or bf16: the same-element-size rule answers). Label data; skipped when
// ../shared/data/public is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <sstream>

#include "codegen/codegen.h"
#include "fit/fit.h"
#include "ingest/ingest.h"
#include "test_support.h"

using namespace arfit;
using codegen::Cell;
using codegen::Request;
using codegen::StrategyTable;

namespace {

const std::vector<std::string> kSystems{"a100_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300",
                                        "h100_sxm", "h200_sxm", "l40s", "rtx_pro_6000_server"};

// Every aiconfigurator file of `system`, fitted as `arfit fit` fits them; nullopt when the data is absent.
std::optional<ModelSet> fitted_system(const std::string& system) {
  const std::string root = arfit::testing::public_data_dir();
  if (root.empty()) return std::nullopt;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(root) / "aiconfigurator"))
    if (e.path().filename().string().rfind("aic_" + system + "_", 0) == 0) files.push_back(e.path().string());
  if (files.empty()) return std::nullopt;
  std::sort(files.begin(), files.end());
  fit::FitOptions o;
  o.threads = 2;
  return fit::fit_model_set(ingest::load_samples(files), o);
}

// `arfit predict MODELS --collective allreduce --strategy S --fusion F --dtype D --nranks TP --tokens T --hidden H`:
// the query cmd_predict builds and the call it makes.
std::optional<Prediction> predict_command(const ModelSet& models, const std::string& system, const std::string& strategy,
                                          const Cell& c, const std::string& dtype) {
  PredictQuery q;
  q.collective = Collective::AllReduce;
  q.system = system;
  q.strategy = strategy;
  q.fusion = c.fusion;
  q.dtype = dtype;
  q.nranks = c.tp;
  q.nnodes = 1;
  q.tokens = c.tokens;
  q.hidden = c.hidden;
  return predict_same_element_size([&](const PredictQuery& x) { return models.predict(x, {}); }, q);
}

// The header's kTable read back: the strategy name of every cell, row-major as the table's cells.
std::vector<std::string> header_choices(const std::string& header) {
  std::map<int, std::string> names;  // enumerator value -> the strategy its comment names
  const std::regex enumerator(R"(\n  \w+ = (\d+),  // ([^\n]+))");
  const std::string enum_block = header.substr(0, header.find("enum class Fusion"));
  for (std::sregex_iterator it(enum_block.begin(), enum_block.end(), enumerator), end; it != end; ++it)
    names[std::stoi((*it)[1])] = (*it)[2];
  const auto from = header.find("kTable[kNumTp]");
  const std::string table = header.substr(from, header.find("};", from) - from);
  std::vector<std::string> out;
  const std::regex row(R"(\{([0-9,]+)\})");
  for (std::sregex_iterator it(table.begin(), table.end(), row), end; it != end; ++it) {
    std::stringstream values((*it)[1]);
    for (std::string v; std::getline(values, v, ',');) out.push_back(names.count(std::stoi(v)) ? names[std::stoi(v)] : "?" + v);
  }
  return out;
}

// The argmin the table promises, recomputed from predict's answers: the lowest time, the earlier candidate on an
// exact tie; the runner-up likewise among the rest.
struct Expected {
  std::string choice, runner_up;
  bool uncertain = false;
};
Expected expected_choice(const std::vector<std::pair<std::string, Prediction>>& answers) {
  Expected e;
  const std::pair<std::string, Prediction>* best = nullptr;
  const std::pair<std::string, Prediction>* second = nullptr;
  for (const auto& a : answers)
    if (!best || a.second.time_us < best->second.time_us) best = &a;
  for (const auto& a : answers)
    if (&a != best && (!second || a.second.time_us < second->second.time_us)) second = &a;
  if (best) e.choice = best->first;
  if (second) {
    e.runner_up = second->first;
    e.uncertain = best->second.hi_us >= second->second.lo_us;
  }
  return e;
}

}  // namespace

TEST(CommandsAgreeData, PredictSuggestCodegenJsonAndHeaderSayTheSameForEveryCell) {
  std::mt19937 rng(20261124);
  int checked = 0, near_ties = 0, systems = 0;
  for (const auto& system : kSystems) {
    const std::optional<ModelSet> models = fitted_system(system);
    if (!models) continue;
    ++systems;
    for (const std::string dtype : {"bf16", "fp16", "int8"}) {
      Request r;
      r.tp = "2,3,4,6,8,16";
      r.hidden = "64:16384";
      r.tokens = "1:32768";
      r.dtype = dtype;
      r.date = "2026-01-01";
      r.models_path = system + ".json";
      const std::string what = system + " --dtype " + dtype;
      // suggest's table (the one codegen's formats build), its list, and codegen's json and header files.
      const StrategyTable t = codegen::build_request_table(*models, r);
      const auto suggested = codegen::suggest_cells(t, 0);
      const nlohmann::json suggest_json = codegen::suggestions_json(t, suggested);
      const nlohmann::json json = nlohmann::json::parse(codegen::generate(*models, r, "json", "models"));
      const std::vector<std::string> header = header_choices(codegen::generate(*models, r, "header", "models"));
      ASSERT_EQ(json["cells"].size(), t.cells.size()) << what;
      ASSERT_EQ(header.size(), t.cells.size()) << what;

      // suggest lists exactly the uncertain cells, highest expected regret first.
      std::map<const Cell*, std::size_t> listed;
      for (std::size_t k = 0; k < suggested.size(); ++k) listed[suggested[k]] = k;
      EXPECT_EQ(static_cast<int>(suggested.size()), t.uncertain_cells()) << what;
      for (std::size_t k = 1; k < suggested.size(); ++k)
        EXPECT_GE(suggested[k - 1]->expected_regret, suggested[k]->expected_regret) << what;

      // A seeded random set of modelled cells, and of the cells where two strategies are within 1 %.
      std::vector<std::size_t> modelled, ties;
      for (std::size_t i = 0; i < t.cells.size(); ++i) {
        if (t.cells[i].fallback) continue;
        modelled.push_back(i);
        if (!t.cells[i].runner_up.empty() && t.cells[i].margin < 0.01) ties.push_back(i);
      }
      ASSERT_FALSE(modelled.empty()) << what;
      std::vector<std::size_t> cells;
      std::sample(modelled.begin(), modelled.end(), std::back_inserter(cells), 12, rng);
      std::sample(ties.begin(), ties.end(), std::back_inserter(cells), 4, rng);
      near_ties += static_cast<int>(std::min<std::size_t>(ties.size(), 4));

      for (std::size_t i : cells) {
        const Cell& c = t.cells[i];
        const std::string cell = what + " tp " + std::to_string(c.tp) + " " + to_string(c.fusion) + " hidden " +
                                 std::to_string(c.hidden) + " tokens " + std::to_string(c.tokens);
        // predict answers for every candidate the table lists, with the same numbers, at the same bytes.
        std::vector<std::pair<std::string, Prediction>> answers;
        for (const auto& name : models->strategies(system, Collective::AllReduce, c.fusion, c.tp)) {
          const auto p = predict_command(*models, system, name, c, dtype);
          if (!p || !(p->time_us > 0)) continue;
          answers.emplace_back(name, *p);
          EXPECT_LE(p->lo_us, p->time_us) << cell << " " << name;
          EXPECT_GE(p->hi_us, p->time_us) << cell << " " << name;
          EXPECT_EQ(p->bytes, c.bytes) << cell << " " << name;
        }
        ASSERT_EQ(answers.size(), c.candidates.size()) << cell;
        for (std::size_t k = 0; k < answers.size(); ++k) {
          EXPECT_EQ(answers[k].first, c.candidates[k].strategy) << cell;
          EXPECT_EQ(answers[k].second.time_us, c.candidates[k].prediction.time_us) << cell << " " << answers[k].first;
          EXPECT_EQ(answers[k].second.lo_us, c.candidates[k].prediction.lo_us) << cell << " " << answers[k].first;
          EXPECT_EQ(answers[k].second.hi_us, c.candidates[k].prediction.hi_us) << cell << " " << answers[k].first;
        }
        // The choice is predict's argmin (ties to the earlier candidate), in the table, the json and the header.
        const Expected e = expected_choice(answers);
        EXPECT_EQ(c.choice, e.choice) << cell;
        EXPECT_EQ(c.runner_up, e.runner_up) << cell;
        EXPECT_EQ(c.uncertain, e.uncertain) << cell;
        const nlohmann::json& jc = json["cells"][i];
        EXPECT_EQ(jc["tp"].get<int>(), c.tp) << cell;
        EXPECT_EQ(jc["fusion"].get<std::string>(), to_string(c.fusion)) << cell;
        EXPECT_EQ(jc["hidden"].get<std::int64_t>(), c.hidden) << cell;
        EXPECT_EQ(jc["tokens"].get<std::int64_t>(), c.tokens) << cell;
        EXPECT_EQ(jc["bytes"].get<double>(), c.bytes) << cell;
        EXPECT_EQ(jc["choice"].get<std::string>(), e.choice) << cell;
        EXPECT_EQ(jc["runner_up"].get<std::string>(), e.runner_up) << cell;
        EXPECT_EQ(jc["uncertain"].get<bool>(), e.uncertain) << cell;
        for (const auto& [name, p] : answers)
          EXPECT_EQ(jc["predicted"][name]["time_us"].get<double>(), p.time_us) << cell << " " << name;
        EXPECT_EQ(header[i], e.choice) << cell;
        // suggest lists it exactly when it is uncertain, with the same choice, runner-up and margins.
        const auto at = listed.find(&c);
        ASSERT_EQ(at != listed.end(), e.uncertain) << cell;
        if (at != listed.end()) {
          const nlohmann::json& s = suggest_json["suggestions"][at->second];
          EXPECT_EQ(s["choice"].get<std::string>(), e.choice) << cell;
          EXPECT_EQ(s["runner_up"].get<std::string>(), e.runner_up) << cell;
          EXPECT_EQ(s["bytes"].get<double>(), c.bytes) << cell;
          EXPECT_EQ(s["margin"].get<double>(), jc["margin"].get<double>()) << cell;
          EXPECT_EQ(s["expected_regret"].get<double>(), jc["expected_regret"].get<double>()) << cell;
        }
        ++checked;
      }
    }
  }
  if (systems == 0) GTEST_SKIP() << "public aiconfigurator tables absent";
  std::cout << systems << " systems, " << checked << " cells (" << near_ties << " within 1 %) agree\n";
  EXPECT_GT(checked, 300);
  EXPECT_GT(near_ties, 20);
}
