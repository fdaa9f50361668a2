// host / alltoallv / MPI: MPI_Alltoallv with a fixed, deliberately uneven split (as MoE token routing is):
// rank i sends to rank j a share proportional to 1 + ((i + j) mod n) of its count elements. nccl-tests
// style byte count: the count elements each rank sends in total. The split is recorded with the sample.
#include "bench/host/host_ops.h"

#include <numeric>

namespace arfit::bench::host {

// Elements rank i sends to rank j out of `count`.
std::vector<std::int64_t> alltoallv_counts(std::int64_t count, int n, int i) {
  std::vector<std::int64_t> c(static_cast<std::size_t>(n));
  const std::int64_t total_weight = static_cast<std::int64_t>(n) * (n + 1) / 2;
  std::int64_t used = 0;
  for (int j = 0; j < n; ++j) {
    c[j] = count * (1 + (i + j) % n) / total_weight;
    used += c[j];
  }
  c[n - 1] += count - used;
  return c;
}

std::string alltoallv_descriptor_splits(const Case& c) {
  std::string s;
  for (auto v : alltoallv_counts(c.count, c.tp, 0)) s += (s.empty() ? "" : "-") + std::to_string(v * c.elem_size());
  return s;
}

namespace {

template <typename T>
class MpiAllToAllV : public HostOpBase<T> {
 protected:
  void setup() override {
    const int n = this->ctx_.nranks, me = this->ctx_.rank;
    sc_.resize(n), sd_.resize(n), rc_.resize(n), rd_.resize(n);
    auto mine = alltoallv_counts(this->case_.count, n, me);
    int so = 0, ro = 0;
    for (int j = 0; j < n; ++j) {
      sc_[j] = static_cast<int>(mine[j]);
      sd_[j] = so;
      so += sc_[j];
      rc_[j] = static_cast<int>(alltoallv_counts(this->case_.count, n, j)[me]);
      rd_[j] = ro;
      ro += rc_[j];
    }
  }
  std::int64_t output_count() const override {
    std::int64_t total = 0;
    for (int j = 0; j < this->ctx_.nranks; ++j)
      total += alltoallv_counts(this->case_.count, this->ctx_.nranks, j)[this->ctx_.rank];
    return total;
  }
  std::int64_t count_wrong() const override {
    std::int64_t wrong = 0;
    const int n = this->ctx_.nranks, me = this->ctx_.rank;
    for (int i = 0; i < n; ++i) {
      auto ci = alltoallv_counts(this->case_.count, n, i);
      const std::int64_t src_off = std::accumulate(ci.begin(), ci.begin() + me, std::int64_t{0});
      for (int t = 0; t < rc_[i]; ++t)
        if (!this->close(to_float(this->output()[rd_[i] + t]), input_value(i, 0, src_off + t))) ++wrong;
    }
    return wrong;
  }

 public:
  RunStatus run(int b) override {
    if (this->ctx_.inject != RunContext::Inject::kNone) hang_forever();
    MPI_Alltoallv(this->input(b), sc_.data(), sd_.data(), mpi_type<T>(), this->output(), rc_.data(), rd_.data(),
                  mpi_type<T>(), this->ctx_.comm);
    return RunStatus::Ok;
  }

 private:
  std::vector<int> sc_, sd_, rc_, rd_;
};

}  // namespace

const Descriptor& alltoallv_mpi_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::AllToAllV;
    x.strategy = "MPI";
    x.fusions = {FusionOp::None};
    x.dtypes = host_dtypes();
    x.byte_counts = [](std::int64_t count, int elem, int) { return ByteCounts{count * elem, count * elem}; };
    x.validate = validate_mpi_count;
    x.make = [](const Case& c) { return make_typed<MpiAllToAllV>(c); };
    x.splits = alltoallv_descriptor_splits;
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
