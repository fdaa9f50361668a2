#include "bench/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <iostream>
#include <mutex>
#include <numeric>
#include <thread>
#include <unistd.h>

#include "bench/plan.h"
#include "model/metrics.h"
#include "model/text.h"

namespace arfit::bench {

using Clock = std::chrono::steady_clock;

// One watchdog thread per process. arm() starts a case's clock; at the timeout the abort flag goes up
// (interruptible waits return), and at timeout + grace the hard handler runs (it does not return).
class Watchdog {
 public:
  Watchdog(std::function<void(const Case&, double)> hard) : hard_(std::move(hard)), thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> l(m_);
      quit_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void arm(const Case& c, double timeout_s, double grace_s) {
    std::lock_guard<std::mutex> l(m_);
    abort_.store(false);
    case_ = c;
    timeout_s_ = timeout_s;
    soft_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    hard_at_ = soft_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(grace_s));
    armed_ = true;
    cv_.notify_all();
  }
  void disarm() {
    std::lock_guard<std::mutex> l(m_);
    armed_ = false;
    cv_.notify_all();
  }
  const std::atomic<bool>* flag() const { return &abort_; }
  bool fired() const { return abort_.load(); }

 private:
  void loop() {
    std::unique_lock<std::mutex> l(m_);
    while (!quit_) {
      if (!armed_) {
        cv_.wait(l);
        continue;
      }
      const auto now = Clock::now();
      if (now >= hard_at_) {
        hard_(case_, timeout_s_);  // does not return
      } else if (now >= soft_) {
        abort_.store(true);
        cv_.wait_until(l, hard_at_);
      } else {
        cv_.wait_until(l, soft_);
      }
    }
  }
  std::function<void(const Case&, double)> hard_;
  std::mutex m_;
  std::condition_variable cv_;
  bool armed_ = false, quit_ = false;
  Case case_;
  double timeout_s_ = 0;
  Clock::time_point soft_, hard_at_;
  std::atomic<bool> abort_{false};
  std::thread thread_;
};

namespace {

// Agreement on a case's status within the group: every rank calls it at the same points whatever happened,
// so collectives always match; it also serves as the barrier between phases.
int agree(MPI_Comm group, int status) {
  MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, group);
  return status;
}

// World barrier that idle ranks (outside the TP group) wait in with sleeps instead of MPI's busy polling,
// so they do not steal cores from the ranks being measured.
void quiet_barrier(MPI_Comm world, bool busy) {
  MPI_Request req;
  MPI_Ibarrier(world, &req);
  if (busy) {
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    return;
  }
  int done = 0;
  while (!done) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

enum Status { kOk = 0, kAborted = 1, kError = 2 };

// --cuda-graph K with B rotation buffers. Eager iteration i runs on buffer i % B; graph replays keep exactly
// that sequence of buffers: replay r holds collectives rK ... rK + K - 1, i.e. buffers (rK + j) % B, which
// depends on r only through rK mod B. So graph g holds buffers (gK + j) % B for j < K, replay r launches
// graph r % G, and G = B / gcd(K, B) graphs cover every replay (G K = lcm(K, B) collectives captured).
int graphs_for_rotation(int collectives_per_graph, int buffers) {
  return buffers / std::gcd(collectives_per_graph, buffers);
}

// This rank's error in a case, said by this rank (its peers, rank 0 included, do not know it), in one write so that
// it reaches mpirun's relay as a whole line.
void say_case_error(int rank, const Case& c, const std::string& what) {
  std::cerr << "arbench[rank " + std::to_string(rank) + "]: case " + std::to_string(c.index) + " (" + c.describe() + "): " +
                   what + "\n";
}

// The sample a case's record carries, before its timings.
Sample make_sample(const Case& c, const RunnerOptions& opt) {
  Sample s = sample_of_case(c);
  s.nnodes = opt.virtual_ranks ? 1 : opt.nnodes;
  s.device = opt.device.device;
  s.sm = opt.device.sm;
  s.backend = opt.backend_label;
  s.source = opt.source;
  if (const Descriptor* d = find_descriptor(c.backend, c.collective, c.strategy); d && d->splits) s.splits = d->splits(c);
  return s;
}

// Test hook (--test-replay FILE): the case measured, its record given the timings and wall time FILE holds for it,
// so that two runs measure "the same samples" (tests of --plan adaptive's resume).
void replay_if_asked(Record& r, const RunnerOptions& opt) {
  if (!opt.replay) return;
  const auto it = opt.replay->find(r.c.key());
  if (it == opt.replay->end()) return;
  const Sample& s = it->second;
  r.sample.time_us = s.time_us, r.sample.p10_us = s.p10_us, r.sample.p90_us = s.p90_us;
  r.sample.min_us = s.min_us, r.sample.max_us = s.max_us;
  if (const auto w = s.extra.find("wall_s"); w != s.extra.end()) r.wall_s = std::stod(w->second);
}

// The timings of a case from its per-iteration times (maxed across ranks): median, p10, p90, min, max.
void set_timings(Record& r, std::vector<double> us, int iters) {
  // Nanosecond resolution is all a clock or an event gives; more digits would be interpolation noise.
  for (double& x : us) x = std::round(x * 1000.0) / 1000.0;
  std::sort(us.begin(), us.end());
  auto q = [&](double percent) { return std::round(percentile(us, percent) * 1000.0) / 1000.0; };
  r.sample.time_us = q(50);
  r.sample.p10_us = q(10);
  r.sample.p90_us = q(90);
  r.sample.min_us = us.front();
  r.sample.max_us = us.back();
  r.sample.iterations = iters;
  r.alg_bw_gbps = alg_bw_gbps(static_cast<double>(r.c.bytes), r.sample.time_us);
  r.bus_bw_gbps = bus_bw_gbps(r.c.collective, r.c.tp, static_cast<double>(r.c.bytes), r.sample.time_us);
}

}  // namespace

