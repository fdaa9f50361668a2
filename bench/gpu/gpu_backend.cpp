#include "bench/gpu/gpu_backend.h"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#if ARFIT_BENCH_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <deque>
#include <functional>
#include <thread>

#include "bench/alltoallv_splits.h"
#include "kernels/all_reduce.h"
#include "kernels/device/cuda_check.h"
#include "kernels/team/mpi_handle_exchange.h"
#include "kernels/strategy.h"
#include "kernels/team.h"

namespace arfit::bench::gpu {
namespace {

using kernels::StrategyCase;
using kernels::StrategyDescriptor;

// Case (nccl-tests byte conventions, count = elements of the whole message) -> kernels' StrategyCase
// (count per rank as kernels/strategy.h defines it per collective).
StrategyCase to_strategy_case(const Case& c) {
  StrategyCase s;
  s.collective = c.collective;
  s.dtype = kernels::parse_dtype(c.dtype);
  s.fusion = c.fusion;
  s.nranks = c.tp;
  s.hidden = c.hidden;
  switch (c.collective) {
    case Collective::AllGather:
    case Collective::ReduceScatter: s.count = c.count / c.tp; break;
    case Collective::AllToAllV: {
      s.count = c.count;
      for (const auto& row : alltoallv_case_counts(c)) s.alltoallv_counts.insert(s.alltoallv_counts.end(), row.begin(), row.end());
      break;
    }
    default: s.count = c.count;
  }
  return s;
}

class GpuBackend;

// An instantiated CUDA graph replayed on the backend's stream. The backend keeps track of the live ones so an
// abort can free them before it aborts the NCCL communicator (GpuBackend::wait).
class CudaGraph : public CapturedIterations {
 public:
  CudaGraph(GpuBackend& b, cudaGraphExec_t exec);
  ~CudaGraph() override;
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;
  // Aborted once release() freed the graph: the case has failed and its remaining replays are skipped.
  RunStatus launch() override;
  // Frees the executable graph now; a replay still in flight is freed by CUDA when it completes.
  void release();

 private:
  GpuBackend& b_;
  cudaGraphExec_t exec_;
};

class GpuTimer : public IterationTimer {
 public:
  GpuTimer(GpuBackend& b, int iters);
  ~GpuTimer() override;
  void start() override;
  void mark() override;
  std::vector<double> finish_us() override;

 private:
  GpuBackend& b_;
  std::vector<cudaEvent_t> ev_;
  std::size_t next_ = 0;
  bool aborted_ = false;
};

class GpuBackend : public Backend {
 public:
  GpuBackend(std::string kind, const BackendOptions& o) : kind_(std::move(kind)), opt_(o) {
    // The split is collective over the world: every rank makes it before anything here can throw, so a rank
    // whose node has no GPU cannot leave the others waiting in it (arbench then agrees on every rank's outcome).
    int local = 0, local_size = 1;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    if (std::string why = kernels::cuda_device_unavailable_reason(); !why.empty())
      throw GridError("--backend", kind_ + " needs a GPU: " + why);
    int n = 0;
    ARFIT_CUDA_CHECK(cudaGetDeviceCount(&n));
    // One GPU per rank: IPC teams and NCCL communicators refuse two ranks on one device, and would fail later,
    // inside a collective, with a less clear error. (Virtual ranks play every rank in one process.)
    if (!o.virtual_ranks && local_size > 1 && (o.device >= 0 || local_size > n))
      throw GridError("--device", std::to_string(local_size) + " ranks on this node but " +
                                      (o.device >= 0 ? "all asked for device " + std::to_string(o.device)
                                                     : "only " + std::to_string(n) + " GPUs") +
                                      ": two ranks would share a GPU (one GPU per rank, or --virtual-ranks)");
#if ARFIT_BENCH_HAVE_NCCL
    // NCCL collectives can be captured into CUDA graphs from NCCL 2.9 on (the library loaded at run time counts).
    int nccl_version = 0;
    if (kind_ == "nccl" && o.cuda_graph > 0 && ncclGetVersion(&nccl_version) == ncclSuccess && nccl_version < 20900)
      throw GridError("-G/--cuda-graph", "NCCL " + std::to_string(nccl_version) +
                                             " cannot be captured into CUDA graphs (needs NCCL 2.9 or later)");
#endif
    device_ = o.device >= 0 ? o.device : local % n;
    if (device_ >= n) throw GridError("--device", "device " + std::to_string(device_) + " does not exist (" + std::to_string(n) + " found)");
    ARFIT_CUDA_CHECK(cudaSetDevice(device_));
    ARFIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~GpuBackend() override { cudaStreamDestroy(stream_); }

  std::string name() const override { return kind_; }
  DeviceInfo device_info() override {
    DeviceInfo d;
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, device_) == cudaSuccess) {
      d.device = p.name;
      d.sm = p.major * 10 + p.minor;
    }
    int v = 0;
    if (cudaDriverGetVersion(&v) == cudaSuccess) d.driver = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    if (cudaRuntimeGetVersion(&v) == cudaSuccess) d.cuda_runtime = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
#if ARFIT_BENCH_HAVE_NCCL
    if (ncclGetVersion(&v) == ncclSuccess)
      d.nccl = std::to_string(v / 10000) + "." + std::to_string(v % 10000 / 100) + "." + std::to_string(v % 100);
#endif
    return d;
  }

