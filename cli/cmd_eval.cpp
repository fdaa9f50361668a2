// arfit eval SAMPLES... --protocol P [--json FILE] [--methods LIST] [--threads N] [--format F]
// Runs one evaluation protocol on measured samples and prints arfit's default (`auto`) next to the baselines.
// Protocols are a dispatch table: each entry names a protocol and how to run it; components add theirs here.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "fit/eval.h"
#ifdef ARFIT_HAVE_SELECT_EVAL
#include "codegen/select_eval.h"
#endif
#include "ingest/ingest.h"
#include "model/atomic_file.h"

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
  std::string points;         // size protocols: per held-out point CSV
};

// What a protocol hands back: the printed report and the JSON written by --json.
struct ProtocolOutput {
  std::string text;
  nlohmann::json json;
  std::string points_csv;  // --points (size and crossn protocols)
};
using ProtocolFn = std::function<ProtocolOutput(const std::vector<Sample>&, const EvalArgs&)>;

fit::EvalOptions fit_eval_options(const EvalArgs& a) {
  fit::EvalOptions o;
  o.threads = a.threads;
  o.keep_points = !a.points.empty();
  if (!a.methods.empty()) {
    o.methods.clear();
    std::stringstream ss(a.methods);
    std::string m;
    while (std::getline(ss, m, ','))
      if (!m.empty()) o.methods.push_back(m);
  }
  return o;
}

// Why a size or GPU-count protocol had nothing to evaluate, in its own words (fit/eval.h describes each).
std::string no_curve_message(const std::string& protocol) {
  std::string rule;
  for (const auto& p : fit::fit_protocols())
    if (p.name == protocol) rule = p.help;
  return "no curve qualifies for --protocol " + protocol + " (" + rule +
         "; a curve is one group of out-of-place samples with at least 12 distinct sizes): nothing to evaluate";
}

// The protocols `arfit eval` knows. To add one: one entry {name, help, runner}.
std::vector<std::pair<std::string, ProtocolFn>> protocols() {
  std::vector<std::pair<std::string, ProtocolFn>> v;
  for (const auto& p : fit::fit_protocols()) {
    auto run = p.run;
    v.push_back({p.name, [run](const std::vector<Sample>& s, const EvalArgs& a) {
                   const fit::EvalResult r = run(s, fit_eval_options(a));
                   if (r.curves == 0) throw std::runtime_error(no_curve_message(a.protocol));
                   ProtocolOutput o{r.to_table(), r.to_json(), {}};
                   if (!a.points.empty()) o.points_csv = r.points_csv();
                   return o;
                 }});
  }
#ifdef ARFIT_HAVE_SELECT_EVAL
  // Strategy-selection quality (codegen/select_eval.h).
  v.push_back({"select", [](const std::vector<Sample>& s, const EvalArgs& a) {
                 codegen::SelectOptions o;
                 o.plan = a.plan;
                 const codegen::SelectReport r = codegen::evaluate_select(s, o);
                 if (!a.points.empty()) throw UsageError("--points is not available for --protocol select");
                 return ProtocolOutput{codegen::format_select_report(r), codegen::select_report_json(r), {}};
               }});
#endif
  return v;
}

void run_eval(const EvalArgs& a) {
  if (a.threads < 1) throw UsageError("--threads must be at least 1");
  ProtocolFn fn;
  std::string known;
  for (const auto& [name, f] : protocols()) {
    known += (known.empty() ? "" : ", ") + name;
    if (name == a.protocol) fn = f;
  }
  if (!fn) throw UsageError("unknown --protocol '" + a.protocol + "' (known: " + known + ")");
  if (!a.json.empty() && !a.points.empty() && same_path(a.json, a.points))
    throw UsageError("--json and --points name the same file '" + a.json + "'; give two files");
  const std::vector<Sample> samples = load_samples_option(a.files, a.format);
  for (const std::string* out : {&a.json, &a.points})
    if (!out->empty()) check_output_path(*out);  // refused now, not after the evaluation
  ProtocolOutput out;
  try {
    out = fn(samples, a);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::cout << out.text;
  if (!a.json.empty()) write_string_atomically(a.json, out.json.dump(1) + "\n");
  if (!a.points.empty()) write_string_atomically(a.points, out.points_csv);
}

void add_eval(CLI::App& app) {
  auto a = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Evaluate predictions against held-out measurements (arfit vs baselines)");
  cmd->add_option("samples", a->files, "Sample files (any format `arfit ingest` reads) or folders' files")->required()->check(CLI::ExistingFile);
  cmd->add_option("--protocol", a->protocol,
                  "interp2 (fit even-indexed sizes, predict odd), sparse4 (every 4th size + largest), extrap (fit <= 64 MiB, "
                  "predict larger), crossn (fit all but the largest GPU count, predict it), select (choose strategies from a "
                  "partial sweep, regret against measured times; docs/codegen.md)")
      ->required();
  cmd->add_option("--json", a->json, "Also write the results as JSON to this file");
  cmd->add_option("--points", a->points,
                  "Also write every held-out point as CSV (method, group, bytes, measured, predicted, 90 % interval, how); "
                  "not for select");
  cmd->add_option("--methods", a->methods,
                  "Comma-separated methods (default auto,seed,alphabeta,loglog); also any family name, FAMILY+c for the "
                  "family with the residual correction, auto-nc, auto-solo (no sibling pooling); size protocols also "
                  "take the diagnostics ceiling-others / ceiling-otherhw (auto times the median held-out error of the "
                  "other files / other machines at the same collective, strategy, ranks and size: not predictors, "
                  "they use held-out measurements)");
  cmd->add_option("--threads", a->threads, "Curves evaluated in parallel");
  cmd->add_option("--plan", a->plan, "select: measured subset, auto (sparse4 for sizes, lattice:2 for token x hidden grids), sparse4 or lattice:K")
      ->capture_default_str();
  cmd->add_option("--format", a->format, "Input format (default auto: detected per file)");
  cmd->callback([a] { run_eval(*a); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(eval, 22, arfit::cli::add_eval);