void fail_if_injected(const RunnerOptions& options, int rank, const std::string& stage) {
  if (rank == options.fail_rank && stage == options.fail_stage)
    throw std::runtime_error("injected failure at " + stage + " (--test-fail)");
}

// Where a case stands on this rank; agreed across the group at each step, then across the world.
struct Runner::CaseResult {
  int status = kOk;
  long long wrong = 0;
  std::string error;        // this rank's own error, said by this rank
  std::vector<double> us;   // per timed iteration
};

// The TP group of a block of cases: the ranks 0..TP-1 (or rank 0 alone with virtual ranks), their communicator and
// a second one for the agreements. A rank that failed before one of an op's collectives (an error in its check) and
// went on to agree can never be paired with a peer still waiting in that collective (an MPI_ERR_TRUNCATE abort, or
// silently wrong pairs); the peer's wait ends at the watchdog.
struct Runner::Group {
  bool member = false;
  MPI_Comm comm = MPI_COMM_NULL, agreement = MPI_COMM_NULL;
  int rank = 0, size = 1;
};

Runner::Runner(MPI_Comm world, Backend& backend, RunnerOptions options)
    : world_(world), backend_(backend), opt_(std::move(options)), report_mutex_(std::make_unique<std::mutex>()) {
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
  grace_s_ = std::max(2.0, opt_.timeout_s);
}

Runner::~Runner() = default;

RunSummary Runner::run(const std::vector<Case>& cases, std::size_t planned, std::size_t resumed,
                       const RunHeader& header, const std::vector<Reporter*>& reporters) {
  start(header, planned, resumed, reporters);
  measure(cases);
  return finish();
}

void Runner::start(const RunHeader& header, std::size_t planned, std::size_t resumed, const std::vector<Reporter*>& reporters) {
  sum_ = RunSummary{};
  sum_.planned = planned;
  sum_.resumed = resumed;
  t_start_ = Clock::now();
  reporters_ = rank_ == 0 ? reporters : std::vector<Reporter*>{};
  for (Reporter* r : reporters_) r->start(header, planned, resumed);
  dog_ = std::make_unique<Watchdog>([this](const Case& c, double timeout_s) { on_hung_case(c, timeout_s); });
}

RunSummary Runner::finish() {
  dog_.reset();
  sum_.wall_s = std::chrono::duration<double>(Clock::now() - t_start_).count();
  // -o and --json of one run: replaced together once both are written (a JSON that fails to write leaves the old
  // sample CSV and the journal, which --resume completes).
  OutputSet outputs;
  for (Reporter* r : reporters_) r->finish(sum_, outputs);
  outputs.commit();
  return sum_;
}

