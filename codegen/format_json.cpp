// --format json: every cell of the request's grid with the predictions of every modelled strategy, the choice,
// margins and uncertainty, and the TensorRT-LLM code the trtllm format writes for the same cell (same --sm and
// --map), so the two can be compared cell for cell.

#include "codegen/formats.h"
#include "codegen/writers.h"
#include "model/json_input.h"

namespace arfit::codegen {

namespace {

const char* gate_name(GateCover g) { return g == GateCover::All ? "all" : g == GateCover::Part ? "part" : "none"; }

nlohmann::json trtllm_summary(const TrtllmTable& t) {
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [target, from] : t.sources) sources[target] = from;
  nlohmann::json cells = nlohmann::json::object();
  for (const auto& rule : trtllm_rule_names()) cells[rule] = t.count(rule);
  cells["engine-size-gate-part"] = t.gated(GateCover::Part);
  cells["excluded-choices"] = t.excluded_choices();
  nlohmann::json j = {{"table", "AllReduceBestStrategyTableSM" + std::to_string(t.table_sm)},
                      {"table_sm", t.table_sm},
                      {"fallback", t.table.options.fallback},
                      {"off_table_code", t.version.off_table_code},
                      {"consumer_version", t.version.commit},
                      {"rules_from", t.version_source},
                      {"workspace_bytes", {{"tp2", t.version.workspace_tp2_bytes}, {"above_tp2", t.version.workspace_bytes}}},
                      {"engine_notes", trtllm_engine_notes(t.version, t.table_sm, t.table.options.dtype)},
                      {"sources", sources},
                      {"unmapped", t.unmapped},
                      {"not_from_table", t.not_from_table},
                      {"cells", cells}};
  if (t.base) j["base"] = t.base->path;
  return j;
}

}  // namespace

nlohmann::json table_to_json(const StrategyTable& t, const Banner& banner, int sm, const TrtllmTable* trtllm) {
  using nlohmann::json;
  json j;
  j["generator"] = banner.generator;
  j["version"] = banner.version;
  j["note"] = "generated file, do not edit";
  json inputs = json::array();
  for (const auto& in : banner.inputs) inputs.push_back({{"path", in.path}, {"fnv1a64", in.fnv1a64}});
  j["inputs"] = inputs;
  j["date"] = banner.date;
  j["command"] = banner.command;
  j["system"] = t.options.system;
  j["sm"] = sm;
  j["dtype"] = t.options.dtype;
  j["fallback"] = t.options.fallback;
  json fusions = json::array();
  for (auto f : t.grid.fusions) fusions.push_back(to_string(f));
  j["axes"] = {{"tp", t.grid.tps}, {"fusion", fusions}, {"hidden", t.grid.hiddens}, {"tokens", t.grid.tokens}};
  j["strategies"] = t.strategies;
  j["summary"] = {{"cells", t.cells.size()},
                  {"uncertain", t.uncertain_cells()},
                  {"fallback", t.fallback_cells()},
                  {"transferred", t.transferred_cells()}};
  if (trtllm) j["trtllm"] = trtllm_summary(*trtllm);
  json cells = json::array();
  for (std::size_t i = 0; i < t.cells.size(); ++i) {
    const Cell& c = t.cells[i];
    json jc;
    jc["tp"] = c.tp;
    jc["fusion"] = to_string(c.fusion);
    jc["hidden"] = c.hidden;
    jc["tokens"] = c.tokens;
    jc["bytes"] = c.bytes;
    jc["choice"] = c.choice;
    if (trtllm) {
      const TrtllmCell& tc = trtllm->cells[i];
      jc["trtllm_code"] = tc.code;
      jc["trtllm"] = {{"strategy", tc.strategy}, {"rule", tc.rule}, {"engine_size_gate", gate_name(tc.gate)}};
    }
    json pred = json::object();
    for (const auto& cand : c.candidates)
      pred[cand.strategy] = {{"time_us", cand.prediction.time_us},
                             {"lo_us", cand.prediction.lo_us},
                             {"hi_us", cand.prediction.hi_us},
                             {"extrapolated", cand.prediction.extrapolated},
                             {"transferred", cand.prediction.transferred}};
    jc["predicted"] = pred;
    if (!c.excluded.empty()) {
      json excluded = json::object();
      for (const auto& e : c.excluded)
        excluded[e.strategy] = {{"time_us", e.prediction.time_us}, {"lo_us", e.prediction.lo_us},
                                {"hi_us", e.prediction.hi_us}, {"why", e.why}};
      jc["excluded"] = excluded;
    }
    jc["runner_up"] = c.runner_up;
    jc["margin"] = c.margin;
    jc["margin_sigma"] = c.margin_sigma;
    jc["uncertain"] = c.uncertain;
    jc["expected_regret"] = c.expected_regret;
    jc["fallback"] = c.fallback;
    jc["extrapolated"] = c.extrapolated;
    jc["transferred"] = c.transferred;
    cells.push_back(std::move(jc));
  }
  j["cells"] = std::move(cells);
  return j;
}

std::string write_json(const StrategyTable& t, const Banner& banner, int sm, const TrtllmTable* trtllm) {
  return json_document_text(table_to_json(t, banner, sm, trtllm));
}

namespace {

FormatOutput generate_json(const FormatInput& in) {
  refuse_size_options(in.request, "json");
  refuse_tuner_options(in.request, "json");
  const StrategyTable t = build_request_table(in.models, in.request);
  // The trtllm codes need a numbered --fallback; with another one the JSON carries no trtllm section.
  std::optional<TrtllmTable> trtllm;
  if (trtllm_strategy_number(in.request.fallback)) trtllm = build_trtllm_table(in.models, in.request, &t);
  else if (!in.request.map.empty() || !in.request.base_path.empty() || !in.request.consumer_version.empty())
    throw std::invalid_argument(std::string(!in.request.map.empty() ? "--map" : !in.request.base_path.empty() ? "--base" : "--consumer-version") +
                                ": the json format records TensorRT-LLM's table with them, which needs a --fallback "
                                "TensorRT-LLM numbers (NCCL, ONESHOT, NCCL_SYMMETRIC)");
  return {write_json(t, in.banner, in.request.sm, trtllm ? &*trtllm : nullptr), t.summary()};
}

}  // namespace

FormatSpec json_format() {
  return {"json", "every cell with predictions, margins, uncertainty and the TensorRT-LLM code", &generate_json};
}

}  // namespace arfit::codegen