  void begin_group(MPI_Comm group, const std::vector<const Case*>& cases) override {
    group_ = group;
    MPI_Comm_rank(group, &grank_);
    MPI_Comm_size(group, &gsize_);
    ARFIT_CUDA_CHECK(cudaSetDevice(device_));
    if (kind_ == "custom") {
      std::int64_t need = 0;
      int tp = gsize_;
      for (const Case* c : cases) {
        need = std::max(need, c->bytes);
        tp = c->tp;
      }
      if (opt_.virtual_ranks) {
        team_ = kernels::Team::create_virtual(tp, need, device_);
      } else {
        exchange_ = std::make_unique<kernels::MpiHandleExchange>(group);
        team_ = kernels::Team::create_ipc(*exchange_, need, device_);
      }
    } else {
      init_comm();
    }
  }
  void end_group() override {
    cudaStreamSynchronize(stream_);
    team_.reset();  // collective with IPC: every rank closes its mappings, all meet, then each frees its own
    exchange_.reset();
#if ARFIT_BENCH_HAVE_NCCL
    if (comm_) ncclCommDestroy(comm_);
    comm_ = nullptr;
#endif
  }
  std::unique_ptr<IterationTimer> make_timer() override;

  // Stream capture: every launch `enqueue` makes on stream_ becomes a graph node (in stream order: a chain,
  // so the custom kernels still run one after another and their device-side barrier epochs advance per
  // replayed launch exactly as with eager launches). Nothing runs until the graph is launched.
  // ThreadLocal mode: a call from this thread that is illegal while capturing (a synchronising cudaMemcpy,
  // cudaMalloc, cudaDeviceSynchronize) fails and invalidates the capture, so a launch path that is not
  // capturable shows up as a case error instead of silently running eagerly; threads of other libraries (NCCL's
  // proxy thread) are not restricted by our capture.
  std::unique_ptr<CapturedIterations> capture(const std::function<void()>& enqueue) override {
    ARFIT_CUDA_CHECK(cudaSetDevice(device_));
    ARFIT_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue();
    } catch (...) {
      // End the capture whatever happened, so the stream is usable again (the check and later cases run on it).
      cudaGraph_t partial = nullptr;
      cudaStreamEndCapture(stream_, &partial);
      if (partial) cudaGraphDestroy(partial);
      cudaGetLastError();  // the error is reported by the exception; do not leave it for the next check
      throw;
    }
    cudaGraph_t graph = nullptr;
    // Fails (cudaErrorStreamCaptureInvalidated) when `enqueue` made a call that is illegal during capture.
    ARFIT_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    cudaGraphExec_t exec = nullptr;
    const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
    // The executable graph does not need its template (NCCL's resources are user objects the executable
    // graph retains).
    cudaGraphDestroy(graph);
    if (instantiated != cudaSuccess) kernels::throw_cuda_error(instantiated, "cudaGraphInstantiate", __FILE__, __LINE__);
    auto captured = std::make_unique<CudaGraph>(*this, exec);
    // Uploading now keeps the one-time upload out of the first replay, even without warm-up iterations.
    ARFIT_CUDA_CHECK(cudaGraphUpload(exec, stream_));
    return captured;
  }

  void begin_case(const Case& c, bool profile) override {
    nvtxRangePushA(c.describe().c_str());
    if (profile) cudaProfilerStart();
  }
  void end_case(const Case&, bool profile) override {
    if (profile) cudaProfilerStop();
    nvtxRangePop();
  }
  // Every rank of the group calls this after the ranks agreed the case was aborted (bench/runner.cpp).
  void recover(MPI_Comm) override {
    if (kind_ == "nccl" && comm_dead_) init_comm();  // ncclCommAbort left no usable communicator
    // Ordered after this rank's kernels stopped (they left their barriers when wait() raised the abort word),
    // then agreed with every rank through the team's exchange before and after the reset.
    else if (team_) team_->recover(stream_);
  }

