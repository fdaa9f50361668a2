// arfit eval SAMPLES... --protocol P [--json FILE] [--methods LIST] [--threads N] [--format F]
// Runs one evaluation protocol on measured samples and prints arfit's default (`auto`) next to the baselines.
// Protocols are a dispatch table: each entry names a protocol and how to run it; components add theirs here.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "fit/eval.h"
#include "fit/eval_alltoallv.h"
#ifdef ARFIT_HAVE_SELECT_EVAL
#include "codegen/select_eval.h"
#endif
#ifdef ARFIT_HAVE_PLANNER
#include "planner/simulate.h"
#endif
#include "ingest/ingest.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "model/json_input.h"
#include "model/text.h"

namespace arfit::cli {
namespace {

struct EvalArgs {
  std::vector<std::string> files;
  std::string protocol;
  std::string json;
  std::string methods;
  std::string format = "auto";
  int threads = 1;
  std::string plan = "auto";  // select protocol: auto | sparse4 | lattice:K
  bool plan_given = false;    // --plan on the command line (only select reads it)
  std::string points;         // size protocols: per held-out point CSV
  // adaptive protocol only (each refused elsewhere): per-case overheads, leave-one-system-out priors, a stop rule,
  // measurement noise and its replicates.
  std::string overhead = "1ms,100ms";
  bool overhead_given = false;
  bool prior = false;
  std::string until_regret;
  std::string noise;
  int replicates = 1;
  bool replicates_given = false;
};

// What a protocol hands back: the printed report and the JSON written by --json.
struct ProtocolOutput {
  std::string text;
  nlohmann::json json;
  std::string points_csv;  // --points (size and crossn protocols)
  std::vector<std::string> notes;  // what the table does not show, printed on stderr after it
};
using ProtocolFn = std::function<ProtocolOutput(const std::vector<Sample>&, const EvalArgs&)>;

// "NAME:ARG" -> NAME (a protocol with a parameter, e.g. crosshw:3).
std::string protocol_name(const std::string& p) { return fit::parse_protocol_spec(p).name; }

fit::EvalOptions fit_eval_options(const EvalArgs& a) {
  fit::EvalOptions o;
  o.protocol_arg = fit::parse_protocol_spec(a.protocol).arg.value_or("");
  o.threads = a.threads;
  o.keep_points = !a.points.empty();
  if (!a.methods.empty()) {
    o.methods_chosen = true;
    o.methods.clear();
    // An empty name (",", "auto,,seed") is a typo, refused rather than read as fewer methods or none.
    for (const std::string& m : split_items(a.methods, ',')) {
      if (m.empty()) throw UsageError("--methods: empty method name in '" + a.methods + "' (two commas in a row, or one at an end)");
      o.methods.push_back(m);
    }
  }
  return o;
}

// What a protocol checks of the command line before any input is read: a refusal is a usage error (exit 2),
// which should not wait for minutes of reading.
using ProtocolCheckFn = std::function<void(const EvalArgs&)>;

struct EvalProtocol {
  std::string name;
  bool takes_arg = false;  // named NAME:ARG (crosshw:K)
  ProtocolFn run;
  ProtocolCheckFn check;
};

// A protocol's refusal of the methods asked for, as a usage error naming --methods.
void refuse_methods(const std::function<void()>& check) {
  try {
    check();
  } catch (const std::invalid_argument& e) {
    throw UsageError(std::string("--methods: ") + e.what());
  }
}

// A fit protocol's checks: its argument first, with the default methods every protocol takes (a refusal names
// --protocol), then the methods asked for.
void check_fit_protocol(const fit::ProtocolCheck& check, const EvalArgs& a) {
  const fit::EvalOptions asked = fit_eval_options(a);
  fit::EvalOptions defaults = asked;
  defaults.methods = fit::EvalOptions().methods;
  defaults.methods_chosen = false;
  try {
    check(defaults);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  refuse_methods([&] { check(asked); });
}

#ifdef ARFIT_HAVE_PLANNER
// A percentage as the adaptive protocol's options write it: a decimal number, an optional '%' after it.
double percentage(const std::string& text, const std::string& what, double min, double max) {
  std::string why;
  const std::string number = !text.empty() && text.back() == '%' ? text.substr(0, text.size() - 1) : text;
  const std::optional<double> v = parse_decimal(number, min, max, &why);
  if (!v) throw UsageError(what + ": a percentage, a decimal number with an optional '%' (10%, 2.5): " + why);
  return *v / 100.0;
}

// The adaptive protocol's options: adaptive[:BUDGET] (default 10 %), --overhead, --prior, --until-regret, --noise,
// --replicates.
planner::SimulationOptions simulation_options(const EvalArgs& a) {
  planner::SimulationOptions o;
  const std::optional<std::string> budget = fit::parse_protocol_spec(a.protocol).arg;
  if (budget) {
    o.budget_fraction = percentage(*budget, "--protocol adaptive:BUDGET", 0, 100);
    if (!(o.budget_fraction > 0)) throw UsageError("--protocol adaptive:BUDGET: the budget must be above 0 %");
  }
  o.overheads_s.clear();
  for (const std::string& item : split_items(a.overhead, ',')) {
    std::string why;
    const std::optional<double> s = parse_duration(item, &why);
    if (!s) throw UsageError("--overhead: " + why);
    o.overheads_s.push_back(*s);
  }
  o.prior = a.prior;
  if (!a.until_regret.empty()) {
    o.until_regret = percentage(a.until_regret, "--until-regret", 0, 100);
    if (!(o.until_regret > 0 && o.until_regret < 1)) throw UsageError("--until-regret: a percentage above 0 and below 100");
  }
  // Below 100 %: check_simulation_options says so.
  if (!a.noise.empty()) o.noise = percentage(a.noise, "--noise", 0, 100);
  o.replicates = a.replicates;
  return o;
}
#endif

// The protocols `arfit eval` knows.// The protocols `arfit eval` knows. To add one: one entry {name, takes_arg, runner, check}.
std::vector<EvalProtocol> protocols() {
  std::vector<EvalProtocol> v;
  for (const auto& p : fit::fit_protocols()) {
    auto run = p.run;
    v.push_back({p.name, p.takes_arg,
                 [run](const std::vector<Sample>& s, const EvalArgs& a) {
                   const fit::EvalResult r = run(s, fit_eval_options(a));
                   if (r.curves == 0) throw std::runtime_error(fit::nothing_to_evaluate_message(a.protocol, r.nothing_qualifies));
                   ProtocolOutput o{r.to_table(), r.to_json(), {}, r.notes};
                   if (!a.points.empty()) o.points_csv = r.points_csv();
                   return o;
                 },
                 [check = p.check](const EvalArgs& a) { check_fit_protocol(check, a); }});
  }
  // all-to-allv predicted from the uniform all-to-all in each effective-size mode (fit/eval_alltoallv.h).
  const auto alltoallv_options = [](const EvalArgs& a) {
    fit::EvalOptions o = fit_eval_options(a);
    if (a.methods.empty()) o.methods = fit::alltoallv_default_methods();
    return o;
  };
  v.push_back({"alltoallv", false,
               [alltoallv_options](const std::vector<Sample>& s, const EvalArgs& a) {
                 const fit::AllToAllvEval r = fit::eval_alltoallv(s, alltoallv_options(a));
                 ProtocolOutput out{r.to_table(), r.to_json(), {}, {}};
                 if (!a.points.empty()) out.points_csv = r.result.points_csv();
                 return out;
               },
               [alltoallv_options](const EvalArgs& a) {
                 refuse_methods([&] { fit::check_alltoallv_methods(alltoallv_options(a)); });
               }});
#ifdef ARFIT_HAVE_SELECT_EVAL
  // Strategy-selection quality (codegen/select_eval.h).
  const auto select_options = [](const EvalArgs& a) {
    codegen::SelectOptions o;
    o.plan = a.plan;
    return o;
  };
  v.push_back({"select", false,
               [select_options](const std::vector<Sample>& s, const EvalArgs& a) {
                 const codegen::SelectReport r = codegen::evaluate_select(s, select_options(a));
                 return ProtocolOutput{codegen::format_select_report(r), codegen::select_report_json(r), {}, {}};
               },
               [select_options](const EvalArgs& a) {
                 if (!a.points.empty()) throw UsageError("--points is not available for --protocol select");
                 if (!a.methods.empty())
                   throw UsageError("--methods is not available for --protocol select (it scores the model's choice "
                                    "against fixed baselines; docs/codegen.md)");
                 try {
                   codegen::check_select_options(select_options(a));
                 } catch (const std::invalid_argument& e) {
                   throw UsageError(e.what());
                 }
               }});
#endif
#ifdef ARFIT_HAVE_PLANNER
  // arbench's adaptive plan replayed on fully measured tables (planner/simulate.h).
  v.push_back({"adaptive", true,
               [](const std::vector<Sample>& s, const EvalArgs& a) {
                 planner::SimulationOptions o = simulation_options(a);
                 o.threads = a.threads;
                 const planner::SimulationReport r = planner::simulate_adaptive(s, o);
                 return ProtocolOutput{planner::format_simulation_report(r), planner::simulation_report_json(r), {}, {}};
               },
               [](const EvalArgs& a) {
                 if (!a.points.empty()) throw UsageError("--points is not available for --protocol adaptive");
                 if (!a.methods.empty())
                   throw UsageError("--methods is not available for --protocol adaptive (it compares plans, each table "
                                    "chosen by arfit's models; docs/bench.md)");
                 try {
                   planner::check_simulation_options(simulation_options(a));
                 } catch (const std::invalid_argument& e) {
                   throw UsageError(e.what());
                 }
               }});
#endif
  return v;
}

void run_eval(const EvalArgs& a) {
  if (a.threads < 1) throw UsageError("--threads must be at least 1");
  std::optional<EvalProtocol> protocol;
  try {
    protocol = fit::find_protocol(protocols(), a.protocol);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (a.plan_given && protocol_name(a.protocol) != "select")
    throw UsageError("--plan is the measured subset of --protocol select; " + protocol_name(a.protocol) +
                     " holds out its own sizes (fit/eval.h)");
  if (protocol_name(a.protocol) != "adaptive")
    for (const auto& [given, name] : {std::pair{a.overhead_given, "--overhead"}, {a.prior, "--prior"},
                                      {!a.until_regret.empty(), "--until-regret"}, {!a.noise.empty(), "--noise"},
                                      {a.replicates_given, "--replicates"}})
      if (given) throw UsageError(std::string(name) + " is an option of --protocol adaptive only (docs/bench.md)");
  if (!a.json.empty() && !a.points.empty() && same_path(a.json, a.points))
    throw UsageError("--json and --points name the same file '" + a.json + "'; give two files");
  protocol->check(a);
  const ProtocolFn& fn = protocol->run;
  const std::vector<Sample> samples = load_samples_option(a.files, a.format);
  for (const std::string* out : {&a.json, &a.points})
    if (!out->empty()) {
      // Refused now, not after the evaluation; the folders too, so that --points in a missing folder does not
      // fail after --json was written.
      check_output_file(*out);
    }
  ProtocolOutput out;
  try {
    out = fn(samples, a);
  } catch (const JsonError& e) {
    // A model fitted here that its own reader refuses: the samples drove a fit out of bounds (a failed run).
    throw std::runtime_error(std::string("a model fitted from the samples is out of bounds: ") + e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::cout << out.text;
  for (const std::string& note : out.notes) std::cerr << "note: " << note << "\n";
  // --json and --points are one run's results: both replaced, or (a failed write, a kill) neither.
  OutputSet outputs;
  if (!a.json.empty()) outputs.add(a.json, json_document_text(out.json));
  if (!a.points.empty()) outputs.add(a.points, std::move(out.points_csv));
  outputs.commit();
}

void add_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Evaluate predictions against held-out measurements (arfit vs baselines)");
  cmd->add_option("samples", a->files, "Sample files (any format `arfit ingest` reads; pass a folder's files with a glob)")->required()->check(input_file_validator());
  cmd->add_option("--protocol", a->protocol,
                  "interp2 (fit even-indexed sizes, predict odd), sparse4 (every 4th size + largest), extrap (fit <= 64 MiB, "
                  "predict larger), crossn (fit all but the largest GPU count, predict it; also by node count and, on measured nodes, more GPUs per node), crosshw:K "
                  "(leave one system out: each curve from K of its sizes and other systems' curves; docs/fit.md), "
                  "alltoallv (all-to-allv samples predicted from the uniform all-to-all curve at each effective size: sum, "
                  "max_of_max, max_of_sum, and arfit's choice; default methods auto,seed,seed-paper), select (choose strategies from a "
                  "partial sweep, regret against measured times; docs/codegen.md), adaptive[:BUDGET] (arbench's --plan adaptive "
                  "replayed on select's pairs within BUDGET % of each one's exhaustive measuring time, default 10%, against "
                  "lattice, random and sparse plans at the same time; docs/bench.md)")
      ->required();
  cmd->add_option("--json", a->json, "Also write the results as JSON to this file ('-': standard output, the report then on stderr)");
  cmd->add_option("--points", a->points,
                  "Also write every held-out point as CSV (method, group, bytes, measured, predicted, 90 % interval, how); "
                  "not for select; '-': standard output. With --json: both files replaced once both are written, or "
                  "(a failed write) neither");
  cmd->add_option("--methods", a->methods,
                  "Comma-separated methods (default auto,seed,alphabeta,loglog; crosshw: auto,loglog,scale, loglog from K = 2; "
                  "alltoallv: auto,seed,seed-paper; select takes none); also any family name, FAMILY+c for the "
                  "family with the residual correction, auto-nc, auto-solo (no sibling pooling); size protocols also "
                  "take the diagnostics ceiling-others / ceiling-otherhw (auto times the median held-out error of the "
                  "other files / other machines at the same collective, strategy, ranks and size: not predictors, "
                  "they use held-out measurements; a note on stderr counts the points with fewer than 3 such curves, "
                  "where auto is kept, and a ceiling no point qualifies for shows '-')");
  cmd->add_option("--threads", a->threads, "Curves evaluated in parallel");
  auto* plan = cmd->add_option("--plan", a->plan,
                               "select only: measured subset, auto (sparse4 for sizes, lattice:2 for token x hidden grids), "
                               "sparse4 or lattice:K (every K-th value of each axis, K >= 2: lattice:1 would measure every cell and leave "
                               "none to choose; arbench's --plan takes it as its full grid)")
                   ->capture_default_str();
  auto* overhead = cmd->add_option("--overhead", a->overhead,
                                   "adaptive only: per-case overheads of a measurement, comma-separated DURATIONs (a decimal "
                                   "number and a unit: ms, s, min, h), one run each")
                       ->capture_default_str();
  cmd->add_flag("--prior", a->prior,
                "adaptive only: each system's curves transferred from the other systems' while they have few sizes "
                "(leave one system out, as crosshw; arfit fit --prior)");
  cmd->add_option("--until-regret", a->until_regret,
                  "adaptive only: the loop also stops when the table's expected geometric-mean regret is at most R % "
                  "(arbench's --until-regret); the report checks the promise against the measurements")
      ->type_name("R");
  cmd->add_option("--noise", a->noise,
                  "adaptive only: each plan sees a case's time times exp(σ·z), z standard normal per case and replicate, "
                  "σ = PCT % (a measurement's repeatability); regret is still scored against the files' times")
      ->type_name("PCT");
  auto* replicates = cmd->add_option("--replicates", a->replicates,
                                     "adaptive only: noisy runs per overhead (1 to 1000; more than one needs --noise), "
                                     "cells pooled; per system, the runs in which adaptive beat lattice and random")
                         ->type_name("N");
  cmd->add_option("--format", a->format, "Input format (default auto: detected per file)");
  cmd->callback([a, plan, overhead, replicates] {
    a->plan_given = plan->count() > 0;
    a->overhead_given = overhead->count() > 0;
    a->replicates_given = replicates->count() > 0;
    run_eval(*a);
  });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(eval, 22, arfit::cli::add_eval);
