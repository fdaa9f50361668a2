#include "plots/adapters.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <tuple>

#include "model/errors.h"
#include "model/json_input.h"
#include "model/metrics.h"
#include "model/text.h"

namespace arfit::plots {

namespace {

// Key without the system, for pairing samples and models when the system labels differ.
auto loose(const GroupKey& k) { return std::make_tuple(k.collective, k.strategy, k.fusion, k.dtype, k.nranks, k.nnodes); }

}  // namespace

std::string key_name(const GroupKey& k) {
  return slug(k.system + "_" + to_string(k.collective) + "_" + k.strategy + "_" + to_string(k.fusion) + "_" + k.dtype +
              (k.nranks > 0 ? "_n" + std::to_string(k.nranks) : "") + (k.nnodes > 1 ? "_N" + std::to_string(k.nnodes) : ""));
}

namespace {

// Median time per size; out-of-place samples preferred where a size has both.
std::vector<FitPoint> reduce_points(const std::vector<const Sample*>& samples, bool held_out) {
  std::map<double, std::vector<double>> oop, inp;
  for (const Sample* s : samples) {
    if (!s->ok() || !(s->bytes > 0) || !(s->time_us > 0)) continue;
    (s->in_place ? inp : oop)[static_cast<double>(s->bytes)].push_back(s->time_us);
  }
  for (auto& [b, v] : inp)
    if (!oop.count(b)) oop[b] = v;
  std::vector<FitPoint> out;
  for (const auto& [b, v] : oop) out.push_back({b, size_median(v), held_out});  // the fit's own value: dots sit on its knots
  return out;
}

}  // namespace

std::optional<Prediction> predict_at(const ModelSet& models, const GroupKey& key, double bytes, int sm) {
  PredictQuery q = group_query(key, bytes);
  q.sm = sm;
  try {
    return models.predict(q);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

FitCurve model_curve(const ModelSet& models, const GroupKey& key, double lo, double hi, int per_octave, int sm,
                     const std::string& label, bool dashed) {
  FitCurve c;
  c.series = label;
  c.label = label;
  c.collective = key.collective;
  c.nranks = key.nranks;
  c.dashed = dashed;
  if (!(lo > 0) || !(hi > lo)) return c;
  int steps = std::max(2, static_cast<int>(std::ceil(std::log2(hi / lo) * per_octave)));
  for (int i = 0; i <= steps; ++i) {
    double bytes = lo * std::pow(hi / lo, static_cast<double>(i) / steps);
    const std::optional<Prediction> p = predict_at(models, key, bytes, sm);
    if (!p || !(p->time_us > 0)) continue;
    c.points.push_back({bytes, p->time_us, p->lo_us, p->hi_us});
  }
  return c;
}

namespace {

std::string tp_text(int n) { return "TP" + std::to_string(n); }

}  // namespace

std::string group_title(const GroupKey& k) {
  std::string t = k.system + " · " + to_string(k.collective) + " · " + k.strategy + " · " + to_string(k.fusion) + " · " +
                  k.dtype + " · TP" + std::to_string(k.nranks);
  if (k.nnodes > 1) t += " · " + std::to_string(k.nnodes) + " nodes";
  return t;
}

// ============================================ fit =========================================================

std::vector<NamedFit> fit_figures(const std::vector<Sample>& samples, const std::vector<Sample>& held_out,
                                  const ModelSet* models, const FitAdapterOptions& options) {
  std::map<GroupKey, std::pair<std::vector<const Sample*>, std::vector<const Sample*>>> by_key;
  for (const auto& s : samples) by_key[sample_group_key(s)].first.push_back(&s);
  for (const auto& s : held_out) by_key[sample_group_key(s)].second.push_back(&s);

  std::vector<GroupModelView> views;
  if (models) views = models->groups();
  std::set<std::size_t> used_views;
  auto find_view = [&](const GroupKey& k) -> const GroupModelView* {
    for (std::size_t i = 0; i < views.size(); ++i)
      if (views[i].key == k) return used_views.insert(i), &views[i];
    // One system in the models but other labels in the samples: pair by everything else.
    const GroupModelView* hit = nullptr;
    std::size_t hit_i = 0;
    int n = 0;
    for (std::size_t i = 0; i < views.size(); ++i)
      if (loose(views[i].key) == loose(k)) hit = &views[i], hit_i = i, ++n;
    if (n == 1) return used_views.insert(hit_i), hit;
    return nullptr;
  };

  std::vector<NamedFit> out;
  auto add = [&](const GroupKey& key, const std::vector<const Sample*>* train, const std::vector<const Sample*>* test,
                 const GroupModelView* view) {
    NamedFit nf;
    nf.name = "fit_" + key_name(key);
    FitFigureData& d = nf.data;
    d.title = group_title(key);
    double lo = INFINITY, hi = 0;
    FitMeasured m;
    m.series = tp_text(key.nranks);
    m.label = "measured";
    m.collective = key.collective;
    m.nranks = key.nranks;
    if (train)
      for (const auto& p : reduce_points(*train, false)) m.points.push_back(p);
    if (test)
      for (const auto& p : reduce_points(*test, true)) m.points.push_back(p);
    for (const auto& p : m.points) lo = std::min(lo, p.bytes), hi = std::max(hi, p.bytes);
    if (!m.points.empty()) d.measured.push_back(m);
    if (view && models) {
      double a = std::min(lo, view->min_bytes), b = std::max(hi, view->max_bytes);
      if (!(a > 0)) a = view->min_bytes;
      double ext = std::pow(2.0, options.extend_octaves);
      FitCurve c = model_curve(*models, view->key, a / ext, b * ext, options.curve_points_per_octave, 0,
                               "fit (" + view->family + ")", false);
      c.series = m.series;
      if (!c.points.empty()) d.curves.push_back(c);
      d.subtitle = "family " + view->family + ", CV GMAE " + format_number(100.0 * view->cv_gmae, "%.2g") + " %, " +
                   std::to_string(view->points) + " sizes fitted; curve extends " + format_number(options.extend_octaves, "%g") +
                   " octaves beyond them";
      if (view->family == "seed")
        for (const auto& [ln_p, sats_p] : view->seed_turning_points) {
          if (ln_p > 0) d.turning_points.push_back({ln_p, "ln_p"});
          if (sats_p > 0) d.turning_points.push_back({sats_p, "sats_p"});
        }
    } else if (models) {
      d.subtitle = "no model for this group";
    }
    if (d.measured.empty() && d.curves.empty()) return;
    out.push_back(std::move(nf));
  };
  for (const auto& [key, lists] : by_key) add(key, &lists.first, &lists.second, find_view(key));
  for (std::size_t i = 0; i < views.size(); ++i)
    if (!used_views.count(i)) add(views[i].key, nullptr, nullptr, &views[i]);

  // Names must be unique (the slug may fold different keys together).
  std::map<std::string, int> seen;
  for (auto& nf : out)
    if (int k = seen[nf.name]++; k > 0) nf.name += "_" + std::to_string(k + 1);
  return out;
}

std::vector<NamedFit> cross_figures(const std::vector<Sample>& samples, const ModelSet& models,
                                    const std::vector<int>& extra_nranks, const std::vector<int>& extra_sms,
                                    const FitAdapterOptions& options) {
  // Family key: the group key without nranks.
  auto family_of = [](GroupKey k) {
    k.nranks = 0;
    return k;
  };
  std::map<GroupKey, std::vector<GroupModelView>> families;
  for (const auto& v : models.groups()) families[family_of(v.key)].push_back(v);
  std::map<GroupKey, std::vector<const Sample*>> by_key;
  for (const auto& s : samples) by_key[sample_group_key(s)].push_back(&s);

  std::vector<NamedFit> out;
  for (const auto& [fam, views] : families) {
    NamedFit nf;
    nf.name = "cross_" + key_name(fam);
    FitFigureData& d = nf.data;
    std::set<int> measured_n;
    double lo = INFINITY, hi = 0;
    int top_n = 0;
    for (const auto& v : views) {
      measured_n.insert(v.key.nranks);
      lo = std::min(lo, v.min_bytes);
      hi = std::max(hi, v.max_bytes);
      top_n = std::max(top_n, v.key.nranks);
    }
    if (!(lo > 0) || !(hi > lo)) continue;
    for (const auto& v : views) {
      std::string tp = tp_text(v.key.nranks);
      FitMeasured m{tp, tp + " measured", v.key.collective, v.key.nranks, {}};
      auto it = by_key.find(v.key);
      if (it == by_key.end())  // samples labelled differently: pair by everything but the system
        for (auto jt = by_key.begin(); jt != by_key.end(); ++jt)
          if (loose(jt->first) == loose(v.key)) it = jt;
      if (it != by_key.end()) m.points = reduce_points(it->second, false);
      if (!m.points.empty()) d.measured.push_back(m);
      FitCurve c = model_curve(models, v.key, lo, hi, options.curve_points_per_octave, 0, tp + " fit (" + v.family + ")", false);
      c.series = tp;
      if (!c.points.empty()) d.curves.push_back(c);
    }
    std::vector<std::string> predicted;
    for (int n : extra_nranks) {
      if (measured_n.count(n)) continue;
      GroupKey k = fam;
      k.nranks = n;
      FitCurve c = model_curve(models, k, lo, hi, options.curve_points_per_octave, 0, tp_text(n) + " predicted", true);
      if (!c.points.empty()) d.curves.push_back(c), predicted.push_back(tp_text(n));
    }
    for (int sm : extra_sms) {
      GroupKey k = fam;
      k.nranks = top_n;
      std::string label = tp_text(top_n) + " on sm" + std::to_string(sm) + " predicted";
      FitCurve c = model_curve(models, k, lo, hi, options.curve_points_per_octave, sm, label, true);
      if (!c.points.empty()) d.curves.push_back(c), predicted.push_back("sm" + std::to_string(sm));
    }
    if (predicted.empty()) continue;  // nothing to extrapolate to: the fit figures already show this
    const std::string measured_list = join(measured_n, "/");
    const std::string pred_list = join(predicted, ", ");
    d.title = fam.system + " · " + to_string(fam.collective) + " · " + fam.strategy + " · " + to_string(fam.fusion) +
              " · " + fam.dtype + " · TP " + measured_list + " measured";
    d.subtitle = "dashed: " + pred_list + " predicted where nothing was measured";
    out.push_back(std::move(nf));
  }
  return out;
}

// ============================================ strategy grids ==============================================

bool StrategyGrid::shaped() const {
  if (cells.empty()) return false;
  for (const auto& c : cells)
    if (c.tokens <= 0 || c.hidden <= 0) return false;
  return true;
}

namespace {

constexpr std::int64_t kMaxGridAxis = std::int64_t{1} << 40;  // codegen's largest tokens/hidden (codegen/axes.h)

// A positive, finite time or size (JsonView::number checks finite).
double positive(const JsonView& v) {
  const double x = v.number();
  if (!(x > 0)) v.fail("expected a number > 0, got " + v.json().dump());
  return x;
}

// A finite number >= lo (an error in %: 0; a regret ratio: 1).
double at_least(const JsonView& v, double lo) {
  const double x = v.number();
  if (!(x >= lo)) v.fail("expected a number >= " + format_number(lo, "%g") + ", got " + v.json().dump());
  return x;
}

// Where a cell of a codegen JSON or a select-eval record lies: its fusion (NONE when absent), tokens and hidden
// together (a shaped cell) or neither (a cell of a message size), and its bytes (required without a shape).
void read_cell_place(const JsonView& jc, StrategyCell& c) {
  c.fusion = "NONE";
  if (auto f = jc.find("fusion")) {
    const auto op = try_parse_fusion(f->name());
    if (!op) f->fail("unknown fusion " + f->json().dump());
    c.fusion = to_string(*op);
  }
  const auto tokens = jc.find("tokens"), hidden = jc.find("hidden");
  if (tokens.has_value() != hidden.has_value())
    jc.fail(std::string("has \"") + (tokens ? "tokens" : "hidden") + "\" without \"" + (tokens ? "hidden" : "tokens") + "\"");
  if (tokens) c.tokens = tokens->integer<std::int64_t>(1, kMaxGridAxis), c.hidden = hidden->integer<std::int64_t>(1, kMaxGridAxis);
  if (auto b = jc.find("bytes")) c.bytes = positive(*b);
  else if (!tokens) jc.fail("a cell needs \"tokens\" and \"hidden\", or \"bytes\"");
}

StrategyGrid read_codegen_json(const JsonView& root, const std::string& name) {
  root.expect_object();
  if (auto cells = root.find("cells"); cells && !cells->json().is_array())
    cells->fail("expected an array of cells, got " + cells->describe());
  if (!root.find("cells"))
    root.fail("not a codegen JSON (expected an object with a \"cells\" array; write one with `arfit codegen MODELS "
              "--format json`)");
  StrategyGrid g;
  g.source = "predicted";
  std::string system = root.find("system") ? root.at("system").name() : std::string();
  if (system.empty()) system = std::filesystem::path(name).stem().string();
  if (auto d = root.find("dtype")) g.dtype = d->name();
  if (auto ss = root.find("strategies"))
    for (std::size_t i = 0; i < ss->size(); ++i) g.strategies.push_back(ss->at(i).name());
  const JsonView cells = root.at("cells");
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const JsonView jc = cells.at(i);
    jc.expect_object();
    if (auto f = jc.find("fallback"); f && f->boolean()) continue;  // no candidate could be predicted: nothing to draw
    StrategyCell c;
    c.system = system;
    c.tp = jc.at("tp").integer<int>(1, std::numeric_limits<int>::max());
    read_cell_place(jc, c);
    if (auto ch = jc.find("choice")) c.choice = ch->name();
    if (auto u = jc.find("uncertain")) c.uncertain = u->boolean();
    if (auto pred = jc.find("predicted")) {
      pred->expect_object();
      for (const auto& [s, p] : pred->json().items()) {
        const JsonView pv(p, json_pointer_append(pred->pointer(), s));
        if (const std::string why = name_problem(s); !why.empty()) pv.fail("strategy name: " + why);
        if (p.is_null()) continue;  // no prediction for this strategy
        // The figures draw time_us only (lo_us and hi_us are not read).
        c.time_us[s] = positive(p.is_object() ? pv.at("time_us") : pv);
      }
    }
    g.cells.push_back(std::move(c));
  }
  std::set<std::string> known(g.strategies.begin(), g.strategies.end());
  for (const auto& c : g.cells) {
    for (const auto& [s, t] : c.time_us)
      if (known.insert(s).second) g.strategies.push_back(s);
    if (!c.choice.empty() && known.insert(c.choice).second) g.strategies.push_back(c.choice);
  }
  return g;
}

}  // namespace

StrategyGrid grid_from_codegen_json(const nlohmann::json& j, const std::string& name, const std::string& text) {
  return read_json_document(text, name, [&] { return read_codegen_json(JsonView(j), name); });
}

StrategyGrid grid_from_samples(const std::vector<Sample>& samples, Collective collective) {
  StrategyGrid g;
  g.source = "measured";
  using CellKey = std::tuple<std::string, int, std::string, std::int64_t, std::int64_t, std::int64_t>;
  std::map<CellKey, std::map<std::string, std::vector<double>>> times;
  std::map<CellKey, double> recorded_bytes;  // what the samples of a cell say its size is (shaped ones too)
  std::set<std::string> strategies;
  std::map<std::string, int> dtypes;
  // Tables often hold several element types (aiconfigurator's NCCL tables: fp16 and int8); times of different
  // element sizes are not the same cell. Keep the element size most samples have (bf16 and fp16 count together).
  std::map<int, int> sizes;
  for (const auto& s : samples)
    if (s.ok() && s.collective == collective && s.time_us > 0) sizes[dtype_size(s.dtype)]++;
  int keep_size = 0, most = -1;
  for (const auto& [sz, n] : sizes)
    if (n > most || (n == most && sz == 2)) most = n, keep_size = sz;
  for (const auto& s : samples) {
    if (!s.ok() || s.collective != collective || !(s.time_us > 0)) continue;
    if (dtype_size(s.dtype) != keep_size) continue;
    bool shaped = s.tokens > 0 && s.hidden > 0;
    CellKey k{sample_system(s), s.nranks, to_string(s.fusion), shaped ? s.tokens : 0, shaped ? s.hidden : 0,
              shaped ? 0 : s.bytes};
    times[k][s.strategy].push_back(s.time_us);
    recorded_bytes[k] = std::max(recorded_bytes[k], static_cast<double>(s.bytes));
    strategies.insert(s.strategy);
    dtypes[canonical_dtype(s.dtype)]++;
  }
  // Byte-only cells of a shaped set would break the tokens x hidden layout: keep shapes when any exist.
  bool any_shaped = false;
  for (const auto& [k, v] : times) any_shaped = any_shaped || std::get<3>(k) > 0;
  for (const auto& [k, per] : times) {
    if (any_shaped && std::get<3>(k) == 0) continue;
    StrategyCell c;
    std::tie(c.system, c.tp, c.fusion, c.tokens, c.hidden, std::ignore) = k;
    c.bytes = recorded_bytes[k];
    for (const auto& [s, v] : per) c.time_us[s] = size_median(v);
    c.measured = true;
    g.cells.push_back(std::move(c));
  }
  // NCCL first (the baseline everybody knows), then alphabetical.
  if (strategies.count(strategy::kNccl)) g.strategies.push_back(strategy::kNccl);
  for (const auto& s : strategies)
    if (s != strategy::kNccl) g.strategies.push_back(s);
  int best = 0;
  for (const auto& [d, n] : dtypes)
    if (n > best) best = n, g.dtype = d;
  // A shaped cell's size from its shape and the grid's type (one size for the cell whatever each sample rounded),
  // else, for a type arfit cannot size, the size its samples recorded.
  if (any_shaped)
    for (auto& c : g.cells)
      if (const double b = message_bytes(static_cast<double>(c.tokens), static_cast<double>(c.hidden), g.dtype); b > 0) c.bytes = b;
  return g;
}

namespace {

using CellId = std::tuple<std::string, int, std::string, std::int64_t, std::int64_t, std::int64_t>;
CellId cell_id(const StrategyCell& c, bool shaped) {
  return {c.system, c.tp, c.fusion, shaped ? c.tokens : 0, shaped ? c.hidden : 0,
          shaped ? 0 : static_cast<std::int64_t>(std::llround(c.bytes))};
}

std::string best_of(const StrategyCell& c) {
  std::string best;
  double bt = INFINITY;
  for (const auto& [s, t] : c.time_us)
    if (t < bt) bt = t, best = s;
  return best;
}

// Figure grouping: shaped -> (system, tp) figure, fusion panel; byte-only -> system figure, fusion panel.
struct FigureKey {
  std::string system;
  int tp = 0;
  std::string fusion;  // set when the figure is per fusion (heatmaps, diff maps)
  bool operator<(const FigureKey& o) const { return std::tie(system, tp, fusion) < std::tie(o.system, o.tp, o.fusion); }
};

GridCell place(const StrategyCell& c, bool shaped) {
  GridCell g;
  if (shaped) g.x = c.tokens, g.y = c.hidden;
  else g.x = static_cast<std::int64_t>(std::llround(c.bytes)), g.y = c.tp;
  return g;
}

void set_axes(bool shaped, GridAxis& x, GridAxis& y) {
  if (shaped) {
    x = {"num_tokens", AxisStyle::Pow2};
    y = {"hidden_size", AxisStyle::Pow2};
  } else {
    x = {"message size (bytes)", AxisStyle::Bytes};
    y = {"GPUs (TP)", AxisStyle::Plain};
  }
}

// Fusion order of TensorRT-LLM's table, then anything else alphabetically.
int fusion_rank(const std::string& f) {
  if (auto op = try_parse_fusion(f)) return static_cast<int>(*op);
  return 100;
}

template <typename Fn>
std::vector<NamedHeatmap> per_strategy_maps(const StrategyGrid& grid, const std::string& prefix, Fn fill) {
  bool shaped = grid.shaped();
  std::map<FigureKey, std::vector<const StrategyCell*>> figs;
  for (const auto& c : grid.cells) figs[{c.system, shaped ? c.tp : 0, c.fusion}].push_back(&c);
  std::vector<NamedHeatmap> out;
  for (const auto& [fk, cells] : figs) {
    NamedHeatmap h;
    h.name = prefix + "_" + slug(fk.system + (shaped ? "_tp" + std::to_string(fk.tp) : "") + "_" + fk.fusion);
    set_axes(shaped, h.data.x, h.data.y);
    for (const auto& s : grid.strategies) {
      GridPanel p{s, {}};
      bool any = false;
      for (const StrategyCell* c : cells) {
        GridCell g = place(*c, shaped);
        g.value = fill(*c, s);
        any = any || std::isfinite(g.value);
        p.cells.push_back(g);
      }
      if (any) h.data.panels.push_back(std::move(p));
    }
    if (h.data.panels.empty()) continue;
    h.data.title = fk.system + " · allreduce · fusion " + fk.fusion + (shaped ? " · TP" + std::to_string(fk.tp) : "") +
                   " · " + grid.dtype;
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace

void mark_measured(StrategyGrid& grid, const StrategyGrid& measured) {
  bool shaped = grid.shaped() && measured.shaped();
  std::set<CellId> m;
  for (const auto& c : measured.cells) m.insert(cell_id(c, shaped));
  // A single measured system and a single predicted one pair up even when their labels differ.
  std::set<std::string> gs, ms;
  for (const auto& c : grid.cells) gs.insert(c.system);
  for (const auto& c : measured.cells) ms.insert(c.system);
  bool relabel = gs.size() == 1 && ms.size() == 1;
  for (auto& c : grid.cells) {
    CellId id = cell_id(c, shaped);
    if (relabel) std::get<0>(id) = *ms.begin();
    c.measured = m.count(id) > 0;
  }
}

std::vector<NamedHeatmap> heatmaps(const StrategyGrid& grid) {
  auto out = per_strategy_maps(grid, "heatmap", [](const StrategyCell& c, const std::string& s) -> double {
    auto it = c.time_us.find(s);
    return it == c.time_us.end() ? NAN : it->second;
  });
  for (auto& h : out) {
    h.data.title += " · " + grid.source + " time per strategy";
    h.data.caption = "Times are " + grid.source + ".";
  }
  return out;
}

std::vector<NamedHeatmap> diff_maps(const StrategyGrid& grid) {
  auto out = per_strategy_maps(grid, "diff", [](const StrategyCell& c, const std::string& s) -> double {
    auto it = c.time_us.find(s);
    if (it == c.time_us.end() || c.time_us.size() < 2) return NAN;
    double best = INFINITY;
    for (const auto& [n, t] : c.time_us) best = std::min(best, t);
    return 100.0 * (it->second / best - 1.0);
  });
  for (auto& h : out) {
    h.data.title += " · % slower than the best (" + grid.source + ")";
    h.data.scale = GridScale::Percent;
    h.data.value_label = "slower than the best (%)";
  }
  return out;
}

std::vector<NamedBestMap> best_maps(const StrategyGrid& grid) {
  bool shaped = grid.shaped();
  std::map<FigureKey, std::map<std::string, std::vector<const StrategyCell*>>> figs;
  for (const auto& c : grid.cells) figs[{c.system, shaped ? c.tp : 0, ""}][c.fusion].push_back(&c);
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < grid.strategies.size(); ++i) index[grid.strategies[i]] = static_cast<int>(i);
  std::vector<NamedBestMap> out;
  for (const auto& [fk, by_fusion] : figs) {
    NamedBestMap b;
    b.name = "best_" + slug(fk.system + (shaped ? "_tp" + std::to_string(fk.tp) : ""));
    set_axes(shaped, b.data.x, b.data.y);
    b.data.strategies = grid.strategies;
    b.data.title = fk.system + " · allreduce · " + (shaped ? "TP" + std::to_string(fk.tp) + " · " : "") + grid.dtype +
                   " · best strategy per cell (" + grid.source + ")";
    std::vector<std::pair<std::string, std::vector<const StrategyCell*>>> ordered(by_fusion.begin(), by_fusion.end());
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& c) { return fusion_rank(a.first) < fusion_rank(c.first); });
    for (const auto& [fusion, cells] : ordered) {
      GridPanel p{"fusion " + fusion, {}};
      for (const StrategyCell* c : cells) {
        GridCell g = place(*c, shaped);
        if (c->choice.empty() && c->time_us.size() < 2) continue;  // one strategy measured: nothing was compared
        std::string choice = c->choice.empty() ? best_of(*c) : c->choice;
        auto it = index.find(choice);
        if (it == index.end()) continue;
        g.category = it->second;
        g.measured = c->measured && grid.source != "measured";  // all cells of a measured grid are measured
        g.uncertain = c->uncertain;
        p.cells.push_back(g);
      }
      if (!p.cells.empty()) b.data.panels.push_back(std::move(p));
    }
    if (!b.data.panels.empty()) out.push_back(std::move(b));
  }
  return out;
}

std::vector<NamedHeatmap> regret_maps(const StrategyGrid& chosen, const StrategyGrid& measured) {
  // Cells are matched by shape when both grids have shapes, else by message size; they are drawn on the
  // chosen table's own axes (tokens x hidden per TP when it has shapes).
  bool match_shaped = chosen.shaped() && measured.shaped();
  bool shaped = chosen.shaped();
  std::map<CellId, const StrategyCell*> m;
  for (const auto& c : measured.cells) m[cell_id(c, match_shaped)] = &c;
  std::set<std::string> gs, ms;
  for (const auto& c : chosen.cells) gs.insert(c.system);
  for (const auto& c : measured.cells) ms.insert(c.system);
  bool relabel = gs.size() == 1 && ms.size() == 1;

  std::map<FigureKey, std::map<std::string, std::vector<GridCell>>> figs;
  std::map<FigureKey, std::vector<double>> ratios;
  for (const auto& c : chosen.cells) {
    CellId id = cell_id(c, match_shaped);
    if (relabel) std::get<0>(id) = *ms.begin();
    auto it = m.find(id);
    if (it == m.end()) continue;
    const StrategyCell& mc = *it->second;
    std::string choice = c.choice.empty() ? best_of(c) : c.choice;
    auto ct = mc.time_us.find(choice);
    if (ct == mc.time_us.end() || mc.time_us.size() < 2) continue;
    double best = INFINITY;
    for (const auto& [s, t] : mc.time_us) best = std::min(best, t);
    GridCell g = place(c, shaped);
    g.value = 100.0 * (ct->second / best - 1.0);
    FigureKey fk{c.system, shaped ? c.tp : 0, ""};
    figs[fk][c.fusion].push_back(g);
    ratios[fk].push_back(ct->second / best);
  }
  std::vector<NamedHeatmap> out;
  for (const auto& [fk, by_fusion] : figs) {
    NamedHeatmap h;
    h.name = "regret_" + slug(fk.system + (shaped ? "_tp" + std::to_string(fk.tp) : ""));
    set_axes(shaped, h.data.x, h.data.y);
    h.data.scale = GridScale::Percent;
    h.data.value_label = "regret (%)";
    std::vector<std::pair<std::string, std::vector<GridCell>>> ordered(by_fusion.begin(), by_fusion.end());
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& c) { return fusion_rank(a.first) < fusion_rank(c.first); });
    for (auto& [fusion, cells] : ordered) h.data.panels.push_back({"fusion " + fusion, cells});
    const auto& r = ratios.at(fk);
    double lsum = 0, mx = 1;
    int exact = 0;
    for (double x : r) lsum += std::log(x), mx = std::max(mx, x), exact += x <= 1.0 + 1e-12;
    h.data.title = fk.system + " · allreduce · " + (shaped ? "TP" + std::to_string(fk.tp) + " · " : "") +
                   "regret of the chosen strategy vs the measured best";
    h.data.caption = "Over " + std::to_string(r.size()) + " measured cells: geomean regret " +
                     format_number(std::exp(lsum / r.size()), "%.4f") + ", max " + format_number(mx, "%.3f") + ", best chosen in " +
                     format_number(100.0 * exact / r.size(), "%.1f") + " % of cells.";
    out.push_back(std::move(h));
  }
  return out;
}

