// host / allreduce / LOWPRECISION: the GPU LOWPRECISION kernel (kernels/device/low_precision_kernels.h) on host
// memory, as bench/host/allreduce_kernel.h runs ONESHOT/TWOSHOT: each rank quantises its input to e4m3 groups in
// its staging area of the shared window, the group owners dequantise, sum in fp32 and quantise the sums into their
// scratch, and every rank dequantises the sums. Not exact: the per-case check holds every element within the bound
// of kernels::reference_low_precision_all_reduce, on inputs whose magnitude varies by up to 2^8 from one group of 64
// to the next (kernels::InputRole::GroupRangedData), so that the per-group multipliers matter. Samples record the
// strategy as LOWPRECISION: models and fits never pool it with the exact strategies. NONE only.
#include <algorithm>

#include "bench/host/allreduce_kernel.h"
#include "kernels/device/low_precision_layout.h"
#include "kernels/reference/reference.h"

namespace arfit::bench::host {
namespace {

// Input buffer b of `rank`: the ranged values of seed b + 1, rounded to T (exact: they are representable).
template <typename T>
void fill_ranged(T* p, std::int64_t count, int rank, int b) {
  for (std::int64_t i = 0; i < count; ++i) {
    const double v = kernels::seeded_value(static_cast<std::uint64_t>(b) + 1, kernels::InputRole::GroupRangedData,
                                           rank, i);
    p[i] = from_float<T>(static_cast<float>(v));
  }
}

template <typename T>
class LowPrecisionAllReduce : public KernelAllReduce<T, kernels::AllReduceAlgorithm::LowPrecision> {
 protected:
  void fill_input(int b) override { fill_ranged(this->input(b), this->in_count_, this->ctx_.rank, b); }

  // check() ran buffer 0: every rank's buffer-0 input is rebuilt, and the output must lie within the bound.
  std::int64_t count_wrong() const override {
    const std::int64_t count = this->case_.count;
    std::vector<std::vector<T>> inputs(static_cast<std::size_t>(this->ctx_.nranks), std::vector<T>(count));
    std::vector<const void*> pointers;
    for (int r = 0; r < this->ctx_.nranks; ++r) {
      fill_ranged(inputs[static_cast<std::size_t>(r)].data(), count, r, 0);
      pointers.push_back(inputs[static_cast<std::size_t>(r)].data());
    }
    const kernels::LowPrecisionReference ref =
        kernels::reference_low_precision_all_reduce(dtype_of<T>(), pointers, count);
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      const auto k = static_cast<std::size_t>(i);
      const double got = to_float(this->output()[i]);
      wrong += !(std::abs(got - ref.sum[k]) <= ref.bound[k]);  // NaN (the poison) counts as wrong
    }
    return wrong;
  }
};

}  // namespace

const Descriptor& allreduce_low_precision_descriptor() {
  static const Descriptor d = [] {
    Descriptor x = kernel_allreduce_descriptor(kernels::AllReduceAlgorithm::LowPrecision);
    x.fusions = {FusionOp::None};
    x.exact = false;  // measured only when --strategy names it
    // The staging area holds the quantised message: at least one 68-byte group whatever the message's size.
    x.workspace_bytes = [](const Case& c) {
      return kernels::workspace_allocation_bytes(std::max(c.bytes, kernels::low_precision::workspace_bytes(c.count)));
    };
    x.make = [](const Case& c) { return make_typed<LowPrecisionAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
