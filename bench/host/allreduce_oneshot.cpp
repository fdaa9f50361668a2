// host / allreduce / ONESHOT: the GPU one-shot kernel on host memory (bench/host/allreduce_kernel.h). Each rank
// copies its input into its staging area of the shared window, the ranks meet at a flag barrier, every rank
// reduces the whole message from all peers' staging in rank order 0..n-1 (bitwise-identical results on every
// rank), the fused epilogue normalises each reduced row, and a second barrier keeps the next iteration from
// overwriting staging a slower peer still reads.
#include "bench/host/allreduce_kernel.h"

namespace arfit::bench::host {
namespace {

template <typename T>
using OneShotAllReduce = KernelAllReduce<T, kernels::AllReduceAlgorithm::OneShot>;

}  // namespace

const Descriptor& allreduce_oneshot_descriptor() {
  static const Descriptor d = [] {
    Descriptor x = kernel_allreduce_descriptor(kernels::AllReduceAlgorithm::OneShot);
    x.make = [](const Case& c) { return make_typed<OneShotAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
