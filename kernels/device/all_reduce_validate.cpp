// Host-side checks of custom all-reduce requests: everything the kernels assume, checked before a launch,
// each failure a KernelError that says what was asked and what is allowed, and names its parameter.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

#include "kernels/all_reduce.h"
#include "kernels/device/low_precision_layout.h"

namespace arfit::kernels {
namespace {

// Why a buffer needs `alignment` bytes: the 16-byte vectors of every dtype buffer, the e4m3 packs of fp8_out.
struct Alignment {
  int bytes;
  std::string reason;
};

Alignment vector_alignment() { return {kVectorBytes, "the kernels move 16-byte vectors"}; }

// fp8_out is stored one pack of e4m3 bytes per 16-byte vector of the dtype (store_e4m3 in primitives.h), never 16
// e4m3 bytes at once.
Alignment fp8_alignment(DType dtype) {
  const int pack = fp8_pack_bytes(dtype);
  return {pack, "the kernels store e4m3 in packs of " + std::to_string(pack) + " bytes, one per " + to_string(dtype) +
                    " element of a 16-byte vector"};
}

// NVFP4 packs one block of 16 elements into 8 bytes with one 8-byte store (store_8 in primitives.h).
Alignment nvfp4_alignment() {
  return {kNvfp4PackBytes, "the kernels store packed e2m1 in 8-byte packs, one per block of 16 elements"};
}
Alignment byte_alignment() { return {1, "bytes"}; }

// Whether a fused row shape suits the fusion beyond the vector width: NVFP4 quantises whole blocks of 16 elements.
void require_nvfp4_blocks(const std::string& who, FusionOp fusion, std::int64_t hidden) {
  if (fusion_quantizes_nvfp4(fusion) && hidden % kNvfp4BlockElements != 0) {
    throw KernelError(who + ": fusion " + to_string(fusion) + " needs hidden to be a multiple of " +
                          std::to_string(kNvfp4BlockElements) + " (one e4m3 scale per block of 16 elements), got " +
                          std::to_string(hidden),
                      KernelParam::Hidden);
  }
}

void require_pointer(const void* p, const char* what, int local_rank, const Alignment& alignment) {
  if (!p) {
    throw KernelError("local rank " + std::to_string(local_rank) + ": " + what + " pointer is null", KernelParam::Buffers);
  }
  if (reinterpret_cast<std::uintptr_t>(p) % static_cast<std::uintptr_t>(alignment.bytes) != 0) {
    throw KernelError("local rank " + std::to_string(local_rank) + ": " + what + " pointer " + address_text(p) +
                          " is not " + std::to_string(alignment.bytes) + "-byte aligned (" + alignment.reason + ")",
                      KernelParam::Buffers);
  }
}

bool is_fused(FusionOp f) { return f != FusionOp::None; }

// "N bytes" of a message of `count` elements, also when N does not fit in 64 bits.
std::string message_bytes_text(std::int64_t count, DType dtype) {
  const int size = dtype_bytes(dtype);
  if (count > std::numeric_limits<std::int64_t>::max() / size) {
    return "more than " + std::to_string(std::numeric_limits<std::int64_t>::max()) + " bytes";
  }
  return std::to_string(count * size) + " bytes";
}

// One buffer of one local rank, as a byte range.
struct Extent {
  int local_rank;
  const char* name;
  std::uintptr_t begin, end;
  bool written;
};

// Pairs of the same rank's buffers that may be the same memory: in place, fused in place, and the unfused
// epilogue's output written over its reduced input (vLLM's in-place fused_add_rms_norm: the thread that reads
// vector j of `reduced` is the one that later stores vector j of `output`, residual_rms_norm_row).
bool allowed_alias(const Extent& a, const Extent& b) {
  if (a.local_rank != b.local_rank || a.begin != b.begin || a.end != b.end) return false;
  auto is = [&](const char* x, const char* y) {
    return (std::string(a.name) == x && std::string(b.name) == y) || (std::string(a.name) == y && std::string(b.name) == x);
  };
  return is("input", "output") || is("residual_in", "residual_out") || is("reduced", "output");
}

std::string extent_text(const Extent& e) {
  return "local rank " + std::to_string(e.local_rank) + " " + e.name + " " + byte_range_text(e.begin, e.end);
}

// A buffer some thread writes must not overlap another buffer, except the allowed identical pairs: a partial
// overlap (or a write into another rank's buffer) would make the result depend on the order blocks run in.
void require_no_overlap(const std::string& who, const std::vector<Extent>& extents) {
  for (std::size_t i = 0; i < extents.size(); ++i) {
    for (std::size_t j = i + 1; j < extents.size(); ++j) {
      const Extent& a = extents[i];
      const Extent& b = extents[j];
      if (!a.written && !b.written) continue;
      if (a.begin >= b.end || b.begin >= a.end) continue;
      if (allowed_alias(a, b)) continue;
      throw KernelError(who + ": " + extent_text(a) + " overlaps " + extent_text(b) +
                            " (only output == input or reduced, and residual_out == residual_in, may share memory)",
                        KernelParam::Buffers);
    }
  }
}

// The value given (a StrategyCase's double), checked before it is narrowed: the kernels add it in float, where an
// epsilon below the smallest normal float becomes zero or a subnormal and one above the largest becomes infinity.
void validate_rms_eps(const std::string& who, double rms_eps) {
  using Float = std::numeric_limits<float>;
  const bool positive = rms_eps > 0 && std::isfinite(rms_eps);
  if (positive && rms_eps >= static_cast<double>(Float::min()) && rms_eps <= static_cast<double>(Float::max())) return;
  // Stream formatting, not std::to_string's six fixed decimals: -1e-7 must not read "-0.000000".
  std::ostringstream s;
  s << who << ": rms_eps must be finite and > 0, got " << rms_eps;
  if (positive) s << " (the kernels compute in float: it must lie in " << Float::min() << ".." << Float::max() << ")";
  throw KernelError(s.str(), KernelParam::RmsEps);
}

// The kernels multiply by 1 / fp8_scale: zero, subnormal (its reciprocal overflows or loses precision),
// negative and non-finite scales are refused.
void validate_fp8_scale(const std::string& who, float fp8_scale) {
  if (!(std::isnormal(fp8_scale) && fp8_scale > 0)) {
    std::ostringstream s;
    s << who << ": fp8_scale must be a normal, positive, finite float, got " << fp8_scale;
    throw KernelError(s.str(), KernelParam::Fp8Scale);
  }
}

}  // namespace

std::string to_string(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllReduceAlgorithm::OneShot: return strategy::kOneShot;
    case AllReduceAlgorithm::TwoShot: return strategy::kTwoShot;
    case AllReduceAlgorithm::MultimemOneShot: return strategy::kMultimemOneShot;
    case AllReduceAlgorithm::MultimemTwoShot: return strategy::kMultimemTwoShot;
    case AllReduceAlgorithm::LowPrecision: return strategy::kLowPrecision;
  }
  return strategy::kTwoShot;
}