  // Waits for `ev` while watching the abort flag; on abort, stops the work in flight and returns false: the
  // custom kernels through the team's abort word (they leave their barrier waits; the wait continues until they
  // have), NCCL by aborting the communicator (the only way to cancel NCCL work in flight).
  bool wait(cudaEvent_t ev) {
    cudaError_t e;
    while ((e = cudaEventQuery(ev)) == cudaErrorNotReady) {
      if (abort_ && abort_->load() && team_) {
        team_->request_abort();
        for (CudaGraph* g : live_graphs_) g->release();
        e = cudaEventSynchronize(ev);  // the kernels stop at their next barrier wait (or trap)
        if (e != cudaSuccess) kernels::throw_cuda_error(e, "cudaEventSynchronize after abort", __FILE__, __LINE__);
        return false;
      }
      if (abort_ && abort_->load()) {
        // The case's CUDA graphs go first: NCCL (2.26 and later) does not finish aborting or destroying a
        // communicator while a graph that captured its collectives is alive (it polls until those graphs are
        // destroyed), and the runner would destroy them only after this wait returned.
        for (CudaGraph* g : live_graphs_) g->release();
#if ARFIT_BENCH_HAVE_NCCL
        if (comm_) {
          ncclCommAbort(comm_);
          comm_ = nullptr;
          comm_dead_ = true;
        }
#endif
        return false;
      }
      std::this_thread::yield();
    }
    if (e != cudaSuccess) kernels::throw_cuda_error(e, "cudaEventQuery", __FILE__, __LINE__);
    return true;
  }

  void set_abort(const std::atomic<bool>* a) { abort_ = a; }
  void add_graph(CudaGraph* g) { live_graphs_.push_back(g); }
  void remove_graph(CudaGraph* g) { live_graphs_.erase(std::remove(live_graphs_.begin(), live_graphs_.end(), g), live_graphs_.end()); }
  cudaStream_t stream() const { return stream_; }
  kernels::StrategyContext context(const Case& c, const RunContext& ctx) const {
    kernels::StrategyContext s;
    s.nranks = c.tp;
    s.first_rank = opt_.virtual_ranks ? 0 : ctx.rank;
    s.local_ranks = opt_.virtual_ranks ? c.tp : 1;
    s.device = device_;
    s.team = team_.get();
#if ARFIT_BENCH_HAVE_NCCL
    s.nccl_comm = comm_;
#endif
    return s;
  }

 private:
  void init_comm() {
#if ARFIT_BENCH_HAVE_NCCL
    ncclUniqueId id;
    if (grank_ == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, group_);
    if (ncclCommInitRank(&comm_, gsize_, id, grank_) != ncclSuccess) throw std::runtime_error("ncclCommInitRank failed");
    comm_dead_ = false;
#endif
  }

  std::string kind_;
  BackendOptions opt_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  MPI_Comm group_ = MPI_COMM_NULL;
  int grank_ = 0, gsize_ = 1;
  std::unique_ptr<kernels::MpiHandleExchange> exchange_;
  std::unique_ptr<kernels::Team> team_;
#if ARFIT_BENCH_HAVE_NCCL
  ncclComm_t comm_ = nullptr;
#else
  void* comm_ = nullptr;
#endif
  bool comm_dead_ = false;
  const std::atomic<bool>* abort_ = nullptr;
  std::vector<CudaGraph*> live_graphs_;  // captured by capture(), not yet destroyed (only the main thread touches it)
};

CudaGraph::CudaGraph(GpuBackend& b, cudaGraphExec_t exec) : b_(b), exec_(exec) { b_.add_graph(this); }
CudaGraph::~CudaGraph() {
  release();
  b_.remove_graph(this);
}
RunStatus CudaGraph::launch() {
  if (!exec_) return RunStatus::Aborted;
  ARFIT_CUDA_CHECK(cudaGraphLaunch(exec_, b_.stream()));
  return RunStatus::Ok;
}
void CudaGraph::release() {
  if (exec_) cudaGraphExecDestroy(exec_);
  exec_ = nullptr;
}

GpuTimer::GpuTimer(GpuBackend& b, int iters) : b_(b), ev_(static_cast<std::size_t>(iters) + 1) {
  for (auto& e : ev_) ARFIT_CUDA_CHECK(cudaEventCreate(&e));
}
GpuTimer::~GpuTimer() {
  for (auto& e : ev_) cudaEventDestroy(e);
}
void GpuTimer::start() {
  // Warm-up work finished before the first timestamp, so it is not charged to iteration 0.
  ARFIT_CUDA_CHECK(cudaEventRecord(ev_[0], b_.stream()));
  if (!b_.wait(ev_[0])) aborted_ = true;
  ARFIT_CUDA_CHECK(cudaEventRecord(ev_[0], b_.stream()));
  next_ = 1;
}
void GpuTimer::mark() {
  if (next_ >= ev_.size()) {
    ev_.push_back(nullptr);
    ARFIT_CUDA_CHECK(cudaEventCreate(&ev_.back()));
  }
  ARFIT_CUDA_CHECK(cudaEventRecord(ev_[next_++], b_.stream()));
}
std::vector<double> GpuTimer::finish_us() {
  if (aborted_ || !b_.wait(ev_[next_ - 1])) return {};
  std::vector<double> us;
  for (std::size_t k = 1; k < next_; ++k) {
    float ms = 0;
    ARFIT_CUDA_CHECK(cudaEventElapsedTime(&ms, ev_[k - 1], ev_[k]));
    us.push_back(ms * 1000.0);
  }
  return us;
}