namespace {

// A select-eval cell record as two grid cells: the choice (time 1) and, measured, the choice at its regret and the
// best at 1, which reproduce the regret in regret_maps().
void read_select_cell(const JsonView& jc, const std::string& name, StrategyGrid& chosen, StrategyGrid& measured) {
  jc.expect_object();
  StrategyCell c;
  c.system = jc.find("system") ? jc.at("system").name() : std::filesystem::path(name).stem().string();
  if (auto tp = jc.find("tp")) c.tp = tp->integer<int>(1, std::numeric_limits<int>::max());
  else if (auto n = jc.find("nranks")) c.tp = n->integer<int>(1, std::numeric_limits<int>::max());
  read_cell_place(jc, c);
  // A ratio of measured times, the chosen strategy's over the best one's: 1 when the best was chosen.
  const double regret = at_least(jc.at("regret"), 1.0);
  c.choice = "chosen";
  StrategyCell mc = c;
  mc.time_us = {{"chosen", regret}, {"best", 1.0}};
  c.time_us = {{"chosen", 1.0}};
  chosen.cells.push_back(c);
  measured.cells.push_back(mc);
}

}  // namespace

bool has_select_cells(const nlohmann::json& j) {
  if (!j.is_object()) return false;
  const auto protocol = j.find("protocol"), cells = j.find("cells");
  return protocol != j.end() && *protocol == "select" && cells != j.end() && cells->is_array();
}

