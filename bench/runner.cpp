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
namespace {

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

}  // namespace

void fail_if_injected(const RunnerOptions& options, int rank, const std::string& stage) {
  if (rank == options.fail_rank && stage == options.fail_stage)
    throw std::runtime_error("injected failure at " + stage + " (--test-fail)");
}

Runner::Runner(MPI_Comm world, Backend& backend, RunnerOptions options)
    : world_(world), backend_(backend), opt_(std::move(options)) {
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
}

RunSummary Runner::run(const std::vector<Case>& cases, std::size_t planned, std::size_t resumed,
                       const RunHeader& header, const std::vector<Reporter*>& reporters) {
  RunSummary sum;
  sum.planned = planned;
  sum.resumed = resumed;
  const auto t_start = Clock::now();
  std::mutex report_mutex;
  if (rank_ == 0)
    for (Reporter* r : reporters) r->start(header, planned, resumed);

  auto make_sample = [&](const Case& c) {
    Sample s;
    s.collective = c.collective;
    s.strategy = c.strategy;
    s.fusion = c.fusion;
    s.dtype = c.dtype;
    s.nranks = c.tp;
    s.nnodes = opt_.virtual_ranks ? 1 : opt_.nnodes;
    s.device = opt_.device.device;
    s.sm = opt_.device.sm;
    s.tokens = c.tokens;
    s.hidden = c.hidden;
    s.bytes = c.bytes;
    s.backend = opt_.backend_label;
    s.source = opt_.source;
    if (const Descriptor* d = find_descriptor(c.backend, c.collective, c.strategy); d && d->splits) s.splits = d->splits(c);
    return s;
  };

  // Hard timeout: a collective nothing can interrupt. Rank 0 records the case, then every rank exits;
  // mpirun tears the job down and --resume continues after the recorded case.
  const double grace = std::max(2.0, opt_.timeout_s);
  Watchdog dog([&](const Case& c, double timeout_s) {
    if (rank_ == 0) {
      std::lock_guard<std::mutex> l(report_mutex);
      Record r;
      r.c = c;
      r.sample = make_sample(c);
      r.sample.status = SampleStatus::Failed;
      r.note = "timeout: hung in a collective for more than " + format_number(timeout_s + grace, "%g") + " s; run stopped";
      for (Reporter* rep : reporters) rep->report(r);
      std::cerr << "arbench: case " << c.index << " (" << c.describe() << ") hung past the timeout; stopping (exit 1)\n"
                << std::flush;
    } else {
      std::this_thread::sleep_for(std::chrono::duration<double>(grace));  // give rank 0 time to record it
    }
    std::_Exit(1);  // a failed run (the exit-code rule: README)
  });

  std::size_t i = 0;
  while (i < cases.size() && !sum.stopped_early) {
    // The cases of one TP size form a block (TP is the outermost grid axis); one group per block.
    const int tp = cases[i].tp;
    std::size_t end = i;
    while (end < cases.size() && cases[end].tp == tp) ++end;
    MPI_Comm group = MPI_COMM_NULL;
    bool in_group;
    if (opt_.virtual_ranks) {
      in_group = rank_ == 0;
      if (in_group) MPI_Comm_dup(MPI_COMM_SELF, &group);
    } else {
      in_group = rank_ < tp;
      MPI_Comm_split(world_, in_group ? 0 : MPI_UNDEFINED, rank_, &group);
    }
    int grank = 0, gsize = 1;
    // The ranks' agreements go over their own communicator: a rank that failed before one of the op's collectives
    // (an error in its check) and went on to agree can never be paired with a peer still waiting in that
    // collective (an MPI_ERR_TRUNCATE abort, or silently wrong pairs); the peer's wait ends at the watchdog.
    MPI_Comm agreement = MPI_COMM_NULL;
    if (in_group) {
      MPI_Comm_dup(group, &agreement);
      MPI_Comm_rank(group, &grank);
      MPI_Comm_size(group, &gsize);
      std::vector<const Case*> block;
      for (std::size_t k = i; k < end; ++k) block.push_back(&cases[k]);
      fail_if_injected(opt_, rank_, "group");
      backend_.begin_group(group, block);
    }

    for (; i < end && !sum.stopped_early; ++i) {
      const Case& c = cases[i];
      const auto t0 = Clock::now();
      const bool profile = opt_.profile_cases.count(c.index) > 0;
      const int buffers = rotation_buffers(c.bytes, opt_.buffers);
      std::vector<double> us(static_cast<std::size_t>(opt_.iters), 0.0);
      int status = kOk;
      long long wrong = 0;
      std::string error;
      dog.arm(c, opt_.timeout_s, grace);
      if (in_group) {
        RunContext ctx;
        ctx.comm = group;
        ctx.rank = grank;
        ctx.nranks = opt_.virtual_ranks ? c.tp : gsize;
        ctx.buffers = buffers;
        ctx.abort = dog.flag();
        ctx.backend = &backend_;
        if (c.index == opt_.inject_hang_case && grank == 1) ctx.inject = RunContext::Inject::kWithhold;
        std::unique_ptr<CollectiveOp> op;
        // This rank's error in this case, said by this rank (its peers, rank 0 included, do not know it), in one
        // write so that it reaches mpirun's relay as a whole line.
        auto say = [&](const std::string& what) {
          std::cerr << "arbench[rank " + std::to_string(rank_) + "]: case " + std::to_string(c.index) + " (" + c.describe() +
                           "): " + what + "\n";
        };
        // Runs `work`; an exception (a trapped kernel, a failed launch) becomes this case's error instead of
        // leaving the runner (which would end in MPI_Abort): the ranks still meet at every agreement point below.
        auto run_guarded = [&](int& st, std::string& err, const auto& work) {
          try {
            work();
          } catch (const std::exception& e) {
            st = kError;
            err = e.what();
            say(err);
          }
        };
        try {
          const Descriptor* d = find_descriptor(c.backend, c.collective, c.strategy);
          if (!d) throw std::runtime_error("no descriptor for " + c.describe());
          op = d->make(c);
          fail_if_injected(opt_, rank_, "init");
          op->init(c, ctx);
        } catch (const std::exception& e) {
          status = kError;
          error = e.what();
          say(error);
        }
        status = agree(agreement, status);
        if (status == kOk) {
          backend_.begin_case(c, profile);
          // Warm-up: eager launches in both modes, as nccl-tests does before it captures its timed loop. In graph
          // mode this also keeps lazy first-use work (NCCL's connection setup, CUDA's lazy module loading) out of
          // the capture.
          run_guarded(status, error, [&] {
            for (int w = 0; w < opt_.warmup && status == kOk; ++w)
              if (op->run(w % buffers) != RunStatus::Ok) status = kAborted;
          });
          // --cuda-graph: the collectives are recorded (not run) into graphs. Every rank captures the same
          // sequence, so the replays meet in the same collectives.
          std::vector<std::unique_ptr<CapturedIterations>> graphs;
          if (opt_.cuda_graph > 0) {
            const int per_graph = opt_.cuda_graph;
            if (status == kOk) {
              try {
                for (int g = 0; g < graphs_for_rotation(per_graph, buffers); ++g)
                  graphs.push_back(backend_.capture([&] {
                    for (int j = 0; j < per_graph; ++j)
                      if (op->run((g * per_graph + j) % buffers) != RunStatus::Ok)
                        throw std::runtime_error("the collective did not enqueue while being captured");
                  }));
              } catch (const std::exception& e) {
                graphs.clear();
                status = kError;
                error = std::string("CUDA graph capture (--cuda-graph): ") + e.what();
                say(error);
              }
            }
            // No rank replays a graph unless every rank captured its graphs: a lone replay would start collectives
            // its peers never join.
            status = agree(agreement, status);
            // One untimed replay of each graph: the first launch of an executable graph costs more than the next.
            run_guarded(status, error, [&] {
              for (auto& g : graphs)
                if (status == kOk && g->launch() != RunStatus::Ok) status = kAborted;
            });
          }
          // Iteration i: the collective on buffer i % buffers, or replay i of the graphs (K collectives each).
          auto iteration = [&](int i) {
            if (graphs.empty()) return op->run(i % buffers);
            return graphs[static_cast<std::size_t>(i) % graphs.size()]->launch();
          };
          status = agree(agreement, status);  // also the barrier before the timed iterations
          if (status == kOk) {
            run_guarded(status, error, [&] {
              auto timer = backend_.make_timer();
              timer->start();
              for (int it = 0; it < opt_.iters; ++it) {
                if (iteration(it) != RunStatus::Ok) {
                  status = kAborted;
                  break;
                }
                timer->mark();
              }
              auto t = timer->finish_us();
              // A graph replay's time is that of K back-to-back collectives: the sample is the mean per collective.
              if (!graphs.empty())
                for (double& x : t) x /= opt_.cuda_graph;
              // A timer that returned another count would leave zeros recorded as times: the case's error instead.
              if (status == kOk && t.size() != us.size())
                throw std::runtime_error("the timer returned " + std::to_string(t.size()) + " times for " +
                                         std::to_string(us.size()) + " iterations");
              if (status == kOk) us = t;
              if (dog.fired()) status = kAborted;  // e.g. a GPU op whose wait was cut short
            });
          }
          // The graphs hold the op's buffers and (nccl) communicator work: freed before the check, the op and any
          // communicator recovery (after an abort the GPU backend has freed them already, before ncclCommAbort).
          graphs.clear();
          status = agree(agreement, status);
          if (status == kOk) {
            std::int64_t w = 0;
            try {
              fail_if_injected(opt_, rank_, "check");
              if (op->check(&w) != RunStatus::Ok) status = kAborted;
            } catch (const std::exception& e) {
              status = kError;
              error = std::string("check: ") + e.what();
              say(error);
            }
            wrong = w;
          }
          status = agree(agreement, status);
          backend_.end_case(c, profile);
          // Every rank reaches this with the same status: after an abort or an error the backend restores its
          // synchronisation state (collective over the group), ordered after its own work stopped.
          if (status != kOk) run_guarded(status, error, [&] { backend_.recover(group); });
        }
        op.reset();
      }
      // Results to rank 0; ranks outside the group wait quietly.
      quiet_barrier(world_, in_group);
      std::vector<double> max_us(us.size(), 0.0);
      MPI_Reduce(us.data(), max_us.data(), static_cast<int>(us.size()), MPI_DOUBLE, MPI_MAX, 0, world_);
      MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, world_);
      MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, world_);
      dog.disarm();

      const bool failed = status != kOk || wrong != 0;
      ++sum.measured;
      if (failed) ++sum.failed;
      if (status == kAborted) ++sum.timed_out;
      if (rank_ == 0) {
        Record r;
        r.c = c;
        r.sample = make_sample(c);
        r.sample.wrong = wrong;
        r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
        if (!failed) {
          // Nanosecond resolution is all a clock or an event gives; more digits would be interpolation noise.
          for (double& x : max_us) x = std::round(x * 1000.0) / 1000.0;
          std::sort(max_us.begin(), max_us.end());
          auto q = [&](double percent) { return std::round(percentile(max_us, percent) * 1000.0) / 1000.0; };
          r.sample.time_us = q(50);
          r.sample.p10_us = q(10);
          r.sample.p90_us = q(90);
          r.sample.min_us = max_us.front();
          r.sample.max_us = max_us.back();
          r.sample.iterations = opt_.iters;
          r.alg_bw_gbps = alg_bw_gbps(static_cast<double>(c.bytes), r.sample.time_us);
          r.bus_bw_gbps = bus_bw_gbps(c.collective, c.tp, static_cast<double>(c.bytes), r.sample.time_us);
        } else {
          r.sample.status = SampleStatus::Failed;
          if (status == kAborted)
            r.note = "timeout after " + format_number(opt_.timeout_s, "%g") + " s";  // as the header's timeout_s
          else if (status == kError)
            r.note = "error: " + (error.empty() ? std::string("failed on another rank (see its messages)") : error);
          else
            r.note = "wrong results: " + std::to_string(wrong) + " elements";
        }
        std::lock_guard<std::mutex> l(report_mutex);
        for (Reporter* rep : reporters) rep->report(r);
        if (opt_.crash_after >= 0 && sum.measured >= static_cast<std::size_t>(opt_.crash_after)) std::raise(SIGKILL);
      }
      if (status == kAborted && opt_.stop_on_timeout) sum.stopped_early = true;
    }
    if (in_group) {
      backend_.end_group();
      MPI_Comm_free(&agreement);
      MPI_Comm_free(&group);
    }
    i = std::max(i, end);
    if (sum.stopped_early) break;
  }
  sum.wall_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  if (rank_ == 0)
    for (Reporter* r : reporters) r->finish(sum);
  return sum;
}

}  // namespace arfit::bench
