// host / reducescatter / MPI: MPI_Reduce_scatter_block. nccl-tests byte count: the input (count
// elements); each rank receives the reduced count/n slice it owns.
#include "bench/host/host_ops.h"

namespace arfit::bench::host {
namespace {

template <typename T>
class MpiReduceScatter : public HostOpBase<T> {
 protected:
  std::int64_t chunk() const { return this->case_.count / this->ctx_.nranks; }
  std::int64_t output_count() const override { return chunk(); }
  std::int64_t count_wrong() const override {
    std::int64_t wrong = 0;
    const std::int64_t k = chunk();
    for (std::int64_t i = 0; i < k; ++i) {
      double want = 0;
      for (int r = 0; r < this->ctx_.nranks; ++r) want += input_value(r, 0, this->ctx_.rank * k + i);
      if (!this->close(to_float(this->output()[i]), want)) ++wrong;
    }
    return wrong;
  }

 public:
  RunStatus run(int b) override {
    if (this->ctx_.inject != RunContext::Inject::kNone) hang_forever();
    MPI_Reduce_scatter_block(this->input(b), this->output(), static_cast<int>(chunk()), mpi_type<T>(), mpi_sum<T>(),
                             this->ctx_.comm);
    return RunStatus::Ok;
  }
};

}  // namespace

const Descriptor& reducescatter_mpi_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::ReduceScatter;
    x.strategy = "MPI";
    x.fusions = {FusionOp::None};
    x.dtypes = host_dtypes();
    x.byte_counts = [](std::int64_t count, int elem, int n) { return ByteCounts{count * elem, count / n * elem}; };
    x.validate = validate_mpi_count;
    x.make = [](const Case& c) { return make_typed<MpiReduceScatter>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
