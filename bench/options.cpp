#include "bench/options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>

#include "bench/alltoallv_splits.h"
#include "cmdline/integer_options.h"
#include "io/input_file.h"
#include "model/text.h"

namespace arfit::bench {
namespace {

std::string quote_arg(const std::string& a) {
  if (!a.empty() && a.find_first_of(" \t\"'\\$") == std::string::npos) return a;
  std::string q = "'";
  for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A message is a whole number of elements: a byte size that is not a multiple of every element size asked for
// would be measured, and recorded, as a smaller size (3 bytes of bf16 as 2), so it is refused.
void check_whole_elements(const GridSpec& g) {
  const std::vector<std::string> dtypes = g.dtypes.empty() ? std::vector<std::string>{"bf16"} : g.dtypes;
  for (const auto& d : dtypes) {
    const std::string dt = canonical_dtype(d);
    const int es = dtype_size(dt);
    if (es <= 0) continue;  // an unknown dtype is reported by the planner, naming --dtype
    for (std::int64_t b : g.bytes)
      if (b % es != 0)
        throw GridError(g.option_for("bytes"), "size " + std::to_string(b) + " is not a whole number of " + dt + " elements (" +
                                                   std::to_string(es) + " bytes each); it would be measured as " +
                                                   std::to_string(b / es * es) + " bytes");
  }
}

// --profile-cases: case indices as --dry-run lists them, counted from 0.
std::set<int> parse_case_indices(const std::string& text, const std::string& option) {
  std::set<int> out;
  for (const std::string& item : split_list(text, option)) {
    std::string why;
    const std::optional<std::uint64_t> index = parse_whole_number(item, 0, std::numeric_limits<int>::max(), &why);
    if (!index)
      throw GridError(option, "case index (as --dry-run lists the cases, comma-separated): " + why);
    out.insert(static_cast<int>(*index));
  }
  if (out.empty()) throw GridError(option, "no case index given");
  return out;
}

// What the command line gave as text, before it is read into the grid and the run's options.
struct RawOptions {
  std::string backend = "host", preset_name, spec_file, collectives, strategies, fusions, dtypes, tp, tokens, hidden,
              bytes, minbytes, maxbytes, plan, splits, workspace, on_timeout = "continue", profile_cases, test_fail;
  double stepfactor = 0;
  std::string until_regret, budget;
  std::vector<std::string> priors;
};

void add_grid_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--backend", raw.backend, "host (MPI + shared memory, no GPU), nccl, custom (kernels/)")->capture_default_str();
  app.add_option("--preset", raw.preset_name, "Start from a preset grid: trtllm, nccl-tests, host-main, host-alltoallv");
  app.add_option("--spec", raw.spec_file, "JSON grid spec file (keys as the flags below; see docs/bench.md)");
  app.add_option("--collective", raw.collectives, "Collectives, comma-separated: allreduce,allgather,reducescatter,alltoall,alltoallv (default allreduce)");
  app.add_option("--strategy", raw.strategies, "Strategies (host: MPI, ONESHOT, TWOSHOT, LOWPRECISION, MULTIMEM_ONESHOT, "
                 "MULTIMEM_TWOSHOT; nccl: NCCL, NCCL_SYMMETRIC; custom: ONESHOT, TWOSHOT, LOWPRECISION, MULTIMEM_ONESHOT, "
                 "MULTIMEM_TWOSHOT); LOWPRECISION is e4m3 transport, not exact: measured only when named, its samples are "
                 "their own strategy; the multimem ones are NONE only; default: all exact strategies of the backend");
  app.add_option("--fusion", raw.fusions, "Fusion ops: NONE, RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8, RESIDUAL_RMS_NORM_QUANT_NVFP4, "
                 "RESIDUAL_RMS_NORM_OUT_QUANT_FP8, RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4, or 'all' (every fusion each strategy supports; "
                 "the fused ones need --tokens/--hidden) (default NONE)");
  app.add_option("--dtype,-d", raw.dtypes, "Element types: bf16, fp16, fp32 (default bf16)");
  app.add_option("--tp", raw.tp, "TP sizes (sub-communicators of ranks 0..TP-1); default the powers of two from 2 up to the world size and the "
                 "world size itself (1 on one rank; 2,4,8 with --virtual-ranks)");
  app.add_option("--tokens", raw.tokens, "Token counts: list (1,8,64), range LO:HI (x2 steps), LO:HI:xF or LO:HI:+STEP");
  app.add_option("--hidden", raw.hidden, "Hidden sizes, same syntax as --tokens");
  app.add_option("--bytes", raw.bytes, "Message sizes in bytes, same syntax, suffixes K M G T (powers of 1024)");
  app.add_option("-b,--minbytes", raw.minbytes, "nccl-tests style sweep: first size");
  app.add_option("-e,--maxbytes", raw.maxbytes, "nccl-tests style sweep: last size");
  app.add_option("-f,--stepfactor", raw.stepfactor, "nccl-tests style sweep: multiplication factor, a finite number above 1 (default 2)");
  app.add_option("--plan", raw.plan,
                 "Sampling plan over the size axes: full, lattice:K (every K-th point per axis, both ends; lattice:1 = full), "
                 "random:FRACTION:SEED, anchors:K (K sizes per curve, the quick calibration of a new machine for arfit fit "
                 "--prior; docs/fit.md), adaptive (rounds: fit, measure what removes the most expected regret per second, "
                 "until --until-regret or --budget; docs/bench.md) (default full)");
  app.add_option("--splits", raw.splits,
                 "all-to-allv split patterns, comma-separated: cyclic (default), even, dlrm:B:T:D:SEED (T tables of "
                 "dimension D on random ranks, batch B; sets its own size), zipf:EXPONENT[:SEED] (Zipf-popular "
                 "destinations), hot:FRACTION[:RANK] (one rank receives FRACTION); fields take lists A/B and "
                 "ranges LO..HI");
}

void add_adaptive_options(CLI::App& app, RawOptions& raw) {
  app.add_option("--until-regret", raw.until_regret,
                 "--plan adaptive: stop when the table's geometric-mean regret stays below R % with 90 % probability "
                 "(by the models' intervals); default 1 when --budget is not given either")
      ->type_name("R");
  app.add_option("--budget", raw.budget,
                 "--plan adaptive: stop when the wall time spent measuring reaches DURATION, a decimal number and a unit "
                 "(ms, s, min, h: 90s, 1.5h); the case in flight finishes")
      ->type_name("DURATION");
  app.add_option("--prior", raw.priors,
                 "--plan adaptive: other machines' models files or samples (as arfit fit --prior): curves of few sizes are "
                 "transferred from them; this run's output (or its journal), a copy of it, a models file fitted from one or "
                 "the points of the rows a --resume continues are refused")
      ->type_name("FILE");
}

void add_run_options(CLI::App& app, Options& o, RawOptions& raw) {
  app.add_option("-o,--output", o.output, "Sample CSV to write: one line per case streams into FILE.partial, moved over FILE when the run ends "
                 "(a killed run leaves FILE as it was; not '-': the journal is no stream)")
      ->type_name("FILE");
  app.add_flag("--resume", o.resume, "Continue FILE.partial of an interrupted run, else FILE: skip the finished cases, never duplicate");
  app.add_flag("--overwrite", o.overwrite, "Replace an existing FILE (when the run ends) and discard an old FILE.partial");
  app.add_option("--json", o.json_output,
                 "Also write every record as JSON (at the end, moved into place with FILE: both replaced, or when one "
                 "fails neither, FILE.partial kept for --resume); with --plan adaptive also its rounds and stop report");
  app.add_option("-w,--warmup", o.runner.warmup, "Warm-up iterations per case")->capture_default_str();
  app.add_option("-n,--iters", o.runner.iters, "Timed iterations per case (1 to 10000000)")->capture_default_str();
  app.add_option("--buffers", o.runner.buffers, "Input buffers to rotate through (0: automatic, spanning 64 MiB)")->capture_default_str();
  app.add_option("-G,--cuda-graph", o.runner.cuda_graph,
                 "nccl/custom backends: after the eager -w warm-up, capture K consecutive collectives (on consecutive "
                 "rotation buffers) into CUDA graphs once per case and replay each graph once untimed; each of the -n "
                 "timed iterations is then one replay, timed by events around it and divided by K (K=1: one "
                 "collective per replay, exact per-iteration spread). 0 = eager launches. Unlike nccl-tests' -G N "
                 "(N launches of one graph holding all -n iterations, average only)")
      ->type_name("K")
      ->capture_default_str();
  app.add_option("--workspace", raw.workspace, "Largest message of the workspace strategies (host ONESHOT/TWOSHOT, custom); default 256M");
  app.add_option("--timeout", o.runner.timeout_s, "Per-case timeout in seconds (up to 604800, a week)")->capture_default_str();
  app.add_option("--on-timeout", raw.on_timeout, "After a timed-out case: continue or stop")->capture_default_str();
  app.add_option("--profile-cases", raw.profile_cases, "Case indices to wrap in cudaProfilerStart/Stop (GPU backends), counted from 0 as --dry-run lists them, e.g. 0,5");
  app.add_flag("--virtual-ranks", o.runner.virtual_ranks, "custom backend: one process plays all TP ranks on one GPU (testing, not NVLink performance)");
  app.add_option("--device", o.device, "GPU index (default: local rank modulo the device count)");
  app.add_flag("-q,--quiet", o.quiet, "No progress output (failures, errors and --plan adaptive's stop report are still printed)");
  app.add_flag("--dry-run", o.dry_run, "Print the planned cases and exit without measuring");
  // Test-only hooks, hidden from --help.
  app.add_option("--test-crash-after", o.runner.crash_after, "")->group("");
  app.add_option("--test-hang-case", o.runner.inject_hang_case, "")->group("");
  app.add_option("--test-fail", raw.test_fail, "")->group("");  // RANK:STAGE, the stages of RunnerOptions::fail_stage
  app.add_option("--test-replay", o.adaptive.replay, "")->group("");  // bench/adaptive.h: AdaptiveOptions::replay
}

// CLI11's parse. False when it answered --help or --version (held in `o`); CLI11's errors become GridErrors naming the
// option.
bool parse_command_line(CLI::App& app, int argc, const char* const* argv, Options& o) {
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    o.help = true;
    o.help_text = app.help();
    return false;
  } catch (const CLI::CallForVersion& v) {
    o.version = true;
    o.version_text = v.what();
    return false;
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    std::string opt = "(command line)";
    // CLI11 messages name the option ("--iters: Value x not in range", "The following argument was not expected: --x").
    auto dash = what.find("-");
    if (dash != std::string::npos) {
      auto end = what.find_first_of(" :,", dash);
      opt = what.substr(dash, end == std::string::npos ? std::string::npos : end - dash);
    }
    // GridError names the option itself: "option --iters: --iters: ..." said it twice.
    if (what.rfind(opt + ": ", 0) == 0) what.erase(0, opt.size() + 2);
    throw GridError(opt, what);
  }
  return true;
}

// The grid's starting point: --preset, then --spec over it (which may name its own preset), then --backend.
void apply_grid_sources(GridSpec& g, const RawOptions& raw, const CLI::App& app) {
  if (!raw.preset_name.empty()) g = preset(raw.preset_name);
  if (!raw.spec_file.empty()) {
    std::string text;
    try {
      text = read_file(raw.spec_file);
    } catch (const std::exception& e) {
      throw GridError("--spec", e.what());
    }
    apply_json_spec(g, text, raw.spec_file);
  }
  if (app.count("--backend") || g.backend.empty()) g.backend = raw.backend;
}

// The categorical axes given as flags, over the preset's and the spec's.
void apply_categorical_axes(GridSpec& g, const RawOptions& raw) {
  if (!raw.collectives.empty()) {
    g.collectives.clear();
    for (const auto& s : split_list(raw.collectives, "--collective")) {
      auto c = try_parse_collective(s);
      if (!c) throw GridError("--collective", "unknown collective '" + s + "'");
      g.collectives.push_back(*c);
    }
    g.origin["collectives"] = "--collective";
  }
  if (!raw.strategies.empty()) {
    g.strategies = split_list(raw.strategies, "--strategy");
    for (auto& s : g.strategies) s = upper(s);
    g.origin["strategies"] = "--strategy";
    g.skip_unsupported = false;
  }
  if (upper(raw.fusions) == "ALL") {
    g.fusions = all_fusion_ops();
    g.every_fusion = true;
    g.origin["fusions"] = "--fusion";
  } else if (!raw.fusions.empty()) {
    g.fusions.clear();
    for (const auto& s : split_list(raw.fusions, "--fusion")) {
      auto f = try_parse_fusion(s);
      if (!f) throw GridError("--fusion", "unknown fusion op '" + s + "'");
      g.fusions.push_back(*f);
    }
    g.origin["fusions"] = "--fusion";
    g.skip_unsupported = false;
  }
  if (!raw.dtypes.empty()) {
    g.dtypes.clear();
    for (const auto& s : split_list(raw.dtypes, "--dtype")) {
      std::string d = canonical_dtype(s);
      if (dtype_size(d) == 0) throw GridError("--dtype", "unknown dtype '" + s + "'");
      g.dtypes.push_back(d);
    }
    g.origin["dtypes"] = "--dtype";
    g.skip_unsupported = false;
  }
  if (!raw.tp.empty()) {
    g.tp = parse_int_list(raw.tp, "--tp");
    g.origin["tp"] = "--tp";
  }
}

// The size axes: --tokens/--hidden, --bytes or the -b/-e/-f sweep (one kind), then --splits and --plan.
void apply_size_axes(GridSpec& g, const RawOptions& raw, const CLI::App& app) {
  const bool sweep = !raw.minbytes.empty() || !raw.maxbytes.empty() || app.count("--stepfactor");
  if (sweep && !raw.bytes.empty()) throw GridError("--bytes", "give either --bytes or -b/-e/-f, not both");
  if (!raw.tokens.empty() || !raw.hidden.empty()) {
    if (!raw.bytes.empty() || sweep) throw GridError("--tokens", "give either --tokens/--hidden or byte sizes, not both");
    if (!raw.tokens.empty()) g.tokens = parse_size_list(raw.tokens, "--tokens"), g.origin["tokens"] = "--tokens";
    if (!raw.hidden.empty()) g.hidden = parse_size_list(raw.hidden, "--hidden"), g.origin["hidden"] = "--hidden";
    g.bytes.clear();
  }
  if (!raw.bytes.empty()) {
    g.bytes = parse_size_list(raw.bytes, "--bytes");
    g.origin["bytes"] = "--bytes";
    g.tokens.clear(), g.hidden.clear();
  }
  if (sweep) {
    const std::int64_t lo = raw.minbytes.empty() ? (g.bytes.empty() ? 8 : g.bytes.front()) : parse_size(raw.minbytes, "-b/--minbytes");
    const std::int64_t hi = raw.maxbytes.empty() ? (g.bytes.empty() ? lo : g.bytes.back()) : parse_size(raw.maxbytes, "-e/--maxbytes");
    if (lo > hi) throw GridError("-b/--minbytes", "minimum " + std::to_string(lo) + " is above the maximum " + std::to_string(hi) + " (-e)");
    const double f = app.count("--stepfactor") ? raw.stepfactor : 2.0;
    if (!(f > 1.0) || !std::isfinite(f)) throw GridError("-f/--stepfactor", "the step factor must be a finite number above 1");
    g.bytes = geometric_sizes(lo, hi, f, "-b/-e/-f");
    g.origin["bytes"] = "-b/-e/-f";
    g.tokens.clear(), g.hidden.clear();
  }
  if (app.count("--splits")) {  // given, even empty: an empty value is refused, never the default pattern
    g.splits.clear();
    for (const auto& p : parse_split_patterns(raw.splits, "--splits")) g.splits.push_back(p.to_string());
    g.origin["splits"] = "--splits";
  }
  if (!raw.plan.empty()) {
    g.plan = Plan::parse(raw.plan, "--plan");
    g.origin["plan"] = "--plan";
  }
}

// The options read from text: --workspace, --on-timeout, --test-fail, --profile-cases.
void apply_run_options(Options& o, const RawOptions& raw) {
  if (!raw.workspace.empty()) o.workspace = parse_size(raw.workspace, "--workspace");
  if (raw.on_timeout == "continue")
    o.runner.stop_on_timeout = false;
  else if (raw.on_timeout == "stop")
    o.runner.stop_on_timeout = true;
  else
    throw GridError("--on-timeout", "expected 'continue' or 'stop', found '" + raw.on_timeout + "'");
  if (!raw.test_fail.empty()) {
    const auto colon = raw.test_fail.find(':');
    const std::set<std::string> stages = {"backend", "group", "init", "check"};
    if (colon == std::string::npos || !stages.count(raw.test_fail.substr(colon + 1)))
      throw GridError("--test-fail", "expected RANK:backend|group|init|check");
    o.runner.fail_rank = parse_int_list(raw.test_fail.substr(0, colon), "--test-fail").at(0);
    o.runner.fail_stage = raw.test_fail.substr(colon + 1);
  }
  if (!raw.profile_cases.empty()) o.runner.profile_cases = parse_case_indices(raw.profile_cases, "--profile-cases");
}

// --until-regret, --budget and --prior: --plan adaptive's, refused with any other plan (they would be ignored).
void apply_adaptive_options(Options& o, const RawOptions& raw) {
  AdaptiveOptions& a = o.adaptive;
  const bool adaptive = o.spec.plan.kind == Plan::Kind::Adaptive;
  for (const auto& [given, option] : {std::pair{!raw.until_regret.empty(), "--until-regret"}, std::pair{!raw.budget.empty(), "--budget"},
                                      std::pair{!raw.priors.empty(), "--prior"}})
    if (given && !adaptive) throw GridError(option, "only --plan adaptive reads it (the plan is " + o.spec.plan.to_string() + ")");
  if (!adaptive) return;
  if (!raw.until_regret.empty()) {
    const std::string number = raw.until_regret.back() == '%' ? raw.until_regret.substr(0, raw.until_regret.size() - 1) : raw.until_regret;
    std::string why;
    const std::optional<double> r = parse_decimal(number, 0, 100, &why);
    if (!r || !(*r > 0 && *r < 100))
      throw GridError("--until-regret", "a percentage above 0 and below 100 (a decimal number, an optional '%': 1, 0.5%)" +
                                            (r ? std::string() : ": " + why));
    a.until_regret = *r / 100;
  }
  if (!raw.budget.empty()) {
    std::string why;
    const std::optional<double> b = parse_duration(raw.budget, &why);
    if (!b) throw GridError("--budget", why);
    if (!(*b > 0)) throw GridError("--budget", "'" + raw.budget + "' is no time to measure in; give a positive duration");
    a.budget_s = *b;
  }
  // Without a stop rule the loop would measure the whole grid: 1 % is what the select protocol's choices reach.
  if (raw.until_regret.empty() && raw.budget.empty()) a.until_regret = kDefaultUntilRegret;
  a.priors = raw.priors;
  for (const std::string& path : a.priors)
    if (const std::string problem = input_path_problem(path); !problem.empty()) throw GridError("--prior", problem);
}

// The combinations and ranges the run options must respect.
void check_run_options(const Options& o) {
  const GridSpec& g = o.spec;
  // Every rank keeps one time per iteration (and its timer a mark per iteration): -n 2e9 asked for 16 GB each
  // before the first case and ended in bad_alloc and MPI_Abort. Ten million iterations is 10 s of 1 us collectives.
  if (o.runner.iters < 1 || o.runner.iters > kMaxIterations)
    throw GridError("-n/--iters", "timed iterations must be between 1 and " + std::to_string(kMaxIterations));
  if (o.runner.warmup < 0) throw GridError("-w/--warmup", "cannot be negative");
  if (o.runner.buffers < 0 || o.runner.buffers > 4096) throw GridError("--buffers", "must be between 0 and 4096");
  // The watchdog adds the timeout to a clock reading in nanoseconds: beyond about 292 years (inf, 1e300) that
  // overflowed (undefined; a case's clock could have fired at once). A week bounds any real case.
  if (!(o.runner.timeout_s > 0) || !(o.runner.timeout_s <= kMaxTimeoutSeconds))
    throw GridError("--timeout", "must be a positive number of seconds up to " + std::to_string(static_cast<int>(kMaxTimeoutSeconds)) +
                                     " (a week)");
  if (o.resume && o.overwrite) throw GridError("--resume", "--resume and --overwrite exclude each other");
  if (o.output.empty() && !o.dry_run) throw GridError("-o/--output", "an output file is required (or --dry-run)");
  if (o.runner.cuda_graph < 0 || o.runner.cuda_graph > kMaxCollectivesPerGraph)
    throw GridError("-G/--cuda-graph", "collectives per graph must be between 0 (off) and " +
                                           std::to_string(kMaxCollectivesPerGraph));
  if (o.runner.cuda_graph > 0 && g.backend == "host")
    throw GridError("-G/--cuda-graph", "the host backend has no CUDA graphs; use --backend nccl or custom, or drop -G");
  // Rotation inside graphs: a case captures lcm(K, buffers) collectives (graphs_for_rotation in runner.cpp).
  // Automatic rotation uses at most 16 buffers, which keeps that at 16 K; an explicit --buffers could make it
  // millions of graph nodes, so that combination is bounded here.
  if (o.runner.cuda_graph > 0 && o.runner.buffers > 0) {
    const std::int64_t captured = std::lcm(std::int64_t{o.runner.cuda_graph}, std::int64_t{o.runner.buffers});
    if (captured > kMaxCapturedCollectives)
      throw GridError("-G/--cuda-graph", std::to_string(o.runner.cuda_graph) + " collectives per graph rotating over " +
                                             std::to_string(o.runner.buffers) + " buffers would capture lcm = " +
                                             std::to_string(captured) + " collectives (more than " +
                                             std::to_string(kMaxCapturedCollectives) +
                                             "); choose K and --buffers that divide one another");
  }
}

// The GPU options, like -G: a value the host backend would ignore is refused rather than run as if it were read.
void check_gpu_options(const Options& o) {
  const GridSpec& g = o.spec;
  if (o.runner.virtual_ranks && g.backend != "custom") throw GridError("--virtual-ranks", "only the custom backend has virtual ranks");
  if (o.device < -1) throw GridError("--device", "a GPU index is 0 or more (or -1, the default: local rank modulo the device count)");
  if (o.device >= 0 && g.backend == "host") throw GridError("--device", "the host backend uses no GPU; use --backend nccl or custom, or drop --device");
  if (!o.runner.profile_cases.empty() && g.backend == "host")
    throw GridError("--profile-cases", "the host backend has no CUDA profiler ranges; use --backend nccl or custom, or drop --profile-cases");
}

}  // namespace

