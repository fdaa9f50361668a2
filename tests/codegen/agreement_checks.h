// One models file, one answer: what `arfit predict`, `arfit suggest` and `arfit codegen` (its json and header
// formats) say about the same cell must agree, through the library functions the commands call: predict's
// predict_same_element_size over ModelSet::predict with the query it builds from --tokens/--hidden/--dtype,
// suggest's build_request_table + suggest_cells + suggestions_json, codegen's generate. Shared by
// test_agreement_data.cpp (sampled cells of every public system's full fit) and test_machines_data.cpp (every
// cell of every public machine, fitted in full and from anchors:3 with the other machines as priors).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/codegen.h"

namespace arfit::agreement_checks {

using codegen::Cell;
using codegen::Request;
using codegen::StrategyTable;

// `arfit predict MODELS --collective allreduce --strategy S --fusion F --dtype D --nranks TP --tokens T --hidden H`:
// the query cmd_predict builds and the call it makes.
inline std::optional<Prediction> predict_command(const ModelSet& models, const std::string& system, const std::string& strategy,
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
inline std::vector<std::string> header_choices(const std::string& header) {
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
inline Expected expected_choice(const std::vector<std::pair<std::string, Prediction>>& answers) {
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

// Which cells of the table to check (indices into StrategyTable::cells).
using CellPicker = std::function<std::vector<std::size_t>(const StrategyTable&)>;

// For the cells `pick` chooses of the request's table: predict answers every candidate the table lists, finite,
// inside its own interval, with the same numbers and bytes, and nothing for a strategy the table leaves out; the
// choice, runner-up and uncertainty recomputed from those answers are the table's, the json file's and the header's
// kTable entry; a cell predict answers for no strategy is a fallback cell (--fallback chosen, counted in the json
// summary); suggest lists exactly the uncertain cells, highest expected regret first, each with the json's margin
// and expected regret. Returns the cells checked.
inline int check_commands_agree(const ModelSet& models, const std::string& system, const Request& r, const CellPicker& pick) {
  const std::string what = system + " --dtype " + r.dtype;
  // suggest's table (the one codegen's formats build), its list, and codegen's json and header files.
  const StrategyTable t = codegen::build_request_table(models, r);
  const auto suggested = codegen::suggest_cells(t, 0);
  const nlohmann::json suggest_json = codegen::suggestions_json(t, suggested);
  const nlohmann::json json = nlohmann::json::parse(codegen::generate(models, r, "json", "models"));
  const std::vector<std::string> header = header_choices(codegen::generate(models, r, "header", "models"));
  EXPECT_EQ(json["cells"].size(), t.cells.size()) << what;
  EXPECT_EQ(header.size(), t.cells.size()) << what;
  if (json["cells"].size() != t.cells.size() || header.size() != t.cells.size()) return 0;
  EXPECT_EQ(json["summary"]["fallback"].get<int>(), t.fallback_cells()) << what;

  // suggest lists exactly the uncertain cells, highest expected regret first.
  std::map<const Cell*, std::size_t> listed;
  for (std::size_t k = 0; k < suggested.size(); ++k) listed[suggested[k]] = k;
  EXPECT_EQ(static_cast<int>(suggested.size()), t.uncertain_cells()) << what;
  for (std::size_t k = 1; k < suggested.size(); ++k) EXPECT_GE(suggested[k - 1]->expected_regret, suggested[k]->expected_regret) << what;

  int checked = 0;
  for (std::size_t i : pick(t)) {
    const Cell& c = t.cells[i];
    const std::string cell = what + " tp " + std::to_string(c.tp) + " " + to_string(c.fusion) + " hidden " +
                             std::to_string(c.hidden) + " tokens " + std::to_string(c.tokens);
    // predict answers for every candidate the table lists, with the same numbers, at the same bytes.
    std::vector<std::pair<std::string, Prediction>> answers;
    for (const auto& name : models.strategies(system, Collective::AllReduce, c.fusion, c.tp)) {
      const auto p = predict_command(models, system, name, c, r.dtype);
      if (!p) continue;
      EXPECT_TRUE(std::isfinite(p->time_us) && p->time_us > 0 && std::isfinite(p->lo_us) && std::isfinite(p->hi_us))
          << cell << " " << name << ": " << p->time_us << " [" << p->lo_us << ", " << p->hi_us << "] " << p->how;
      answers.emplace_back(name, *p);
      EXPECT_LE(p->lo_us, p->time_us) << cell << " " << name;
      EXPECT_GE(p->hi_us, p->time_us) << cell << " " << name;
      EXPECT_EQ(p->bytes, c.bytes) << cell << " " << name;
    }
    EXPECT_EQ(answers.size(), c.candidates.size()) << cell;
    if (answers.size() != c.candidates.size()) continue;
    for (std::size_t k = 0; k < answers.size(); ++k) {
      EXPECT_EQ(answers[k].first, c.candidates[k].strategy) << cell;
      EXPECT_EQ(answers[k].second.time_us, c.candidates[k].prediction.time_us) << cell << " " << answers[k].first;
      EXPECT_EQ(answers[k].second.lo_us, c.candidates[k].prediction.lo_us) << cell << " " << answers[k].first;
      EXPECT_EQ(answers[k].second.hi_us, c.candidates[k].prediction.hi_us) << cell << " " << answers[k].first;
    }
    // The choice is predict's argmin (ties to the earlier candidate), in the table, the json and the header; with
    // no answer at all, the fallback.
    Expected e = expected_choice(answers);
    EXPECT_EQ(c.fallback, answers.empty()) << cell;
    if (answers.empty()) e.choice = r.fallback;
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
    EXPECT_EQ(jc["fallback"].get<bool>(), answers.empty()) << cell;
    EXPECT_EQ(jc["predicted"].size(), answers.size()) << cell;
    for (const auto& [name, p] : answers) {
      EXPECT_EQ(jc["predicted"][name]["time_us"].get<double>(), p.time_us) << cell << " " << name;
      // A prediction from curves carried from other machines says so, as predict's does.
      EXPECT_EQ(jc["predicted"][name]["transferred"].get<bool>(), p.transferred) << cell << " " << name << ": " << p.how;
      if (name == e.choice) {
        EXPECT_EQ(jc["transferred"].get<bool>(), p.transferred) << cell;
      }
    }
    if (answers.empty()) {
      EXPECT_FALSE(jc["transferred"].get<bool>()) << cell;
    }
    EXPECT_EQ(header[i], e.choice) << cell;
    // suggest lists it exactly when it is uncertain, with the same choice, runner-up and margins.
    const auto at = listed.find(&c);
    EXPECT_EQ(at != listed.end(), e.uncertain) << cell;
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
  return checked;
}

}  // namespace arfit::agreement_checks