// Hard timeout: a collective nothing can interrupt. Rank 0 records the case, then every rank exits; mpirun tears the
// job down and --resume continues after the recorded case.
void Runner::on_hung_case(const Case& c, double timeout_s) {
  if (rank_ == 0) {
    std::lock_guard<std::mutex> l(*report_mutex_);
    Record r;
    r.c = c;
    r.sample = make_sample(c, opt_);
    r.sample.status = SampleStatus::Failed;
    r.note = "timeout: hung in a collective for more than " + format_number(timeout_s + grace_s_, "%g") + " s; run stopped";
    for (Reporter* rep : reporters_) rep->report(r);
    std::cerr << "arbench: case " << c.index << " (" << c.describe() << ") hung past the timeout; stopping (exit 1)\n"
              << std::flush;
  } else {
    std::this_thread::sleep_for(std::chrono::duration<double>(grace_s_));  // give rank 0 time to record it
  }
  std::_Exit(1);  // a failed run (the exit-code rule: README)
}

void Runner::measure(const std::vector<Case>& cases, int round, const std::function<bool()>& keep_going) {
  bool go_on = true;
  for (std::size_t i = 0; i < cases.size() && go_on && !sum_.stopped_early;) i = measure_block(cases, i, round, keep_going, go_on);
}

// The cases of one TP size from `begin` (TP is the outermost grid axis), one group for all of them. Returns the index
// after the block; `go_on` turns false when `keep_going` ended the batch.
std::size_t Runner::measure_block(const std::vector<Case>& cases, std::size_t begin, int round,
                                  const std::function<bool()>& keep_going, bool& go_on) {
  std::size_t end = begin;
  while (end < cases.size() && cases[end].tp == cases[begin].tp) ++end;
  Group g = open_group(cases, begin, end);
  for (std::size_t i = begin; i < end && go_on && !sum_.stopped_early; ++i) {
    const auto t0 = Clock::now();
    dog_->arm(cases[i], opt_.timeout_s, grace_s_);
    CaseResult r;
    if (g.member) r = run_case(cases[i], g);
    else r.us.assign(static_cast<std::size_t>(opt_.iters), 0.0);
    gather_result(r, g.member);
    dog_->disarm();
    // Whole microseconds: what the sample CSV keeps of it, and so what a resumed adaptive run reads back.
    record(cases[i], r, std::round(std::chrono::duration<double>(Clock::now() - t0).count() * 1e6) / 1e6, round);
    if (r.status == kAborted && opt_.stop_on_timeout) sum_.stopped_early = true;
    if (keep_going) {
      // Whether to go on is rank 0's to say (its reporters hold the time spent); every rank follows.
      int go = rank_ != 0 || keep_going() ? 1 : 0;
      MPI_Bcast(&go, 1, MPI_INT, 0, world_);
      go_on = go != 0;
    }
  }
  close_group(g);
  return end;
}

Runner::Group Runner::open_group(const std::vector<Case>& cases, std::size_t begin, std::size_t end) {
  Group g;
  const int tp = cases[begin].tp;
  if (opt_.virtual_ranks) {
    g.member = rank_ == 0;
    if (g.member) MPI_Comm_dup(MPI_COMM_SELF, &g.comm);
  } else {
    g.member = rank_ < tp;
    MPI_Comm_split(world_, g.member ? 0 : MPI_UNDEFINED, rank_, &g.comm);
  }
  if (!g.member) return g;
  MPI_Comm_dup(g.comm, &g.agreement);
  MPI_Comm_rank(g.comm, &g.rank);
  MPI_Comm_size(g.comm, &g.size);
  std::vector<const Case*> block;
  for (std::size_t k = begin; k < end; ++k) block.push_back(&cases[k]);
  fail_if_injected(opt_, rank_, "group");
  backend_.begin_group(g.comm, block);
  return g;
}

void Runner::close_group(Group& g) {
  if (!g.member) return;
  backend_.end_group();
  MPI_Comm_free(&g.agreement);
  MPI_Comm_free(&g.comm);
}


