// The runner: drives the planned cases over MPI and produces Records (rank 0); it formats nothing.
//
// Per case, as nccl-tests: create the op and its buffers, warm-up iterations, a synchronisation, timed
// iterations (a timestamp per iteration, rotating input buffers), then — outside the timed region — a
// correctness check that counts wrong elements on every rank. With --cuda-graph K (GPU backends) the
// collectives are captured after the (eager) warm-up into CUDA graphs of K collectives each, and every timed
// iteration is one graph replay, timed as a whole and divided by K (see Runner::run_case). Per-iteration times are maxed across ranks
// (the slowest rank defines the collective's time), then the median, p10, p90, min and max are taken.
// A watchdog bounds each case: at the timeout it raises the abort flag that the shared-memory barriers
// (host) or ncclCommAbort (nccl) observe; a case still stuck after a grace period (a hung MPI call that
// nothing can interrupt) is recorded as failed by rank 0 and the processes exit with status 1.
#pragma once

#include <chrono>
#include <map>
#include <functional>
#include <memory>
#include <mpi.h>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "bench/backend.h"
#include "bench/record.h"
#include "bench/reporter.h"

namespace arfit::bench {

struct RunnerOptions {
  int warmup = 5;
  int iters = 20;
  int buffers = 0;               // 0: rotation_buffers() decides per case
  int cuda_graph = 0;            // --cuda-graph K: collectives per CUDA-graph replay (one timed sample); 0 = eager
  double timeout_s = 60;         // per case, setup and check included
  bool stop_on_timeout = false;  // --on-timeout stop
  bool virtual_ranks = false;    // custom backend: one process plays all TP ranks
  std::set<int> profile_cases;   // case indices wrapped in cudaProfilerStart/Stop
  // Test-only hooks.
  int inject_hang_case = -1;     // this case's rank 1 withholds itself (shared-memory ops) or hangs (MPI ops)
  int crash_after = -1;          // rank 0 SIGKILLs itself after writing this many cases
  int fail_rank = -1;            // this rank throws at `fail_stage`: backend, group, init or check (--test-fail)
  std::string fail_stage;
  // --test-replay (rank 0): Case::key -> the sample whose timings and wall_s a record of that case takes.
  std::shared_ptr<const std::map<std::string, Sample>> replay;
  // Sample fields shared by every record.
  std::string backend_label;     // Sample::backend, e.g. "arbench-host"
  std::string source;            // Sample::source, e.g. the run's start time
  DeviceInfo device;
  int nnodes = 1;
};

// Test hook (--test-fail RANK:STAGE): throws on that rank at that stage, as a failing backend would.
void fail_if_injected(const RunnerOptions& options, int rank, const std::string& stage);

class Watchdog;  // runner.cpp

class Runner {
 public:
  Runner(MPI_Comm world, Backend& backend, RunnerOptions options);
  ~Runner();
  // A fixed plan: start, every case, finish. Collective over the world. `reporters` are used on rank 0 only.
  // Returns the summary on every rank.
  RunSummary run(const std::vector<Case>& cases, std::size_t planned, std::size_t resumed,
                 const RunHeader& header, const std::vector<Reporter*>& reporters);

  // The same in pieces, for plans that decide between batches (bench/adaptive.h): start once, measure batch after
  // batch, finish once; each collective over the world.
  void start(const RunHeader& header, std::size_t planned, std::size_t resumed, const std::vector<Reporter*>& reporters);
  // Measures `cases` (grid order: the cases of one TP size are one block), their records marked with `round`.
  // `keep_going`, asked on rank 0 after each case, ends the batch when it returns false (every rank stops there).
  void measure(const std::vector<Case>& cases, int round = -1, const std::function<bool()>& keep_going = {});
  // The reporters' ends, then their files moved into place together (Reporter::finish).
  RunSummary finish();
  const RunSummary& summary() const { return sum_; }

 private:
  struct Group;       // the TP group of one block of cases (runner.cpp)
  struct CaseResult;  // one case's outcome on this rank, then agreed (runner.cpp)
  using Guard = std::function<void(const std::string& what, const std::function<void()>& work)>;
  std::size_t measure_block(const std::vector<Case>& cases, std::size_t begin, int round,
                            const std::function<bool()>& keep_going, bool& go_on);
  Group open_group(const std::vector<Case>& cases, std::size_t begin, std::size_t end);
  void close_group(Group& g);
  CaseResult run_case(const Case& c, const Group& g);
  std::vector<std::unique_ptr<CapturedIterations>> capture_graphs(CollectiveOp& op, int buffers, const Group& g, CaseResult& r,
                                                                 const Guard& guarded);
  void time_iterations(CollectiveOp& op, const std::vector<std::unique_ptr<CapturedIterations>>& graphs, int buffers,
                       CaseResult& r);
  void gather_result(CaseResult& r, bool in_group);
  void record(const Case& c, const CaseResult& r, double wall_s, int round);
  void on_hung_case(const Case& c, double timeout_s);

  MPI_Comm world_;
  Backend& backend_;
  RunnerOptions opt_;
  int rank_ = 0, size_ = 1;
  double grace_s_ = 2;
  RunSummary sum_;
  std::vector<Reporter*> reporters_;
  std::unique_ptr<std::mutex> report_mutex_;
  std::unique_ptr<Watchdog> dog_;
  std::chrono::steady_clock::time_point t_start_;
};

}  // namespace arfit::bench
