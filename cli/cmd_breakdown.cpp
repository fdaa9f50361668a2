// arfit breakdown PROFILE -o DIR: kernel time per op class and per entry, per phase, as CSV and figures.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/trace_inputs.h"
#include "io/output_path_rule.h"
#include "model/errors.h"
#include "trace/breakdown.h"
#include "trace/classify.h"
#include "trace/figures.h"
#include "trace/load.h"
#include "trace/report.h"

namespace arfit::cli {
namespace {

struct BreakdownArgs {
  std::string profile, out_dir, level = "kernel", rules, format = "auto", nvtx, image_format = "png";
  std::size_t top_k = 10, decode_steps = 8;
  std::vector<std::string> fold, phases;
  bool no_figures = false;
};

void run_breakdown(const BreakdownArgs& a) {
  trace::BreakdownOptions opt;
  try {
    opt.level = trace::parse_level(a.level);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  opt.fold = a.fold;
  opt.top_k = a.top_k;
  trace::ReportOptions ro;
  ro.decode_steps = a.decode_steps;
  ro.figures = !a.no_figures;
  try {
    ro.formats = plots::parse_formats(a.image_format);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  check_output_directory(a.out_dir);  // refused now (a file, /dev/null), not after reading the profile
  trace::RuleTable rules = a.rules.empty() ? trace::RuleTable::defaults() : trace::RuleTable::load_user(a.rules);
  trace::Profile prof = load_profile_phases(a.profile, a.format, a.nvtx, a.phases);
  warn_folds_matching_nothing(prof, a.fold, "breakdown");
  trace::Breakdown b = trace::compute_breakdown(prof, rules, opt);
  auto written = trace::write_breakdown_report(b, a.out_dir, ro);

  std::cout << "profile: " << prof.source << " (" << prof.format;
  if (!prof.context.model.empty()) std::cout << ", model " << prof.context.model;
  if (prof.context.tensor_parallel_size) std::cout << ", TP=" << prof.context.tensor_parallel_size;
  std::cout << "), " << prof.phases.size() << " phase(s)\n";
  const trace::PhaseBreakdown* last_decode = nullptr;
  for (const auto& p : b.phases)
    if (p.kind == trace::PhaseKind::Decode) last_decode = &p;
  for (const auto& p : b.phases) {
    if (p.kind == trace::PhaseKind::Decode && &p != last_decode) continue;  // prefill/others and the last decode step
    std::printf("  %-14s total %10.1f us, communication %8.1f us (%.1f %%)\n", p.phase.c_str(), p.total_us, p.comm_us,
                p.total_us > 0 ? 100 * p.comm_us / p.total_us : 0.0);
  }
  if (!b.unmatched.empty()) {
    std::cerr << "arfit breakdown: " << b.unmatched.size()
              << " kernel name(s) matched no classification rule (class 'unmatched'; listed in unmatched_kernels.csv):\n";
    for (std::size_t i = 0; i < b.unmatched.size() && i < 5; ++i)
      std::cerr << "  " << trace::shorten_name(b.unmatched[i].name, 80) << "  (" << b.unmatched[i].time_us << " us)\n";
    if (b.unmatched.size() > 5) std::cerr << "  ... and " << b.unmatched.size() - 5 << " more\n";
  }
  if (ro.figures && trace::entries_folded_in_figures(b) > 0)
    std::cout << "figures: the entry figures draw the top " << trace::kMaxFigureEntries - 1 << " entries and fold "
              << trace::entries_folded_in_figures(b) << " more into 'others' (breakdown_entries.csv has every one)\n";
  for (const auto& w : written) std::cout << "wrote " << w << "\n";
}

void add_breakdown(CLI::App& app) {
  auto a = std::make_shared<BreakdownArgs>();
  auto* cmd = app.add_subcommand("breakdown",
                                 "Kernel-time breakdown of a profile (vLLM layerwise JSON or nsys CSV) per op class and phase: CSV + figures");
  cmd->add_option("profile", a->profile, "vLLM layerwise profile JSON, or nsys stats CSV (cuda_gpu_kern_sum / cuda_gpu_trace)")
      ->required()
      ->check(input_file_validator());
  cmd->add_option("-o,--out", a->out_dir, "Output folder (created when missing)")->required()->check(output_folder_validator());
  cmd->add_option("--level", a->level, "Entries at 'kernel' (leaves) or 'module' (parents of kernels) level")
      ->check(CLI::IsMember({"module", "kernel"}))
      ->capture_default_str();
  cmd->add_option("--top", a->top_k,
                  "Entries kept in the entry table; the rest are summed into 'others' (0 = all). The entry figures draw at most " +
                      std::to_string(trace::kMaxFigureEntries - 1) + " and fold the rest into one 'others' series, saying how many")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--fold", a->fold, "Node names folded into one leaf (e.g. Sampler LogitsProcessor)");
  cmd->add_option("--rules", a->rules, "Extra kernel-classification rules (JSON, same shape as trace/rules/default_rules.json); tried first")->check(input_file_validator());
  cmd->add_option("--decode-steps", a->decode_steps, "Decode steps drawn in the figures (evenly spread; the last is always kept)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  cmd->add_option("--phase", a->phases, "Only these phases (e.g. prefill decode_1); default: all");
  cmd->add_option("--format", a->format, "Profile format")->check(CLI::IsMember({"auto", "vllm", "nsys"}))->capture_default_str();
  cmd->add_option("--nvtx", a->nvtx,
                  "nsys NVTX range report CSV (nvtx_gpu_proj_trace or nvtx_pushpop_trace) to split a cuda_gpu_trace into "
                  "prefill/decode phases by range name; refused with other profiles");
  cmd->add_option("--image-format", a->image_format, "Figure format: png, svg or both")->capture_default_str();
  cmd->add_flag("--no-figures", a->no_figures, "Write the CSV tables only (no gnuplot needed)");
  cmd->callback([a] { run_breakdown(*a); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(breakdown, 600, arfit::cli::add_breakdown);