const std::vector<FusionOp>& all_reduce_fusions(AllReduceAlgorithm algorithm) {
  static const std::vector<FusionOp> unicast = all_fusion_ops();  // one-/two-shot: every epilogue (dispatch_fusion)
  // The multimem kernels have no fused epilogue (yet) and LOWPRECISION quantises the transport only: NONE.
  static const std::vector<FusionOp> none_only = {FusionOp::None};
  return algorithm == AllReduceAlgorithm::OneShot || algorithm == AllReduceAlgorithm::TwoShot ? unicast : none_only;
}

int all_reduce_blocks_per_rank(AllReduceAlgorithm algorithm, const AllReduceParams& p, int threads,
                               int max_blocks_per_rank) {
  if (algorithm == AllReduceAlgorithm::LowPrecision) {
    return low_precision::blocks_per_rank(p.count, threads, max_blocks_per_rank);
  }
  return partition::blocks_per_rank_for(p.fusion, p.count, p.hidden, vector_width(p.dtype), threads,
                                        max_blocks_per_rank);
}

const std::vector<int>& custom_all_reduce_rank_counts() {
  static const std::vector<int> counts = {2, 4, 8};  // the kRanks dispatch_ranks_and_fusion instantiates (all_reduce_kernels.h)
  return counts;
}

