// Shared pieces of the host backend: element types, deterministic inputs and references, the shared-memory
// window in which the host ONESHOT/TWOSHOT all-reduces run the GPU kernels' own code (kernels/device, built
// for the CPU), and the typed base class the ops share.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mpi.h>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/backend.h"
#include "bench/descriptor.h"
#include "kernels/all_reduce.h"
#include "kernels/device/host_elements.h"
#include "kernels/team/page_aligned_buffer.h"

namespace arfit::bench::host {

// ---------------------------------------------------------------- element types
// bf16 and fp16 as their bit patterns (the kernels' host element types, so the host ops hand their buffers to
// the kernels as they are); all arithmetic is fp32.
using bf16 = kernels::device::host::bf16_t;
using fp16 = kernels::device::host::fp16_t;

inline float to_float(float x) { return x; }
inline float to_float(bf16 x) { return kernels::device::host::bf16_to_float(x.bits); }
inline float to_float(fp16 x) { return kernels::device::host::fp16_to_float(x.bits); }

template <typename T>
T from_float(float f);
template <>
inline float from_float<float>(float f) {
  return f;
}
template <>
inline bf16 from_float<bf16>(float f) {
  return bf16{kernels::device::host::float_to_bf16(f)};
}
template <>
inline fp16 from_float<fp16>(float f) {
  return fp16{kernels::device::host::float_to_fp16(f)};
}

// The kernels' name of an element type.
template <typename T>
kernels::DType dtype_of() {
  if constexpr (std::is_same_v<T, bf16>) return kernels::DType::BF16;
  if constexpr (std::is_same_v<T, fp16>) return kernels::DType::FP16;
  return kernels::DType::FP32;
}

// Relative/absolute tolerance of the correctness check per element type.
template <typename T>
constexpr double tolerance() {
  return std::is_same_v<T, float> ? 1e-5 : 2e-2;
}

// ---------------------------------------------------------------- inputs and references
// Input element `index` of input buffer `buffer` on `rank`: an odd multiple of 1/16 in [-15/16, 15/16].
// Sums over up to 8 ranks plus a residual stay exact in bf16 (at most 8 significant bits), so the
// un-normalised results can be checked exactly; never zero, so a missing contribution always shows.
inline float input_value(int rank, int buffer, std::int64_t index) {
  std::uint32_t h = static_cast<std::uint32_t>(index) * 0x9E3779B1u ^ static_cast<std::uint32_t>(index >> 32) * 0x85EBCA77u;
  h += static_cast<std::uint32_t>(rank) * 0xC2B2AE3Du + static_cast<std::uint32_t>(buffer) * 0x27D4EB2Fu;
  h ^= h >> 15;
  h *= 0x2C1B3C6Du;
  h ^= h >> 12;
  return (static_cast<float>(h & 15u) * 2.0f - 15.0f) / 16.0f;
}
// The residual is the replicated activation: the same on every rank.
inline float residual_value(std::int64_t index) { return input_value(1000, 7, index); }
// Gamma of the RMSNorm: 1 +- k/16, exact in every dtype.
inline float gamma_value(std::int64_t h) { return 1.0f + static_cast<float>(static_cast<int>(h % 9) - 4) / 16.0f; }
inline constexpr float kRmsEps = 1e-6f;
// The quantising fusions' per-tensor scale (fp8_scale: e4m3 = out / 1; NVFP4 global scale 1): the epilogue outputs
// stay well inside e4m3's range.
inline constexpr float kHostFp8Scale = 1.0f;

// ---------------------------------------------------------------- aligned storage
using kernels::PageAlignedBuffer;

// ---------------------------------------------------------------- shared-memory workspace
// One MPI shared-memory window per TP group (MPI_Win_allocate_shared), allocated once like the GPU workspace is
// IPC-registered once. Each rank's segment is a kernels/ workspace ([RankSignals][staging][scratch x 3],
// kernels/team/team_layout.h), so the host ONESHOT/TWOSHOT run the custom kernels' own code on it
// (all_reduce_on_host, one thread per rank): the same partition, barriers and epilogue as on a GPU, with real
// cross-process release/acquire flags.
class ShmWorkspace {
 public:
  ShmWorkspace(MPI_Comm comm, std::int64_t max_bytes);  // collective over comm
  ~ShmWorkspace();                                       // collective (MPI_Win_free)
  ShmWorkspace(const ShmWorkspace&) = delete;
  ShmWorkspace& operator=(const ShmWorkspace&) = delete;

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // The team the kernels run on: every rank's workspace as mapped in this process, this rank local (checked by
  // the team rules; a case builds it once in its setup and reuses it for every launch).
  kernels::HostTeamView view() const;
  // Collective over the group after an aborted or failed case: every rank's kernel has returned (first
  // barrier), each zeroes its own flags and epochs, and nobody launches again before all have (second barrier).
  void recover();

