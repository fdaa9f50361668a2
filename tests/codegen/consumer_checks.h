// Checks that a consumer reading a generated file the way it does (tests/codegen/consumers.h) chooses what arfit
// chose -- the JSON of the same request -- on every cell. Shared by the unit tests (fitted fixtures) and the data
// tests (models fitted to the public aiconfigurator tables).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "codegen/codegen.h"
#include "consumers.h"
#include "test_support.h"

namespace arfit::consumer_checks {

using codegen::Request;
using nlohmann::json;

inline std::string generate(const ModelSet& models, Request r, const std::string& format, std::string* summary = nullptr) {
  r.models_path = "models.json";
  r.date = "2026-01-02";
  return codegen::generate(models, r, format, "models", summary);
}

inline json generate_json(const ModelSet& models, Request r) { return json::parse(generate(models, r, "json")); }

inline std::string cxx() { return ARFIT_TEST_CXX; }

// Compiles main.cpp in `dir` (-Wall -Wextra -Werror -pedantic) and runs it with `input` on stdin.
inline testing::CommandResult compile_and_run(const testing::TempDir& dir, const std::string& input) {
  const auto build = testing::run_command(cxx() + " -std=c++17 -O1 -Wall -Wextra -Werror -pedantic -o " + dir.file("prog") +
                                          " " + dir.file("main.cpp"));
  if (build.exit_code != 0) return build;
  dir.write("input.txt", input);
  return testing::run_command(dir.file("prog") + " < " + dir.file("input.txt"));
}

inline int fusion_op(const std::string& name) { return codegen::trtllm_fusion_op(parse_fusion(name)); }

// -------------------------------------------------------------------------------------------------------------
// TensorRT-LLM: the generated table, compiled with TensorRT-LLM's lookup, gives the JSON's trtllm_code on every
// cell (and the OUT_QUANT fusion values the QUANT rows), TensorRT-LLM's own bucketing off the grid points, and
// NCCL_SYMMETRIC for the SM whose table this is not. The JSON's code is the fastest TensorRT-LLM strategy by the
// JSON's own predictions, except where a rule (fallback, NVFP4 below SM100) says otherwise. Returns cells checked.
inline int check_trtllm(const ModelSet& models, const Request& r) {
  const std::string table = generate(models, r, "trtllm");
  const json j = generate_json(models, r);
  const int table_sm = r.sm < 100 ? 90 : 100;
  EXPECT_NE(table.find("inline AllReduceBestStrategyTableType AllReduceBestStrategyTableSM" + std::to_string(table_sm) + " = {"),
            std::string::npos);
  EXPECT_EQ(j["trtllm"]["table_sm"], table_sm);
  // The JSON's trtllm code against its own predictions.
  std::map<std::string, std::vector<std::string>> sources = j["trtllm"]["sources"];
  const std::map<std::string, int> number{{"NCCL", 0}, {"ONESHOT", 4}, {"TWOSHOT", 5}, {"NCCL_SYMMETRIC", 8}};
  for (const auto& c : j["cells"]) {
    const std::string rule = c["trtllm"]["rule"];
    const std::string fusion = c["fusion"];
    if (table_sm == 90 && fusion == "RESIDUAL_RMS_NORM_QUANT_NVFP4") {
      EXPECT_EQ(rule, "nvfp4-below-sm100");
      EXPECT_EQ(c["trtllm_code"], 0);
      continue;
    }
    std::string best;
    double best_t = std::numeric_limits<double>::infinity();
    for (const auto& [target, from] : sources)
      for (const auto& m : from)
        if (c["predicted"].contains(m) && c["predicted"][m]["time_us"].get<double>() < best_t) {
          best_t = c["predicted"][m]["time_us"];
          best = target;
        }
    if (best.empty()) {
      EXPECT_EQ(rule, "fallback");
      EXPECT_EQ(c["trtllm_code"], number.at(j["trtllm"]["fallback"].get<std::string>()));
    } else {
      EXPECT_EQ(rule, "model");
      EXPECT_EQ(c["trtllm_code"], number.at(best)) << c.dump();
    }
  }
  // The consumer's reading.
  std::ostringstream queries;
  std::vector<int> expected;
  auto ask = [&](int sm, int tp, int op, long long hidden, long long tokens, int code) {
    queries << sm << " " << tp << " " << op << " " << hidden << " " << tokens << "\n";
    expected.push_back(code);
  };
  const int other_sm = table_sm == 90 ? 100 : 90;
  for (const auto& c : j["cells"]) {
    const int tp = c["tp"], code = c["trtllm_code"], op = fusion_op(c["fusion"]);
    const long long h = c["hidden"], t = c["tokens"];
    ask(r.sm, tp, op, h, t, code);
    if (op == 4 || op == 5) ask(r.sm, tp, op + 2, h, t, code);  // OUT_QUANT variants share the rows
    ask(other_sm, tp, op, h, t, codegen::kTrtllmOffTableCode);  // not the table of that SM
    ask(r.sm, tp + tp / 2, op, h, t, code);                     // tp 3 -> 2, 6 -> 4, 12 -> 8
    if (t == 16384) ask(r.sm, tp, op, h, 32767, code), ask(r.sm, tp, op, h, 32768, codegen::kTrtllmOffTableCode);
    if (t > 1) ask(r.sm, tp, op, h, t + t / 2, code);  // floor of log2
    if (h == 128) ask(r.sm, tp, op, 65, t, code);
    if (h == 8192) ask(r.sm, tp, op, 16383, t, code), ask(r.sm, tp, op, 16384, t, codegen::kTrtllmOffTableCode);
  }
  testing::TempDir dir;
  dir.write("table.inc", table);
  dir.write("main.cpp", consumers::trtllm_lookup_program(table_sm, false));
  const auto run = compile_and_run(dir, queries.str());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  std::istringstream in(run.output);
  std::istringstream qs(queries.str());
  int checked = 0;
  for (int want : expected) {
    int sm, tp, op;
    long long h, t;
    qs >> sm >> tp >> op >> h >> t;
    int got = -1;
    in >> got;
    EXPECT_EQ(got, want) << "sm " << sm << " tp " << tp << " op " << op << " hidden " << h << " tokens " << t;
    ++checked;
  }
  return checked;
}

// -------------------------------------------------------------------------------------------------------------
// Header: compiled with -Wall -Wextra -Werror -pedantic and called with TensorRT-LLM's AllReduceFusionOp values,
// it returns the JSON's choice on every cell (its Strategy values parsed from the header's enum), kOutOfRange off
// the grid with strict bucketing, and the same cell as TensorRT-LLM's arithmetic with kTensorRtLlm.
inline std::map<std::string, int> header_strategy_values(const std::string& header) {
  std::map<std::string, int> out;
  const std::regex entry(R"(^  [A-Za-z_][A-Za-z0-9_]* = (-?\d+),  // (.+)$)");
  std::istringstream in(header);
  std::string line;
  bool in_enum = false;
  while (std::getline(in, line)) {
    if (line.rfind("enum class Strategy", 0) == 0) in_enum = true;
    else if (in_enum && line == "};") break;
    std::smatch m;
    if (in_enum && std::regex_match(line, m, entry)) out[m[2]] = std::stoi(m[1]);
  }
  return out;
}

inline int check_header(const ModelSet& models, const Request& r) {
  const std::string header = generate(models, r, "header");
  const json j = generate_json(models, r);
  const auto value = header_strategy_values(header);
  const int out_of_range = value.at(r.fallback);
  testing::TempDir dir;
  dir.write("arfit_select.h", header);
  dir.write("main.cpp", R"(#include <cstdio>
#include "arfit_select.h"
using namespace arfit_select;
int main() {
  int tp, op;
  long long hidden, tokens;
  while (std::scanf("%d %d %lld %lld", &tp, &op, &hidden, &tokens) == 4)
    std::printf("%d %d\n", static_cast<int>(select(tp, fusion_from_trtllm(op), tokens, hidden)),
                static_cast<int>(select(tp, static_cast<Fusion>(op), tokens, hidden, Bucketing::kTensorRtLlm)));
}
)");
  std::ostringstream queries;
  std::vector<std::pair<int, int>> expected;  // strict, TensorRT-LLM bucketing
  auto ask = [&](int tp, int op, long long h, long long t, int strict, int trt) {
    queries << tp << " " << op << " " << h << " " << t << "\n";
    expected.emplace_back(strict, trt);
  };
  for (const auto& c : j["cells"]) {
    const int v = value.at(c["choice"].get<std::string>());
    const int tp = c["tp"], op = fusion_op(c["fusion"]);
    const long long h = c["hidden"], t = c["tokens"];
    ask(tp, op, h, t, v, v);
    if (op == 4 || op == 5) ask(tp, op + 2, h, t, v, v);
    if (t == 16384) ask(tp, op, h, 16385, out_of_range, v), ask(tp, op, h, 32767, out_of_range, v), ask(tp, op, h, 32768, out_of_range, out_of_range);
    if (h == 128) ask(tp, op, 127, t, out_of_range, v), ask(tp, op, 65, t, out_of_range, v), ask(tp, op, 64, t, out_of_range, out_of_range);
    if (h == 8192) ask(tp, op, 16383, t, out_of_range, v);
    if (t > 1) ask(tp, op, h + 1, t + 1, (t < 16384 && h < 8192) ? v : out_of_range, v);  // floor of log2
    if (tp == 2) ask(3, op, h, t, out_of_range, v), ask(1, op, h, t, out_of_range, out_of_range);
    if (tp == 4) ask(6, op, h, t, out_of_range, v);
    if (tp == 8) ask(16, op, h, t, out_of_range, out_of_range);
  }
  for (int op : {2, 3, 8, 9, -1}) ask(2, op, 1024, 1, out_of_range, out_of_range);  // no row in TensorRT-LLM's map
  ask(2, 0, 1024, 0, out_of_range, out_of_range);
  ask(2, 0, 1024, -5, out_of_range, out_of_range);
  ask(2, 0, -1, 1, out_of_range, out_of_range);
  const auto run = compile_and_run(dir, queries.str());
  EXPECT_EQ(run.exit_code, 0) << run.output;
  std::istringstream in(run.output), qs(queries.str());
  int checked = 0;
  for (const auto& [strict, trt] : expected) {
    std::string q;
    std::getline(qs, q);
    int got_strict = -99, got_trt = -99;
    in >> got_strict >> got_trt;
    EXPECT_EQ(got_strict, strict) << "strict: " << q;
    EXPECT_EQ(got_trt, trt) << "TensorRT-LLM bucketing: " << q;
    ++checked;
  }
  return checked;
}

// -------------------------------------------------------------------------------------------------------------
// Thresholds (vllm, sglang, flashinfer): over the sizes of the JSON cells (the request's --bytes is set to them),
// the consumer's reading of the file follows arfit's choice between the two strategies -- the faster by the JSON's
// predictions -- wherever one threshold can, and where it cannot, the file's threshold is a least-regret one and
// the file says at how many sizes it differs. Returns the number of (cell, TP) pairs checked.
struct ThresholdCheck {
  std::string what;          // "size threshold" / "crossover" / "threshold", as the file's comment says it
  std::string below, above;  // model strategies
  std::map<int, double> value;                 // the file's value per TP
  bool (*uses_below)(double bytes, int tp, double value);
};

inline int check_threshold(const json& j, const std::string& file, const ThresholdCheck& c) {
  // Sizes and the predicted times of both strategies, per TP.
  std::map<int, std::map<double, std::pair<double, double>>> times;
  for (const auto& cell : j["cells"]) {
    const auto& p = cell["predicted"];
    if (!p.contains(c.below) || !p.contains(c.above)) continue;
    times[cell["tp"].get<int>()][cell["bytes"].get<double>()] = {p[c.below]["time_us"].get<double>(), p[c.above]["time_us"].get<double>()};
  }
  // The counts the file states: "TP 8: one <what> cannot follow arfit's choice at N of M sizes".
  std::map<int, int> stated;
  const std::regex note("TP (\\d+): one " + c.what + " cannot follow arfit's choice at (\\d+) of (\\d+) sizes");
  for (std::sregex_iterator it(file.begin(), file.end(), note), end; it != end; ++it) stated[std::stoi((*it)[1])] = std::stoi((*it)[2]);
  int checked = 0;
  for (const auto& [tp, sizes] : times) {
    if (!c.value.count(tp)) {
      ADD_FAILURE() << c.below << " vs " << c.above << ": no value for TP " << tp;
      continue;
    }
    std::vector<double> bytes;
    std::vector<bool> used_below;
    int disagree = 0;
    double used_cost = 0;
    for (const auto& [b, t] : sizes) {
      const bool below = c.uses_below(b, tp, c.value.at(tp));
      const double fastest = std::min(t.first, t.second);
      used_cost += std::log((below ? t.first : t.second) / fastest);
      if (t.first != t.second && below != (t.first < t.second)) ++disagree;
      bytes.push_back(b);
      used_below.push_back(below);
      ++checked;
    }
    // The consumer's decisions are one threshold: below-strategy first, then the other.
    EXPECT_TRUE(std::is_sorted(used_below.begin(), used_below.end(), [](bool a, bool b) { return a > b; })) << "TP " << tp;
    // The least regret any threshold reaches over these sizes.
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k <= bytes.size(); ++k) {
      double cost = 0;
      std::size_t i = 0;
      for (const auto& [b, t] : sizes) {
        const double fastest = std::min(t.first, t.second);
        cost += std::log((i++ < k ? t.first : t.second) / fastest);
      }
      best = std::min(best, cost);
    }
    EXPECT_NEAR(used_cost, best, 1e-9) << "TP " << tp << ": not a least-regret threshold";
    EXPECT_EQ(disagree, stated.count(tp) ? stated.at(tp) : 0) << "TP " << tp << ": cells off arfit's choice";
  }
  return checked;
}

