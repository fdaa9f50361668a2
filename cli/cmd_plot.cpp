// arfit plot KIND INPUTS... -o DIR: figures through gnuplot (plots/). Inputs are recognised by content:
// models.json (arfit fit), the codegen JSON (arfit codegen --format json), eval JSON (arfit eval --json,
// including --protocol select), and samples in any format arfit ingest reads.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "codegen/formats.h"
#include "codegen/request.h"
#include "codegen/table.h"
#include "codegen/writers.h"
#include "fit/eval.h"
#include "ingest/ingest.h"
#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "io/staging_folder.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "model/model_set.h"
#include "model/sample.h"
#include "model/sm_targets.h"
#include "model/text.h"
#include "plots/adapters.h"
#include "plots/alltoallv.h"
#include "plots/figures.h"
#include "plots/index.h"

namespace fs = std::filesystem;

namespace arfit::cli {
namespace {

struct PlotArgs {
  std::string kind;
  std::vector<std::string> inputs;
  std::string out_dir;
  std::string format = "png";
  std::string index;  // also (re)write this index page over out_dir
  std::vector<std::string> held_out;
  std::string tp, sm, fusion, tokens = "1:16384", hidden = "128:8192";
  std::string protocol = "interp2";
  std::string method = "auto";
  std::string ingest_format = "auto";
  std::string dtype = "bf16";
  std::vector<std::string> given;  // the kind-specific options given on the command line (refuse_unread_options)
};

// The kind-specific options each kind reads (plot all: every one). One given to a kind that does not read it is a
// usage error naming it and the kinds that do: `plot fit --tp 16` drew the fit figures, exit 0, as if --tp had been
// honoured.
void refuse_unread_options(const PlotArgs& a) {
  const std::vector<std::string> grid = {"--tp", "--sm", "--fusion", "--tokens", "--hidden", "--dtype"};
  const std::map<std::string, std::vector<std::string>> reads = {
      {"fit", {"--held-out"}}, {"cross", {"--tp", "--sm"}}, {"heatmap", grid}, {"best", grid}, {"diff", grid},
      {"regret", grid},        {"errors", {"--protocol", "--method"}},           {"alltoallv", {}}, {"index", {}}};
  const auto it = reads.find(a.kind);
  if (it == reads.end()) return;  // all
  for (const std::string& option : a.given) {
    if (std::find(it->second.begin(), it->second.end(), option) != it->second.end()) continue;
    std::vector<std::string> kinds;
    for (const auto& [kind, options] : reads)
      if (std::find(options.begin(), options.end(), option) != options.end()) kinds.push_back(kind);
    kinds.push_back("all");
    throw UsageError(option + ": plot " + a.kind + " does not read it (" + join(kinds, ", ") + " do)");
  }
}

struct Inputs {
  std::vector<Sample> samples;
  std::optional<ModelSet> models;
  std::string models_path;
  std::vector<plots::StrategyGrid> tables;  // codegen JSON, read and checked as they are given
  struct Eval {
    std::string path, text;  // the text, for the line of a bad value
    nlohmann::json json;
  };
  std::vector<Eval> evals;  // eval JSON
};

// Reads each input by what it contains.
Inputs read_inputs(const std::vector<std::string>& paths, const std::string& ingest_format) {
  Inputs in;
  std::vector<InputText> sample_files;  // read once: the text looked at here is the text ingested
  for (const auto& p : paths) {
    std::string text = read_input_file(p);
    if (std::optional<nlohmann::json> j = json_object_of(text, p)) {
      if (is_models_document(*j)) {
        if (in.models) throw UsageError("several models files given (" + in.models_path + ", " + p + "); pass one");
        in.models = ModelSet::from_document(*j, text, p);
        in.models_path = p;
        continue;
      }
      if (j->contains("cells") && (j->contains("strategies") || j->contains("axes"))) {
        in.tables.push_back(plots::grid_from_codegen_json(*j, p, text));
        continue;
      }
      if (j->contains("methods")) {
        in.evals.push_back({p, text, std::move(*j)});
        continue;
      }
    }
    sample_files.push_back({p, std::move(text)});
  }
  if (!sample_files.empty()) in.samples = load_samples_option(sample_files, ingest_format, "--ingest-format");
  return in;
}

// Collects the figures of a command, then checks every output path (each figure's script and images, and the
// index page) before rendering any, renders them all into a staging folder inside the output folder and moves
// them into place only when every one rendered: a refused path or a failed render changes nothing.
class Renderer {
 public:
  Renderer(std::string dir, std::vector<plots::ImageFormat> formats) : dir_(std::move(dir)), formats_(std::move(formats)) {}

