// arbench: thin main. Parses the command line and the grid on every rank (so every rank rejects a bad
// one the same way, before any measurement), lets rank 0 prepare the output, then hands over to the Runner.
// Exit status, the rule every arfit program follows: 0 all cases ok; 1 bad input data (an unreadable --resume
// file) or a failed run (a case failed: wrong results, error, timeout, also when --on-timeout stop ended the
// run); 2 usage: bad command line, impossible grid, refused output path (nothing measured).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
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

int run(int argc, char** argv, int rank, int size) {
  const bool root = rank == 0;
  Options opt;
  PlannedGrid grid;
  std::unique_ptr<Backend> backend;
  std::vector<std::string> notices;
  RankPlan mine;
  std::string parse_error;
  const int ranks_per_node = ranks_on_this_node(rank);
  try {
    opt = parse_options(argc, argv);
    if (!opt.help && !opt.version) grid = plan_grid(opt, size, ranks_per_node, &notices);
    mine = plan_of_rank(opt, grid);
  } catch (const GridError& e) {
    parse_error = e.what();
    mine = usage_error_of_rank(e.option(), parse_error);
  } catch (const std::exception& e) {  // out of memory planning a huge grid: still meets the others below
    parse_error = e.what();
    mine = failure_of_rank(parse_error);
  }
  // Before the first collective of the run, every rank learns what every other rank planned: ranks that differ
  // would pair unlike collectives (MPI_ERR_TRUNCATE, a case index beyond a shorter grid, bad_alloc) or wait
  // forever for a rank that only printed its help or its plan.
  const Verdict verdict = agree_on_the_run(MPI_COMM_WORLD, mine);
  if (verdict.print_own_error)
    say_error(rank, parse_error + (mine.kind == RankPlan::kUsageError ? "\nRun with --help for more information." : ""));
  if (root && !verdict.message.empty()) say_error(rank, verdict.message);
  if (verdict.status != 0) return verdict.status;
  if (opt.help || opt.version) {
    if (root) std::cout << (opt.help ? opt.help_text : opt.version_text + "\n");
    return 0;
  }
  if (root && !opt.quiet)
    for (const auto& n : notices) std::cerr << "arbench: note: " << n << "\n";
  if (opt.dry_run) {
    if (root) {
      std::cout << "# plan " << opt.spec.plan.to_string() << ": " << grid.cases.size() << " of " << grid.full_cases
                << " cases (" << grid.planned_points << " of " << grid.full_points << " size points)\n";
      for (const Case& c : grid.cases) std::cout << c.index << "\t" << c.describe() << "\n";
    }
    return 0;
  }

  // The backend first: --resume compares its device with the file's. It may fail on some ranks only (a node
  // without the GPU asked for): every rank says its own reason, and all leave together.
  int backend_status = 0;
  std::string backend_error;
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
    backend_status = 2;
    backend_error = e.what();
  } catch (const std::exception& e) {
    backend_status = 1;
    backend_error = e.what();
  }
  const StepOutcome backend_outcome = agree_on_step(MPI_COMM_WORLD, backend_status, backend_error);
  if (backend_outcome.say_own_error) say_error(rank, backend_error);
  if (backend_outcome.status != 0) return backend_outcome.status;

  opt.runner.backend_label = "arbench-" + opt.spec.backend;
  // Output state (rank 0), shared with every rank: an error flag and the cases still to run.
  const RunIdentity id = identify_run(MPI_COMM_WORLD);
  // Made before the output is inspected: --resume compares its world size and timing with the file's.
  RunHeader header = make_run_header(id, opt.runner.device, opt.spec, grid, opt.command_line, size,
                                     opt.runner.warmup, opt.runner.iters, opt.runner.buffers, opt.runner.timeout_s,
                                     opt.runner.cuda_graph);
  const bool adaptive = opt.spec.plan.kind == Plan::Kind::Adaptive;
  if (adaptive) header.emplace_back("adaptive", adaptive_header_value(opt));
  const std::vector<std::string>& columns = adaptive ? CsvReporter::adaptive_columns() : CsvReporter::extra_columns();
  arfit::planner::LoopOptions loop;
  std::vector<int> todo;
  std::size_t resumed = 0;
  OutputState out;
  std::unique_ptr<CsvReporter> csv;
  int error = 0;
  std::string error_text;
  if (root) {
    try {
      std::set<std::string> planned;
      for (const Case& c : grid.cases) planned.insert(c.key());
      out = inspect_output(opt.output, opt.spec.to_json(), opt.resume, opt.overwrite,
                           cuda_graph_header_value(opt.runner.cuda_graph), opt.runner.device.device, &planned,
                           opt.runner.backend_label, &header, columns);
      if (!opt.json_output.empty()) {
        if (arfit::same_path(opt.json_output, opt.output))
          throw GridError("--json", "'" + opt.json_output + "' is also the sample CSV (-o); write the JSON to another file");
        if (arfit::same_path(opt.json_output, out.journal))
          throw GridError("--json", "'" + opt.json_output + "' is the journal of the sample CSV (-o); write the JSON to another file");
        arfit::check_output_file(opt.json_output);  // refused now, not after the run
      }
      for (const Case& c : grid.cases)
        if (out.finished.count(c.key()))
          ++resumed;
        else
          todo.push_back(c.index);
      // The priors and the replayed samples read before the journal is made: a refused one leaves no journal behind.
      if (adaptive) loop = adaptive_loop(opt, out);
      opt.runner.replay = replay_samples(opt.adaptive.replay);
      // Last: the journal opened now, so an output folder that cannot be made or written is refused before any
      // case runs (it was an MPI_Abort at the first case).
      csv = std::make_unique<CsvReporter>(opt.output, out, columns);
      csv->open_journal();
    } catch (const GridError& e) {
      error = 2;
      error_text = e.what();
    } catch (const arfit::OutputPathError& e) {
      error = 2;
      error_text = e.what();
    } catch (const std::exception& e) {  // bad data (InputError), or a path the system refuses to check
      error = 1;
      error_text = e.what();
    }
  }
  MPI_Bcast(&error, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (error) {
    if (root) std::cerr << "arbench: error: " << error_text << "\n";
    return error;
  }
  int ntodo = static_cast<int>(todo.size());
  MPI_Bcast(&ntodo, 1, MPI_INT, 0, MPI_COMM_WORLD);
  todo.resize(static_cast<std::size_t>(ntodo));
  MPI_Bcast(todo.data(), ntodo, MPI_INT, 0, MPI_COMM_WORLD);
  unsigned long long resumed_all = resumed;
  MPI_Bcast(&resumed_all, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);

  // A resumed run keeps its source: the file stays one run, whatever the number of sessions.
  opt.runner.source = out.resumed() && !out.source.empty() ? out.source : "arbench " + id.started_utc;
  opt.runner.nnodes = id.nnodes;

  std::vector<Case> cases;
  for (int i : todo) cases.push_back(grid.cases[static_cast<std::size_t>(i)]);
  std::unique_ptr<ConsoleReporter> console;
  std::unique_ptr<JsonReporter> json;
  std::vector<Reporter*> reporters;
  if (root) {
    console = std::make_unique<ConsoleReporter>(std::cout, std::cerr, opt.quiet);
    reporters = {console.get(), csv.get()};
    if (!opt.json_output.empty()) {
      json = std::make_unique<JsonReporter>(opt.json_output);
      reporters.push_back(json.get());
    }
  }
  Runner runner(MPI_COMM_WORLD, *backend, opt.runner);
  if (adaptive) {
    // Rank 0 decides what to measure, round by round, from its journal's rows on (bench/adaptive.h).
    const arfit::planner::TargetTable table = target_table(grid, opt.runner.device.device, opt.runner.nnodes);
    arfit::planner::Measurements resumed_rows = root ? journal_measurements(grid, out.rows) : arfit::planner::Measurements(grid.cases.size());
    std::unique_ptr<ConsoleRoundReporter> rounds = root ? std::make_unique<ConsoleRoundReporter>(std::cout, opt.quiet) : nullptr;
    const AdaptiveResult r = run_adaptive(MPI_COMM_WORLD, runner, grid, table, std::move(resumed_rows), loop, header,
                                          static_cast<std::size_t>(resumed_all), reporters, rounds.get());
    return r.summary.failed || r.summary.stopped_early ? 1 : 0;
  }
  const RunSummary s = runner.run(cases, grid.cases.size(), static_cast<std::size_t>(resumed_all), header, reporters);
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
