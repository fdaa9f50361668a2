#include "codegen/codegen.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

namespace arfit::codegen {

Format parse_format(const std::string& s) {
  if (s == "trtllm") return Format::Trtllm;
  if (s == "header") return Format::Header;
  if (s == "nccl-tuner") return Format::NcclTuner;
  if (s == "json") return Format::Json;
  throw std::invalid_argument("--format: '" + s + "' is not one of trtllm, header, nccl-tuner, json");
}

std::string to_string(Format f) {
  switch (f) {
    case Format::Trtllm: return "trtllm";
    case Format::Header: return "header";
    case Format::NcclTuner: return "nccl-tuner";
    case Format::Json: return "json";
  }
  return "?";
}

std::string resolve_system(const ModelSet& models, const std::string& requested) {
  const auto systems = models.systems();
  auto list = [&] {
    std::string s;
    for (const auto& x : systems) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("none") : s;
  };
  if (!requested.empty()) {
    if (std::find(systems.begin(), systems.end(), requested) == systems.end())
      throw std::invalid_argument("--system: '" + requested + "' is not in the models file (systems: " + list() + ")");
    return requested;
  }
  if (systems.size() != 1)
    throw std::invalid_argument("the models file holds " + std::to_string(systems.size()) +
                                " systems; choose one with --system (systems: " + list() + ")");
  return systems[0];
}

Banner make_banner(const ModelSet& models, const Request& r, const std::string& models_text) {
  Banner b;
  b.version = ARFIT_VERSION;
  b.inputs.push_back({r.models_path, fnv1a64_hex(models_text)});
  b.date = resolve_date(r.date, models.raw(), r.models_path);
  b.command = r.command;
  return b;
}

namespace {

Grid request_grid(const Request& r) {
  Grid g;
  g.tps = parse_int_list(r.tp, "--tp");
  g.fusions = parse_fusion_list(r.fusion, "--fusion");
  g.hiddens = parse_pow2_axis(r.hidden, "--hidden");
  g.tokens = parse_pow2_axis(r.tokens, "--tokens");
  return g;
}

}  // namespace

StrategyTable build_request_table(const ModelSet& models, const Request& r, Format format) {
  TableOptions o;
  o.system = resolve_system(models, r.system);
  o.dtype = r.dtype;
  o.sm = r.transfer_sm ? r.sm : 0;
  o.fallback = r.fallback;
  if (format == Format::Trtllm) {
    if (!trtllm_strategy_number(r.fallback))
      throw std::invalid_argument("--fallback: '" + r.fallback + "' has no TensorRT-LLM number (NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC)");
    o.accept = [](const std::string& s) { return trtllm_strategy_number(s).has_value(); };
  }
  StrategyTable t = build_table(request_grid(r), model_set_candidates(models, o.system), model_set_predictor(models), o);
  if (t.fallback_cells() == static_cast<int>(t.cells.size()))
    throw std::invalid_argument("no cell of the grid has a modelled all-reduce strategy for system '" + o.system + "'" +
                                (format == Format::Trtllm ? " among NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC" : "") +
                                " (check --tp, --fusion and the models file)");
  return t;
}

std::string generate(const ModelSet& models, const Request& r, Format format, const std::string& models_text,
                     std::string* summary) {
  const Banner banner = make_banner(models, r, models_text);
  if (format == Format::NcclTuner) {
    const std::string system = resolve_system(models, r.system);
    std::vector<NcclVariant> variants;
    std::set<std::string> names;
    for (const auto& g : models.groups())
      if (g.key.system == system && g.key.collective == Collective::AllReduce) names.insert(g.key.strategy);
    for (const auto& n : names)
      if (auto v = parse_nccl_variant(n)) variants.push_back(*v);
    if (variants.empty())
      throw std::invalid_argument("the models of system '" + system +
                                  "' have no NCCL algorithm/protocol variants (all-reduce strategies named like "
                                  "NCCL_RING_LL128 or NCCL_TREE_SIMPLE); nothing to write a tuner config from");
    std::vector<double> sizes;
    for (auto b : parse_pow2_axis(r.bytes, "--bytes")) sizes.push_back(static_cast<double>(b));
    Predictor predict = model_set_predictor(models);
    const int sm = r.transfer_sm ? r.sm : 0;
    Predictor at_sm = [predict, sm](const PredictQuery& q) {
      PredictQuery q2 = q;
      q2.sm = sm;
      auto p = predict(q2);
      for (const char* d : {"bf16", "fp16"}) {  // NCCL tables are often fp16; sizes are in bytes
        if (p) break;
        q2.dtype = d;
        p = predict(q2);
      }
      return p;
    };
    const auto rules = tuner_rules(parse_int_list(r.tp, "--tp"), sizes, variants, at_sm, system, r.nnodes,
                                   std::max<std::uint64_t>(4294967295ull, static_cast<std::uint64_t>(sizes.back())));
    if (summary) *summary = std::to_string(rules.size()) + " rules from " + std::to_string(variants.size()) + " NCCL variants";
    return write_nccl_tuner(rules, banner);
  }
  const StrategyTable t = build_request_table(models, r, format);
  if (summary) {
    std::ostringstream s;
    s << t.cells.size() << " cells, " << t.uncertain_cells() << " uncertain (best and runner-up 90 % intervals overlap), "
      << t.fallback_cells() << " without a model (fallback " << t.options.fallback << ")";
    *summary = s.str();
  }
  switch (format) {
    case Format::Trtllm: return write_trtllm(t, banner, r.sm);
    case Format::Header: return write_header(t, banner, r.sm);
    case Format::Json: return write_json(t, banner, r.sm);
    case Format::NcclTuner: break;
  }
  return "";
}

std::vector<const Cell*> suggest_cells(const StrategyTable& t, int top) {
  std::vector<const Cell*> out;
  for (const auto& c : t.cells)
    if (c.uncertain) out.push_back(&c);
  std::stable_sort(out.begin(), out.end(), [](const Cell* a, const Cell* b) { return a->expected_regret > b->expected_regret; });
  if (top > 0 && static_cast<int>(out.size()) > top) out.resize(static_cast<std::size_t>(top));
  return out;
}

std::string format_suggestions(const StrategyTable& t, const std::vector<const Cell*>& cells) {
  std::ostringstream s;
  s << t.uncertain_cells() << " of " << t.cells.size() << " cells are uncertain (best and runner-up 90 % intervals overlap)";
  if (cells.empty()) {
    s << "; nothing to suggest.\n";
    return s.str();
  }
  s << "; measure these first (highest expected regret first):\n";
  s << std::right << std::setw(4) << "#" << std::setw(5) << "tp" << "  " << std::left << std::setw(31) << "fusion" << std::right
    << std::setw(7) << "hidden" << std::setw(7) << "tokens" << std::setw(12) << "bytes" << "  " << std::left << std::setw(16)
    << "choice" << std::setw(16) << "runner-up" << std::right << std::setw(9) << "margin%" << std::setw(9) << "+-%"
    << std::setw(11) << "E[regret]%" << "\n";
  int i = 0;
  for (const Cell* c : cells) {
    s << std::right << std::setw(4) << ++i << std::setw(5) << c->tp << "  " << std::left << std::setw(31) << to_string(c->fusion)
      << std::right << std::setw(7) << c->hidden << std::setw(7) << c->tokens << std::setw(12) << std::fixed
      << std::setprecision(0) << c->bytes << "  " << std::left << std::setw(16) << c->choice << std::setw(16) << c->runner_up
      << std::right << std::setprecision(2) << std::setw(9) << 100.0 * c->margin << std::setw(9)
      << 100.0 * (std::exp(c->margin_sigma) - 1.0) << std::setprecision(3) << std::setw(11)
      << 100.0 * (std::exp(c->expected_regret) - 1.0) << "\n";
  }
  return s.str();
}

nlohmann::json suggestions_json(const StrategyTable& t, const std::vector<const Cell*>& cells) {
  nlohmann::json j;
  j["cells"] = t.cells.size();
  j["uncertain"] = t.uncertain_cells();
  nlohmann::json list = nlohmann::json::array();
  for (const Cell* c : cells)
    list.push_back({{"tp", c->tp}, {"fusion", to_string(c->fusion)}, {"hidden", c->hidden}, {"tokens", c->tokens},
                    {"bytes", c->bytes}, {"choice", c->choice}, {"runner_up", c->runner_up}, {"margin", c->margin},
                    {"margin_sigma", c->margin_sigma}, {"expected_regret", c->expected_regret}});
  j["suggestions"] = list;
  return j;
}

}  // namespace arfit::codegen
