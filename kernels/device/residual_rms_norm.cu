// The unfused residual + RMSNorm (+ e4m3) epilogue kernel that follows an NCCL all-reduce, so that
// "NCCL with fusion" can be timed against the fused custom kernels with the same epilogue code.
#include "kernels/device/cuda_launch.h"

namespace arfit::kernels::device {
namespace {

template <typename T>
void launch_typed(bool quant_fp8, const void* reduced, const void* residual_in, void* residual_out, const void* gamma,
                  void* output, void* fp8_out, std::int64_t rows, std::int64_t hidden, float eps, float fp8_inv_scale,
                  int grid, cudaStream_t stream) {
  if (quant_fp8) {
    residual_rms_norm_kernel<T, true, kCudaThreadsPerBlock><<<grid, kCudaThreadsPerBlock, 0, stream>>>(
        static_cast<const T*>(reduced), static_cast<const T*>(residual_in), static_cast<T*>(residual_out),
        static_cast<const T*>(gamma), static_cast<T*>(output), static_cast<std::uint8_t*>(fp8_out), rows, hidden, eps,
        fp8_inv_scale);
  } else {
    residual_rms_norm_kernel<T, false, kCudaThreadsPerBlock><<<grid, kCudaThreadsPerBlock, 0, stream>>>(
        static_cast<const T*>(reduced), static_cast<const T*>(residual_in), static_cast<T*>(residual_out),
        static_cast<const T*>(gamma), static_cast<T*>(output), nullptr, rows, hidden, eps, fp8_inv_scale);
  }
}

}  // namespace

void launch_residual_rms_norm(DType dtype, bool quant_fp8, const void* reduced, const void* residual_in,
                              void* residual_out, const void* gamma, void* output, void* fp8_out, std::int64_t rows,
                              std::int64_t hidden, float eps, float fp8_inv_scale, int grid, cudaStream_t stream) {
  switch (dtype) {
    case DType::BF16:
      launch_typed<bf16_t>(quant_fp8, reduced, residual_in, residual_out, gamma, output, fp8_out, rows, hidden, eps,
                           fp8_inv_scale, grid, stream);
      break;
    case DType::FP16:
      launch_typed<fp16_t>(quant_fp8, reduced, residual_in, residual_out, gamma, output, fp8_out, rows, hidden, eps,
                           fp8_inv_scale, grid, stream);
      break;
    case DType::FP32:
      launch_typed<float>(quant_fp8, reduced, residual_in, residual_out, gamma, output, fp8_out, rows, hidden, eps,
                          fp8_inv_scale, grid, stream);
      break;
  }
}

}  // namespace arfit::kernels::device
