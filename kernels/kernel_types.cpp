#include "kernels/kernel_types.h"

#include <sstream>

namespace arfit::kernels {

std::string to_string(DType dtype) {
  switch (dtype) {
    case DType::BF16: return "bf16";
    case DType::FP16: return "fp16";
    case DType::FP32: return "fp32";
  }
  return "unknown";
}

DType parse_dtype(const std::string& name) {
  const std::string canonical = canonical_dtype(name);
  if (canonical == "bf16") return DType::BF16;
  if (canonical == "fp16") return DType::FP16;
  if (canonical == "fp32") return DType::FP32;
  throw KernelError("dtype '" + name + "' is not supported by the kernels (supported: bf16, fp16, fp32)", KernelParam::DType);
}

int dtype_bytes(DType dtype) { return dtype == DType::FP32 ? 4 : 2; }

std::string address_text(const void* p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

std::string byte_range_text(std::uintptr_t begin, std::uintptr_t end) {
  return "[" + address_text(reinterpret_cast<const void*>(begin)) + ", +" + std::to_string(end - begin) + " bytes)";
}

}  // namespace arfit::kernels