inline bool below_exclusive(double bytes, int, double v) { return consumers::vllm_uses_custom(bytes, v); }
inline bool below_inclusive(double bytes, int, double v) { return consumers::sglang_uses_custom(bytes, v); }
inline bool below_flashinfer(double bytes, int tp, double v) { return consumers::flashinfer_uses_oneshot(bytes, tp, v); }

// The JSON cells' sizes as a --bytes range, and the request the engine formats are generated with.
inline Request engine_request(Request r, const json& j) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& c : j["cells"]) lo = std::min(lo, c["bytes"].get<double>()), hi = std::max(hi, c["bytes"].get<double>());
  r.bytes = std::to_string(static_cast<long long>(lo)) + ":" + std::to_string(static_cast<long long>(hi));
  r.fusion = "all";
  return r;
}

// Executes the generated Python (when python3 exists) and returns what `script` prints.
inline std::string python_output(const std::string& module, const std::string& script) {
  if (consumers::python3().empty()) return "";
  testing::TempDir dir;
  const auto r = consumers::run_python(dir, module, script);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.output;
}

inline std::string python_dict_json(const std::map<int, double>& v) {
  json j = json::object();
  for (const auto& [k, x] : v) j[std::to_string(k)] = x;
  return j.dump();
}

// The json cells (no fusion) of the request, and the engine file generated on their sizes.
struct EngineFile {
  json cells;
  std::string text;
};
inline EngineFile engine_file(const ModelSet& models, const Request& r, const std::string& format) {
  Request jr = r;
  jr.fusion = "NONE";
  jr.map.clear();  // the JSON maps onto TensorRT-LLM's strategies, not onto engine roles
  EngineFile f;
  f.cells = generate_json(models, jr);
  f.text = generate(models, engine_request(r, f.cells), format);
  return f;
}

