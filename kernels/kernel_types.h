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

enum class AllReduceAlgorithm {
  OneShot,  // every rank reads all peers' staged inputs and reduces the whole tensor (rank order 0..N-1)
  TwoShot,  // reduce-scatter into scratch, barrier, all-gather of the reduced slices
  // Two-shot over e4m3 groups with fp32 multipliers (kernels/device/low_precision_kernels.h): not exact, its error is
  // bounded (kernels/reference/check.h check_low_precision_outputs). NONE only.
  LowPrecision,
  // NVLS (NVLink SHARP, sm_90+ with a multicast object bound to every rank's staging buffer; emulated on the CPU):
  MultimemOneShot,  // every rank multimem.ld_reduce's the whole tensor through the staging buffers' multicast address
  MultimemTwoShot,  // rank r multimem.ld_reduce's its slice and multimem.st's the sum into every rank's staging
};

// True for the algorithms that read and write through a multicast address (MULTIMEM_ONESHOT, MULTIMEM_TWOSHOT).
inline constexpr bool is_multimem(AllReduceAlgorithm algorithm) {
  return algorithm == AllReduceAlgorithm::MultimemOneShot || algorithm == AllReduceAlgorithm::MultimemTwoShot;
}

// Element types the custom all-reduce kernels reduce (always accumulating in fp32).
enum class DType { BF16, FP16, FP32 };

std::string to_string(DType dtype);
// Accepts the names model/sample.h's canonical_dtype understands ("bf16", "bfloat16", "half", "float", ...).
// Throws KernelError for names that are not one of the three supported element types.
DType parse_dtype(const std::string& name);
int dtype_bytes(DType dtype);

// Addresses in the KernelErrors of validation and team rules: "0x7f12..." and "[0x7f12..., +N bytes)".
std::string address_text(const void* p);
std::string byte_range_text(std::uintptr_t begin, std::uintptr_t end);

// Every global load/store of the custom kernels moves 16 bytes; a rank's buffers must be aligned to it.
inline constexpr int kVectorBytes = 16;
inline constexpr int vector_width(DType dtype) { return kVectorBytes / (dtype == DType::FP32 ? 4 : 2); }
// The fused e4m3 output is written one pack per 16-byte vector of the dtype: vector_width bytes (8 for bf16/fp16, 4
// for fp32) with one 8- or 4-byte store (store_e4m3 / copy_e4m3, kernels/device/primitives.h, which static_asserts
// that its pack is this width), always at a multiple of the pack from the buffer's start. So fp8_out needs this
// alignment, not 16: no path stores 16 e4m3 bytes at once.
inline constexpr int fp8_pack_bytes(DType dtype) { return vector_width(dtype); }

// ---- what a fused epilogue writes (FusionOp, model/sample.h) ----
// The QUANT fusions write the quantised norm output and residual_out but not the norm output itself (TensorRT-LLM's
// convention); RESIDUAL_RMS_NORM and the OUT_QUANT fusions write the norm output.
inline constexpr bool fusion_is_fused(FusionOp f) { return f != FusionOp::None; }
inline constexpr bool fusion_quantizes_fp8(FusionOp f) {
  return f == FusionOp::ResidualRmsNormQuantFp8 || f == FusionOp::ResidualRmsNormOutQuantFp8;
}
inline constexpr bool fusion_quantizes_nvfp4(FusionOp f) {
  return f == FusionOp::ResidualRmsNormQuantNvfp4 || f == FusionOp::ResidualRmsNormOutQuantNvfp4;
}
inline constexpr bool fusion_writes_norm_output(FusionOp f) {
  return f == FusionOp::ResidualRmsNorm || f == FusionOp::ResidualRmsNormOutQuantFp8 ||
         f == FusionOp::ResidualRmsNormOutQuantNvfp4;
}

// ---- NVFP4 (e2m1 values, one e4m3 scale per block of 16, one fp32 global scale) ----
// Elements per block scale; a row (hidden) must be a whole number of blocks.
inline constexpr int kNvfp4BlockElements = 16;
// Packed e2m1 bytes of `count` elements (two per byte, element 2i in the low nibble).
inline constexpr std::int64_t nvfp4_packed_bytes(std::int64_t count) { return count / 2; }
// Bytes of the swizzled block-scale buffer of rows x hidden (TensorRT-LLM's 128x4 layout: rows padded to 128, the
// hidden / 16 scale columns padded to 4). Only the scales of real rows and columns are written.
inline constexpr std::int64_t nvfp4_scale_bytes(std::int64_t rows, std::int64_t hidden) {
  return (rows + 127) / 128 * 128 * ((hidden / kNvfp4BlockElements + 3) / 4 * 4);
}
// The packed output of one block (16 e2m1 = 8 bytes) is one 8-byte store: quant_out's alignment for NVFP4.
inline constexpr int kNvfp4PackBytes = kNvfp4BlockElements / 2;

// Bytes of a fusion's quantised output (AllReduceBuffers::fp8_out: e4m3 or packed e2m1) and of its NVFP4 block
// scales (scale_out) for `count` elements in rows of `hidden`; 0 when the fusion writes no such buffer.
inline constexpr std::int64_t quant_out_bytes(FusionOp f, std::int64_t count) {
  return fusion_quantizes_fp8(f) ? count : fusion_quantizes_nvfp4(f) ? nvfp4_packed_bytes(count) : 0;
}
inline constexpr std::int64_t scale_out_bytes(FusionOp f, std::int64_t count, std::int64_t hidden) {
  return fusion_quantizes_nvfp4(f) && hidden > 0 ? nvfp4_scale_bytes(count / hidden, hidden) : 0;
}

// Largest team the signal structs have room for; the kernels are instantiated for 2, 4 and 8 ranks only.
inline constexpr int kMaxRanks = 8;
// Blocks one rank may use; the barrier flags are per (block, peer).
inline constexpr int kMaxBlocksPerRank = 64;

// The request parameter a KernelError is about, so that callers (bench maps it to its command-line option)
// never have to parse the message.
enum class KernelParam {
  None,        // not about one parameter (e.g. the context, the team)
  Ranks,       // team size
  LocalRanks,  // ranks one process drives
  DType,
  Fusion,
  Count,       // element count / message size
  Hidden,      // row length of the fused epilogues
  Workspace,   // the team's per-message limit (max_bytes)
  Buffers,     // pointers: missing, misaligned, overlapping
  RmsEps,
  Fp8Scale,
  Device,      // GPU selection (one GPU per rank, peer access, co-residency)
};

// A request that the kernels cannot serve (unsupported rank count, dtype/fusion pair, misaligned pointer,
// size above the workspace, ...). The message says what was asked and what is allowed; parameter() names
// the parameter at fault.
class KernelError : public std::runtime_error {
 public:
  explicit KernelError(const std::string& what, KernelParam parameter = KernelParam::None)
      : std::runtime_error(what), parameter_(parameter) {}
  KernelParam parameter() const { return parameter_; }

 private:
  KernelParam parameter_;
};

// A CUDA or NCCL call failed; the message names the call, the file:line and the error string.
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace arfit::kernels
