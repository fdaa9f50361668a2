#include "bench/host/host_common.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <new>
#include <stdexcept>

#include "kernels/reference/check.h"
#include "kernels/team.h"

namespace arfit::bench::host {

// ---------------------------------------------------------------- shared window

namespace {
// The window's segments start on pages, as PageAlignedBuffer's buffers do.
constexpr std::uintptr_t kPage = kernels::PageAlignedBuffer::kPage;
void* page_aligned(void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return reinterpret_cast<void*>((a + kPage - 1) / kPage * kPage);
}
}  // namespace

ShmWorkspace::ShmWorkspace(MPI_Comm comm, std::int64_t max_bytes) : comm_(comm) {
  // The kernels' layout: staging and scratch slots of max_bytes each, rounded as a GPU team rounds (and refused
  // where the workspace would overflow), before any collective so every rank refuses alike.
  max_bytes_ = kernels::team_max_bytes("host ONESHOT/TWOSHOT workspace", max_bytes);
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &nranks_);
  {
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node);
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    int all_local = node_size == nranks_ ? 1 : 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_local, 1, MPI_INT, MPI_MIN, comm);
    if (!all_local)
      throw std::runtime_error("host ONESHOT/TWOSHOT need every rank of a TP group on one node (shared memory)");
  }
  MPI_Info info;
  MPI_Info_create(&info);
  // Each rank's segment is allocated by (and so NUMA-local to) that rank, as a GPU buffer lives on its GPU.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* mine = nullptr;
  // A segment need not start on a 16-byte boundary: allocate a page more and start the workspace at the first
  // 4 KiB boundary (a page offset is the same in every process that maps the segment).
  const auto size = static_cast<MPI_Aint>(kernels::workspace_allocation_bytes(max_bytes_) + kPage);
  int rc = MPI_Win_allocate_shared(size, 1, info, comm, &mine, &win_);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Win_allocate_shared failed for " + std::to_string(size) + " bytes");
  workspaces_.resize(static_cast<std::size_t>(nranks_));
  for (int r = 0; r < nranks_; ++r) {
    MPI_Aint sz = 0;
    int disp = 0;
    void* segment = nullptr;
    MPI_Win_shared_query(win_, r, &sz, &disp, &segment);
    void* base = page_aligned(segment);
    const auto skipped = static_cast<MPI_Aint>(static_cast<char*>(base) - static_cast<char*>(segment));
    workspaces_[static_cast<std::size_t>(r)] = {base, static_cast<std::int64_t>(sz - skipped)};
  }
  // Flags and epochs start at zero (the kernels' signals), before any rank can read them.
  std::memset(page_aligned(mine), 0, sizeof(kernels::RankSignals));
  MPI_Barrier(comm);
}

ShmWorkspace::~ShmWorkspace() {
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
}

namespace {
// How long a host kernel waits in a barrier before it traps: the kernels' default, or ARFIT_HOST_BARRIER_TIMEOUT_MS
// (a test knob: the watchdog's abort normally ends such a wait first, at --timeout).
std::uint64_t barrier_timeout_ns() {
  static const std::uint64_t ns = [] {
    const char* text = std::getenv("ARFIT_HOST_BARRIER_TIMEOUT_MS");
    const long long ms = text ? std::atoll(text) : 0;
    return ms > 0 ? static_cast<std::uint64_t>(ms) * 1000 * 1000 : kernels::kDefaultBarrierTimeoutNs;
  }();
  return ns;
}
}  // namespace

kernels::HostTeamView ShmWorkspace::view() const {
  kernels::HostTeamSpec spec;
  spec.workspaces = workspaces_;
  spec.first_rank = rank_;
  spec.local_ranks = 1;
  spec.max_bytes = max_bytes_;
  spec.max_blocks_per_rank = 1;
  spec.barrier_timeout_ns = barrier_timeout_ns();
  return kernels::HostTeamView("host ONESHOT/TWOSHOT workspace", spec);
}

void ShmWorkspace::recover() {
  MPI_Barrier(comm_);  // every rank's kernel has returned: nobody reads or writes the flags any more
  std::memset(workspaces_[static_cast<std::size_t>(rank_)].base, 0, sizeof(kernels::RankSignals));
  MPI_Barrier(comm_);  // nobody launches before every rank has reset its flags
}

// ---------------------------------------------------------------- backend

DeviceInfo HostBackend::device_info() {
  DeviceInfo d;
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto c = line.find(':');
      if (c != std::string::npos) d.device = line.substr(line.find_first_not_of(" \t", c + 1));
      break;
    }
  }
  if (d.device.empty()) d.device = "host CPU";
  return d;
}

void HostBackend::begin_group(MPI_Comm group, const std::vector<const Case*>& cases) {
  std::int64_t largest = 0;  // the largest message of a case that runs on the window
  for (const Case* c : cases) {
    const Descriptor* d = find_descriptor("host", c->collective, c->strategy);
    if (d && d->uses_workspace) largest = std::max(largest, c->bytes);
  }
  workspace_.reset();
  if (largest > 0) workspace_ = std::make_unique<ShmWorkspace>(group, largest);
}

