// arbench: thin main. Parses the command line and the grid on every rank (so every rank rejects a bad
// one the same way, before any measurement), lets rank 0 prepare the output, then hands over to the Runner.
// Exit status, the rule every arfit program follows: 0 all cases ok; 1 bad input data (an unreadable --resume
// file) or a failed run (a case failed: wrong results, error, timeout, also when --on-timeout stop ended the
// run); 2 usage: bad command line, impossible grid, refused output path (nothing measured).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <mpi.h>
#include <sstream>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/adaptive.h"
#include "bench/agreement.h"
#include "bench/backend.h"
#include "bench/options.h"
#include "bench/plan.h"
#include "bench/reporter.h"
#include "bench/run_info.h"
#include "bench/runner.h"
#include "fit/prior_check.h"
#include "planner/priors.h"
#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "io/resource_limits.h"
#include "model/errors.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "io/standard_output_check.h"
#include "model/text.h"

using namespace arfit::bench;

namespace {

// Collective over the world (so called by every rank, whatever its command line): the ranks on this node.
int ranks_on_this_node(int rank) {
  int n = 1;
  MPI_Comm node;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  return n;
}

// One rank's error on standard error in one write (whole lines through mpirun's relay), prefixed by the rank
// except on rank 0, whose errors are the command line's.
void say_error(int rank, const std::string& text) {
  std::cerr << "arbench" + (rank == 0 ? std::string() : "[rank " + std::to_string(rank) + "]") + ": error: " + text + "\n"
            << std::flush;
}

// What this process may still map under its address-space limit (ulimit -v), 0 when unlimited: the limit less
// what is mapped already (MPI's own segments and the libraries take a few hundred MiB).
std::int64_t address_space_left() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  const auto cap = static_cast<std::int64_t>(std::min<rlim_t>(limit.rlim_cur, INT64_MAX));
  long long pages = 0;
  std::ifstream statm("/proc/self/statm");  // first field: the pages mapped now (Linux)
  if (!(statm >> pages)) return cap;
  return std::max<std::int64_t>(1, cap - pages * sysconf(_SC_PAGESIZE));
}

// The cases this rank will run: its command line's grid within what its node can hold.
PlannedGrid plan_grid(Options& opt, int size, int ranks_per_node, std::vector<std::string>* notices) {
  PlanOptions po;
  po.limits.world = size;
  po.limits.workspace = opt.workspace;
  po.limits.virtual_ranks = opt.runner.virtual_ranks;
  po.buffers = opt.runner.buffers;
  po.ranks_per_node = ranks_per_node;
  po.memory_bytes = static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE);
  po.address_space_bytes = address_space_left();
  return plan_cases(opt.spec, po, notices);
}

// The priors of --plan adaptive, refused (a usage error naming --prior) when one holds this run's own measurements
// (fit/prior_check.h): its output or the journal a --resume continues, by any name, a models file fitted from one, or
// a curve holding a point of the rows a --resume continues.
std::shared_ptr<const arfit::fit::TransferLibrary> adaptive_priors(const Options& opt, const OutputState& out) {
  std::vector<arfit::fit::MeasurementFile> own_files;
  for (const std::string& f : {opt.output, out.journal})
    if (!f.empty()) own_files.push_back({f, arfit::input_fingerprint(f)});
  try {
    return arfit::planner::load_prior_library(
        opt.adaptive.priors, arfit::fit::own_measurements_of_samples("this run", "the output of this run", own_files, out.rows));
  } catch (const arfit::fit::PriorOfOwnMeasurements& e) {
    throw GridError("--prior", e.what());
  }
}

// --plan adaptive's loop options (rank 0's): the run's timing for the cost model, the stop rules, the priors.
arfit::planner::LoopOptions adaptive_loop(const Options& opt, const OutputState& out) {
  arfit::planner::LoopOptions loop;
  loop.until_regret = opt.adaptive.until_regret;
  loop.budget_s = opt.adaptive.budget_s;
  loop.cost.warmup = opt.runner.warmup;
  loop.cost.iters = opt.runner.iters;
  loop.cost.collectives_per_iteration = std::max(1, opt.runner.cuda_graph);
  loop.measure_overhead = true;
  if (!opt.adaptive.priors.empty()) loop.estimate.prior = adaptive_priors(opt, out);
  return loop;
}

