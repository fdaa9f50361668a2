// host / allreduce / TWOSHOT: the two-shot algorithm of the GPU kernels on host memory.
//   1. copy-in: each rank copies its input into its region of the shared window; barrier.
//   2. reduce-scatter: rank r reduces only its slice (token rows r*T/n .. (r+1)*T/n, or a 16-byte-aligned
//      element range without fusion) across all peers, in rank order, applies the fused epilogue to those
//      rows (RMSNorm needs whole rows, which is why the GPU kernels also slice by token), and writes the
//      result into the gather part of its own region; barrier.
//   3. all-gather: every rank copies each peer's slice from the peer's gather part into its output.
// Each rank reads n/n-th of the data instead of all of it (one-shot), at the price of a second barrier.
#include "bench/host/host_ops.h"

namespace arfit::bench::host {
namespace {

constexpr std::int64_t kChunk = 2048;

template <typename T>
class TwoShotAllReduce : public HostAllReduceBase<T> {
 protected:
  void setup() override {
    ws_ = static_cast<HostBackend*>(this->ctx_.backend)->workspace();
    if (!ws_) throw std::runtime_error("host TWOSHOT: no shared workspace for this group");
    acc_.resize(static_cast<std::size_t>(this->case_.fusion == FusionOp::None ? kChunk : this->case_.hidden));
  }

  // Slice of rank r: element range [b, e) (rows scaled to elements in the fused case).
  std::pair<std::int64_t, std::int64_t> slice(int r) const {
    const Case& c = this->case_;
    const int n = ws_->nranks();
    if (c.fusion != FusionOp::None) {
      auto [t0, t1] = split_range(c.tokens, n, r);
      return {t0 * c.hidden, t1 * c.hidden};
    }
    return split_range(c.count, n, r, static_cast<std::int64_t>(16 / sizeof(T)));
  }

 public:
  RunStatus run(int b) override {
    const Case& c = this->case_;
    const int n = ws_->nranks(), me = ws_->rank();
    const int p = ws_->next_parity();
    const std::size_t bytes = static_cast<std::size_t>(c.count) * sizeof(T);
    const std::int64_t gather_off = align_page(static_cast<std::int64_t>(bytes));  // bytes into the region
    std::memcpy(ws_->region(me, p), this->input(b), bytes);
    if (!ws_->barrier(this->ctx_.abort, this->withhold())) return RunStatus::Aborted;

    auto peer = [&](int r) { return reinterpret_cast<const T*>(ws_->region(r, p)); };
    auto gather_norm = [&](int r) { return reinterpret_cast<T*>(ws_->region(r, p) + gather_off); };
    auto gather_res = [&](int r) { return reinterpret_cast<T*>(ws_->region(r, p) + 2 * gather_off); };
    float* acc = acc_.data();
    const auto [mb, me_end] = slice(me);
    if (c.fusion == FusionOp::None) {
      T* g = gather_norm(me);
      for (std::int64_t o = mb; o < me_end; o += kChunk) {
        const std::int64_t len = std::min(kChunk, me_end - o);
        const T* p0 = peer(0) + o;
        for (std::int64_t k = 0; k < len; ++k) acc[k] = to_float(p0[k]);
        for (int r = 1; r < n; ++r) {
          const T* pr = peer(r) + o;
          for (std::int64_t k = 0; k < len; ++k) acc[k] += to_float(pr[k]);
        }
        for (std::int64_t k = 0; k < len; ++k) g[o + k] = from_float<T>(acc[k]);
      }
    } else {
      for (std::int64_t o = mb; o < me_end; o += c.hidden) {
        const T* p0 = peer(0) + o;
        for (std::int64_t h = 0; h < c.hidden; ++h) acc[h] = to_float(p0[h]);
        for (int r = 1; r < n; ++r) {
          const T* pr = peer(r) + o;
          for (std::int64_t h = 0; h < c.hidden; ++h) acc[h] += to_float(pr[h]);
        }
        residual_rmsnorm_row<T>(acc, this->residual() + o, this->gamma(), gather_norm(me) + o, gather_res(me) + o,
                                c.hidden);
      }
    }
    if (!ws_->barrier(this->ctx_.abort)) return RunStatus::Aborted;
    for (int r = 0; r < n; ++r) {
      const auto [b0, e0] = slice(r);
      const std::size_t len = static_cast<std::size_t>(e0 - b0) * sizeof(T);
      std::memcpy(this->output() + b0, gather_norm(r) + b0, len);
      if (c.fusion != FusionOp::None) std::memcpy(this->residual_out() + b0, gather_res(r) + b0, len);
    }
    return RunStatus::Ok;
  }

 private:
  ShmWorkspace* ws_ = nullptr;
  std::vector<float> acc_;
};

}  // namespace

const Descriptor& allreduce_twoshot_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::AllReduce;
    x.strategy = strategy::kTwoShot;
    x.fusions = {FusionOp::None, FusionOp::ResidualRmsNorm};
    x.dtypes = host_dtypes();
    x.uses_workspace = true;
    x.byte_counts = [](std::int64_t count, int elem, int) { return ByteCounts{count * elem, count * elem}; };
    // Copy-in region, then the gathered slices (and the residual slices with fusion).
    x.workspace_bytes = [](const Case& c) { return align_page(c.bytes) * (c.fusion == FusionOp::None ? 2 : 3); };
    x.validate = validate_workspace;
    x.make = [](const Case& c) { return make_typed<TwoShotAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
