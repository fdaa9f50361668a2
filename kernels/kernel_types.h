// Host-side vocabulary of the kernels library: element types, the limits every custom kernel shares,
// and the error type for requests the kernels cannot serve. No CUDA headers: bench/, the tests and
// the host-side validation include this on machines without the CUDA toolkit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "model/sample.h"

namespace arfit::kernels {

// Element types the custom all-reduce kernels reduce (always accumulating in fp32).
enum class DType { BF16, FP16, FP32 };

std::string to_string(DType dtype);
// Accepts the names model/sample.h's canonical_dtype understands ("bf16", "bfloat16", "half", "float", ...).
// Throws KernelError for names that are not one of the three supported element types.
DType parse_dtype(const std::string& name);
int dtype_bytes(DType dtype);

// Every global load/store of the custom kernels moves 16 bytes; a rank's buffers must be aligned to it.
inline constexpr int kVectorBytes = 16;
inline constexpr int vector_width(DType dtype) { return kVectorBytes / (dtype == DType::FP32 ? 4 : 2); }

// Largest team the signal structs have room for; the kernels are instantiated for 2, 4 and 8 ranks only.
inline constexpr int kMaxRanks = 8;
// Blocks one rank may use; the barrier flags are per (block, peer).
inline constexpr int kMaxBlocksPerRank = 64;

// A request that the kernels cannot serve (unsupported rank count, dtype/fusion pair, misaligned pointer,
// size above the workspace, ...). The message says what was asked and what is allowed.
class KernelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A CUDA or NCCL call failed; the message names the call, the file:line and the error string.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace arfit::kernels