// The run header's line for --plan adaptive: its stop rules and priors, as given.
std::string adaptive_header_value(const Options& opt) {
  const AdaptiveOptions& a = opt.adaptive;
  std::string v = a.until_regret > 0 ? "until-regret " + arfit::format_number(100 * a.until_regret, "%g") + " %" : "";
  if (std::isfinite(a.budget_s)) v += (v.empty() ? "" : ", ") + std::string("budget ") + arfit::format_duration(a.budget_s);
  if (!a.priors.empty()) v += ", priors " + arfit::join(a.priors, " ");
  return v;
}

// Test hook --test-replay FILE (rank 0): the samples whose timings the records take, by case.
std::shared_ptr<const std::map<std::string, arfit::Sample>> replay_samples(const std::string& path) {
  if (path.empty()) return nullptr;
  auto out = std::make_shared<std::map<std::string, arfit::Sample>>();
  for (const arfit::Sample& s : arfit::read_samples_csv(path).samples) out->emplace(sample_key(s), s);
  return out;
}

// What this rank's command line plans: the options, the grid, the notices, and (when planning failed) the reason.
struct PlannedRun {
  Options opt;
  PlannedGrid grid;
  std::vector<std::string> notices;
  std::string parse_error;
  RankPlan mine;
};

PlannedRun plan_run(int argc, char** argv, int size, int ranks_per_node) {
  PlannedRun p;
  try {
    p.opt = parse_options(argc, argv);
    if (!p.opt.help && !p.opt.version) p.grid = plan_grid(p.opt, size, ranks_per_node, &p.notices);
    p.mine = plan_of_rank(p.opt, p.grid);
  } catch (const GridError& e) {
    p.parse_error = e.what();
    p.mine = usage_error_of_rank(e.option(), p.parse_error);
  } catch (const std::exception& e) {  // out of memory planning a huge grid: still meets the others below
    p.parse_error = e.what();
    p.mine = failure_of_rank(p.parse_error);
  }
  return p;
}

// Before the first collective of the run, every rank learns what every other rank planned: ranks that differ
// would pair unlike collectives (MPI_ERR_TRUNCATE, a case index beyond a shorter grid, bad_alloc) or wait
// forever for a rank that only printed its help or its plan. Returns the exit status when the run ends here
// (a disagreement, --help, --version, --dry-run).
std::optional<int> agree_or_finish(const PlannedRun& p, int rank) {
  const bool root = rank == 0;
  const Verdict verdict = agree_on_the_run(MPI_COMM_WORLD, p.mine);
  if (verdict.print_own_error)
    say_error(rank, p.parse_error + (p.mine.kind == RankPlan::kUsageError ? "\nRun with --help for more information." : ""));
  if (root && !verdict.message.empty()) say_error(rank, verdict.message);
  if (verdict.status != 0) return verdict.status;
  const Options& opt = p.opt;
  if (opt.help || opt.version) {
    if (root) std::cout << (opt.help ? opt.help_text : opt.version_text + "\n");
    return 0;
  }
  if (root && !opt.quiet)
    for (const auto& n : p.notices) std::cerr << "arbench: note: " << n << "\n";
  if (!opt.dry_run) return std::nullopt;
  if (root) {
    std::cout << "# plan " << opt.spec.plan.to_string() << ": " << p.grid.cases.size() << " of " << p.grid.full_cases
              << " cases (" << p.grid.planned_points << " of " << p.grid.full_points << " size points)\n";
    for (const Case& c : p.grid.cases) std::cout << c.index << "\t" << c.describe() << "\n";
  }
  return 0;
}

// The backend first: --resume compares its device with the file's. It may fail on some ranks only (a node
// without the GPU asked for): every rank says its own reason, and all leave together (a non-zero status).
int open_backend(Options& opt, int rank, std::unique_ptr<Backend>& backend) {
  int status = 0;
  std::string error;
  try {
    BackendOptions bo;
    bo.workspace = opt.workspace;
    bo.virtual_ranks = opt.runner.virtual_ranks;
    bo.device = opt.device;
    bo.cuda_graph = opt.runner.cuda_graph;
    backend = make_backend(opt.spec.backend, bo);
    fail_if_injected(opt.runner, rank, "backend");
    opt.runner.device = backend->device_info();
  } catch (const GridError& e) {
    status = 2;
    error = e.what();
  } catch (const std::exception& e) {
    status = 1;
    error = e.what();
  }
  const StepOutcome outcome = agree_on_step(MPI_COMM_WORLD, status, error);
  if (outcome.say_own_error) say_error(rank, error);
  opt.runner.backend_label = "arbench-" + opt.spec.backend;
  return outcome.status;
}