Options parse_options(int argc, const char* const* argv) {
  Options o;
  for (int i = 0; i < argc; ++i) o.command_line += (i ? " " : "") + quote_arg(argv[i]);
  CLI::App app{
      "arbench: measure collective latencies into arfit's sample CSV.\n"
      "Launch with mpirun: mpirun -np N arbench --backend host|nccl|custom [grid] -o samples.csv\n"
      "Rank 0 writes the output and the progress; every rank checks correctness."};
  app.name("arbench");
  app.set_help_flag("-h,--help", "Print this help and exit");
  app.set_version_flag("--version", std::string("arbench (arfit ") + ARFIT_VERSION + ")", "Print the version and exit");
  RawOptions raw;
  add_grid_options(app, raw);
  add_adaptive_options(app, raw);
  add_run_options(app, o, raw);
  cmdline::require_decimal_integer_options(app);  // --iters 016 was octal 14 (cmdline/integer_options.h)
  if (!parse_command_line(app, argc, argv, o)) return o;
  apply_grid_sources(o.spec, raw, app);
  apply_categorical_axes(o.spec, raw);
  apply_size_axes(o.spec, raw, app);
  apply_run_options(o, raw);
  apply_adaptive_options(o, raw);
  check_run_options(o);
  check_gpu_options(o);
  check_whole_elements(o.spec);
  return o;
}

}  // namespace arfit::bench