  void draw(plots::Figure f, const std::string& kind = "") {
    if (!kind.empty()) f.kind = kind;
    // Two figures of one stem would overwrite each other: the later one gets "_2", "_3"... in drawing order (the
    // same inputs always give the same names): names that slug() folds alike (systems "a b" and "a_b"), equal
    // names (two eval.json of different folders).
    const std::string stem = f.stem;
    for (int k = 2; !stems_.insert(f.stem).second; ++k) f.stem = stem + "_" + std::to_string(k);
    figures_.push_back(std::move(f));
  }
  // Renders the figures drawn, and writes `index` (when not empty) over the output folder as it is then.
  void render(const std::string& index) {
    for (const auto& f : figures_) plots::check_figure_outputs(f, formats_);
    if (!index.empty()) check_output_path(index);
    StagingFolder staging(dir_, "plot");  // removed with what it holds unless every figure is moved into place
    std::vector<std::string> names, warnings;
    for (plots::Figure f : figures_) {
      const std::string name = fs::path(f.stem).filename().string();
      f.stem = staging.file(name);
      const plots::RenderResult r = plots::render_figure(f, formats_);
      names.push_back(fs::path(r.script).filename().string());
      for (const auto& img : r.images) names.push_back(fs::path(img).filename().string());
      for (const auto& w : r.warnings) warnings.push_back("gnuplot " + w + " (" + stem(name) + ".gp)");
    }
    // The index page shows the folder as it will be, and is made before the first figure moves, so that writing
    // it cannot fail after the folder changed; it is renamed into place right after the figures. The folder's lock
    // is taken before the folder is read and held until the page is in place, so another run writing into the same
    // folder commits wholly before or after this one (io/staging_folder.h OutputFolderLock).
    staging.lock();
    std::optional<TemporaryOutput> page;
    if (!index.empty()) {
      const plots::IndexPage p = plots::index_page(dir_, index, staging.path());
      fs::create_directories(fs::absolute(index).parent_path());
      page.emplace(index, ".html");
      write_string_atomically(page->path(), p.html);
      indexed_ = p.figures;
    }
    for (const auto& out : staging.commit(names))
      if (fs::path(out).extension() != ".gp") std::cout << "wrote " << out << "\n";
    if (page) page->commit();
    for (const auto& w : warnings) std::cerr << "arfit plot: " << w << "\n";
    count_ = static_cast<int>(figures_.size());
    figures_.clear();
  }
  std::string stem(const std::string& name) const { return (fs::path(dir_) / name).string(); }
  bool empty() const { return figures_.empty(); }
  // Why `kinds` drew nothing from the inputs: the reason plot gives when it draws no figure at all.
  void nothing_from(const std::string& kinds, const std::string& why) { nothing_drawn_.emplace_back(kinds, why); }
  const std::vector<std::pair<std::string, std::string>>& nothing_drawn() const { return nothing_drawn_; }
  int count() const { return count_; }
  int indexed() const { return indexed_; }  // figures the index page lists