bool custom_all_reduce_supports_ranks(int nranks) {
  const std::vector<int>& counts = custom_all_reduce_rank_counts();
  return std::find(counts.begin(), counts.end(), nranks) != counts.end();
}

bool custom_all_reduce_supports_fusion(FusionOp fusion) {
  const std::vector<FusionOp>& all = all_fusion_ops();  // dispatch_ranks_and_fusion instantiates every one
  return std::find(all.begin(), all.end(), fusion) != all.end();
}

void validate_all_reduce_shape(AllReduceAlgorithm algorithm, const TeamShape& team, DType dtype, FusionOp fusion,
                               std::int64_t count, std::int64_t hidden) {
  const std::string who = to_string(algorithm);
  if (!custom_all_reduce_supports_ranks(team.nranks)) {
    throw KernelError(who + ": unsupported rank count " + std::to_string(team.nranks) +
                          " (the custom kernels are instantiated for 2, 4 or 8 ranks; use NCCL for other team sizes)",
                      KernelParam::Ranks);
  }
  if (team.local_ranks != 1 && team.local_ranks != team.nranks) {
    throw KernelError(who + ": a process drives 1 rank (IPC) or all " + std::to_string(team.nranks) +
                          " ranks (virtual node), not " + std::to_string(team.local_ranks),
                      KernelParam::LocalRanks);
  }
  if (algorithm == AllReduceAlgorithm::LowPrecision && fusion != FusionOp::None) {
    throw KernelError(who + ": fusion " + to_string(fusion) + " is not implemented (LOWPRECISION quantises the "
                            "transport only; supported fusions: NONE)",
                      KernelParam::Fusion);
  }
  if (!custom_all_reduce_supports_fusion(fusion)) {
    throw KernelError(who + ": fusion " + to_string(fusion) + " with dtype " + to_string(dtype) +
                          " is not implemented (supported fusions: NONE, RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8, "
                          "RESIDUAL_RMS_NORM_QUANT_NVFP4, RESIDUAL_RMS_NORM_OUT_QUANT_FP8, "
                          "RESIDUAL_RMS_NORM_OUT_QUANT_NVFP4)",
                      KernelParam::Fusion);
  }
  if (is_multimem(algorithm) && fusion != FusionOp::None) {
    throw KernelError(who + ": fusion " + to_string(fusion) + " is not implemented for the multimem kernels "
                            "(supported fusions: NONE)",
                      KernelParam::Fusion);
  }
  if (count <= 0) {
    throw KernelError(who + ": element count must be positive, got " + std::to_string(count), KernelParam::Count);
  }
  // Compared in elements: count * element size may not fit in 64 bits (2^61 + 1 fp32 elements wrapped to 4
  // bytes and passed).
  if (count > team.max_bytes / dtype_bytes(dtype)) {
    throw KernelError(who + ": message of " + message_bytes_text(count, dtype) + " (" + std::to_string(count) + " " +
                          to_string(dtype) + " elements) exceeds the team's workspace limit of " +
                          std::to_string(team.max_bytes) + " bytes per rank (create the team with a larger max_bytes)",
                      KernelParam::Workspace);
  }
  // LOWPRECISION stages e4m3 groups and their multipliers: even a one-element message needs one whole 68-byte group.
  if (algorithm == AllReduceAlgorithm::LowPrecision && low_precision::workspace_bytes(count) > team.max_bytes) {
    throw KernelError(who + ": message of " + std::to_string(count) + " elements needs " +
                          std::to_string(low_precision::workspace_bytes(count)) +
                          " bytes of quantised staging, above the team's workspace limit of " +
                          std::to_string(team.max_bytes) + " bytes per rank",
                      KernelParam::Workspace);
  }
  if (is_fused(fusion)) {
    const int width = vector_width(dtype);
    if (hidden <= 0) {
      throw KernelError(who + ": fusion " + to_string(fusion) + " needs the row length (hidden) > 0, got " +
                            std::to_string(hidden),
                        KernelParam::Hidden);
    }
    if (hidden % width != 0) {
      throw KernelError(who + ": fusion " + to_string(fusion) + " with dtype " + to_string(dtype) +
                            " needs hidden to be a multiple of the vector width " + std::to_string(width) + ", got " +
                            std::to_string(hidden),
                        KernelParam::Hidden);
    }
    require_nvfp4_blocks(who, fusion, hidden);
    if (count % hidden != 0) {
      throw KernelError(who + ": element count " + std::to_string(count) + " is not a whole number of rows of hidden " +
                            std::to_string(hidden),
                        KernelParam::Count);
    }
  }
}

