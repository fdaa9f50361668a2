// What a kernel name says besides its class: the element type and the algorithm (NCCL's algorithm and
// protocol, one-shot / two-shot, 1-stage / 2-stage), NCCL's reduction op; and a short legend name that keeps them.
#pragma once

#include <cstddef>
#include <string>

namespace arfit::trace {

struct KernelNameFacts {
  std::string dtype;      // canonical (model/sample.h canonical_dtype: "bf16", "fp32", "uint32", "fp8_e4m3"); "" = not said
  std::string algorithm;  // "RING_LL", "TREE_LL128", "NVLS_SIMPLE", "oneshot", "twoshot", "1stage", "2stage"; "" = not said
  std::string reduce_op;  // NCCL kernels: "Sum", "Prod", "Max", "Min", "PreMulSum", "SumPostDiv"; "" = not said
};

// NCCL names carry op, type, algorithm and protocol as '_'-separated words, in either generation's order:
// "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(...)", "ncclKernel_AllReduce_RING_LL_Sum_half(...)". Other names:
// the first element type in the name or its template arguments (not its parameter list, where scale and index
// types would mislead), and one-shot / two-shot / 1-stage / 2-stage words.
KernelNameFacts kernel_name_facts(const std::string& name);

// A readable legend name: return type, parameter list and template arguments removed (keeping the first
// template argument's last identifier when the base name is generic, e.g. cutlass::Kernel2<...gemm...>),
// NCCL kernels written "nccl AllReduce bf16 RING_LL" (collective, reduction op unless Sum, type, algorithm and
// protocol), then cut in the middle to at most max_len characters. The element type and the algorithm survive:
// when the shortened name no longer says them they are appended, "<bf16,RING_LL>".
std::string shorten_name(const std::string& name, std::size_t max_len = 40);

}  // namespace arfit::trace