 private:
  std::string dir_;
  std::vector<plots::ImageFormat> formats_;
  std::vector<plots::Figure> figures_;
  std::set<std::string> stems_;
  std::vector<std::pair<std::string, std::string>> nothing_drawn_;  // (kinds, why)
  int count_ = 0, indexed_ = 0;
};

// The grid and target options, parsed once before anything is read or the output folder is made (codegen's
// parsers, as `arfit codegen` reads them) and passed to every kind that uses them.
struct PlotAxes {
  codegen::Grid grid;    // --tokens and --hidden; --fusion when given (else the fusions modelled)
  bool fusions_given = false;
  std::vector<int> tps;  // --tp, at most kMaxSampleRanks; empty when not given
  std::vector<int> sms;  // --sm
  std::string dtype;     // --dtype: a cell's bytes are tokens x hidden x its size
};

PlotAxes parse_axes(const PlotArgs& a) {
  PlotAxes axes;
  axes.dtype = a.dtype;
  try {
    axes.grid.tokens = codegen::parse_pow2_axis(a.tokens, "--tokens");
    axes.grid.hiddens = codegen::parse_pow2_axis(a.hidden, "--hidden");
    codegen::check_cell_bytes(axes.grid, a.dtype);
    axes.fusions_given = !a.fusion.empty();
    if (axes.fusions_given) axes.grid.fusions = codegen::parse_fusion_list(a.fusion, "--fusion");
    if (!a.tp.empty()) axes.tps = codegen::parse_rank_list(a.tp, "--tp");
    if (!a.sm.empty()) axes.sms = codegen::parse_int_list(a.sm, "--sm");
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  // As codegen and predict read them: an unknown element type or SM is the option's error, before any input is
  // read (a bad --dtype was found after reading, exit 1; an unknown SM drew nothing with exit 0).
  if (dtype_size(a.dtype) <= 0) throw UsageError("--dtype: unknown dtype '" + a.dtype + "'");
  for (int sm : axes.sms)
    if (!find_sm_target(sm)) {
      std::string known;
      for (const SmTarget& t : sm_targets()) known += (known.empty() ? "" : ", ") + std::to_string(t.sm);
      throw UsageError("--sm: " + std::to_string(sm) + " is not an SM arfit has bandwidth figures for (" + known + ")");
    }
  return axes;
}

// Predicted strategy grids from a model set, one per system (codegen's table builder, so the figures show
// exactly what `arfit codegen` would choose).
std::vector<plots::StrategyGrid> grids_from_models(const ModelSet& models, const PlotAxes& axes) {
  std::vector<plots::StrategyGrid> out;
  for (const auto& system : models.systems()) {
    std::set<int> tps;
    std::set<FusionOp> fusions;
    for (const auto& g : models.groups())
      if (g.key.system == system && g.key.collective == Collective::AllReduce) tps.insert(g.key.nranks), fusions.insert(g.key.fusion);
    if (tps.empty()) continue;
    codegen::Grid gs = axes.grid;
    gs.tps = axes.tps.empty() ? std::vector<int>(tps.begin(), tps.end()) : axes.tps;
    if (!axes.fusions_given) gs.fusions.assign(fusions.begin(), fusions.end());
    codegen::TableOptions to;
    to.system = system;
    to.dtype = axes.dtype;
    to.sm = axes.sms.empty() ? 0 : axes.sms.front();
    // The strategies TensorRT-LLM numbers keep its preconditions, as in codegen (whose --sm defaults to 90).
    to.precondition = codegen::table_precondition(to.sm == 0 ? codegen::kDefaultRequest.sm : to.sm);
    try {
      codegen::check_grid_cells(gs);
      // --sm transfers the models, as codegen's --sm with --transfer-sm: a machine whose SM has no datasheet
      // figures is refused the same way (it drew no figure, exit 0, where codegen and suggest said why, exit 2).
      if (to.sm != 0) {
        codegen::Request transfer;
        transfer.sm = to.sm;
        transfer.transfer_sm = true;
        codegen::check_sm_transfer(models, system, transfer, "--sm");
      }
    } catch (const std::invalid_argument& e) {
      throw UsageError(e.what());
    }
    auto table = codegen::build_table(gs, codegen::model_set_candidates(models, system), codegen::model_set_predictor(models), to);
    codegen::Banner banner;
    banner.version = ARFIT_VERSION;
    out.push_back(plots::grid_from_codegen_json(codegen::table_to_json(table, banner, to.sm), "models:" + system));
    out.back().source = "predicted";
  }
  return out;
}

std::vector<plots::StrategyGrid> predicted_grids(const Inputs& in, const PlotAxes& axes) {
  std::vector<plots::StrategyGrid> out = in.tables;
  if (out.empty() && in.models) out = grids_from_models(*in.models, axes);
  return out;
}

void plot_fit(const Inputs& in, const PlotArgs& a, Renderer& r) {
  if (in.samples.empty() && !in.models) throw UsageError("plot fit needs samples and/or a models.json");
  std::vector<Sample> held;
  if (!a.held_out.empty()) held = ingest::load_samples(a.held_out);
  // Held-out samples are ones the fit did not see: an input of this plot, or a file the models were fitted from
  // (the fingerprint its `inputs` record), would be drawn as held out next to itself as fitted.
  for (const std::string& h : a.held_out) {
    for (const std::string& p : a.inputs)
      if (same_path(h, p)) throw UsageError("--held-out " + h + " is also an input of this plot; held-out samples are ones the fit did not see");
    if (!in.models) continue;
    const std::string fingerprint = input_fingerprint(h);
    for (const auto& fitted : in.models->raw().value("inputs", nlohmann::json::array()))
      if (fitted.is_object() && fitted.value("fnv1a64", std::string()) == fingerprint)
        throw UsageError("--held-out " + h + ": " + in.models_path + " was fitted from it (" + fitted.value("path", std::string()) +
                         "); held-out samples are ones the fit did not see");
  }
  auto figs = plots::fit_figures(in.samples, held, in.models ? &*in.models : nullptr);
  for (const auto& f : figs) r.draw(plots::fit_figure(f.data, r.stem(f.name)));
}

void plot_cross(const Inputs& in, const PlotAxes& axes, Renderer& r) {
  if (!in.models) throw UsageError("plot cross needs a models.json");
  const std::vector<int> tps = axes.tps.empty() ? std::vector<int>{2, 4, 8, 16} : axes.tps;
  auto figs = plots::cross_figures(in.samples, *in.models, tps, axes.sms);
  if (figs.empty()) r.nothing_from("cross", "no family has a TP in --tp (or an --sm) that was not measured");
  for (const auto& f : figs) r.draw(plots::fit_figure(f.data, r.stem(f.name)), "cross");
}

// The strategy grids the inputs give: the predicted ones (codegen JSON, else a models file) and the measured one
// (samples of the strategies), built once for every kind drawn from them.
struct InputGrids {
  std::vector<plots::StrategyGrid> predicted;
  std::optional<plots::StrategyGrid> measured;  // absent without measured cells
  // Why an input given holds no grid ("" when it does or was not given): a models file of other collectives, samples
  // of no all-reduce strategy. A kind that needs it has nothing to draw, which is not the usage error of an input
  // missing from the command line.
  std::string models_without_grid, samples_without_grid;
};

InputGrids input_grids(const Inputs& in, const PlotAxes& axes) {
  InputGrids g;
  g.predicted = predicted_grids(in, axes);
  if (g.predicted.empty() && in.models) g.models_without_grid = in.models_path + " has no fitted all-reduce group to predict a grid from";
  if (!in.samples.empty()) g.measured = plots::grid_from_samples(in.samples);
  if (g.measured && g.measured->cells.empty()) {
    g.measured.reset();
    g.samples_without_grid = "the samples hold no successful all-reduce measurement";
  }
  return g;
}

// No grid for `kind` to draw: the usage error `needs` when the command line lacks an input the kind reads
// (`missing_input`), else why the inputs given hold none.
void no_grid(const std::string& kind, const InputGrids& in, bool missing_input, const std::string& needs, Renderer& r) {
  if (missing_input) throw UsageError(needs);
  std::vector<std::string> why;
  for (const std::string* w : {&in.models_without_grid, &in.samples_without_grid})
    if (!w->empty()) why.push_back(*w);
  r.nothing_from(kind, join(why, "; "));
}

void plot_grids(const std::string& kind, const InputGrids& in, Renderer& r) {
  if (kind == "regret") {
    const bool no_table = in.predicted.empty() && in.models_without_grid.empty();
    const bool no_samples = !in.measured && in.samples_without_grid.empty();
    if (in.predicted.empty() || !in.measured)
      return no_grid(kind, in, no_table || no_samples,
                     "plot regret needs a strategy table (codegen JSON or models.json) and measured samples of "
                     "two or more strategies, or a select-eval JSON with per-cell records",
                     r);
    for (const auto& g : in.predicted)
      for (const auto& h : plots::regret_maps(g, *in.measured)) r.draw(plots::heatmap_figure(h.data, r.stem(h.name), "regret"));
    return;
  }
  std::vector<plots::StrategyGrid> grids = in.predicted;
  if (grids.empty()) {
    if (!in.measured)
      return no_grid(kind, in, in.models_without_grid.empty() && in.samples_without_grid.empty(),
                     "plot " + kind + " needs a codegen JSON, a models.json or samples of all-reduce strategies", r);
    grids.push_back(*in.measured);
  } else if (in.measured) {
    for (auto& g : grids) plots::mark_measured(g, *in.measured);
  }
  for (const auto& g : grids) {
    if (kind == "heatmap")
      for (const auto& h : plots::heatmaps(g)) r.draw(plots::heatmap_figure(h.data, r.stem(h.name), "heatmap"));
    if (kind == "best")
      for (const auto& b : plots::best_maps(g)) r.draw(plots::best_map_figure(b.data, r.stem(b.name)));
    if (kind == "diff")
      for (const auto& h : plots::diff_maps(g)) r.draw(plots::heatmap_figure(h.data, r.stem(h.name), "diff"));
  }
}

void draw_errors(const plots::ErrorData& e, const std::string& base, Renderer& r) {
  bool any = false;
  for (const auto& s : e.series) any = any || !s.measured_predicted.empty();
  if (!any) return;
  plots::ErrorData scatter = e, hist = e;
  scatter.title += " · predicted vs measured";
  hist.title += " · relative errors";
  r.draw(plots::error_scatter_figure(scatter, r.stem(base + "_scatter")));
  r.draw(plots::error_histogram_figure(hist, r.stem(base + "_hist")));
}

// plot errors from samples: the fit protocol --protocol names (crosshw:K with its K), its argument checked (a
// usage error naming --protocol) before any input is read; the evaluation's options into *options.
const fit::ProtocolEntry& errors_protocol(const std::string& text, fit::EvalOptions* options) {
  try {
    const fit::ProtocolEntry& e = fit::find_protocol(fit::fit_protocols(), text, " for plot errors");
    options->protocol_arg = fit::parse_protocol_spec(text).arg.value_or("");
    e.check(*options);
    return e;
  } catch (const std::invalid_argument& err) {
    throw UsageError(err.what());  // names --protocol and its argument
  }
}

void plot_errors(const Inputs& in, const PlotArgs& a, Renderer& r) {
  for (const auto& [p, text, j] : in.evals) {
    std::string base = plots::slug("errors_" + fs::path(p).stem().string());
    r.draw(plots::error_summary_figure(plots::summary_from_eval_json(j, p, text), r.stem(base + "_summary")));
    draw_errors(plots::errors_from_eval_json(j, p, text), base, r);
    if (plots::has_select_cells(j))
      for (const auto& h : plots::regret_maps_from_select_json(j, p, a.method, text))
        r.draw(plots::heatmap_figure(h.data, r.stem(plots::slug(fs::path(p).stem().string()) + "_" + h.name), "regret"));
  }
  if (!in.samples.empty()) {
    // Run the evaluation here, keeping every held-out point for the scatter and the histogram.
    fit::EvalOptions eo;
    eo.keep_points = true;
    const fit::ProtocolEntry& entry = errors_protocol(a.protocol, &eo);
    fit::EvalResult res = entry.run(in.samples, eo);
    // Nothing held out is nothing to draw: said as eval says it (gnuplot failed on the empty figure, exit 1).
    if (res.curves == 0) throw std::runtime_error(fit::nothing_to_evaluate_message(a.protocol, res.nothing_qualifies));
    std::string base = plots::slug("errors_" + a.protocol);
    std::string what = "eval " + a.protocol + " (" + std::to_string(res.curves) + " curves)";
    plots::ErrorSummaryData summary = plots::summary_from_eval_json(res.to_json(), base + ".json");
    summary.title = what + " · error per method";
    r.draw(plots::error_summary_figure(summary, r.stem(base + "_summary")));
    plots::ErrorData e;
    e.title = what;
    for (const auto& m : res.methods) {
      plots::ErrorSeries s{m.name, {}};
      for (const auto& pt : m.points) s.measured_predicted.push_back({pt.measured, pt.predicted.time_us});
      e.series.push_back(std::move(s));
    }
    draw_errors(e, base, r);
  }
  if (in.evals.empty() && in.samples.empty()) throw UsageError("plot errors needs an eval JSON (arfit eval --json) or samples");
}

// all-to-allv against the effective size per mode, over the all-to-all model (plots/alltoallv.h).
void plot_alltoallv(const Inputs& in, Renderer& r) {
  if (in.samples.empty() || !in.models)
    throw UsageError("plot alltoallv needs all-to-allv samples and a models.json fitted with the uniform all-to-all");
  const auto figs = plots::alltoallv_figures(in.samples, *in.models);
  if (figs.empty())
    r.nothing_from("alltoallv", "no all-to-allv group has an all-to-all model of its system, strategy and rank count");
  for (const auto& f : figs) r.draw(plots::alltoallv_figure(f.data, r.stem(f.name)));
}

// A plot that drew no figure is a failed run (exit 1), as eval's and plot errors' nothing to evaluate: it said so on
// standard error and left an empty folder with exit 0 (cross, alltoallv). Refused before render(), so no folder is
// made and an existing one, its index page included, stays as it was.
std::string nothing_to_draw(const std::string& kind, const std::vector<std::pair<std::string, std::string>>& reasons) {
  std::string why;
  for (const auto& [kinds, reason] : reasons) why += (why.empty() ? "" : "; ") + (kinds == kind ? reason : kinds + ": " + reason);
  if (why.empty()) why = "the inputs hold nothing plot " + kind + " draws";
  return "plot " + kind + ": nothing to draw: " + why + "; no figure written";
}

// plot index: the page over one folder of figures, alone.
void run_plot_index(const PlotArgs& a) {
  refuse_unread_options(a);
  if (a.inputs.size() != 1) throw UsageError("plot index takes one folder of figures");
  std::string page = !a.index.empty() ? a.index : !a.out_dir.empty() ? a.out_dir : (fs::path(a.inputs[0]) / "index.html").string();
  int n = plots::write_index(a.inputs[0], page);
  std::cout << "wrote " << page << " (" << n << " figures)\n";
}

// Every option and input path checked before anything is read or fitted (usage errors, exit 2): the image
// formats and the axes to draw.
std::pair<std::vector<plots::ImageFormat>, PlotAxes> checked_plot_options(const PlotArgs& a) {
  if (a.out_dir.empty()) throw UsageError("plot " + a.kind + " needs -o DIR");
  check_output_directory(a.out_dir);  // refused now (a file, /dev/null), as breakdown does, not when the figures move in
  if (a.inputs.empty()) throw UsageError("plot " + a.kind + " needs input files");
  std::vector<plots::ImageFormat> formats;
  try {
    formats = plots::parse_formats(a.format);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const PlotAxes axes = parse_axes(a);  // a bad value is the option's error whatever the kind, then:
  refuse_unread_options(a);
  // A grid is predicted for one SM (cross draws one curve per SM; plot all's grids take the first).
  if ((a.kind == "heatmap" || a.kind == "best" || a.kind == "diff" || a.kind == "regret") && axes.sms.size() > 1)
    throw UsageError("--sm: plot " + a.kind + " predicts its grids for one SM, got " + std::to_string(axes.sms.size()) +
                     " (plot cross draws several)");
  // The page is staged with the figures and moved into place after them: no stream (plot index writes it alone).
  // Refused here, not after the models are fitted and the figures rendered.
  if (is_standard_output(a.index))
    throw UsageError("--index: '-' (standard output): the page is staged with the figures and moved into place after "
                     "them; name a file (./- for a file named '-')");
  if (a.kind == "errors") {
    fit::EvalOptions checked;
    errors_protocol(a.protocol, &checked);  // a bad --protocol is refused before the samples are read
  }
  plots::require_gnuplot();  // say so before reading anything large
  for (const auto& p : a.inputs)
    // A path naming no file is the command line's to correct (exit 2), as every other command's inputs are
    // (input_file_validator there; here after the options, which are named first whatever the inputs).
    if (const std::string why = input_path_problem(p); !why.empty()) throw UsageError(why);
  return {formats, axes};
}

// plot all: everything the inputs allow.
void plot_all(const Inputs& in, const PlotArgs& a, const PlotAxes& axes, Renderer& r) {
  if (!in.samples.empty() || in.models) plot_fit(in, a, r);
  if (in.models && !axes.tps.empty()) plot_cross(in, axes, r);
  if (!in.tables.empty() || in.models || !in.samples.empty()) {
    PlotAxes modelled = axes;
    modelled.tps.clear();  // --tp names the TP sizes to extrapolate to (cross); the grids use the modelled ones
    const InputGrids grids = input_grids(in, modelled);
    const bool two = grids.measured && grids.measured->strategies.size() >= 2;
    // A models file of other collectives only (all-to-all, say) has no strategy grid to draw.
    const bool predicted = !grids.predicted.empty();
    if (predicted || two) {
      plot_grids("heatmap", grids, r);
      plot_grids("best", grids, r);
      plot_grids("diff", grids, r);
    } else if (!in.tables.empty() || in.models) {
      r.nothing_from("heatmap, best and diff", "no all-reduce strategy grid in the inputs");
    }
    if (predicted && two) plot_grids("regret", grids, r);
  }
  const bool alltoallv_samples = std::any_of(in.samples.begin(), in.samples.end(),
                                             [](const Sample& s) { return s.collective == Collective::AllToAllV; });
  if (alltoallv_samples && in.models) plot_alltoallv(in, r);
  if (!in.evals.empty()) {
    Inputs only_evals;
    only_evals.evals = in.evals;
    plot_errors(only_evals, a, r);
  }
}

void run_plot(const PlotArgs& a) {
  if (a.kind == "index") return run_plot_index(a);
  const auto [formats, axes] = checked_plot_options(a);
  Inputs in = read_inputs(a.inputs, a.ingest_format);
  Renderer r(a.out_dir, formats);
  if (a.kind == "fit") plot_fit(in, a, r);
  else if (a.kind == "cross") plot_cross(in, axes, r);
  else if (a.kind == "heatmap" || a.kind == "best" || a.kind == "diff" || a.kind == "regret") plot_grids(a.kind, input_grids(in, axes), r);
  else if (a.kind == "errors") plot_errors(in, a, r);
  else if (a.kind == "alltoallv") plot_alltoallv(in, r);
  else if (a.kind == "all") plot_all(in, a, axes, r);
  if (r.empty()) throw std::runtime_error(nothing_to_draw(a.kind, r.nothing_drawn()));
  for (const auto& [kinds, why] : r.nothing_drawn()) std::cerr << "arfit plot " << a.kind << ": " << kinds << " skipped: " << why << "\n";
  r.render(a.index);
  std::cout << r.count() << " figure(s) in " << a.out_dir << "\n";
  if (!a.index.empty()) std::cout << "wrote " << a.index << " (" << r.indexed() << " figures)\n";
}

void add_plot(CLI::App& app) {
  auto a = std::make_shared<PlotArgs>();
  auto* cmd = app.add_subcommand(
      "plot",
      "Draw figures with gnuplot (PNG/SVG + the .gp script next to each): fit curves, cross-TP/SM predictions, "
      "strategy heatmaps, best-strategy, difference and regret maps, error plots, and the HTML index");
  cmd->footer(
      "KIND and inputs (recognised by content; samples in any format `arfit ingest` reads):\n"
      "  fit      SAMPLES and/or MODELS.json: latency + bus bandwidth vs size, fitted curve, 90 % band;\n"
      "           --held-out SAMPLES are drawn as open circles\n"
      "  cross    MODELS.json [SAMPLES]: predicted curves (dashed) for --tp sizes (default 2,4,8,16) not measured\n"
      "           and --sm targets\n"
      "  heatmap  TABLE.json (arfit codegen --format json) or MODELS.json or SAMPLES: time per strategy\n"
      "  best     same inputs: best strategy per cell (SAMPLES added to a table/models mark measured cells)\n"
      "  diff     same inputs: % slower than the best, per strategy\n"
      "  regret   TABLE.json or MODELS.json + measured SAMPLES: regret of the choice vs the measured best\n"
      "  errors   EVAL.json (arfit eval --json; select eval too) or SAMPLES (runs --protocol, keeps the points)\n"
      "  alltoallv SAMPLES + MODELS.json: measured all-to-allv latency against the effective size per mode (sum,\n"
      "           max_of_max, max_of_sum) over the all-to-all model's prediction and band\n"
      "  all      every kind the inputs allow\n"
      "  index    DIR: write DIR/index.html (or -o/--index FILE) showing every figure under DIR\n"
      "A kind with nothing to draw from its inputs fails (exit 1) saying why, and leaves the output folder as it was.\n"
      "gnuplot 5 with the pngcairo/svg terminals must be installed (gnuplot-nox; ARFIT_GNUPLOT overrides the binary).");
  cmd->add_option("kind", a->kind, "fit | cross | heatmap | best | diff | regret | errors | alltoallv | all | index")
      ->required()
      ->check(CLI::IsMember({"fit", "cross", "heatmap", "best", "diff", "regret", "errors", "alltoallv", "all", "index"}));
  cmd->add_option("inputs", a->inputs, "Samples, models.json, codegen JSON, eval JSON (index: the figures folder)")->required();
  cmd->add_option("-o,--out", a->out_dir, "Output folder for the figures (index: the page to write)")->check(output_folder_validator());
  cmd->add_option("--format", a->format, "Image format: png, svg or both")
      ->check(CLI::IsMember({"png", "svg", "both"}))
      ->capture_default_str();
  cmd->add_option("--index", a->index, "Also write this HTML index page over all figures in the output folder");
  cmd->add_option("--held-out", a->held_out, "fit: samples the fit did not see (drawn as open circles)")->check(input_file_validator());
  cmd->add_option("--tp", a->tp, "cross: TP sizes to predict (e.g. 8,16); heatmap/best/diff from models: TP sizes of the grid");
  cmd->add_option("--sm", a->sm, "cross: SM targets to predict (80, 89, 90, 100, 103, 120); grids from models: the one SM to predict for (plot all: the first)");
  cmd->add_option("--fusion", a->fusion, "Grids from models: fusion ops (default: those modelled)");
  cmd->add_option("--tokens", a->tokens, "Grids from models: num_tokens axis, LO:HI powers of two or a list")->capture_default_str();
  cmd->add_option("--hidden", a->hidden, "Grids from models: hidden_size axis, LO:HI powers of two or a list")->capture_default_str();
  cmd->add_option("--dtype", a->dtype, "Grids from models: element type (bytes = tokens x hidden x size)")->capture_default_str();
  cmd->add_option("--protocol", a->protocol, "errors from samples: interp2 | sparse4 | extrap | crossn | crosshw:K")->capture_default_str();
  cmd->add_option("--method", a->method, "errors from a select-eval JSON with cells: the method whose regret is mapped")
      ->capture_default_str();
  cmd->add_option("--ingest-format", a->ingest_format, "Sample format (default: detected per file)")->capture_default_str();
  cmd->callback([a, cmd] {
    for (const char* option : {"--held-out", "--tp", "--sm", "--fusion", "--tokens", "--hidden", "--dtype", "--protocol", "--method"})
      if (cmd->count(option) > 0) a->given.push_back(option);
    run_plot(*a);
  });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(plot, 500, arfit::cli::add_plot);
