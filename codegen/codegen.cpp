#include "codegen/codegen.h"
#include "model/text.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

namespace arfit::codegen {

std::string resolve_system(const ModelSet& models, const std::string& requested) {
  const auto systems = models.systems();
  auto list = [&] { return systems.empty() ? std::string("none") : join(systems, ", "); };
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

Grid request_grid(const Request& r) {
  Grid g;
  g.tps = parse_int_list(r.tp, "--tp");
  g.fusions = parse_fusion_list(r.fusion, "--fusion");
  g.hiddens = parse_pow2_axis(r.hidden, "--hidden");
  g.tokens = parse_pow2_axis(r.tokens, "--tokens");
  return g;
}

int prediction_sm(const Request& r) { return r.transfer_sm ? r.sm : 0; }

Predictor request_predictor(const ModelSet& models, const Request& r) {
  const int sm = prediction_sm(r);
  const Predictor base = model_set_predictor(models);
  return with_same_size_dtypes([base, sm](const PredictQuery& q) {
    PredictQuery at = q;
    at.sm = sm;
    return base(at);
  });
}

Banner make_banner(const ModelSet& models, const Request& r, const std::string& models_text) {
  Banner b;
  b.version = ARFIT_VERSION;
  b.inputs.push_back({r.models_path, fnv1a64_hex(models_text)});
  b.date = resolve_date(r.date, models.raw(), r.models_path);
  b.command = r.command;
  return b;
}

std::string generate(const ModelSet& models, const Request& r, const std::string& format, const std::string& models_text,
                     std::string* summary) {
  const FormatSpec& spec = find_format(format);
  if (r.sm <= 0) throw std::invalid_argument("--sm: " + std::to_string(r.sm) + " is not an SM version (e.g. 90, 100)");
  FormatOutput out = spec.generate(FormatInput{models, r, make_banner(models, r, models_text)});
  if (summary) *summary = std::move(out.summary);
  return std::move(out.text);
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
