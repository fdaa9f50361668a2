// GPU tests of the custom all-reduce kernels in single-GPU virtual-node mode (2, 4, 8 ranks in one process,
// one launch covering all ranks, the same device code and barriers as with IPC), the unfused epilogue kernel,
// and the NCCL strategies on a one-rank communicator. Every case goes through the strategy descriptors'
// check(): fresh seeded inputs (never zero), outputs poisoned with NaN first, one run, every element of every
// output compared with the double-precision CPU reference, and for the custom kernels bitwise identity of all
// ranks' outputs. Without a device every test skips with the reason.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <chrono>
#include <memory>
#include <thread>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "kernels/all_reduce.h"
#include "kernels/device/cuda_check.h"
#include "kernels/reference/reference.h"
#include "kernels/strategy.h"
#include "kernels/team.h"
#ifdef ARFIT_HAVE_NCCL
#include <nccl.h>
#endif

namespace arfit::kernels {
namespace {

constexpr std::int64_t kMiB = 1 << 20;
// Largest message the tests use; the teams are created with this limit.
constexpr std::int64_t kTeamMaxBytes = 64 * kMiB;

#define SKIP_WITHOUT_GPU()                                          \
  do {                                                              \
    const std::string reason = cuda_device_unavailable_reason();    \
    if (!reason.empty()) GTEST_SKIP() << reason;                    \
  } while (0)

// One virtual team per rank count, kept for the whole test program (creation allocates 4 x 64 MiB per rank).
Team& virtual_team(int nranks) {
  static std::unique_ptr<Team> teams[9];
  if (!teams[nranks]) teams[nranks] = Team::create_virtual(nranks, kTeamMaxBytes, 0);
  return *teams[nranks];
}

StrategyContext virtual_context(int nranks, std::uint64_t seed) {
  StrategyContext ctx;
  ctx.nranks = nranks;
  ctx.first_rank = 0;
  ctx.local_ranks = nranks;
  ctx.device = 0;
  ctx.team = &virtual_team(nranks);
  ctx.seed = seed;
  return ctx;
}

int outputs_per_rank(FusionOp fusion) {
  switch (fusion) {
    case FusionOp::None: return 1;
    case FusionOp::ResidualRmsNorm: return 2;
    default: return 3;
  }
}

// Runs `runs` launches then the descriptor's check; expects every element right and identical across ranks.
void expect_case_correct(const char* strategy_name, const StrategyCase& c, std::uint64_t seed, int runs = 3) {
  const StrategyDescriptor* s = find_strategy(strategy_name, c.collective);
  ASSERT_NE(s, nullptr) << strategy_name;
  const StrategyContext ctx = virtual_context(c.nranks, seed);
  std::unique_ptr<StrategyState> state = s->init(ctx, c);
  for (int i = 0; i < runs; ++i) s->run(*state, nullptr);
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  const CheckResult r = s->check(*state);
  std::ostringstream what;
  what << strategy_name << " n=" << c.nranks << " " << to_string(c.dtype) << " " << to_string(c.fusion) << " count=" << c.count
       << " hidden=" << c.hidden << (c.in_place ? " in-place" : "");
  EXPECT_EQ(r.wrong, 0) << what.str() << ": " << r.first_wrong;
  EXPECT_EQ(r.not_identical, 0) << what.str();
  EXPECT_EQ(r.checked, c.count * outputs_per_rank(c.fusion) * c.nranks) << what.str();
  // LOWPRECISION's max_error is |error| / its per-element bound (kernels/reference/reference.h).
  const bool bounded = std::string(strategy_name) == "LOWPRECISION";
  EXPECT_LE(r.max_error, bounded ? 1.0 : relative_tolerance(c.dtype)) << what.str();
}

struct AllReduceCase {
  const char* strategy;
  int nranks;
  DType dtype;
};
// Readable, address-free parameter text for gtest (and so for the ctest names gtest_discover_tests derives).
void PrintTo(const AllReduceCase& c, std::ostream* os) {
  *os << c.strategy << " " << c.nranks << " ranks " << to_string(c.dtype);
}
std::string case_name(const ::testing::TestParamInfo<AllReduceCase>& info) {
  return std::string(info.param.strategy) + "_" + std::to_string(info.param.nranks) + "ranks_" + to_string(info.param.dtype);
}
std::vector<AllReduceCase> all_cases() {
  std::vector<AllReduceCase> cases;
  for (const char* s : {"ONESHOT", "TWOSHOT"})
    for (int n : {2, 4, 8})
      for (DType d : {DType::BF16, DType::FP16, DType::FP32}) cases.push_back({s, n, d});
  return cases;
}

class VirtualAllReduce : public ::testing::TestWithParam<AllReduceCase> {};

// Sizes from 16 bytes to 64 MiB; most are neither a multiple of 16 bytes (vector width) nor of the rank
// count times the vector width, so the scalar tail and uneven slices are exercised.
TEST_P(VirtualAllReduce, MatchesReferenceAtEverySize) {
  SKIP_WITHOUT_GPU();
  const AllReduceCase p = GetParam();
  const std::int64_t element = dtype_bytes(p.dtype);
  for (std::int64_t bytes : {16LL, 20LL, 52LL, 100LL, 1000LL, 4100LL, 8192LL + 4, 65536LL + 12, 1LL * kMiB,
                             1LL * kMiB + 36, 3LL * kMiB + 4, 16LL * kMiB + 4, 64LL * kMiB}) {
    StrategyCase c;
    c.collective = Collective::AllReduce;
    c.dtype = p.dtype;
    c.nranks = p.nranks;
    c.count = bytes / element;
    expect_case_correct(p.strategy, c, 1000 + static_cast<std::uint64_t>(bytes));
    if (HasFailure()) return;
  }
}

TEST_P(VirtualAllReduce, FusedResidualRmsNormMatchesReference) {
  SKIP_WITHOUT_GPU();
  const AllReduceCase p = GetParam();
  const std::int64_t width = vector_width(p.dtype);
  struct Shape {
    std::int64_t tokens, hidden;
  };
  for (Shape shape : {Shape{1, width}, Shape{3, 128}, Shape{17, 1000}, Shape{5, 2056}, Shape{64, 4096}, Shape{301, 8192}}) {
    for (FusionOp fusion : all_fusion_ops()) {
      if (fusion == FusionOp::None) continue;
      if (fusion_quantizes_nvfp4(fusion) && shape.hidden % kNvfp4BlockElements != 0) continue;  // whole blocks only
      StrategyCase c;
      c.collective = Collective::AllReduce;
      c.dtype = p.dtype;
      c.fusion = fusion;
      c.nranks = p.nranks;
      c.hidden = shape.hidden;
      c.count = shape.tokens * shape.hidden;
      // 0.01 drives part of the e4m3 outputs into saturation (|normed| / 0.01 > 448); 0.5 keeps them in range.
      c.fp8_scale = shape.tokens % 2 == 1 ? 0.01f : 0.5f;
      expect_case_correct(p.strategy, c, 7 + static_cast<std::uint64_t>(c.count));
      if (HasFailure()) return;
    }
  }
}

TEST_P(VirtualAllReduce, InPlaceMatchesReference) {
  SKIP_WITHOUT_GPU();
  const AllReduceCase p = GetParam();
  StrategyCase c;
  c.collective = Collective::AllReduce;
  c.dtype = p.dtype;
  c.nranks = p.nranks;
  c.count = (kMiB + 20) / dtype_bytes(p.dtype);
  c.in_place = true;
  expect_case_correct(p.strategy, c, 99);
}

INSTANTIATE_TEST_SUITE_P(Kernels, VirtualAllReduce, ::testing::ValuesIn(all_cases()), case_name);

// LOWPRECISION (e4m3 transport, NONE only) within its error bound, bitwise identical across ranks: 2/4/8 virtual
// ranks x bf16/fp16/fp32, sizes from one element to 64 MiB (fewer elements than ranks, partial groups of 64), in place
// too.
TEST(KernelVirtualLowPrecision, WithinTheBoundAtEverySizeAndInPlace) {
  SKIP_WITHOUT_GPU();
  for (int n : {2, 4, 8}) {
    for (DType d : {DType::BF16, DType::FP16, DType::FP32}) {
      for (std::int64_t bytes : {16LL, 100LL, 4100LL, 65536LL + 12, 1LL * kMiB + 36, 16LL * kMiB + 4, 64LL * kMiB}) {
        StrategyCase c;
        c.collective = Collective::AllReduce;
        c.dtype = d;
        c.nranks = n;
        c.count = bytes / dtype_bytes(d);
        c.in_place = bytes == 4100;
        expect_case_correct("LOWPRECISION", c, 31 + static_cast<std::uint64_t>(bytes));
        if (HasFailure()) return;
      }
    }
  }
}

// Many launches on one team (barrier sequence numbers keep growing), alternating algorithms and partitions
// (small and large cases use different block counts), then a check: flags cycle without ABA or deadlock.
TEST(KernelVirtualSequence, ManyLaunchesAlternatingAlgorithmsStayCorrect) {
  SKIP_WITHOUT_GPU();
  for (int n : {2, 8}) {
    StrategyCase small, large;
    small.collective = large.collective = Collective::AllReduce;
    small.dtype = large.dtype = DType::BF16;
    small.nranks = large.nranks = n;
    small.count = 100;
    large.count = 4 * kMiB / 2 + 3;
    const StrategyContext ctx = virtual_context(n, 5);
    const StrategyDescriptor* one = find_strategy("ONESHOT", Collective::AllReduce);
    const StrategyDescriptor* two = find_strategy("TWOSHOT", Collective::AllReduce);
    auto a = one->init(ctx, small), b = two->init(ctx, large), c = one->init(ctx, large), d = two->init(ctx, small);
    for (int i = 0; i < 200; ++i) {
      one->run(*a, nullptr);
      two->run(*b, nullptr);
      one->run(*c, nullptr);
      two->run(*d, nullptr);
    }
    ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
    const std::vector<std::pair<const StrategyDescriptor*, StrategyState*>> cases{
        {one, a.get()}, {two, b.get()}, {one, c.get()}, {two, d.get()}};
    for (const auto& pair : cases) {
      const CheckResult r = pair.first->check(*pair.second);
      EXPECT_TRUE(r.ok()) << pair.first->strategy << " n=" << n << ": " << r.first_wrong;
    }
  }
}

TEST(KernelVirtualValidation, SizeAboveTheTeamWorkspaceIsRejected) {
  SKIP_WITHOUT_GPU();
  StrategyCase c;
  c.collective = Collective::AllReduce;
  c.dtype = DType::FP32;
  c.nranks = 4;
  c.count = kTeamMaxBytes / 4 + 1;
  const StrategyDescriptor* s = find_strategy("ONESHOT", Collective::AllReduce);
  try {
    s->init(virtual_context(4, 1), c);
    FAIL() << "accepted a message above the workspace";
  } catch (const KernelError& e) {
    EXPECT_NE(std::string(e.what()).find("exceeds the team's workspace limit"), std::string::npos) << e.what();
  }
}

// A multicast object binds one memory per device: a virtual team (all ranks on one GPU) has no multicast staging,
// and the multimem strategies are refused before anything is allocated, saying so (or saying that the GPU has no
// multicast at all, which is checked first).
TEST(KernelVirtualValidation, MultimemIsRefusedOnVirtualRanks) {
  SKIP_WITHOUT_GPU();
  const Team& team = virtual_team(2);
  EXPECT_EQ(team.multimem_pointers(1).multicast_staging, nullptr);
  EXPECT_EQ(team.multicast_refusal(), "virtual ranks on one GPU cannot form a multicast team; run one rank per GPU");
  const std::string expected = device_supports_multicast(0) ? "virtual ranks on one GPU cannot form a multicast team"
                                                            : "has no multicast (NVLS) support";
  StrategyCase c;
  c.collective = Collective::AllReduce;
  c.dtype = DType::BF16;
  c.nranks = 2;
  c.count = 4096;
  for (const char* name : {"MULTIMEM_ONESHOT", "MULTIMEM_TWOSHOT"}) {
    try {
      find_strategy(name, Collective::AllReduce)->init(virtual_context(2, 1), c);
      ADD_FAILURE() << name << " ran on a virtual team";
    } catch (const KernelError& e) {
      EXPECT_EQ(e.parameter(), KernelParam::Device);
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  }
}

// Co-residency from the occupancy API: the team's blocks per rank is what every kernel instantiation can keep
// resident for all virtual ranks at once.
TEST(KernelVirtualLifecycle, BlocksPerRankComeFromTheOccupancyOfEveryKernel) {
  SKIP_WITHOUT_GPU();
  int sms = 0;
  ARFIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (int n : {2, 4, 8}) {
    const int blocks = virtual_team(n).max_blocks_per_rank();
    EXPECT_GE(blocks, 1);
    EXPECT_LE(blocks, kMaxBlocksPerRank);
    EXPECT_LE(blocks * n, sms * 8) << "more blocks than any SM count could hold";
  }
}

// A launch whose barrier can never complete (rank 1's epochs are ahead of rank 0's) stops when the team's abort
// word is raised; Team::recover then waits for the stream, resets the flags, and the team works again.
TEST(KernelVirtualLifecycle, AbortStopsAStuckLaunchAndRecoverRestoresTheTeam) {
  SKIP_WITHOUT_GPU();
  auto team = Team::create_virtual(2, 1 << 20, 0);
  team->set_barrier_timeout_ns(120ull * 1000 * 1000 * 1000);  // only the abort may end the wait
  const TeamPointers t = team->pointers(1);
  std::vector<std::uint32_t> ahead(kMaxBlocksPerRank, 100);
  ARFIT_CUDA_CHECK(cudaMemcpy(t.signals[1]->barrier_epoch, ahead.data(), ahead.size() * 4, cudaMemcpyHostToDevice));
  cudaStream_t stream = nullptr;
  ARFIT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* buffers = nullptr;
  const std::int64_t count = 4096;
  ARFIT_CUDA_CHECK(cudaMalloc(&buffers, 4 * count * sizeof(float)));
  AllReduceParams p;
  p.dtype = DType::FP32;
  p.count = count;
  for (int r = 0; r < 2; ++r) {
    AllReduceBuffers b;
    b.input = static_cast<float*>(buffers) + 2 * r * count;
    b.output = static_cast<float*>(buffers) + (2 * r + 1) * count;
    p.buffers.push_back(b);
  }
  all_reduce(AllReduceAlgorithm::OneShot, *team, p, stream);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(cudaStreamQuery(stream), cudaErrorNotReady) << "the stuck launch finished without an abort";
  team->request_abort();
  EXPECT_NO_THROW(team->recover(stream));
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
  ARFIT_CUDA_CHECK(cudaFree(buffers));
  ARFIT_CUDA_CHECK(cudaStreamDestroy(stream));
  // The recovered team runs a checked case.
  StrategyContext ctx;
  ctx.nranks = 2;
  ctx.local_ranks = 2;
  ctx.team = team.get();
  StrategyCase c;
  c.dtype = DType::FP32;
  c.nranks = 2;
  c.count = 4100;
  const StrategyDescriptor* s = find_strategy("ONESHOT", Collective::AllReduce);
  auto state = s->init(ctx, c);
  const CheckResult r = s->check(*state);
  EXPECT_TRUE(r.ok()) << r.first_wrong;
}

#ifdef ARFIT_HAVE_NCCL
// NCCL allows one rank per GPU, so on one device its strategies run as a one-rank communicator: this checks
// the wrappers, the unfused epilogue path and the reference checks; multi-rank NCCL runs go through arbench.
class KernelNcclOneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string reason = cuda_device_unavailable_reason();
    if (!reason.empty()) GTEST_SKIP() << reason;
    int device = 0;
    ASSERT_EQ(ncclCommInitAll(&comm_, 1, &device), ncclSuccess);
    ctx_.nranks = 1;
    ctx_.device = 0;
    ctx_.nccl_comm = comm_;
    ctx_.seed = 3;
  }
  void TearDown() override {
    if (comm_) ncclCommDestroy(comm_);
  }
  void expect_ok(const StrategyCase& c, std::int64_t expected_checked) {
    const StrategyDescriptor* s = find_strategy("NCCL", c.collective);
    ASSERT_NE(s, nullptr);
    auto state = s->init(ctx_, c);
    s->run(*state, nullptr);
    const CheckResult r = s->check(*state);
    EXPECT_TRUE(r.ok()) << to_string(c.collective) << " " << to_string(c.fusion) << ": " << r.first_wrong;
    EXPECT_EQ(r.checked, expected_checked);
  }
  ncclComm_t comm_ = nullptr;
  StrategyContext ctx_;
};

TEST_F(KernelNcclOneRank, EveryCollectiveAndTheUnfusedEpilogue) {
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    StrategyCase c;
    c.dtype = dtype;
    c.nranks = 1;
    c.count = 4096 * 3;
    for (Collective coll : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll}) {
      c.collective = coll;
      expect_ok(c, c.count);
    }
    c.collective = Collective::AllToAllV;
    c.alltoallv_counts = {777};
    expect_ok(c, 777);
    c.collective = Collective::AllReduce;
    c.hidden = 4096;
    c.fusion = FusionOp::ResidualRmsNorm;
    expect_ok(c, 2 * c.count);
    c.fusion = FusionOp::ResidualRmsNormQuantFp8;
    expect_ok(c, 3 * c.count);
  }
}

// NCCL_SYMMETRIC: the same all-reduce on ncclMemAlloc'd buffers registered as symmetric windows (NCCL >= 2.27).
TEST_F(KernelNcclOneRank, SymmetricWindowsAllReduce) {
  int loaded = 0;
  ASSERT_EQ(ncclGetVersion(&loaded), ncclSuccess);
  if (loaded < 22700) GTEST_SKIP() << "NCCL " << loaded << " loaded: symmetric windows need NCCL >= 2.27";
  const StrategyDescriptor* s = find_strategy("NCCL_SYMMETRIC", Collective::AllReduce);
  ASSERT_NE(s, nullptr);
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    for (bool in_place : {false, true}) {
      StrategyCase c;
      c.dtype = dtype;
      c.nranks = 1;
      c.count = 4096 * 3 + 5;
      c.in_place = in_place;
      auto state = s->init(ctx_, c);
      s->run(*state, nullptr);
      const CheckResult r = s->check(*state);
      EXPECT_TRUE(r.ok()) << to_string(dtype) << (in_place ? " in place: " : ": ") << r.first_wrong;
      EXPECT_EQ(r.checked, c.count);
    }
  }
}
#endif

}  // namespace
}  // namespace arfit::kernels
