// The unfused residual + RMSNorm (+ e4m3) epilogue kernel that follows an NCCL all-reduce, so that
// "NCCL with fusion" can be timed against the fused custom kernels with the same epilogue code.
#include "kernels/device/cuda_launch.h"

namespace arfit::kernels::device {
namespace {

template <typename T>
void launch_typed(FusionOp fusion, const void* reduced, const void* residual_in, void* residual_out, const void* gamma,
                  void* output, void* quant_out, void* scale_out, std::int64_t rows, std::int64_t hidden, float eps,
                  float quant_scale, int grid, cudaStream_t stream) {
  dispatch_fusion(fusion, [&](auto op) {
    residual_rms_norm_kernel<T, decltype(op)::value, kCudaThreadsPerBlock><<<grid, kCudaThreadsPerBlock, 0, stream>>>(
        static_cast<const T*>(reduced), static_cast<const T*>(residual_in), static_cast<T*>(residual_out),
        static_cast<const T*>(gamma), static_cast<T*>(output), static_cast<std::uint8_t*>(quant_out),
        static_cast<std::uint8_t*>(scale_out), rows, hidden, eps, quant_scale);
  });
}

}  // namespace

void launch_residual_rms_norm(DType dtype, FusionOp fusion, const void* reduced, const void* residual_in,
                              void* residual_out, const void* gamma, void* output, void* quant_out, void* scale_out,
                              std::int64_t rows, std::int64_t hidden, float eps, float quant_scale, int grid,
                              cudaStream_t stream) {
  switch (dtype) {
    case DType::BF16:
      launch_typed<bf16_t>(fusion, reduced, residual_in, residual_out, gamma, output, quant_out, scale_out, rows, hidden,
                           eps, quant_scale, grid, stream);
      break;
    case DType::FP16:
      launch_typed<fp16_t>(fusion, reduced, residual_in, residual_out, gamma, output, quant_out, scale_out, rows, hidden,
                           eps, quant_scale, grid, stream);
      break;
    case DType::FP32:
      launch_typed<float>(fusion, reduced, residual_in, residual_out, gamma, output, quant_out, scale_out, rows, hidden,
                          eps, quant_scale, grid, stream);
      break;
  }
}

}  // namespace arfit::kernels::device
