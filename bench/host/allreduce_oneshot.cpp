// host / allreduce / ONESHOT: the one-shot algorithm of the GPU kernels on host memory. Each rank copies its
// input into its region of the shared window, all ranks meet at a flag barrier, then every rank reads all
// peers' regions and reduces the whole message itself, in rank order 0..n-1 so every rank's result is
// bitwise identical; the fused epilogue (residual + RMSNorm) runs on each reduced row while it is hot.
// One barrier per iteration: regions alternate parity (see ShmWorkspace).
#include "bench/host/host_ops.h"

namespace arfit::bench::host {
namespace {

constexpr std::int64_t kChunk = 2048;  // elements reduced per pass in fp32 (8 KiB of accumulators: L1-resident)

template <typename T>
class OneShotAllReduce : public HostAllReduceBase<T> {
 protected:
  void setup() override {
    ws_ = static_cast<HostBackend*>(this->ctx_.backend)->workspace();
    if (!ws_) throw std::runtime_error("host ONESHOT: no shared workspace for this group");
    acc_.resize(static_cast<std::size_t>(this->case_.fusion == FusionOp::None ? kChunk : this->case_.hidden));
  }

 public:
  RunStatus run(int b) override {
    const Case& c = this->case_;
    const int n = ws_->nranks();
    const int p = ws_->next_parity();
    std::memcpy(ws_->region(ws_->rank(), p), this->input(b), static_cast<std::size_t>(c.count) * sizeof(T));
    if (!ws_->barrier(this->ctx_.abort, this->withhold())) return RunStatus::Aborted;
    auto peer = [&](int r) { return reinterpret_cast<const T*>(ws_->region(r, p)); };
    float* acc = acc_.data();
    if (c.fusion == FusionOp::None) {
      T* out = this->output();
      for (std::int64_t o = 0; o < c.count; o += kChunk) {
        const std::int64_t len = std::min(kChunk, c.count - o);
        const T* p0 = peer(0) + o;
        for (std::int64_t k = 0; k < len; ++k) acc[k] = to_float(p0[k]);
        for (int r = 1; r < n; ++r) {
          const T* pr = peer(r) + o;
          for (std::int64_t k = 0; k < len; ++k) acc[k] += to_float(pr[k]);
        }
        for (std::int64_t k = 0; k < len; ++k) out[o + k] = from_float<T>(acc[k]);
      }
    } else {
      for (std::int64_t t = 0; t < c.tokens; ++t) {
        const std::int64_t o = t * c.hidden;
        const T* p0 = peer(0) + o;
        for (std::int64_t h = 0; h < c.hidden; ++h) acc[h] = to_float(p0[h]);
        for (int r = 1; r < n; ++r) {
          const T* pr = peer(r) + o;
          for (std::int64_t h = 0; h < c.hidden; ++h) acc[h] += to_float(pr[h]);
        }
        residual_rmsnorm_row<T>(acc, this->residual() + o, this->gamma(), this->output() + o, this->residual_out() + o,
                                c.hidden);
      }
    }
    return RunStatus::Ok;
  }

 private:
  ShmWorkspace* ws_ = nullptr;
  std::vector<float> acc_;
};

}  // namespace

const Descriptor& allreduce_oneshot_descriptor() {
  static const Descriptor d = [] {
    Descriptor x;
    x.backend = "host";
    x.collective = Collective::AllReduce;
    x.strategy = strategy::kOneShot;
    x.fusions = {FusionOp::None, FusionOp::ResidualRmsNorm};
    x.dtypes = host_dtypes();
    x.uses_workspace = true;
    x.byte_counts = [](std::int64_t count, int elem, int) { return ByteCounts{count * elem, count * elem}; };
    x.workspace_bytes = [](const Case& c) { return align_page(c.bytes); };
    x.validate = validate_workspace;
    x.make = [](const Case& c) { return make_typed<OneShotAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