// With python3: the dict `expression` of the executed file equals the values read from its text.
inline void expect_python_dict(const std::string& file, const std::string& expression, const std::map<int, double>& values) {
  const std::string py = python_output(file, "import json\nprint(json.dumps({str(k): float(v) for k, v in " + expression + ".items()}))\n");
  if (!py.empty()) {
    EXPECT_EQ(json::parse(py).dump(), python_dict_json(values));
  }
}

// vLLM: CUSTOM_ALL_REDUCE_MAX_SIZES[capability] read with should_custom_ar's `inp_size < max_size`.
inline int check_vllm(const ModelSet& models, Request r, const std::string& custom, const std::string& nccl) {
  const EngineFile f = engine_file(models, r, "vllm");
  const std::string cap = codegen::vllm_capability(r.sm);
  const auto values = consumers::python_tp_entries(f.text, "\"" + cap + "\": ");
  EXPECT_TRUE(values.has_value()) << f.text;
  if (!values) return 0;
  expect_python_dict(f.text, "CUSTOM_ALL_REDUCE_MAX_SIZES['" + cap + "']", *values);
  return check_threshold(f.cells, f.text, {"size threshold", custom, nccl, *values, &below_exclusive});
}

// SGLang: NCCL_CROSSOVER per context; with python3, apply() on SGLang-shaped Heuristics read with _pick_algo.
inline int check_sglang(const ModelSet& models, Request r, const std::string& graph, const std::string& eager,
                        const std::string& nccl) {
  const EngineFile f = engine_file(models, r, "sglang");
  const json& j = f.cells;
  const std::string& file = f.text;
  int checked = 0;
  std::vector<double> sizes;
  for (const auto& c : j["cells"]) sizes.push_back(c["bytes"]);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  for (const auto& [context, strategy] : {std::pair<std::string, std::string>{"graph", graph}, {"eager", eager}}) {
    if (strategy.empty()) continue;
    const auto values = consumers::python_tp_entries(file, "\"" + context + "\": ");
    EXPECT_TRUE(values.has_value()) << context << "\n" << file;
    if (!values) continue;
    checked += check_threshold(j, file, {context == "graph" ? "CUDA-graph crossover" : "eager crossover", strategy, nccl,
                                         *values, &below_inclusive});
    if (consumers::python3().empty()) continue;
    // apply() on two SGLang-shaped tuned heuristics (one with multicast reaching far above any crossover).
    for (const auto& [tp, x] : *values)
      for (const std::string base : {"Heuristic(131072, 131072, 33554432, Range(524288, 134217728))",
                                     "Heuristic(16777216, 134217728, 134217728)"}) {
        const std::string out = python_output(file, consumers::sglang_pick_algo_script(context, tp, sizes, base));
        std::istringstream in(out);
        for (double b : sizes) {
          int custom = -1;
          in >> custom;
          EXPECT_EQ(custom == 1, consumers::sglang_uses_custom(b, x)) << context << " TP " << tp << " " << b << " " << base;
        }
      }
  }
  return checked;
}

