// host / alltoall / MPI: MPI_Alltoall. nccl-tests byte count: count elements sent (and received) per
// rank, count/n to each peer.
#include "bench/host/host_ops.h"

namespace arfit::bench::host {
namespace {

template <typename T>
class MpiAllToAll : public HostOpBase<T> {
 protected:
  std::int64_t chunk() const { return this->case_.count / this->ctx_.nranks; }
  std::int64_t count_wrong() const override {
    std::int64_t wrong = 0;
    const std::int64_t k = chunk();
    for (int q = 0; q < this->ctx_.nranks; ++q)
      for (std::int64_t i = 0; i < k; ++i)
        if (!this->close(to_float(this->output()[q * k + i]), input_value(q, 0, this->ctx_.rank * k + i))) ++wrong;
    return wrong;
  }

 public:
  RunStatus run(int b) override {
    if (this->ctx_.inject != RunContext::Inject::kNone) hang_forever();
    const int k = static_cast<int>(chunk());
    MPI_Alltoall(this->input(b), k, mpi_type<T>(), this->output(), k, mpi_type<T>(), this->ctx_.comm);
    return RunStatus::Ok;
  }
};

}  // namespace

const Descriptor& alltoall_mpi_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::AllToAll;
    x.strategy = "MPI";
    x.fusions = {FusionOp::None};
    x.dtypes = host_dtypes();
    x.byte_counts = [](std::int64_t count, int elem, int) { return ByteCounts{count * elem, count * elem}; };
    x.validate = validate_mpi_count;
    x.make = [](const Case& c) { return make_typed<MpiAllToAll>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
