// host / allreduce / MULTIMEM_TWOSHOT: the GPU multimem two-shot kernel on host memory (bench/host/allreduce_kernel.h), the
// multicast address emulated as the peers' staging areas of the shared window (kernels/device/primitives.h): each
// rank publishes its input, barrier, rank r ld_reduces its slice and stores the sums into every rank's staging,
// barrier, every rank copies its staging to its output.
// CPU timings measure the emulation's memory traffic, not an NVSwitch's; they let the host main job and its models
// carry the strategy's name and its barrier structure.
#include "bench/host/allreduce_kernel.h"

namespace arfit::bench::host {
namespace {

template <typename T>
using MultimemTwoShotAllReduce = KernelAllReduce<T, kernels::AllReduceAlgorithm::MultimemTwoShot>;

}  // namespace

const Descriptor& allreduce_multimem_twoshot_descriptor() {
  static const Descriptor d = [] {
    Descriptor x = kernel_allreduce_descriptor(kernels::AllReduceAlgorithm::MultimemTwoShot);
    x.make = [](const Case& c) { return make_typed<MultimemTwoShotAllReduce>(c); };
    return x;
  }();
  return d;
}

}  // namespace arfit::bench::host