// FlashInfer: _use_oneshot_heuristics read with _should_use_oneshot.
inline int check_flashinfer(const ModelSet& models, Request r, const std::string& oneshot, const std::string& twoshot) {
  const EngineFile f = engine_file(models, r, "flashinfer");
  const auto values = consumers::python_tp_entries(f.text, "USE_ONESHOT_HEURISTICS = ");
  EXPECT_TRUE(values.has_value()) << f.text;
  if (!values) return 0;
  expect_python_dict(f.text, "USE_ONESHOT_HEURISTICS", *values);
  return check_threshold(f.cells, f.text, {"threshold", oneshot, twoshot, *values, &below_flashinfer});
}

// -------------------------------------------------------------------------------------------------------------
// NCCL tuner: every line fits the plugin's buffer, the plugin loads exactly the rules written, and for every TP and
// size (grid sizes, range boundaries, midpoints) its first matching rule names the variant arfit predicts fastest
// and hands NCCL the requested channel count. Returns (size, TP) pairs checked.
inline int check_tuner(const ModelSet& models, const Request& r, const std::vector<std::string>& variants) {
  const std::string file = generate(models, r, "nccl-tuner");
  std::istringstream lines(file);
  std::string line;
  int rule_lines = 0, total_lines = 0;
  while (std::getline(lines, line)) {
    ++total_lines;
    EXPECT_LE(line.size(), codegen::kTunerMaxLine) << line;
    if (!line.empty() && line[0] != '#') ++rule_lines;
  }
  int reads = 0;
  const auto rules = consumers::load_tuner_config(file, &reads);
  EXPECT_EQ(static_cast<int>(rules.size()), rule_lines);
  EXPECT_EQ(reads, total_lines) << "a line was split by the plugin's 256-byte buffer";
  int checked = 0;
  const auto tps = codegen::parse_int_list(r.tp, "--tp");
  const codegen::Predictor predict = codegen::with_same_size_dtypes(codegen::model_set_predictor(models));
  auto fastest = [&](int tp, double bytes) {
    PredictQuery q;
    q.system = arfit::resolve_system(models, r.system);
    q.nranks = tp;
    q.nnodes = r.nnodes;
    q.bytes = bytes;
    q.dtype = "";
    std::string best;
    double best_t = std::numeric_limits<double>::infinity();
    for (const auto& v : variants) {
      q.strategy = v;
      const auto p = predict(q);
      if (p && p->time_us < best_t) best_t = p->time_us, best = v;
    }
    return arfit::parse_nccl_variant(best);
  };
  for (int tp : tps) {
    // Every size of the axis: the variant arfit predicts fastest.
    for (auto b : codegen::parse_pow2_axis(r.bytes, "--bytes")) {
      const auto choice = consumers::tuner_choice(rules, static_cast<std::uint64_t>(b), tp, r.nnodes);
      const auto best = fastest(tp, static_cast<double>(b));
      EXPECT_TRUE(choice.rule && best) << b << " bytes, TP " << tp;
      if (!choice.rule || !best) continue;
      EXPECT_EQ(choice.rule->algorithm + "/" + choice.rule->protocol, best->algorithm + "/" + best->protocol) << b << " bytes, TP " << tp;
      EXPECT_EQ(choice.channels, r.channels);
      ++checked;
    }
    // Between the sizes, at the range ends and far beyond the axis: some rule matches (no size falls through to
    // the plugin's 1-channel default).
    for (const auto& rule : rules)
      for (std::uint64_t b : {rule.min_bytes, rule.max_bytes, rule.min_bytes / 2 + rule.max_bytes / 2, std::uint64_t{3} << 40}) {
        const auto choice = consumers::tuner_choice(rules, b, tp, r.nnodes);
        EXPECT_NE(choice.rule, nullptr) << b << " bytes, TP " << tp;
        EXPECT_EQ(choice.channels, r.channels);
      }
  }
  return checked;
}

}  // namespace arfit::consumer_checks
