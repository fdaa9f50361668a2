#include "bench/host/host_common.h"

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <new>
#include <sched.h>
#include <stdexcept>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace arfit::bench::host {

// ---------------------------------------------------------------- fp16 (IEEE binary16)

float fp16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t man = h & 0x3ffu;
  std::uint32_t u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: normalise
      exp = 127 - 15 + 1;
      while ((man & 0x400u) == 0) {
        man <<= 1;
        --exp;
      }
      man &= 0x3ffu;
      u = sign | (exp << 23) | (man << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::uint16_t float_to_fp16(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  const std::uint16_t sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7e00u);  // NaN
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow (after rounding) -> inf
  if (abs < 0x38800000u) {                                                   // below the smallest normal: subnormal
    if (abs < 0x33000000u) return sign;                                      // rounds to zero
    const std::uint32_t e = abs >> 23;
    const std::uint32_t m = (abs & 0x7fffffu) | 0x800000u;
    const int shift = static_cast<int>(126 - e);  // value = m * 2^(e-150) = r * 2^-24
    std::uint32_t r = m >> shift;
    const std::uint32_t rem = m & ((1u << shift) - 1);
    const std::uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<std::uint16_t>(sign | r);
  }
  std::uint32_t r = abs + 0xfffu + ((abs >> 13) & 1u);  // round to nearest even at bit 13
  r = ((r >> 23) - 127 + 15) << 10 | ((r >> 13) & 0x3ffu);
  return static_cast<std::uint16_t>(sign | r);
}

// ---------------------------------------------------------------- storage

AlignedBuffer::AlignedBuffer(std::size_t bytes) : size_(bytes) {
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
  void* p = std::aligned_alloc(4096, rounded);
  if (!p) throw std::bad_alloc();
  ptr_.reset(p);
}

void AlignedBuffer::Free::operator()(void* p) const { std::free(p); }

void spin_pause(std::uint64_t iteration) {
  if (iteration < 4096) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  } else {
    sched_yield();
  }
}

// ---------------------------------------------------------------- shared window

ShmWorkspace::ShmWorkspace(MPI_Comm comm, std::size_t region_bytes) : comm_(comm) {
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
  region_bytes_ = (std::max<std::size_t>(region_bytes, 64) + 4095) / 4096 * 4096;
  MPI_Info info;
  MPI_Info_create(&info);
  // Each rank's segment is allocated by (and so NUMA-local to) that rank, as a GPU buffer lives on its GPU.
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  void* mine = nullptr;
  const MPI_Aint size = static_cast<MPI_Aint>(kHeaderBytes + 2 * region_bytes_);
  int rc = MPI_Win_allocate_shared(size, 1, info, comm, &mine, &win_);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) throw std::runtime_error("MPI_Win_allocate_shared failed for " + std::to_string(size) + " bytes");
  base_.resize(nranks_);
  flag_.resize(nranks_);
  for (int r = 0; r < nranks_; ++r) {
    MPI_Aint sz = 0;
    int disp = 0;
    void* p = nullptr;
    MPI_Win_shared_query(win_, r, &sz, &disp, &p);
    base_[r] = static_cast<std::byte*>(p);
    flag_[r] = reinterpret_cast<std::atomic<std::uint64_t>*>(base_[r]);
  }
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "barrier flags must be lock-free to work across processes");
  new (base_[rank_]) std::atomic<std::uint64_t>(0);
  // Every flag is initialised before any rank can read it.
  MPI_Barrier(comm);
}

ShmWorkspace::~ShmWorkspace() {
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
}

bool ShmWorkspace::barrier(const std::atomic<bool>* abort, bool withhold) {
  ++epoch_;
  if (withhold) {
    while (!(abort && abort->load(std::memory_order_relaxed))) sched_yield();
    return false;
  }
  // Release: this rank's earlier writes into its region (the copy-in, the reduced slice) become visible to
  // every peer whose acquire load below reads this epoch. Epochs only grow (64 bits never wrap), so a
  // flag left from an earlier barrier can never be mistaken for this one (no ABA).
  flag_[rank_]->store(epoch_, std::memory_order_release);
  for (int r = 0; r < nranks_; ++r) {
    std::uint64_t it = 0;
    // Acquire: pairs with the peer's release store, so its region contents are visible after the wait.
    while (flag_[r]->load(std::memory_order_acquire) < epoch_) {
      if (abort && abort->load(std::memory_order_relaxed)) return false;
      spin_pause(it++);
    }
  }
  return true;
}

void ShmWorkspace::recover() {
  // After an abort the ranks may have left at different barriers; an MPI all-reduce (a full synchronisation
  // no rank can skip) agrees on the largest epoch, so the next barrier's epoch is above every stored flag.
  unsigned long long e = epoch_;
  MPI_Allreduce(MPI_IN_PLACE, &e, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, comm_);
  epoch_ = e;
  parity_ = 0;
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
  std::int64_t need = 0;
  for (const Case* c : cases) {
    const Descriptor* d = find_descriptor("host", c->collective, c->strategy);
    if (d && d->uses_workspace && d->workspace_bytes) need = std::max(need, d->workspace_bytes(*c));
  }
  workspace_.reset();
  if (need > 0) workspace_ = std::make_unique<ShmWorkspace>(group, static_cast<std::size_t>(need));
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
std::int64_t count_allreduce_wrong(const Case& c, int nranks, const T* out, const T* residual_out) {
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
      if (!close(to_float(out[i]), want) || !close(to_float(residual_out[i]), v[h])) ++wrong;
    }
  }
  return wrong;
}

template std::int64_t count_allreduce_wrong<float>(const Case&, int, const float*, const float*);
template std::int64_t count_allreduce_wrong<bf16>(const Case&, int, const bf16*, const bf16*);
template std::int64_t count_allreduce_wrong<fp16>(const Case&, int, const fp16*, const fp16*);

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