// One case on a member of its group, as nccl-tests runs it: the op and its buffers, the eager warm-up, with
// --cuda-graph the capture of the timed collectives into graphs, the timed iterations, then (outside the timed
// region) the correctness check. Every rank meets the others at every agreement below whatever happened to it, so
// the group's collectives always pair.
Runner::CaseResult Runner::run_case(const Case& c, const Group& g) {
  CaseResult r;
  r.us.assign(static_cast<std::size_t>(opt_.iters), 0.0);
  const bool profile = opt_.profile_cases.count(c.index) > 0;
  const int buffers = rotation_buffers(c.bytes, opt_.buffers);
  // Runs `work`; an exception (a trapped kernel, a failed launch) becomes this case's error instead of leaving the
  // runner (which would end in MPI_Abort): the ranks still meet at every agreement point below.
  const Guard guarded = [&](const std::string& what, const std::function<void()>& work) {
    try {
      work();
    } catch (const std::exception& e) {
      r.status = kError;
      r.error = what + e.what();
      say_case_error(rank_, c, r.error);
    }
  };
  RunContext ctx;
  ctx.comm = g.comm;
  ctx.rank = g.rank;
  ctx.nranks = opt_.virtual_ranks ? c.tp : g.size;
  ctx.buffers = buffers;
  ctx.abort = dog_->flag();
  ctx.backend = &backend_;
  if (c.index == opt_.inject_hang_case && g.rank == 1) ctx.inject = RunContext::Inject::kWithhold;
  std::unique_ptr<CollectiveOp> op;
  guarded("", [&] {
    const Descriptor* d = find_descriptor(c.backend, c.collective, c.strategy);
    if (!d) throw std::runtime_error("no descriptor for " + c.describe());
    op = d->make(c);
    fail_if_injected(opt_, rank_, "init");
    op->init(c, ctx);
  });
  r.status = agree(g.agreement, r.status);
  if (r.status != kOk) return r;
  backend_.begin_case(c, profile);
  // Warm-up: eager launches in both modes, as nccl-tests does before it captures its timed loop. In graph mode this
  // also keeps lazy first-use work (NCCL's connection setup, CUDA's lazy module loading) out of the capture.
  guarded("", [&] {
    for (int w = 0; w < opt_.warmup && r.status == kOk; ++w)
      if (op->run(w % buffers) != RunStatus::Ok) r.status = kAborted;
  });
  std::vector<std::unique_ptr<CapturedIterations>> graphs;
  if (opt_.cuda_graph > 0) graphs = capture_graphs(*op, buffers, g, r, guarded);
  r.status = agree(g.agreement, r.status);  // also the barrier before the timed iterations
  if (r.status == kOk) guarded("", [&] { time_iterations(*op, graphs, buffers, r); });
  // The graphs hold the op's buffers and (nccl) communicator work: freed before the check, the op and any
  // communicator recovery (after an abort the GPU backend has freed them already, before ncclCommAbort).
  graphs.clear();
  r.status = agree(g.agreement, r.status);
  if (r.status == kOk) {
    std::int64_t wrong = 0;
    guarded("check: ", [&] {
      fail_if_injected(opt_, rank_, "check");
      if (op->check(&wrong) != RunStatus::Ok) r.status = kAborted;
    });
    r.wrong = wrong;
  }
  r.status = agree(g.agreement, r.status);
  backend_.end_case(c, profile);
  // Every rank reaches this with the same status: after an abort or an error the backend restores its
  // synchronisation state (collective over the group), ordered after its own work stopped.
  if (r.status != kOk) guarded("", [&] { backend_.recover(g.comm); });
  op.reset();
  return r;
}

// --cuda-graph: the collectives are recorded (not run) into graphs, every rank the same sequence, so the replays meet
// in the same collectives; no rank replays a graph unless every rank captured its graphs (a lone replay would start
// collectives its peers never join); then one untimed replay of each (the first launch of an executable graph costs
// more than the next).
std::vector<std::unique_ptr<CapturedIterations>> Runner::capture_graphs(CollectiveOp& op, int buffers, const Group& g,
                                                                        CaseResult& r, const Guard& guarded) {
  std::vector<std::unique_ptr<CapturedIterations>> graphs;
  const int per_graph = opt_.cuda_graph;
  if (r.status == kOk)
    guarded("CUDA graph capture (--cuda-graph): ", [&] {
      try {
        for (int k = 0; k < graphs_for_rotation(per_graph, buffers); ++k)
          graphs.push_back(backend_.capture([&] {
            for (int j = 0; j < per_graph; ++j)
              if (op.run((k * per_graph + j) % buffers) != RunStatus::Ok)
                throw std::runtime_error("the collective did not enqueue while being captured");
          }));
      } catch (...) {
        graphs.clear();
        throw;
      }
    });
  r.status = agree(g.agreement, r.status);
  guarded("", [&] {
    for (auto& graph : graphs)
      if (r.status == kOk && graph->launch() != RunStatus::Ok) r.status = kAborted;
  });
  return graphs;
}