// The quantised outputs of a fusion (fp8_out, scale_out) as extents, through `add(name, pointer, bytes, alignment)`.
template <typename Add>
void add_quant_extents(FusionOp fusion, DType dtype, std::int64_t count, std::int64_t hidden,
                       const AllReduceBuffers& b, const Add& add) {
  if (fusion_quantizes_fp8(fusion)) add("fp8_out", b.fp8_out, static_cast<std::uintptr_t>(count), fp8_alignment(dtype));
  if (fusion_quantizes_nvfp4(fusion)) {
    add("fp8_out", b.fp8_out, static_cast<std::uintptr_t>(nvfp4_packed_bytes(count)), nvfp4_alignment());
    add("scale_out", b.scale_out, static_cast<std::uintptr_t>(nvfp4_scale_bytes(count / hidden, hidden)),
        byte_alignment());
  }
}

void validate_all_reduce(AllReduceAlgorithm algorithm, const TeamShape& team, const AllReduceParams& p) {
  validate_all_reduce_shape(algorithm, team, p.dtype, p.fusion, p.count, p.hidden);
  const std::string who = to_string(algorithm);
  if (static_cast<int>(p.buffers.size()) != team.local_ranks) {
    throw KernelError(who + ": " + std::to_string(p.buffers.size()) + " buffer sets given for " +
                          std::to_string(team.local_ranks) + " local ranks",
                      KernelParam::Buffers);
  }
  const auto bytes = static_cast<std::uintptr_t>(p.count * dtype_bytes(p.dtype));
  std::vector<Extent> extents;
  auto add = [&](int k, const char* name, const void* ptr, std::uintptr_t length, bool written,
                 const Alignment& alignment = vector_alignment()) {
    require_pointer(ptr, name, k, alignment);
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    extents.push_back(Extent{k, name, begin, begin + length, written});
  };
  for (int k = 0; k < team.local_ranks; ++k) {
    const AllReduceBuffers& b = p.buffers[static_cast<std::size_t>(k)];
    add(k, "input", b.input, bytes, false);
    add(k, "output", b.output, bytes, true);
    if (is_fused(p.fusion)) {
      add(k, "residual_in", b.residual_in, bytes, false);
      add(k, "residual_out", b.residual_out, bytes, true);
      add(k, "gamma", b.gamma, static_cast<std::uintptr_t>(p.hidden * dtype_bytes(p.dtype)), false);
    }
    add_quant_extents(p.fusion, p.dtype, p.count, p.hidden, b,
                      [&](const char* name, const void* ptr, std::uintptr_t length, const Alignment& alignment) {
                        add(k, name, ptr, length, true, alignment);
                      });
  }
  require_no_overlap(who, extents);
  validate_epilogue_scalars(who, p.fusion, p.rms_eps, p.fp8_scale);
}

