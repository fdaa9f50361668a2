// host / alltoallv / MPI: MPI_Alltoallv with the case's split pattern (bench/alltoallv_splits.h: cyclic, even,
// DLRM tables, Zipf-popular destinations, a hot spot). nccl-tests style byte count: the mean number of bytes a
// rank sends (the sum-mode effective size). The split is recorded with the sample.
#include <algorithm>
#include <climits>
#include <numeric>

#include "bench/alltoallv_splits.h"
#include "bench/host/host_ops.h"

namespace arfit::bench::host {
namespace {

std::int64_t row_total(const SplitCounts& c, int i) {
  return std::accumulate(c[static_cast<std::size_t>(i)].begin(), c[static_cast<std::size_t>(i)].end(), std::int64_t{0});
}
std::int64_t column_total(const SplitCounts& c, int j) {
  std::int64_t t = 0;
  for (const auto& row : c) t += row[static_cast<std::size_t>(j)];
  return t;
}

template <typename T>
class MpiAllToAllV : public HostOpBase<T> {
 protected:
  // The split, computed on first use: init() sizes the buffers (input_count, output_count) before setup().
  const SplitCounts& counts() const {
    if (counts_.empty()) counts_ = alltoallv_case_counts(this->case_);
    return counts_;
  }
  std::int64_t input_count() const override { return row_total(counts(), this->ctx_.rank); }
  std::int64_t output_count() const override { return column_total(counts(), this->ctx_.rank); }
  void setup() override {
    const int n = this->ctx_.nranks, me = this->ctx_.rank;
    sc_.resize(n), sd_.resize(n), rc_.resize(n), rd_.resize(n);
    int so = 0, ro = 0;
    for (int j = 0; j < n; ++j) {
      sc_[j] = static_cast<int>(counts()[me][j]);  // validate_alltoallv bounded every total by INT_MAX
      sd_[j] = so;
      so += sc_[j];
      rc_[j] = static_cast<int>(counts()[j][me]);
      rd_[j] = ro;
      ro += rc_[j];
    }
  }
  std::int64_t count_wrong() const override {
    std::int64_t wrong = 0;
    const int n = this->ctx_.nranks, me = this->ctx_.rank;
    for (int i = 0; i < n; ++i) {
      const auto& ci = counts()[static_cast<std::size_t>(i)];
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
  mutable SplitCounts counts_;
  std::vector<int> sc_, sd_, rc_, rd_;
};

// MPI counts and displacements are int: every rank's sent and received totals must fit.
std::optional<CaseIssue> validate_alltoallv(const Case& c, const Limits&) {
  const SplitCounts counts = alltoallv_case_counts(c);
  for (int r = 0; r < c.tp; ++r)
    if (std::max(row_total(counts, r), column_total(counts, r)) > INT_MAX)
      return CaseIssue{c.split.rfind("dlrm", 0) == 0 ? "--splits" : "--bytes",
                       c.describe() + ": rank " + std::to_string(r) + " sends or receives more than INT_MAX elements (MPI counts are int)"};
  return std::nullopt;
}

}  // namespace

const Descriptor& alltoallv_mpi_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::AllToAllV;
    x.strategy = "MPI";
    x.fusions = {FusionOp::None};
    x.dtypes = host_dtypes();
    x.byte_counts = alltoallv_byte_bound;
    x.validate = validate_alltoallv;
    x.make = [](const Case& c) { return make_typed<MpiAllToAllV>(c); };
    x.splits = alltoallv_recorded_splits;
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