void HostBackend::end_group() { workspace_.reset(); }

void HostBackend::recover(MPI_Comm) {
  if (workspace_) workspace_->recover();
}

// ---------------------------------------------------------------- MPI types and ops

namespace {
template <typename T>
void sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
}
MPI_Datatype two_byte_type() {
  static MPI_Datatype t = [] {
    MPI_Datatype x;
    MPI_Type_contiguous(2, MPI_BYTE, &x);
    MPI_Type_commit(&x);
    return x;
  }();
  return t;
}
}  // namespace

template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<bf16>() {
  return two_byte_type();
}
template <>
MPI_Datatype mpi_type<fp16>() {
  return two_byte_type();
}
template <>
MPI_Op mpi_sum<float>() {
  return MPI_SUM;
}
template <>
MPI_Op mpi_sum<bf16>() {
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(&sum_op<bf16>, 1, &o);
    return o;
  }();
  return op;
}
template <>
MPI_Op mpi_sum<fp16>() {
  static MPI_Op op = [] {
    MPI_Op o;
    MPI_Op_create(&sum_op<fp16>, 1, &o);
    return o;
  }();
  return op;
}

// ---------------------------------------------------------------- reference check

template <typename T>
std::int64_t count_allreduce_wrong(const Case& c, int nranks, const T* out, const T* residual_out, const void* quant,
                                   const void* scales) {
  auto close = [](double got, double want) { return std::abs(got - want) <= tolerance<T>() * (1.0 + std::abs(want)); };
  std::int64_t wrong = 0;
  auto sum_at = [&](std::int64_t i) {
    double s = 0;
    for (int r = 0; r < nranks; ++r) s += input_value(r, 0, i);
    return s;
  };
  if (c.fusion == FusionOp::None) {
    for (std::int64_t i = 0; i < c.count; ++i)
      if (!close(to_float(out[i]), sum_at(i))) ++wrong;
    return wrong;
  }
  const bool writes_output = kernels::fusion_writes_norm_output(c.fusion);
  const auto quant_bytes = static_cast<std::size_t>(kernels::quant_out_bytes(c.fusion, c.count));
  std::vector<double> norm, slack;  // the reference norm output and its tolerance, for the quantised output
  if (quant_bytes > 0) {
    norm.resize(static_cast<std::size_t>(c.count));
    slack.resize(static_cast<std::size_t>(c.count));
  }
  std::vector<double> v(static_cast<std::size_t>(c.hidden));
  for (std::int64_t t = 0; t < c.tokens; ++t) {
    double ss = 0;
    for (std::int64_t h = 0; h < c.hidden; ++h) {
      const std::int64_t i = t * c.hidden + h;
      v[h] = sum_at(i) + residual_value(i);
      ss += v[h] * v[h];
    }
    const double scale = 1.0 / std::sqrt(ss / static_cast<double>(c.hidden) + kRmsEps);
    for (std::int64_t h = 0; h < c.hidden; ++h) {
      const std::int64_t i = t * c.hidden + h;
      const double want = v[h] * scale * gamma_value(h);
      if ((writes_output && !close(to_float(out[i]), want)) || !close(to_float(residual_out[i]), v[h])) ++wrong;
      if (quant_bytes > 0) {
        norm[static_cast<std::size_t>(i)] = want;
        slack[static_cast<std::size_t>(i)] = tolerance<T>() * (1.0 + std::abs(want));
      }
    }
  }
  if (quant_bytes > 0) {
    const auto* q = static_cast<const unsigned char*>(quant);
    const auto scale_bytes = static_cast<std::size_t>(kernels::scale_out_bytes(c.fusion, c.count, c.hidden));
    const auto* s = static_cast<const unsigned char*>(scales);
    wrong += kernels::count_quantized_wrong(c.fusion, c.hidden, kHostFp8Scale, norm, slack,
                                            std::vector<unsigned char>(q, q + quant_bytes),
                                            s ? std::vector<unsigned char>(s, s + scale_bytes) : std::vector<unsigned char>{});
  }
  return wrong;
}

template std::int64_t count_allreduce_wrong<float>(const Case&, int, const float*, const float*, const void*, const void*);
template std::int64_t count_allreduce_wrong<bf16>(const Case&, int, const bf16*, const bf16*, const void*, const void*);
template std::int64_t count_allreduce_wrong<fp16>(const Case&, int, const fp16*, const fp16*, const void*, const void*);

}  // namespace arfit::bench::host

namespace arfit::bench {

namespace {
class HostTimer : public IterationTimer {
 public:
  void start() override {
    times_.clear();
    last_ = std::chrono::steady_clock::now();
  }
  void mark() override {
    auto now = std::chrono::steady_clock::now();
    times_.push_back(std::chrono::duration<double, std::micro>(now - last_).count());
    last_ = now;
  }
  std::vector<double> finish_us() override { return times_; }

 private:
  std::chrono::steady_clock::time_point last_;
  std::vector<double> times_;
};
}  // namespace

std::unique_ptr<IterationTimer> make_host_timer() {
  auto t = std::make_unique<HostTimer>();
  return t;
}

}  // namespace arfit::bench