std::vector<NamedHeatmap> regret_maps_from_select_json(const nlohmann::json& j, const std::string& name,
                                                       const std::string& method, const std::string& text) {
  if (!j.is_object() || !j.contains("cells") || !j["cells"].is_array())
    throw InputError(name, 0, "cells",
                     "this select-eval JSON has no per-cell records, so no regret map can be drawn from it alone; pass "
                     "the codegen JSON and the measured samples instead (`arfit plot regret TABLE.json SAMPLES...`)");
  StrategyGrid chosen, measured;
  chosen.source = "select eval";
  read_json_document(text, name, [&] {
    const JsonView cells = JsonView(j).at("cells");
    for (std::size_t i = 0; i < cells.size(); ++i) {
      const JsonView jc = cells.at(i);
      jc.expect_object();
      const auto m = jc.find("method");
      if ((m ? m->name() : std::string("auto")) == method) read_select_cell(jc, name, chosen, measured);
    }
  });
  return regret_maps(chosen, measured);
}

// ============================================ eval ========================================================

namespace {

// An optional number >= lo of a method's summary; NaN (not reported) when absent or null.
double optional_number(const JsonView& m, const char* key, double lo) {
  const auto v = m.find(key);
  return v ? at_least(*v, lo) : NAN;
}

ErrorSummaryData read_eval_summary(const JsonView& root, const std::string& name) {
  root.expect_object();
  if (!root.find("methods") || !root.at("methods").json().is_object())
    throw InputError(name, 0, "methods", "not an eval JSON (expected {\"protocol\": ..., \"methods\": {...}} from `arfit eval --json`)");
  ErrorSummaryData d;
  const std::string protocol = root.find("protocol") ? root.at("protocol").name() : std::string("?");
  const bool select = protocol == "select";
  const std::string src = std::filesystem::path(name).filename().string();
  if (select) {
    d.title = "eval select (" + src + ") · regret of the chosen strategy per method";
    d.y_label = "regret above the measured best (%) / exact choices (%)";
    d.metrics = {"geomean regret − 1", "p95 regret − 1", "max regret − 1", "exact"};
    d.caption = "Selection quality per method against measured times: regret is the measured time of the chosen "
                "strategy over the measured best (bars show it minus 1, in %; lower is better); 'exact' is the share "
                "of cells where the measured best was chosen (higher is better).";
    if (auto f = root.find("measured_fraction"))
      d.title += ", " + format_number(100.0 * f->number(0.0, 1.0), "%.0f") + " % of cells measured";
  } else {
    d.title = "eval " + protocol + " (" + src + ") · error per method";
  }
  const JsonView methods = root.at("methods");
  for (const auto& [mname, mj] : methods.json().items()) {
    const JsonView m(mj, json_pointer_append(methods.pointer(), mname));
    if (const std::string why = name_problem(mname); !why.empty()) m.fail("method name: " + why);
    m.expect_object();
    MethodSummary s;
    s.name = mname;
    if (select) {
      for (const char* k : {"geomean_regret", "p95_regret", "max_regret"})
        s.values.push_back(100.0 * (optional_number(m, k, 1.0) - 1.0));
      const auto exact = m.find("exact");
      const double ex = exact ? exact->number(0.0, 100.0) : NAN;
      s.values.push_back(ex <= 1.0 ? 100.0 * ex : ex);  // a fraction or a percentage
      if (auto n = m.find("cells")) s.points = n->integer<long>(0);
    } else {
      for (const char* k : {"gmae", "median", "p90"}) s.values.push_back(optional_number(m, k, 0.0));
      if (auto n = m.find("points")) s.points = n->integer<long>(0);
    }
    d.methods.push_back(s);
  }
  // arfit's own method first, the baselines after it.
  std::stable_partition(d.methods.begin(), d.methods.end(), [](const MethodSummary& m) { return m.name == "auto"; });
  return d;
}

ErrorData read_eval_points(const JsonView& root, const std::string& name) {
  ErrorData d;
  const std::string protocol = root.json().is_object() && root.find("protocol") ? root.at("protocol").name() : "?";
  d.title = "eval " + protocol + " (" + std::filesystem::path(name).filename().string() + ")";
  if (!root.json().is_object() || !root.find("points")) return d;
  const JsonView points = root.at("points");
  points.expect_array();
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const JsonView p = points.at(i);
    p.expect_object();
    const std::string method = p.find("method") ? p.at("method").name() : std::string("auto");
    const double measured = positive(p.at("measured_us")), predicted = positive(p.at("predicted_us"));
    auto it = index.find(method);
    if (it == index.end()) {
      it = index.emplace(method, d.series.size()).first;
      d.series.push_back({method, {}});
    }
    d.series[it->second].measured_predicted.push_back({measured, predicted});
  }
  return d;
}

}  // namespace

ErrorSummaryData summary_from_eval_json(const nlohmann::json& j, const std::string& name, const std::string& text) {
  return read_json_document(text, name, [&] { return read_eval_summary(JsonView(j), name); });
}

ErrorData errors_from_eval_json(const nlohmann::json& j, const std::string& name, const std::string& text) {
  return read_json_document(text, name, [&] { return read_eval_points(JsonView(j), name); });
}

}  // namespace arfit::plots