void validate_epilogue_scalars(const std::string& who, FusionOp fusion, double rms_eps, float fp8_scale) {
  if (is_fused(fusion)) validate_rms_eps(who, rms_eps);
  if (fusion_quantizes_fp8(fusion) || fusion_quantizes_nvfp4(fusion)) validate_fp8_scale(who, fp8_scale);
}

void validate_residual_rms_norm_shape(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden,
                                      double rms_eps, float fp8_scale) {
  const std::string who = "residual_rms_norm";
  if (!is_fused(fusion)) {
    throw KernelError(who + ": fusion " + to_string(fusion) + " with dtype " + to_string(dtype) +
                          " is not an epilogue (supported: every fusion but NONE)",
                      KernelParam::Fusion);
  }
  const int width = vector_width(dtype);
  // The buffers' byte sizes (count * element size) must fit in 64 bits for the overlap checks below.
  if (count > std::numeric_limits<std::int64_t>::max() / dtype_bytes(dtype)) {
    throw KernelError(who + ": count " + std::to_string(count) + " is a message of " + message_bytes_text(count, dtype),
                      KernelParam::Count);
  }
  if (count <= 0 || hidden <= 0 || hidden % width != 0 || count % hidden != 0) {
    throw KernelError(who + ": count " + std::to_string(count) + " and hidden " + std::to_string(hidden) +
                          " must be positive, hidden a multiple of " + std::to_string(width) +
                          " and count a whole number of rows",
                      hidden <= 0 || hidden % width != 0 ? KernelParam::Hidden : KernelParam::Count);
  }
  require_nvfp4_blocks(who, fusion, hidden);
  validate_epilogue_scalars(who, fusion, rms_eps, fp8_scale);
}

void validate_residual_rms_norm(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                                float fp8_scale, const void* reduced, const AllReduceBuffers& b) {
  validate_residual_rms_norm_shape(dtype, fusion, count, hidden, rms_eps, fp8_scale);
  const auto bytes = static_cast<std::uintptr_t>(count * dtype_bytes(dtype));
  std::vector<Extent> extents;
  auto add = [&](const char* name, const void* ptr, std::uintptr_t length, bool written,
                 const Alignment& alignment = vector_alignment()) {
    require_pointer(ptr, name, 0, alignment);
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    extents.push_back(Extent{0, name, begin, begin + length, written});
  };
  add("reduced", reduced, bytes, false);
  add("residual_in", b.residual_in, bytes, false);
  add("residual_out", b.residual_out, bytes, true);
  add("gamma", b.gamma, static_cast<std::uintptr_t>(hidden * dtype_bytes(dtype)), false);
  add("output", b.output, bytes, true);
  add_quant_extents(fusion, dtype, count, hidden, b,
                    [&](const char* name, const void* ptr, std::uintptr_t length, const Alignment& alignment) {
                      add(name, ptr, length, true, alignment);
                    });
  require_no_overlap("residual_rms_norm", extents);
}

AllReduceLaunch make_all_reduce_launch(const AllReduceParams& p) {
  AllReduceLaunch args{};
  args.count = p.count;
  args.hidden = p.fusion == FusionOp::None ? 0 : p.hidden;
  args.rms_eps = p.rms_eps;
  args.fp8_inv_scale = 1.0f / p.fp8_scale;
  for (std::size_t k = 0; k < p.buffers.size(); ++k) {
    const AllReduceBuffers& b = p.buffers[k];
    args.input[k] = b.input;
    args.output[k] = b.output;
    args.residual_in[k] = b.residual_in;
    args.residual_out[k] = b.residual_out;
    args.gamma[k] = b.gamma;
    args.fp8_out[k] = b.fp8_out;
    args.scale_out[k] = b.scale_out;
    // In place: the input is written during the launch, so the read-only load path is not allowed.
    if (b.input == b.output) args.input_may_alias = 1;
  }
  return args;
}

bool host_supports_threads_per_block(int threads) {
  for (int t : kHostThreadsPerBlock)
    if (t == threads) return true;
  return false;
}

}  // namespace arfit::kernels