std::unique_ptr<IterationTimer> GpuBackend::make_timer() { return std::make_unique<GpuTimer>(*this, 64); }

// One CollectiveOp for every kernels/ strategy: rotation = one StrategyState per input buffer (each with its
// own seeded inputs); the check runs on a fresh state (poisoned outputs) outside the timed region.
class StrategyOp : public CollectiveOp {
 public:
  explicit StrategyOp(const StrategyDescriptor& d) : d_(d) {}
  void init(const Case& c, RunContext& ctx) override {
    b_ = static_cast<GpuBackend*>(ctx.backend);
    b_->set_abort(ctx.abort);
    sc_ = to_strategy_case(c);
    sctx_ = b_->context(c, ctx);
    for (int k = 0; k < ctx.buffers; ++k) {
      kernels::StrategyContext x = sctx_;
      x.seed = 1 + static_cast<std::uint64_t>(k);
      states_.push_back(d_.init(x, sc_));
    }
  }
  RunStatus run(int buffer) override {
    d_.run(*states_[static_cast<std::size_t>(buffer)], b_->stream());
    return RunStatus::Ok;
  }
  RunStatus check(std::int64_t* wrong) override {
    ARFIT_CUDA_CHECK(cudaStreamSynchronize(b_->stream()));
    auto fresh = d_.init(sctx_, sc_);
    d_.run(*fresh, b_->stream());
    cudaEvent_t ev;
    ARFIT_CUDA_CHECK(cudaEventCreate(&ev));
    ARFIT_CUDA_CHECK(cudaEventRecord(ev, b_->stream()));
    const bool done = b_->wait(ev);
    cudaEventDestroy(ev);
    if (!done) return RunStatus::Aborted;
    kernels::CheckResult r = d_.check(*fresh);
    *wrong = r.wrong + r.not_identical;
    return RunStatus::Ok;
  }

 private:
  const StrategyDescriptor& d_;
  GpuBackend* b_ = nullptr;
  StrategyCase sc_;
  kernels::StrategyContext sctx_;
  std::vector<std::unique_ptr<kernels::StrategyState>> states_;
};

// kernels/' descriptor as bench sees it: the descriptor itself (every fact is kernels/'), plus bench's per-case
// hooks, the same for every kernels/ strategy: the case converted to kernels/' conventions, validation errors
// mapped to the option behind their parameter, and one StrategyOp running init/run/check.
Descriptor device_descriptor(const StrategyDescriptor& k) {
  Descriptor d;
  static_cast<StrategyDescriptor&>(d) = k;
  const StrategyDescriptor* kp = &k;
  d.workspace_bytes = [kp](const Case& c) -> std::int64_t {
    const std::int64_t message = kp->workspace(to_strategy_case(c));
    return message > 0 ? kernels::workspace_allocation_bytes(message) : 0;
  };
  d.validate = [kp](const Case& c, const Limits& limits) -> std::optional<CaseIssue> {
    try {
      kp->validate_case(to_strategy_case(c), limits);
    } catch (const kernels::KernelError& e) {
      return CaseIssue{option_for(e.parameter(), c), c.describe() + ": " + e.what()};
    }
    return std::nullopt;
  };
  d.make = [kp](const Case&) { return std::make_unique<StrategyOp>(*kp); };
  if (k.collective == Collective::AllToAllV) {
    d.splits = alltoallv_recorded_splits;
    d.byte_counts = alltoallv_byte_bound;
  }
  return d;
}

}  // namespace

std::vector<const Descriptor*> gpu_descriptors() {
  static const std::deque<Descriptor> all = [] {
    std::deque<Descriptor> v;
    for (const StrategyDescriptor* k : kernels::all_strategies()) v.push_back(device_descriptor(*k));
    return v;
  }();
  std::vector<const Descriptor*> out;
  for (const auto& d : all) out.push_back(&d);
  return out;
}

std::unique_ptr<Backend> make_gpu_backend(const std::string& kind, const BackendOptions& options) {
  return std::make_unique<GpuBackend>(kind, options);
}

}  // namespace arfit::bench::gpu