 private:
  MPI_Comm comm_;
  MPI_Win win_ = MPI_WIN_NULL;
  int rank_ = 0, nranks_ = 1;
  std::int64_t max_bytes_ = 0;
  std::vector<kernels::WorkspaceRegion> workspaces_;  // every rank's, from its first page boundary
};

// The host backend: owns the shared window of the current group.
class HostBackend : public Backend {
 public:
  explicit HostBackend(const BackendOptions& options) : options_(options) {}
  std::string name() const override { return "host"; }
  DeviceInfo device_info() override;
  void begin_group(MPI_Comm group, const std::vector<const Case*>& cases) override;
  void end_group() override;
  std::unique_ptr<IterationTimer> make_timer() override { return make_host_timer(); }
  void recover(MPI_Comm group) override;
  ShmWorkspace* workspace() const { return workspace_.get(); }

 private:
  BackendOptions options_;
  std::unique_ptr<ShmWorkspace> workspace_;
};

// MPI datatype and sum op for an element type (bf16/fp16 through a user-defined op that adds in fp32).
template <typename T>
MPI_Datatype mpi_type();
template <typename T>
MPI_Op mpi_sum();

// ---------------------------------------------------------------- typed op base
// Buffers every host op needs: rotating inputs, an output, and for the fused epilogue the residual,
// gamma and the two epilogue outputs.
template <typename T>
class HostOpBase : public CollectiveOp {
 public:
  void init(const Case& c, RunContext& ctx) override {
    case_ = c;
    ctx_ = ctx;
    in_count_ = input_count();
    out_count_ = output_count();
    stride_ = (static_cast<std::size_t>(in_count_) * sizeof(T) + 4095) / 4096 * 4096;
    inputs_ = PageAlignedBuffer(stride_ * static_cast<std::size_t>(ctx.buffers));
    for (int b = 0; b < ctx.buffers; ++b) fill_input(b);
    output_ = PageAlignedBuffer(std::max<std::size_t>(1, static_cast<std::size_t>(out_count_) * sizeof(T)));
    if (c.fusion != FusionOp::None) {
      const std::size_t n = static_cast<std::size_t>(c.count);
      residual_ = PageAlignedBuffer(n * sizeof(T));
      residual_out_ = PageAlignedBuffer(n * sizeof(T));
      gamma_ = PageAlignedBuffer(static_cast<std::size_t>(c.hidden) * sizeof(T));
      for (std::size_t i = 0; i < n; ++i) residual()[i] = from_float<T>(residual_value(static_cast<std::int64_t>(i)));
      for (std::int64_t h = 0; h < c.hidden; ++h) gamma()[h] = from_float<T>(gamma_value(h));
      std::memset(residual_out_.data(), 0, n * sizeof(T));
      // The quantised norm (e4m3 or packed e2m1) and the NVFP4 block scales, when the fusion writes them.
      const auto quant_bytes = static_cast<std::size_t>(kernels::quant_out_bytes(c.fusion, c.count));
      const auto scale_bytes = static_cast<std::size_t>(kernels::scale_out_bytes(c.fusion, c.count, c.hidden));
      if (quant_bytes > 0) quant_out_ = PageAlignedBuffer(quant_bytes);
      if (scale_bytes > 0) scale_out_ = PageAlignedBuffer(scale_bytes);
    }
    std::memset(output_.data(), 0, output_.size());
    setup();
  }

