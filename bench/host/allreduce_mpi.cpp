// host / allreduce / MPI: MPI_Allreduce on host memory; with a fusion op the residual + RMSNorm epilogue
// runs as a separate pass afterwards: the GPU's unfused epilogue kernel, built for the CPU (the path NCCL takes,
// followed by that kernel).
#include "bench/host/host_ops.h"

namespace arfit::bench::host {
namespace {

template <typename T>
class MpiAllReduce : public HostAllReduceBase<T> {
 protected:
  void setup() override {
    if (this->case_.fusion != FusionOp::None) {
      reduced_ = PageAlignedBuffer(static_cast<std::size_t>(this->case_.count) * sizeof(T));
    }
  }

 public:
  RunStatus run(int b) override {
    if (this->ctx_.inject != RunContext::Inject::kNone) hang_forever();
    const Case& c = this->case_;
    const bool fused = c.fusion != FusionOp::None;
    T* dst = fused ? static_cast<T*>(reduced_.data()) : this->output();
    MPI_Allreduce(this->input(b), dst, static_cast<int>(c.count), mpi_type<T>(), mpi_sum<T>(), this->ctx_.comm);
    if (fused) {
      // The GPU's unfused epilogue kernel (the one that follows ncclAllReduce), built for the CPU.
      kernels::AllReduceBuffers b = this->epilogue_buffers();
      b.output = this->output();
      kernels::residual_rms_norm_on_host(dtype_of<T>(), c.fusion, c.count, c.hidden, kRmsEps, kHostFp8Scale, dst, b, 1);
    }
    return RunStatus::Ok;
  }

 private:
  PageAlignedBuffer reduced_;
};

}  // namespace

const Descriptor& allreduce_mpi_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::AllReduce;
    x.strategy = "MPI";
    x.fusions = all_fusion_ops();  // the unfused epilogue kernel implements every fusion
    x.dtypes = host_dtypes();
    x.byte_counts = [](std::int64_t count, int elem, int) { return ByteCounts{count * elem, count * elem}; };
    // The epilogue is the kernels' residual + RMSNorm pass: its shape rules (hidden a multiple of one 16-byte
    // pack) hold here too, refused before anything runs rather than failing every measurement.
    x.validate = [](const Case& c, const Limits& limits) -> std::optional<CaseIssue> {
      if (auto issue = validate_mpi_count(c, limits)) return issue;
      if (c.fusion == FusionOp::None) return std::nullopt;
      try {
        kernels::validate_residual_rms_norm_shape(kernels::parse_dtype(c.dtype), c.fusion, c.count, c.hidden, kRmsEps,
                                                  kHostFp8Scale);
      } catch (const kernels::KernelError& e) {
        return CaseIssue{option_for(e.parameter(), c), c.describe() + ": " + e.what()};
      }
      return std::nullopt;
    };
    x.make = [](const Case& c) { return make_typed<MpiAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
