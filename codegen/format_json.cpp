// --format json: every cell of the request's grid with the predictions of every modelled strategy, the choice,
// margins and uncertainty, and the TensorRT-LLM code the trtllm format writes for the same cell (same --sm and
// --map), so the two can be compared cell for cell.

#include "codegen/formats.h"
#include "codegen/writers.h"
#include "model/json_input.h"

namespace arfit::codegen {

namespace {

nlohmann::json trtllm_summary(const TrtllmTable& t) {
  nlohmann::json sources = nlohmann::json::object();
  for (const auto& [target, from] : t.sources) sources[target] = from;
  return {{"table", "AllReduceBestStrategyTableSM" + std::to_string(t.table_sm)},
          {"table_sm", t.table_sm},
          {"fallback", t.table.options.fallback},
          {"off_table_code", kTrtllmOffTableCode},
          {"sources", sources},
          {"unmapped", t.unmapped},
          {"cells", {{"model", t.count("model")}, {"fallback", t.count("fallback")}, {"nvfp4-below-sm100", t.count("nvfp4-below-sm100")}}}};
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
      jc["trtllm"] = {{"strategy", tc.strategy}, {"rule", tc.rule}};
    }
    json pred = json::object();
    for (const auto& cand : c.candidates)
      pred[cand.strategy] = {{"time_us", cand.prediction.time_us},
                             {"lo_us", cand.prediction.lo_us},
                             {"hi_us", cand.prediction.hi_us},
                             {"extrapolated", cand.prediction.extrapolated},
                             {"transferred", cand.prediction.transferred}};
    jc["predicted"] = pred;
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
  else if (!in.request.map.empty())
    throw std::invalid_argument("--map: the json format maps onto TensorRT-LLM strategies, which needs a --fallback "
                                "TensorRT-LLM numbers (NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC)");
  return {write_json(t, in.banner, in.request.sm, trtllm ? &*trtllm : nullptr), t.summary()};
}

}  // namespace

FormatSpec json_format() {
  return {"json", "every cell with predictions, margins, uncertainty and the TensorRT-LLM code", &generate_json};
}

}  // namespace arfit::codegen