// Rank 0's output: the sample CSV inspected (a --resume's finished cases), the cases still to run, the adaptive
// loop's options, and the journal opened.
struct OutputSetup {
  OutputState out;
  std::vector<int> todo;
  std::size_t resumed = 0;
  arfit::planner::LoopOptions loop;
  std::unique_ptr<CsvReporter> csv;
};

// --json must name a third file, neither the sample CSV nor its journal; refused now, not after the run.
void check_json_output(const Options& opt, const OutputState& out) {
  if (opt.json_output.empty()) return;
  if (arfit::same_path(opt.json_output, opt.output))
    throw GridError("--json", "'" + opt.json_output + "' is also the sample CSV (-o); write the JSON to another file");
  if (arfit::same_path(opt.json_output, out.journal))
    throw GridError("--json", "'" + opt.json_output + "' is the journal of the sample CSV (-o); write the JSON to another file");
  arfit::check_output_file(opt.json_output);
}

void prepare_output(Options& opt, const PlannedGrid& grid, RunHeader& header, const std::vector<std::string>& columns,
                    bool adaptive, OutputSetup& o) {
  std::set<std::string> planned;
  for (const Case& c : grid.cases) planned.insert(c.key());
  o.out = inspect_output(opt.output, opt.spec.to_json(), opt.resume, opt.overwrite,
                         cuda_graph_header_value(opt.runner.cuda_graph), opt.runner.device.device, &planned,
                         opt.runner.backend_label, &header, columns);
  check_json_output(opt, o.out);
  for (const Case& c : grid.cases)
    if (o.out.finished.count(c.key()))
      ++o.resumed;
    else
      o.todo.push_back(c.index);
  // The priors and the replayed samples read before the journal is made: a refused one leaves no journal behind.
  if (adaptive) o.loop = adaptive_loop(opt, o.out);
  opt.runner.replay = replay_samples(opt.adaptive.replay);
  // Last: the journal opened now, so an output folder that cannot be made or written is refused before any
  // case runs (it was an MPI_Abort at the first case).
  o.csv = std::make_unique<CsvReporter>(opt.output, o.out, columns);
  o.csv->open_journal();
}

