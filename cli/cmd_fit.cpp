// arfit fit SAMPLES... -o models.json [--family F] [--threads N] [--no-correction] [--min-points N] [--format F]
//           [--prior MODELS_OR_SAMPLES...]
// Fits every (system, collective, strategy, fusion, dtype, nranks, nnodes) group of the samples and writes the
// models file (atomically, only when at least one group could be fitted). Groups that cannot be fitted (too
// few sizes, zeros, not a latency curve) are listed with the reason and kept in the file with ok = false.
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <utility>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "fit/fit.h"
#include "fit/transfer.h"
#include "io/output_path_rule.h"
#include "model/sm_targets.h"
#include "ingest/ingest.h"

namespace arfit::cli {
namespace {

struct FitArgs {
  std::vector<std::string> files;
  std::string output;
  std::string family = "auto";
  std::string format = "auto";
  int threads = 1;
  int min_points = 4;
  bool no_correction = false;
  bool no_joint = false;
  bool no_pool = false;
  bool quiet = false;
  std::vector<std::string> priors;  // other machines: models files or samples (fitted here)
};

void run_fit(const FitArgs& a) {
  fit::FitOptions fo;
  fo.family = a.family;
  fo.threads = a.threads;
  fo.min_points = a.min_points;
  fo.residual_correction = !a.no_correction;
  fo.joint_n = !a.no_joint;
  fo.pool_siblings = !a.no_pool;
  if (a.threads < 1) throw UsageError("--threads must be at least 1");
  if (a.min_points < 2) throw UsageError("--min-points must be at least 2");
  // The inputs are read first: the prior check below takes their fingerprints from the bytes read here.
  const std::vector<Sample> samples = load_samples_option(a.files, a.format);
  // Machines whose GPU only their label tells, often a file's name (model/sm_targets.h): the report says so.
  std::map<std::string, LabelOnlyMachine> by_label;
  if (!a.priors.empty()) {
    const std::vector<ModelSet> prior_sets =
        load_priors(read_prior_files(a.priors), a.format, a.threads, fit::own_measurements_of_fit(measurement_files(a.files), samples));
    fo.prior = std::make_shared<fit::TransferLibrary>(prior_sets);
    for (const ModelSet& p : prior_sets) by_label.merge(machines_known_by_label_only(p.raw().value("groups", nlohmann::json::array())));
    if (fo.prior->sources().empty()) throw std::runtime_error("--prior: no fitted group in " + std::to_string(a.priors.size()) + " file(s)");
  }
  check_output_file(a.output);  // refused now (an input, not a regular file, read-only, no such folder), not after fitting
  const ModelSet set = fit::fit_model_set(samples, fo, a.files, a.priors);
  const auto& groups = set.raw().at("groups");
  int ok = 0, bad = 0;
  if (!a.quiet) std::printf("%-60s %-10s %6s %8s %6s\n", "group", "family", "points", "cv_gmae%", "spikes");
  for (const auto& g : groups) {
    const bool good = g.value("ok", false);
    good ? ++ok : ++bad;
    if (a.quiet) continue;
    if (good && g.contains("transfer")) {
      // Transferred from the priors (fit/transfer.h): which machines lent their shape.
      std::printf("%-60s %-10s %6zu %8.2f %6s  %s\n", g.at("id").get<std::string>().c_str(), "transfer",
                  g["transfer"].at("anchor_bytes").size(), g.at("cv_gmae").get<double>() * 100, "-",
                  g["transfer"].at("how").get<std::string>().c_str());
    } else if (good) {
      // Sizes whose time the residual correction set aside as interference spikes (fit.h, spike_indices).
      const auto& corr = g.at("correction");
      const size_t spikes = corr.is_object() && corr.contains("spike_bytes") ? corr.at("spike_bytes").size() : 0;
      std::printf("%-60s %-10s %6d %8.2f %6zu\n", g.at("id").get<std::string>().c_str(), g.at("family").get<std::string>().c_str(),
                  g.at("range").at("points").get<int>(), g.at("cv_gmae").get<double>() * 100, spikes);
    } else
      std::printf("%-60s %-10s %6d  not fitted: %s\n", g.at("id").get<std::string>().c_str(), "-",
                  g.at("range").value("points", 0), g.at("problem").get<std::string>().c_str());
  }
  // Fused groups: what the epilogue adds over the unfused strategy (fit/epilogue.h).
  bool header = false;
  for (const auto& g : groups) {
    if (a.quiet || !g.contains("epilogue") || !g["epilogue"].value("ok", false)) continue;
    const auto& e = g["epilogue"];
    if (!header) {
      std::printf("\nfused epilogue over the unfused group: a + per_byte*bytes + per_row*tokens\n");
      std::printf("%-60s %9s %12s %11s %7s %8s\n", "group", "a_us", "us/MiB", "us/krow", "share%", "rms_us");
      header = true;
    }
    std::printf("%-60s %9.3f %12.4f %11.4f %7.1f %8.3f\n", g.at("id").get<std::string>().c_str(), e.at("a_us").get<double>(),
                e.at("per_byte_us").get<double>() * 1048576.0, e.at("per_row_us").get<double>() * 1000.0,
                e.at("mean_share").get<double>() * 100, e.at("rms_us").get<double>());
  }
  if (ok == 0) {
    // -q hid the per-group reasons: say them here.
    std::string why;
    if (a.quiet)
      for (const auto& g : groups)
        if (why.size() < 400) why += "\n  " + g.at("id").get<std::string>() + ": " + g.value("problem", std::string("not fitted"));
    if (groups.empty())  // every sample was left out as it was read (the warnings above say why)
      throw std::runtime_error("no group could be fitted: the inputs hold no successful sample with a message size\nnothing written");
    throw std::runtime_error("no group could be fitted (" + std::to_string(bad) + " groups" +
                             (a.quiet ? std::string("):") + why : std::string(", see above)")) + "\nnothing written");
  }
  by_label.merge(machines_known_by_label_only(groups));
  for (const auto& [machine, known] : by_label)
    std::fprintf(a.quiet ? stderr : stdout, "%s (docs/fit.md, \"Machine identity\")\n", label_only_machine_note(machine, known).c_str());
  set.save(a.output);
  std::printf("fitted %d groups (%d not fitted), %zu joint-n families -> %s\n", ok, bad, set.raw().at("joint").size(),
              a.output.c_str());
}

void add_fit(CLI::App& app) {
  auto args = std::make_shared<FitArgs>();
  auto* cmd = app.add_subcommand("fit", "Fit latency models to measured samples and write models.json");
  cmd->add_option("samples", args->files, "Sample files in any format `arfit ingest` reads")->required()->check(input_file_validator());
  cmd->add_option("-o,--output", args->output, "Models file to write (JSON; '-': standard output, the report then on stderr)")->required();
  cmd->add_option("--family", args->family,
                  "auto (cross-validated choice among alphabeta, satbw, regimes2), seed, alphabeta, "
                  "sigmoid, satbw, regimes (K = 1..4 by cross-validation) or regimes1..regimes4")
      ->check(CLI::IsMember({"auto", "seed", "alphabeta", "sigmoid", "satbw", "regimes", "regimes1", "regimes2", "regimes3",
                             "regimes4"}));
  cmd->add_option("--format", args->format, "Input format: auto (detect per file), arfit, nccl-tests, nccl-tests-json, param, trtllm, aiconfigurator");
  cmd->add_option("--threads", args->threads, "Fit groups in parallel (results are identical for any count)");
  cmd->add_option("--min-points", args->min_points, "Groups with fewer distinct sizes are reported, not fitted (default 4)");
  cmd->add_flag("--no-correction", args->no_correction, "Do not store the in-range residual correction (model alone everywhere)");
  cmd->add_flag("--no-joint", args->no_joint, "Do not add joint fits across GPU counts");
  cmd->add_flag("--no-pool", args->no_pool,
               "Fit every group alone: no sibling knots from the same machine's other dtypes of a group (docs/fit.md)");
  cmd->add_option("--prior", args->priors,
                  "Other machines' measurements (models files from `arfit fit`, or samples in any format, fitted here): "
                  "curves with fewer than 12 sizes borrow the shape of the matching curves (same collective, strategy, "
                  "fusion, rank and node count, element size) through their own sizes, a quick calibration of a new "
                  "machine (`arbench --plan anchors:K`; docs/fit.md). A prior holding this fit's own measurements (an input, "
                  "a copy or a models file fitted from one, a group under its label holding one of its points) is refused (docs/fit.md, "
                  "\"Priors are other machines\")")
      ->check(input_file_validator());
  cmd->add_flag("-q,--quiet", args->quiet, "Print only the summary line");
  cmd->callback([args] { run_fit(*args); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(fit, 20, arfit::cli::add_fit);
