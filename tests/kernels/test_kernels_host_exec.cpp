// The host execution of the kernels and the lifecycle rules it makes testable without a GPU (ctest label
// kernels-host): the executor's block barrier, block sums and concurrency; a barrier that times out fails the
// launch instead of hanging; an aborted launch stops and the team recovers; the host element conversions
// against the reference's; the team rules (co-residency, one GPU per IPC rank, teardown order); and that the
// FP8 check catches a kernel quantising the wrong value.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <thread>

#include "kernels/device/all_reduce_kernels.h"
#include "kernels/device/host_elements.h"
#include "kernels/device/primitives.h"
#include "kernels/team.h"
#include "kernels_host_support.h"
#include "thread_exchange.h"

namespace arfit::kernels::testing {
namespace {

namespace host = device::host;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// ---------------------------------------------------------------- executor

TEST(KernelsHostExecutor, BlockBarrierOrdersEveryThreadsWrites) {
  // Thread t writes slot t, barrier, then reads its neighbour's: wrong without a working barrier, for every
  // fiber order the seed produces.
  constexpr int kThreads = 64;
  std::atomic<int> wrong{0};
  for (std::uint64_t seed : {std::uint64_t{0}, derived_seed(1), derived_seed(2)}) {
    std::vector<int> slots(kThreads * 4, -1);
    host::LaunchOptions options;
    options.seed = seed;
    host::launch(4, kThreads, options, [&] {
      const int b = device::block_index(), t = device::thread_index();
      for (int round = 0; round < 3; ++round) {
        slots[static_cast<std::size_t>(b * kThreads + t)] = round * 1000 + t;
        device::sync_threads();
        const int peer = (t + 1) % kThreads;
        if (slots[static_cast<std::size_t>(b * kThreads + peer)] != round * 1000 + peer) ++wrong;
        device::sync_threads();
      }
    });
  }
  EXPECT_EQ(wrong.load(), 0);
}

TEST(KernelsHostExecutor, SyncThreadsOrTellsEveryThread) {
  std::atomic<int> saw_true{0}, saw_false{0};
  host::launch(2, 32, {}, [&] {
    // Only thread 5 of block 1 votes yes: block 1 sees true everywhere, block 0 false everywhere.
    const bool vote = device::block_index() == 1 && device::thread_index() == 5;
    (device::sync_threads_or(vote) ? saw_true : saw_false)++;
  });
  EXPECT_EQ(saw_true.load(), 32);
  EXPECT_EQ(saw_false.load(), 32);
}

TEST(KernelsHostExecutor, BlockSumIsTheGpuOrderAndIdenticalInEveryThread) {
  constexpr int kThreads = 64;
  std::vector<float> values(kThreads);
  std::mt19937 rng(static_cast<std::uint32_t>(run_seed()));
  for (float& v : values) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng);
  // The GPU's order: per warp an xor butterfly (lane 0's result), then warps in order.
  float expected = 0;
  for (int w = 0; w < kThreads / 32; ++w) {
    std::array<float, 32> lane;
    for (int l = 0; l < 32; ++l) lane[static_cast<std::size_t>(l)] = values[static_cast<std::size_t>(32 * w + l)];
    for (int offset = 16; offset > 0; offset >>= 1) {
      std::array<float, 32> next;
      for (int l = 0; l < 32; ++l) next[static_cast<std::size_t>(l)] = lane[static_cast<std::size_t>(l)] + lane[static_cast<std::size_t>(l ^ offset)];
      lane = next;
    }
    expected += lane[0];
  }
  std::vector<std::uint32_t> results(kThreads);
  host::LaunchOptions options;
  options.seed = derived_seed(3);
  host::launch(1, kThreads, options, [&] {
    const int t = device::thread_index();
    const float sum = device::block_sum<kThreads>(values[static_cast<std::size_t>(t)]);
    std::memcpy(&results[static_cast<std::size_t>(t)], &sum, 4);
  });
  std::uint32_t expected_bits;
  std::memcpy(&expected_bits, &expected, 4);
  for (std::uint32_t bits : results) EXPECT_EQ(bits, expected_bits);
}

TEST(KernelsHostExecutor, AllBlocksRunConcurrently) {
  // Every block waits (through a flag, as the kernels do) until all blocks have started: this only finishes
  // if the blocks run at the same time, not one after another.
  constexpr int kBlocks = 24;
  std::uint32_t started = 0;
  const auto t0 = Clock::now();
  host::LaunchOptions options;
  options.seed = derived_seed(4);
  options.max_start_delay_us = 2000;
  host::launch(kBlocks, 32, options, [&] {
    if (device::thread_index() == 0) __atomic_fetch_add(&started, 1u, __ATOMIC_RELEASE);
    while (device::load_acquire_system(&started) < kBlocks) device::spin_pause();
    device::sync_threads();
  });
  EXPECT_EQ(started, static_cast<std::uint32_t>(kBlocks));
  EXPECT_LT(seconds_since(t0), 30.0);
}

TEST(KernelsHostExecutor, ThreadsLeavingWhileOthersWaitFailTheLaunch) {
  const auto t0 = Clock::now();
  try {
    host::launch(2, 64, {}, [&] {
      if (device::thread_index() >= 32) return;  // CUDA: undefined; here: a reported failure, not a hang
      device::sync_threads();
    });
    ADD_FAILURE() << "divergent barrier not reported";
  } catch (const host::KernelTrap& e) {
    EXPECT_NE(std::string(e.what()).find("left the kernel while 32 waited at a block barrier"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(seconds_since(t0), 10.0);
}

TEST(KernelsHostExecutor, TrapEndsTheWholeLaunchWithTheThreadNamed) {
  std::uint32_t never = 0;
  try {
    host::launch(3, 32, {}, [&] {
      if (device::block_index() == 2 && device::thread_index() == 7) device::trap();
      // The other blocks wait for something that never comes: the trap must end their waits too.
      while (device::load_acquire_system(&never) == 0) device::spin_pause();
    });
    ADD_FAILURE() << "trap not reported";
  } catch (const host::KernelTrap& e) {
    EXPECT_NE(std::string(e.what()).find("block 2 thread 7"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- barrier timeout, abort, recovery

// A 2-rank team whose rank 1 believes it is far ahead (its epochs say 100 barriers passed): rank 1 waits for
// flags rank 0 will never write, as when ranks launched different sequences of collectives.
HostCase desynchronised_case() {
  HostCase c;
  c.algorithm = AllReduceAlgorithm::OneShot;
  c.dtype = DType::FP32;
  c.nranks = 2;
  c.count = 4096;
  c.threads_per_block = 32;
  return c;
}

void desynchronise(HostTeam& team) {
  const TeamPointers t = team.view().table();
  for (int b = 0; b < kMaxBlocksPerRank; ++b) t.signals[1]->barrier_epoch[b] = 100;
}

AllReduceParams params_for(const HostCase& c, std::vector<PageAlignedBuffer>& storage) {
  AllReduceParams p;
  p.dtype = c.dtype;
  p.count = c.count;
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  for (int r = 0; r < c.nranks; ++r) {
    storage.emplace_back(bytes);
    storage.emplace_back(bytes);
    AllReduceBuffers b;
    b.input = storage[storage.size() - 2].data();
    b.output = storage.back().data();
    std::memset(storage[storage.size() - 2].data(), 0, bytes);
    p.buffers.push_back(b);
  }
  return p;
}

TEST(KernelsHostLifecycle, BarrierTimeoutIsAFailureNotAHang) {
  HostTeam team(2, 1 << 20, 2);
  team.set_barrier_timeout_ns(200ull * 1000 * 1000);
  desynchronise(team);
  const HostCase c = desynchronised_case();
  std::vector<PageAlignedBuffer> storage;
  const AllReduceParams p = params_for(c, storage);
  const auto t0 = Clock::now();
  try {
    all_reduce_on_host(c.algorithm, team.view(), p, c.threads_per_block);
    ADD_FAILURE() << "a barrier that can never complete did not trap";
  } catch (const host::KernelTrap& e) {
    EXPECT_NE(std::string(e.what()).find("a peer never arrived"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(t0), 20.0);
}

// Raises `raise` after `delay`, from another thread (the bench watchdog's role).
class DelayedRaise {
 public:
  DelayedRaise(std::function<void()> raise, std::chrono::milliseconds delay)
      : thread_([raise = std::move(raise), delay] {
          std::this_thread::sleep_for(delay);
          raise();
        }) {}
  ~DelayedRaise() { thread_.join(); }

 private:
  std::thread thread_;
};

TEST(KernelsHostLifecycle, AbortStopsTheLaunchAndTheTeamRecovers) {
  HostTeam team(2, 1 << 20, 2);
  team.set_barrier_timeout_ns(600ull * 1000 * 1000 * 1000);  // only the abort can end the wait
  desynchronise(team);
  HostCase c = desynchronised_case();
  std::vector<PageAlignedBuffer> storage;
  const AllReduceParams p = params_for(c, storage);
  const auto t0 = Clock::now();
  bool completed = true;
  {
    DelayedRaise raise([&] { team.request_abort(); }, std::chrono::milliseconds(150));
    completed = all_reduce_on_host(c.algorithm, team.view(), p, c.threads_per_block);
  }
  EXPECT_FALSE(completed) << "an aborted launch must say so";
  EXPECT_LT(seconds_since(t0), 30.0);
  // Recovery: the launch has returned (every block stopped), so the signals can be reset; then the team works.
  team.reset_signals();
  team.clear_abort();
  c.count = 4100;
  run_and_check(team, c, 2, derived_seed(5));
}

// A desynchronised launch (one rank never arrives) that the runner's external abort flag stops after 150 ms;
// the barrier timeout is 10 minutes, so only the abort can end it. `drop_abort_word`: a team view without an
// abort word, so the kernels poll none of their own. Returns whether the launch completed.
static bool launch_stopped_by_external_abort(bool drop_abort_word) {
  HostTeam team(2, 1 << 20, 1);
  team.set_barrier_timeout_ns(600ull * 1000 * 1000 * 1000);
  desynchronise(team);
  const HostCase c = desynchronised_case();
  std::vector<PageAlignedBuffer> storage;
  const AllReduceParams p = params_for(c, storage);
  HostTeamSpec spec = team.spec();
  if (drop_abort_word) spec.abort_flag = nullptr;
  const HostTeamView view("test team", spec);
  std::atomic<bool> watchdog{false};
  host::LaunchOptions options;
  options.external_abort = &watchdog;
  DelayedRaise raise([&] { watchdog.store(true); }, std::chrono::milliseconds(150));
  return all_reduce_on_host(c.algorithm, view, p, 1, options);
}

TEST(KernelsHostLifecycle, AnExternalAbortFlagStopsTheLaunchToo) { EXPECT_FALSE(launch_stopped_by_external_abort(false)); }

// Without an abort word the external abort is still seen: the launch gives the kernels a word to poll that only
// the external flag raises.
TEST(KernelsHostLifecycle, AnExternalAbortStopsALaunchWhoseTeamHasNoAbortWord) {
  EXPECT_FALSE(launch_stopped_by_external_abort(true));
}

// ---------------------------------------------------------------- element conversions

TEST(KernelsHostElements, ConversionsMatchTheReferenceBitForBit) {
  for (std::uint32_t code = 0; code < 0x10000; ++code) {
    const auto bits = static_cast<std::uint16_t>(code);
    const float bf = host::bf16_to_float(bits), hf = host::fp16_to_float(bits);
    const float rbf = bf16_bits_to_float(bits), rhf = fp16_bits_to_float(bits);
    ASSERT_TRUE(std::memcmp(&bf, &rbf, 4) == 0 || (std::isnan(bf) && std::isnan(rbf))) << std::hex << code;
    ASSERT_TRUE(std::memcmp(&hf, &rhf, 4) == 0 || (std::isnan(hf) && std::isnan(rhf))) << std::hex << code;
  }
  std::mt19937 rng(static_cast<std::uint32_t>(run_seed()));
  std::vector<float> values = {0.0f, -0.0f, 1.0f, 448.0f, 464.0f, 465.0f, 1e-9f, 65504.0f, 65520.0f, 1.0f / 512,
                               1.5f / 512, 2.5f / 512, INFINITY, -INFINITY};
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) continue;
    values.push_back(f);
    values.push_back(std::ldexp(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng), static_cast<int>(rng() % 40) - 20));
  }
  for (float f : values) {
    ASSERT_EQ(host::float_to_bf16(f), float_to_bf16_bits(f)) << f;
    ASSERT_EQ(host::float_to_fp16(f), float_to_fp16_bits(f)) << f;
    ASSERT_EQ(host::float_to_e4m3_satfinite(f), float_to_e4m3_bits_satfinite(f)) << f;
  }
}

// ---------------------------------------------------------------- the FP8 check bites

TEST(KernelsHostFp8, TheCheckRejectsQuantisingTheUnroundedOutput) {
  // A correct run, then its e4m3 bytes replaced by e4m3 of the exact (unrounded) normalised output: the bytes
  // then differ from e4m3 of the stored bf16 output wherever the double rounding crosses an e4m3 midpoint.
  HostTeam team(2, 1 << 20, 1);
  HostCase c;
  c.dtype = DType::BF16;
  c.fusion = FusionOp::ResidualRmsNormOutQuantFp8;  // the norm output is written: its e4m3 is checked bit for bit
  c.count = 64 * 256;
  c.hidden = 256;
  c.fp8_scale = 0.5f;
  run_and_check(team, c, 1, 77);
  const AllReduceExpectation e = expectation_for(c, 77);
  // Reference outputs stored as bf16, and e4m3 of the unrounded values.
  std::vector<std::vector<unsigned char>> inputs;
  std::vector<const void*> pointers;
  for (int r = 0; r < 2; ++r) {
    inputs.push_back(detail::seeded_host(c.dtype, c.count, 77, InputRole::Data, r));
    pointers.push_back(inputs.back().data());
  }
  const auto residual = detail::seeded_host(c.dtype, c.count, 77, InputRole::Residual, kReplicatedRank);
  const auto gamma = detail::seeded_host(c.dtype, c.hidden, 77, InputRole::Gamma, kReplicatedRank);
  const NormReference norm = reference_residual_rms_norm(reference_all_reduce(c.dtype, pointers, c.count), c.dtype,
                                                         residual.data(), gamma.data(), c.hidden, e.rms_eps, e.fp8_scale,
                                                         true);
  RankOutputs o;
  o.output.resize(static_cast<std::size_t>(c.count) * 2);
  o.residual_out.resize(static_cast<std::size_t>(c.count) * 2);
  o.fp8_out.resize(static_cast<std::size_t>(c.count));
  for (std::int64_t i = 0; i < c.count; ++i) {
    set_element(c.dtype, o.output.data(), i, norm.out[static_cast<std::size_t>(i)]);
    set_element(c.dtype, o.residual_out.data(), i, norm.residual_out[static_cast<std::size_t>(i)]);
    o.fp8_out[static_cast<std::size_t>(i)] = float_to_e4m3_bits_satfinite(static_cast<float>(norm.out[static_cast<std::size_t>(i)] / c.fp8_scale));
  }
  const CheckResult r = check_all_reduce_outputs(e, {o}, false);
  EXPECT_GT(r.wrong, 0) << "quantising the unrounded output went unnoticed";
  EXPECT_NE(r.first_wrong.find("e4m3 of the stored output"), std::string::npos) << r.first_wrong;
}

// ---------------------------------------------------------------- NVFP4 building blocks

// The kernels' e2m1 / e4m3 helpers and scale layout (kernels/device) against the reference's independent ones.
TEST(KernelsHostNvfp4, DeviceConversionsAndLayoutMatchTheReference) {
  // Every e2m1 boundary, its neighbours, ties, saturation, both signs.
  for (int k = -32000; k <= 32000; ++k) {
    const float x = static_cast<float>(k) / 4096.0f;  // steps of 2^-12 over [-7.8, 7.8]: ties land exactly
    EXPECT_EQ(device::e2m1_from_float(x), float_to_e2m1_bits(x)) << x;
  }
  EXPECT_EQ(device::e2m1_from_float(0.75f), 0x2u);  // ties to the even code: 0.75 -> 1.0
  EXPECT_EQ(device::e2m1_from_float(5.0f), 0x6u);   // 5 -> 4
  EXPECT_EQ(device::e2m1_from_float(-100.0f), 0xfu);
  for (int code = 0; code < 256; ++code) {
    if ((code & 0x7f) == 0x7f) continue;  // NaN
    EXPECT_EQ(device::e4m3_to_float(static_cast<std::uint8_t>(code)), e4m3_bits_to_float(static_cast<std::uint8_t>(code)))
        << code;
  }
  for (std::int64_t columns : {1, 4, 5, 9, 256}) {
    for (std::int64_t row = 0; row < 300; row += 7) {
      for (std::int64_t column = 0; column < columns; ++column) {
        EXPECT_EQ(device::nvfp4_scale_offset(row, column, columns), nvfp4_swizzled_scale_offset(row, column, columns));
      }
    }
  }
  // A block of 16: scale e4m3(global * amax / 6), codes of v / (scale / global).
  float values[16];
  for (int k = 0; k < 16; ++k) values[k] = static_cast<float>(k - 8) * 0.375f;  // amax 3
  std::uint32_t packed[2];
  const std::uint8_t scale = device::nvfp4_quantize_block(values, 2.0f, packed);
  EXPECT_EQ(e4m3_bits_to_float(scale), 1.0f);                       // 2 * 3 / 6
  EXPECT_EQ(packed[0] & 0xf, float_to_e2m1_bits(-3.0 * 2.0));       // element 0: -3 * 2 / 1 -> -6
  EXPECT_EQ((packed[1] >> 28) & 0xf, float_to_e2m1_bits(7 * 0.375 * 2.0));  // element 15 in the high nibble
}

// The unfused epilogue (after NCCL / MPI_Allreduce) implements every quantising fusion with the same row routine:
// its outputs pass the same check as the fused kernels' (the reduced input rounded to the dtype first, as NCCL's is).
TEST(KernelsHostNvfp4, TheUnfusedEpilogueQuantisesEveryFusion) {
  constexpr int kRanks = 2;
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    for (FusionOp fusion : all_fusion_ops()) {
      if (fusion == FusionOp::None) continue;
      const std::int64_t hidden = 80, count = 130 * hidden;  // past one 128-row scale tile, 5 scale columns
      const auto bytes = static_cast<std::size_t>(count * dtype_bytes(dtype));
      std::vector<unsigned char> reduced(bytes), output(bytes, 0xff), residual_out(bytes, 0xff);
      std::vector<unsigned char> quant(static_cast<std::size_t>(std::max<std::int64_t>(1, quant_out_bytes(fusion, count))), 0xff);
      std::vector<unsigned char> scales(static_cast<std::size_t>(std::max<std::int64_t>(1, scale_out_bytes(fusion, count, hidden))), 0xff);
      std::vector<std::vector<unsigned char>> inputs;
      std::vector<const void*> pointers;
      for (int r = 0; r < kRanks; ++r) {
        inputs.push_back(detail::seeded_host(dtype, count, 5, InputRole::Data, r));
        pointers.push_back(inputs.back().data());
      }
      const ReducedReference sum = reference_all_reduce(dtype, pointers, count);
      for (std::int64_t i = 0; i < count; ++i) set_element(dtype, reduced.data(), i, sum.sum[static_cast<std::size_t>(i)]);
      const auto residual = detail::seeded_host(dtype, count, 5, InputRole::Residual, kReplicatedRank);
      const auto gamma = detail::seeded_host(dtype, hidden, 5, InputRole::Gamma, kReplicatedRank);
      AllReduceBuffers b;
      b.residual_in = residual.data();
      b.residual_out = residual_out.data();
      b.gamma = gamma.data();
      b.output = output.data();
      b.fp8_out = quant.data();
      b.scale_out = scales.data();
      residual_rms_norm_on_host(dtype, fusion, count, hidden, 1e-6f, 0.125f, reduced.data(), b, 32);
      AllReduceExpectation e;
      e.dtype = dtype;
      e.fusion = fusion;
      e.nranks = kRanks;
      e.count = count;
      e.hidden = hidden;
      e.rms_eps = 1e-6f;
      e.fp8_scale = 0.125f;
      e.seed = 5;
      e.tolerance_factor = 2;  // the reduced input was rounded once more
      RankOutputs o;
      o.output = output;
      o.residual_out = residual_out;
      o.fp8_out = quant;
      o.scale_out = scales;
      const CheckResult r = check_all_reduce_outputs(e, {o}, false);
      EXPECT_EQ(r.wrong, 0) << to_string(dtype) << " " << to_string(fusion) << ": " << r.first_wrong;
      EXPECT_GE(r.checked, count) << to_string(dtype) << " " << to_string(fusion);
      if (!fusion_writes_norm_output(fusion)) {  // the QUANT ops leave the norm output untouched
        EXPECT_TRUE(std::all_of(output.begin(), output.end(), [](unsigned char x) { return x == 0xff; }))
            << to_string(fusion);
      }
    }
  }
}

// ---------------------------------------------------------------- team rules

TEST(KernelsHostTeamRules, CoResidencyNeedsABlockPerRank) {
  EXPECT_EQ(co_resident_blocks_per_rank(1, 132, 8), 16);
  EXPECT_EQ(co_resident_blocks_per_rank(2, 132, 1), kMaxBlocksPerRank);
  EXPECT_EQ(co_resident_blocks_per_rank(1, 8, 8), 1);
  try {
    co_resident_blocks_per_rank(1, 4, 8);
    ADD_FAILURE() << "8 virtual ranks on 4 SMs accepted";
  } catch (const KernelError& e) {
    EXPECT_EQ(e.parameter(), KernelParam::Device);
    EXPECT_NE(std::string(e.what()).find("8 virtual ranks resident at once"), std::string::npos) << e.what();
  }
  EXPECT_THROW(co_resident_blocks_per_rank(0, 132, 1), KernelError);  // a kernel that cannot run at all
}

TEST(KernelsHostTeamRules, TwoRanksOnOneGpuAreFound) {
  EXPECT_FALSE(ranks_sharing_a_device({"0000:17:00.0", "0000:65:00.0"}).has_value());
  const auto shared = ranks_sharing_a_device({"0000:17:00.0", "0000:65:00.0", "0000:17:00.0"});
  ASSERT_TRUE(shared.has_value());
  EXPECT_EQ(shared->first, 0);
  EXPECT_EQ(shared->second, 2);
}

TEST(KernelsHostTeamRules, IpcTeardownClosesEverywhereBeforeAnyRankFrees) {
  constexpr int kRanks = 4;
  ThreadGroup group(kRanks);
  std::mutex log_mutex;
  std::vector<std::string> log;
  auto note = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(log_mutex);
    log.push_back(what);
  };
  std::vector<std::thread> ranks;
  for (int r = 0; r < kRanks; ++r) {
    ranks.emplace_back([&, r] {
      ThreadExchange exchange(group, r);  // tests/kernels/thread_exchange.h
      // Rank 0 is slow to close its mappings: nobody may free before it has.
      ipc_teardown(
          exchange,
          [&] {
            if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
            note("close");
          },
          [&] { note("free"); });
    });
  }
  for (auto& t : ranks) t.join();
  ASSERT_EQ(log.size(), 2u * kRanks);
  for (int i = 0; i < kRanks; ++i) EXPECT_EQ(log[static_cast<std::size_t>(i)], "close") << i;
  for (int i = kRanks; i < 2 * kRanks; ++i) EXPECT_EQ(log[static_cast<std::size_t>(i)], "free") << i;
}

}  // namespace
}  // namespace arfit::kernels::testing