// prepare_output on rank 0, its exit status shared with every rank: 2 for a usage error or a refused path, 1 for
// bad data (InputError) or a path the system refuses to check.
int prepare_output_everywhere(Options& opt, const PlannedGrid& grid, RunHeader& header,
                              const std::vector<std::string>& columns, bool adaptive, bool root, OutputSetup& o) {
  int error = 0;
  std::string error_text;
  if (root) {
    try {
      prepare_output(opt, grid, header, columns, adaptive, o);
    } catch (const GridError& e) {
      error = 2;
      error_text = e.what();
    } catch (const arfit::OutputPathError& e) {
      error = 2;
      error_text = e.what();
    } catch (const std::exception& e) {
      error = 1;
      error_text = e.what();
    }
  }
  MPI_Bcast(&error, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (error && root) std::cerr << "arbench: error: " << error_text << "\n";
  return error;
}

// Rank 0's cases still to run, and how many the output already held, told to every rank.
std::size_t broadcast_todo(std::vector<int>& todo, std::size_t resumed) {
  int ntodo = static_cast<int>(todo.size());
  MPI_Bcast(&ntodo, 1, MPI_INT, 0, MPI_COMM_WORLD);
  todo.resize(static_cast<std::size_t>(ntodo));
  MPI_Bcast(todo.data(), ntodo, MPI_INT, 0, MPI_COMM_WORLD);
  unsigned long long resumed_all = resumed;
  MPI_Bcast(&resumed_all, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  return static_cast<std::size_t>(resumed_all);
}

// Rank 0's reporters: the console, the sample CSV, and the JSON file when --json names one.
struct Reporters {
  std::unique_ptr<ConsoleReporter> console;
  std::unique_ptr<JsonReporter> json;
  std::vector<Reporter*> all;
};

Reporters make_reporters(const Options& opt, CsvReporter* csv, bool root) {
  Reporters r;
  if (!root) return r;
  r.console = std::make_unique<ConsoleReporter>(std::cout, std::cerr, opt.quiet);
  r.all = {r.console.get(), csv};
  if (!opt.json_output.empty()) {
    r.json = std::make_unique<JsonReporter>(opt.json_output);
    r.all.push_back(r.json.get());
  }
  return r;
}

int run(int argc, char** argv, int rank, int size) {
  const bool root = rank == 0;
  const int ranks_per_node = ranks_on_this_node(rank);
  PlannedRun p = plan_run(argc, argv, size, ranks_per_node);
  if (const std::optional<int> finished = agree_or_finish(p, rank)) return *finished;
  Options& opt = p.opt;
  const PlannedGrid& grid = p.grid;
  std::unique_ptr<Backend> backend;
  if (const int status = open_backend(opt, rank, backend); status != 0) return status;

  // Output state (rank 0), shared with every rank: an error flag and the cases still to run.
  const RunIdentity id = identify_run(MPI_COMM_WORLD);
  // Made before the output is inspected: --resume compares its world size and timing with the file's.
  RunHeader header = make_run_header(id, opt.runner.device, opt.spec, grid, opt.command_line, size,
                                     opt.runner.warmup, opt.runner.iters, opt.runner.buffers, opt.runner.timeout_s,
                                     opt.runner.cuda_graph);
  const bool adaptive = opt.spec.plan.kind == Plan::Kind::Adaptive;
  if (adaptive) header.emplace_back("adaptive", adaptive_header_value(opt));
  const std::vector<std::string>& columns = adaptive ? CsvReporter::adaptive_columns() : CsvReporter::extra_columns();
  OutputSetup o;
  if (const int error = prepare_output_everywhere(opt, grid, header, columns, adaptive, root, o); error != 0) return error;
  const std::size_t resumed_all = broadcast_todo(o.todo, o.resumed);

  // A resumed run keeps its source: the file stays one run, whatever the number of sessions.
  opt.runner.source = o.out.resumed() && !o.out.source.empty() ? o.out.source : "arbench " + id.started_utc;
  opt.runner.nnodes = id.nnodes;
  Reporters reporters = make_reporters(opt, o.csv.get(), root);
  Runner runner(MPI_COMM_WORLD, *backend, opt.runner);
  if (adaptive) {
    // Rank 0 decides what to measure, round by round, from its journal's rows on (bench/adaptive.h).
    const arfit::planner::TargetTable table = target_table(grid, opt.runner.device.device, opt.runner.nnodes);
    arfit::planner::Measurements resumed_rows = root ? journal_measurements(grid, o.out.rows) : arfit::planner::Measurements(grid.cases.size());
    ConsoleRoundReporter console_rounds(std::cout, opt.quiet);
    std::vector<RoundReporter*> rounds;
    if (root) rounds.push_back(&console_rounds);
    if (reporters.json) rounds.push_back(reporters.json.get());
    const AdaptiveResult r = run_adaptive(MPI_COMM_WORLD, runner, grid, table, std::move(resumed_rows), o.loop, header,
                                          resumed_all, reporters.all, rounds);
    return r.summary.failed || r.summary.stopped_early ? 1 : 0;
  }
  std::vector<Case> cases;
  for (int i : o.todo) cases.push_back(grid.cases[static_cast<std::size_t>(i)]);
  const RunSummary s = runner.run(cases, grid.cases.size(), resumed_all, header, reporters.all);
  return s.failed || s.stopped_early ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  // ulimit -f and -v end a rank as a failed run, its temporary files removed, not as a kill or an abort (as arfit).
  arfit::fail_cleanly_at_resource_limits("arbench");
  int provided = 0;
  // The watchdog thread never calls MPI; FUNNELED is enough.
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 1;
  try {
    rc = run(argc, argv, rank, size);
  } catch (const std::exception& e) {
    std::cerr << "arbench[rank " << rank << "]: error: " << e.what() << "\n" << std::flush;
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  // The plan of --dry-run and the progress lines are rank 0's standard output.
  return rank == 0 ? arfit::finish_standard_output("arbench", rc) : rc;
}
