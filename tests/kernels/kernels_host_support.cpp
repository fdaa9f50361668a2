#include "kernels_host_support.h"
#include "model/splitmix64.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <new>
#include <random>

namespace arfit::kernels::testing {
namespace {

std::uint64_t choose_seed() {
  std::uint64_t seed = 0;
  if (const char* text = std::getenv("ARFIT_KERNELS_HOST_SEED"); text && *text) {
    seed = std::strtoull(text, nullptr, 0);
  } else {
    std::random_device device;
    seed = (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }
  std::cout << "kernels-host seed: " << seed << " (repeat with ARFIT_KERNELS_HOST_SEED=" << seed << ")" << std::endl;
  return seed;
}

}  // namespace

std::uint64_t run_seed() {
  static const std::uint64_t seed = choose_seed();
  return seed;
}

std::uint64_t derived_seed(std::uint64_t salt) {
  const std::uint64_t s = splitmix64(run_seed() ^ splitmix64(salt));
  return s == 0 ? 1 : s;
}

bool quick_mode() {
  const char* text = std::getenv("ARFIT_KERNELS_HOST_QUICK");
  return text && std::string(text) == "1";
}

std::string to_string(Placement p) {
  switch (p) {
    case Placement::OutOfPlace: return "out-of-place";
    case Placement::InPlace: return "in-place";
    case Placement::FusedInPlace: return "fused-in-place";
    case Placement::BothInPlace: return "in-place+fused-in-place";
  }
  return "?";
}

std::string HostCase::describe() const {
  return to_string(algorithm) + " " + std::to_string(nranks) + " ranks " + kernels::to_string(dtype) + " " +
         arfit::to_string(fusion) + " count=" + std::to_string(count) + " hidden=" + std::to_string(hidden) + " " +
         to_string(placement) + " threads/block=" + std::to_string(threads_per_block);
}

namespace {

struct RankBuffers {
  PageAlignedBuffer input, output, residual_in, residual_out, gamma, fp8_out, scale_out;
};

bool output_in_place(Placement p) { return p == Placement::InPlace || p == Placement::BothInPlace; }
bool residual_in_place(Placement p) { return p == Placement::FusedInPlace || p == Placement::BothInPlace; }

void fill(PageAlignedBuffer& b, const std::vector<unsigned char>& values) { std::memcpy(b.data(), values.data(), values.size()); }
std::vector<unsigned char> copy(const PageAlignedBuffer& b, std::size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(b.data());
  return std::vector<unsigned char>(p, p + bytes);
}

// Comparisons check_all_reduce_outputs makes per rank: one per element of each written output, two per quantised
// element (and NVFP4 block scale) when the norm output is written (reference and bit-exact consistency with it).
std::int64_t comparisons_per_rank(FusionOp fusion, std::int64_t count) {
  if (fusion == FusionOp::None) return count;
  const int twice = fusion_writes_norm_output(fusion) ? 2 : 1;
  std::int64_t n = count * (fusion_writes_norm_output(fusion) ? 2 : 1);  // residual_out (+ output)
  if (fusion_quantizes_fp8(fusion)) n += twice * count;
  if (fusion_quantizes_nvfp4(fusion)) n += twice * (count + count / kNvfp4BlockElements);
  return n;
}

}  // namespace

void run_and_check(HostTeam& team, const HostCase& c, int launches, std::uint64_t seed) {
  const bool fused = c.fusion != FusionOp::None;
  const bool fp8 = fusion_quantizes_fp8(c.fusion);
  const bool nvfp4 = fusion_quantizes_nvfp4(c.fusion);
  // Bytes of the quantised output (e4m3 or packed e2m1) and of the NVFP4 block scales.
  const auto quant_bytes = static_cast<std::size_t>(fp8 ? c.count : nvfp4 ? nvfp4_packed_bytes(c.count) : 0);
  const auto scale_bytes = static_cast<std::size_t>(nvfp4 ? nvfp4_scale_bytes(c.count / c.hidden, c.hidden) : 0);
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  std::vector<RankBuffers> ranks(static_cast<std::size_t>(c.nranks));
  AllReduceParams p;
  p.dtype = c.dtype;
  p.fusion = c.fusion;
  p.count = c.count;
  p.hidden = c.hidden;
  p.rms_eps = static_cast<float>(c.rms_eps);
  p.fp8_scale = c.fp8_scale;
  for (RankBuffers& r : ranks) {
    r.input = PageAlignedBuffer(bytes);
    if (!output_in_place(c.placement)) r.output = PageAlignedBuffer(bytes);
    AllReduceBuffers b;
    b.input = r.input.data();
    b.output = output_in_place(c.placement) ? r.input.data() : r.output.data();
    if (fused) {
      r.residual_in = PageAlignedBuffer(bytes);
      if (!residual_in_place(c.placement)) r.residual_out = PageAlignedBuffer(bytes);
      r.gamma = PageAlignedBuffer(static_cast<std::size_t>(c.hidden * dtype_bytes(c.dtype)));
      b.residual_in = r.residual_in.data();
      b.residual_out = residual_in_place(c.placement) ? r.residual_in.data() : r.residual_out.data();
      b.gamma = r.gamma.data();
      if (fp8 || nvfp4) {
        r.fp8_out = PageAlignedBuffer(quant_bytes);
        b.fp8_out = r.fp8_out.data();
      }
      if (nvfp4) {
        r.scale_out = PageAlignedBuffer(scale_bytes);
        b.scale_out = r.scale_out.data();
      }
    }
    p.buffers.push_back(b);
  }

  for (int launch = 0; launch < launches; ++launch) {
    const std::uint64_t data_seed = seed + static_cast<std::uint64_t>(launch);
    for (int k = 0; k < c.nranks; ++k) {
      RankBuffers& r = ranks[static_cast<std::size_t>(k)];
      fill(r.input, detail::seeded_host(c.dtype, c.count, data_seed, data_role(to_string(c.algorithm)), k));
      if (!output_in_place(c.placement)) std::memset(r.output.data(), detail::kPoisonByte, bytes);
      if (fused) {
        fill(r.residual_in, detail::seeded_host(c.dtype, c.count, data_seed, InputRole::Residual, kReplicatedRank));
        fill(r.gamma, detail::seeded_host(c.dtype, c.hidden, data_seed, InputRole::Gamma, kReplicatedRank));
        if (!residual_in_place(c.placement)) std::memset(r.residual_out.data(), detail::kPoisonByte, bytes);
        if (fp8 || nvfp4) std::memset(r.fp8_out.data(), detail::kPoisonByte, quant_bytes);
        if (nvfp4) std::memset(r.scale_out.data(), detail::kPoisonByte, scale_bytes);
      }
    }
    device::host::LaunchOptions options;
    options.seed = derived_seed(data_seed * 31 + static_cast<std::uint64_t>(launch));
    options.max_start_delay_us = 300;
    bool completed = false;
    try {
      completed = all_reduce_on_host(c.algorithm, team.view(), p, c.threads_per_block, options);
    } catch (const std::exception& e) {
      ADD_FAILURE() << c.describe() << " launch " << launch << ": " << e.what();
      return;
    }
    ASSERT_TRUE(completed) << c.describe() << " launch " << launch << ": aborted";

    std::vector<RankOutputs> outputs;
    for (int k = 0; k < c.nranks; ++k) {
      const RankBuffers& r = ranks[static_cast<std::size_t>(k)];
      RankOutputs o;
      o.rank = k;
      o.output = copy(output_in_place(c.placement) ? r.input : r.output, bytes);
      if (fused) o.residual_out = copy(residual_in_place(c.placement) ? r.residual_in : r.residual_out, bytes);
      if (fp8 || nvfp4) o.fp8_out = copy(r.fp8_out, quant_bytes);
      if (nvfp4) o.scale_out = copy(r.scale_out, scale_bytes);
      outputs.push_back(std::move(o));
    }
    AllReduceExpectation expectation = expectation_for(c, data_seed);
    expectation.low_precision = c.algorithm == AllReduceAlgorithm::LowPrecision;  // the bound, not the tolerance
    const CheckResult r = check_all_reduce_outputs(expectation, outputs, /*identical=*/true);
    const std::int64_t per_rank = comparisons_per_rank(c.fusion, c.count);
    EXPECT_EQ(r.checked, per_rank * c.nranks) << c.describe();
    EXPECT_EQ(r.wrong, 0) << c.describe() << " launch " << launch << ": " << r.wrong << " wrong elements, first "
                          << r.first_wrong;
    EXPECT_EQ(r.not_identical, 0) << c.describe() << " launch " << launch << ": " << r.not_identical
                                  << " elements differ between ranks";
    if (r.wrong != 0 || r.not_identical != 0) return;
  }
}

}  // namespace arfit::kernels::testing
