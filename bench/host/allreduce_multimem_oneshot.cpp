// host / allreduce / MULTIMEM_ONESHOT: the GPU multimem one-shot kernel on host memory (bench/host/allreduce_kernel.h), the
// multicast address emulated as the peers' staging areas of the shared window (kernels/device/primitives.h): each
// rank publishes its input, the ranks meet at a flag barrier, every rank ld_reduces the whole message (fp32, rank
// order) into its output, and a second barrier guards the staging areas against the next iteration.
// CPU timings measure the emulation's memory traffic, not an NVSwitch's; they let the host main job and its models
// carry the strategy's name and its barrier structure.
#include "bench/host/allreduce_kernel.h"

namespace arfit::bench::host {
namespace {

template <typename T>
using MultimemOneShotAllReduce = KernelAllReduce<T, kernels::AllReduceAlgorithm::MultimemOneShot>;

}  // namespace

const Descriptor& allreduce_multimem_oneshot_descriptor() {
  static const Descriptor d = [] {
    Descriptor x = kernel_allreduce_descriptor(kernels::AllReduceAlgorithm::MultimemOneShot);
    x.make = [](const Case& c) { return make_typed<MultimemOneShotAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