  RunStatus check(std::int64_t* wrong) override {
    // Poison: 0xFF bytes are NaN in every float type, so an unwritten element can never pass.
    std::memset(output_.data(), 0xFF, output_.size());
    if (residual_out_.data()) std::memset(residual_out_.data(), 0xFF, residual_out_.size());
    if (quant_out_.data()) std::memset(quant_out_.data(), 0xFF, quant_out_.size());
    if (scale_out_.data()) std::memset(scale_out_.data(), 0xFF, scale_out_.size());
    fill_input(0);
    RunStatus s = run(0);
    if (s != RunStatus::Ok) return s;
    *wrong = count_wrong();
    return RunStatus::Ok;
  }

 protected:
  virtual std::int64_t input_count() const { return case_.count; }
  virtual std::int64_t output_count() const { return case_.count; }
  virtual void setup() {}
  virtual std::int64_t count_wrong() const = 0;
  virtual void fill_input(int b) {
    T* p = input(b);
    for (std::int64_t i = 0; i < in_count_; ++i) p[i] = from_float<T>(input_value(ctx_.rank, b, i));
  }

  T* input(int b) const { return reinterpret_cast<T*>(static_cast<std::byte*>(inputs_.data()) + stride_ * b); }
  T* output() const { return static_cast<T*>(output_.data()); }
  T* residual() const { return static_cast<T*>(residual_.data()); }
  T* residual_out() const { return static_cast<T*>(residual_out_.data()); }
  T* gamma() const { return static_cast<T*>(gamma_.data()); }
  void* quant_out() const { return quant_out_.data(); }  // null unless the fusion quantises
  void* scale_out() const { return scale_out_.data(); }  // null unless NVFP4
  // The fused epilogue's buffers of this rank (all but input and output, which the caller sets).
  kernels::AllReduceBuffers epilogue_buffers() const {
    kernels::AllReduceBuffers b;
    b.residual_in = residual();
    b.residual_out = residual_out();
    b.gamma = gamma();
    b.fp8_out = quant_out();
    b.scale_out = scale_out();
    return b;
  }
  bool withhold() const { return ctx_.inject == RunContext::Inject::kWithhold; }

  static bool close(double got, double want) {
    return std::abs(got - want) <= tolerance<T>() * (1.0 + std::abs(want));  // NaN compares false
  }

  Case case_;
  RunContext ctx_;
  std::int64_t in_count_ = 0, out_count_ = 0;
  std::size_t stride_ = 0;
  PageAlignedBuffer inputs_, output_, residual_, residual_out_, gamma_, quant_out_, scale_out_;
};

// Shared by the three all-reduce strategies: the reference check of the (possibly fused) result.
template <typename T>
class HostAllReduceBase : public HostOpBase<T> {
 protected:
  std::int64_t count_wrong() const override;
};

// Counts wrong elements of an all-reduce output (and the fused epilogue's outputs) against a double
// reference computed from input_value; shared with tests. The norm output is checked only where the fusion writes it
// (not the QUANT fusions); the quantised output (quant, scales: null unless the fusion writes them) by
// kernels::count_quantized_wrong against the reference norm, fp8 scale 1 (kHostFp8Scale).
template <typename T>
std::int64_t count_allreduce_wrong(const Case& c, int nranks, const T* out, const T* residual_out,
                                   const void* quant = nullptr, const void* scales = nullptr);

template <typename T>
std::int64_t HostAllReduceBase<T>::count_wrong() const {
  return count_allreduce_wrong<T>(this->case_, this->ctx_.nranks, this->output(), this->residual_out(),
                                  this->quant_out(), this->scale_out());
}

// Instantiates Op<T> for the case's dtype.
template <template <typename> class Op>
std::unique_ptr<CollectiveOp> make_typed(const Case& c) {
  const std::string d = canonical_dtype(c.dtype);
  if (d == "bf16") return std::make_unique<Op<bf16>>();
  if (d == "fp16") return std::make_unique<Op<fp16>>();
  if (d == "fp32") return std::make_unique<Op<float>>();
  throw std::invalid_argument("host backend: unsupported dtype '" + c.dtype + "'");
}

inline const std::vector<std::string>& host_dtypes() {
  static const std::vector<std::string> v = {"bf16", "fp16", "fp32"};
  return v;
}

}  // namespace arfit::bench::host
