// host / allreduce / MPI: MPI_Allreduce on host memory; with a fusion op the residual + RMSNorm epilogue
// runs as a separate pass afterwards (the unfused path, like NCCL followed by a separate norm kernel).
#include "bench/host/host_ops.h"

namespace arfit::bench::host {
namespace {

template <typename T>
class MpiAllReduce : public HostAllReduceBase<T> {
 protected:
  void setup() override {
    if (this->case_.fusion != FusionOp::None) {
      reduced_ = AlignedBuffer(static_cast<std::size_t>(this->case_.count) * sizeof(T));
      acc_.resize(static_cast<std::size_t>(this->case_.hidden));
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
      for (std::int64_t t = 0; t < c.tokens; ++t) {
        const std::int64_t o = t * c.hidden;
        for (std::int64_t h = 0; h < c.hidden; ++h) acc_[h] = to_float(dst[o + h]);
        residual_rmsnorm_row<T>(acc_.data(), this->residual() + o, this->gamma(), this->output() + o,
                                this->residual_out() + o, c.hidden);
      }
    }
    return RunStatus::Ok;
  }

 private:
  AlignedBuffer reduced_;
  std::vector<float> acc_;
};

}  // namespace

const Descriptor& allreduce_mpi_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::AllReduce;
    x.strategy = "MPI";
    x.fusions = {FusionOp::None, FusionOp::ResidualRmsNorm};
    x.dtypes = host_dtypes();
    x.byte_counts = [](std::int64_t count, int elem, int) { return ByteCounts{count * elem, count * elem}; };
    x.validate = validate_mpi_count;
    x.make = [](const Case& c) { return make_typed<MpiAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