// The timed iterations: iteration i is the collective on buffer i % buffers, or replay i of the graphs (K collectives
// each, the sample being the mean per collective).
void Runner::time_iterations(CollectiveOp& op, const std::vector<std::unique_ptr<CapturedIterations>>& graphs, int buffers,
                             CaseResult& r) {
  auto timer = backend_.make_timer();
  timer->start();
  for (int it = 0; it < opt_.iters; ++it) {
    const RunStatus st = graphs.empty() ? op.run(it % buffers) : graphs[static_cast<std::size_t>(it) % graphs.size()]->launch();
    if (st != RunStatus::Ok) {
      r.status = kAborted;
      break;
    }
    timer->mark();
  }
  auto t = timer->finish_us();
  if (!graphs.empty())
    for (double& x : t) x /= opt_.cuda_graph;
  // A timer that returned another count would leave zeros recorded as times: the case's error instead.
  if (r.status == kOk && t.size() != r.us.size())
    throw std::runtime_error("the timer returned " + std::to_string(t.size()) + " times for " + std::to_string(r.us.size()) +
                             " iterations");
  if (r.status == kOk) r.us = t;
  if (dog_->fired()) r.status = kAborted;  // e.g. a GPU op whose wait was cut short
}

// The case's outcome to every rank and its timings to rank 0: per-iteration times maxed across ranks (the slowest
// rank defines the collective), the worst status, the wrong elements summed. Ranks outside the group wait quietly.
void Runner::gather_result(CaseResult& r, bool in_group) {
  quiet_barrier(world_, in_group);
  std::vector<double> max_us(r.us.size(), 0.0);
  MPI_Reduce(r.us.data(), max_us.data(), static_cast<int>(r.us.size()), MPI_DOUBLE, MPI_MAX, 0, world_);
  MPI_Allreduce(MPI_IN_PLACE, &r.status, 1, MPI_INT, MPI_MAX, world_);
  MPI_Allreduce(MPI_IN_PLACE, &r.wrong, 1, MPI_LONG_LONG, MPI_SUM, world_);
  r.us = std::move(max_us);
}

// Counts the case and, on rank 0, hands its record to the reporters.
void Runner::record(const Case& c, const CaseResult& r, double wall_s, int round) {
  const bool failed = r.status != kOk || r.wrong != 0;
  ++sum_.measured;
  if (failed) ++sum_.failed;
  if (r.status == kAborted) ++sum_.timed_out;
  if (rank_ != 0) return;
  Record rec;
  rec.c = c;
  rec.sample = make_sample(c, opt_);
  rec.sample.wrong = r.wrong;
  rec.wall_s = wall_s;
  rec.round = round;
  if (!failed) {
    set_timings(rec, r.us, opt_.iters);
    replay_if_asked(rec, opt_);
  } else {
    rec.sample.status = SampleStatus::Failed;
    if (r.status == kAborted)
      rec.note = "timeout after " + format_number(opt_.timeout_s, "%g") + " s";  // as the header's timeout_s
    else if (r.status == kError)
      rec.note = "error: " + (r.error.empty() ? std::string("failed on another rank (see its messages)") : r.error);
    else
      rec.note = "wrong results: " + std::to_string(r.wrong) + " elements";
  }
  std::lock_guard<std::mutex> l(*report_mutex_);
  for (Reporter* rep : reporters_) rep->report(rec);
  if (opt_.crash_after >= 0 && sum_.measured >= static_cast<std::size_t>(opt_.crash_after)) std::raise(SIGKILL);
}

}  // namespace arfit::bench
