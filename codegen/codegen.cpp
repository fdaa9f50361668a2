#include "codegen/codegen.h"
#include "model/sm_targets.h"
#include "model/text.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace arfit::codegen {

Grid request_grid(const Request& r) {
  Grid g;
  g.tps = parse_rank_list(r.tp, "--tp");
  g.fusions = parse_fusion_list(r.fusion, "--fusion");
  g.hiddens = parse_pow2_axis(r.hidden, "--hidden");
  g.tokens = parse_pow2_axis(r.tokens, "--tokens");
  check_cell_bytes(g, r.dtype);
  check_grid_cells(g);
  return g;
}

void check_grid_cells(const Grid& g) {
  const double cells = static_cast<double>(g.tps.size()) * g.fusions.size() * g.hiddens.size() * g.tokens.size();
  if (cells > kMaxGridCells)
    throw std::invalid_argument("--tp x --fusion x --hidden x --tokens: " + std::to_string(g.tps.size()) + " x " +
                                std::to_string(g.fusions.size()) + " x " + std::to_string(g.hiddens.size()) + " x " +
                                std::to_string(g.tokens.size()) + " = " + format_number(cells, "%.0f") + " cells, more than " +
                                format_number(kMaxGridCells, "%.0f") + " (a table is built in memory, about 1.5 KB a cell)");
}

void check_cell_bytes(const Grid& g, const std::string& dtype) {
  if (g.tokens.empty() || g.hiddens.empty()) return;
  // Each cell is tokens x hidden x the element size bytes: the largest cell must be a size a model can hold.
  const std::string why = byte_bound_problem(
      "--tokens x --hidden", std::to_string(g.tokens.back()) + " x " + std::to_string(g.hiddens.back()) + " x " + dtype,
      message_bytes(static_cast<double>(g.tokens.back()), static_cast<double>(g.hiddens.back()), dtype));
  if (!why.empty()) throw std::invalid_argument(why);
}

int prediction_sm(const Request& r) { return r.transfer_sm ? r.sm : 0; }

void check_sm_transfer(const ModelSet& models, const std::string& system, const Request& r, const std::string& option) {
  if (!r.transfer_sm) return;
  std::vector<int> known;
  for (const SmTarget& t : sm_targets()) known.push_back(t.sm);
  const std::string figures = "; the transfer scales by both SMs' datasheet interconnect bandwidths, known for SM " +
                              join(known, ", ");
  if (!find_sm_target(r.sm))
    throw std::invalid_argument("--sm " + std::to_string(r.sm) + ": arfit has no datasheet figures for this SM" + figures);
  std::set<int> measured;
  for (const GroupModelView& g : models.groups())
    if (g.key.system == system) {
      if (find_sm_target(g.sm)) return;  // at least these models transfer
      measured.insert(g.sm);
    }
  if (measured.empty()) return;  // no models at all: the grid's own message says so
  measured.erase(0);
  const std::string what = measured.empty() ? std::string("an SM arfit cannot tell (no sm in its samples, and neither "
                                                          "its device name nor its label names a GPU arfit knows)")
                                            : "SM " + join(measured, ", ") + ", which has no datasheet figures";
  throw std::invalid_argument(option + ": system '" + system + "' was measured on " + what +
                              ", so its models cannot be carried to --sm " + std::to_string(r.sm) + figures +
                              " (without " + option + " they answer as measured)");
}

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
  if (!r.base_path.empty()) b.inputs.push_back({r.base_path, fnv1a64_hex(r.base_text)});
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
  std::vector<std::vector<std::string>> rows = {
      {"#", "tp", "fusion", "hidden", "tokens", "bytes", "choice", "runner-up", "margin%", "+-%", "E[regret]%"}};
  for (const Cell* c : cells)
    rows.push_back({std::to_string(rows.size()), std::to_string(c->tp), to_string(c->fusion), std::to_string(c->hidden),
                    std::to_string(c->tokens), format_number(c->bytes, "%.0f"), c->choice, c->runner_up,
                    format_number(100.0 * c->margin, "%.2f"), format_number(100.0 * (std::exp(c->margin_sigma) - 1.0), "%.2f"),
                    format_number(100.0 * (std::exp(c->expected_regret) - 1.0), "%.3f")});
  s << aligned_columns(rows, {true, true, false, true, true, true, false, false, true, true, true});
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

std::string codegen_command_line(const std::string& models_path, const std::string& format, const Request& r) {
  std::string s = "arfit codegen " + models_path + " --format " + format + " --sm " + std::to_string(r.sm) +
                  (r.transfer_sm ? " --transfer-sm" : "") + " --tp " + r.tp + " --fusion " + r.fusion + " --hidden " +
                  r.hidden + " --tokens " + r.tokens + " --dtype " + r.dtype + " --fallback " + r.fallback;
  if (!r.system.empty()) s += " --system " + r.system;
  if (!r.consumer_version.empty()) s += " --consumer-version " + r.consumer_version;
  if (!r.base_path.empty()) s += " --base " + r.base_path;
  for (const auto& m : r.map) s += " --map " + m;
  if (format == "nccl-tuner")
    s += " --bytes " + r.bytes + " --nnodes " + std::to_string(r.nnodes) + " --channels " + std::to_string(r.channels);
  else if (format == "vllm" || format == "sglang" || format == "flashinfer")
    s += " --bytes " + r.bytes;
  return s;
}

}  // namespace arfit::codegen
