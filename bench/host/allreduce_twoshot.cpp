// host / allreduce / TWOSHOT: the GPU two-shot kernel on host memory (bench/host/allreduce_kernel.h).
//   1. copy-in: each rank copies its input into its staging area of the shared window; barrier.
//   2. reduce-scatter: rank r reduces its slice (the kernels' partition: whole chunks of vectors without fusion,
//      whole token rows with it, kernels/device/partition.h) across all peers in rank order, applies the fused
//      epilogue to its rows, and writes the result into its scratch; barrier.
//   3. all-gather: every rank copies each slice from its owner's scratch into its output; barrier.
// Each rank reads 2/n of the peers' data instead of all of it (one-shot), at the price of a second barrier.
#include "bench/host/allreduce_kernel.h"

namespace arfit::bench::host {
namespace {

template <typename T>
using TwoShotAllReduce = KernelAllReduce<T, kernels::AllReduceAlgorithm::TwoShot>;

}  // namespace

const Descriptor& allreduce_twoshot_descriptor() {
  static const Descriptor d = [] {
    Descriptor x = kernel_allreduce_descriptor(kernels::AllReduceAlgorithm::TwoShot);
    x.make = [](const Case& c) { return make_typed<TwoShotAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
