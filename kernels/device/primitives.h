// The one shim between the kernel bodies (kernels/device/all_reduce_kernels.h) and the machine that runs them.
// The kernel bodies use only what is declared here, so nvcc (CUDA build, .cu files) and the host C++ compiler
// (the CPU execution in kernels/device/host_executor.h: tests, bench/host) compile the very same function
// bodies. Each primitive exists twice, once per target, side by side below:
//
//   qualifiers     ARFIT_DEVICE, ARFIT_KERNEL(threads), ARFIT_UNROLL
//   indices        thread_index() = threadIdx.x, block_index() = blockIdx.x, grid_blocks() = gridDim.x
//   block sync     sync_threads() = __syncthreads(), sync_threads_or(p) = __syncthreads_or(p)
//   reductions     block_sum<kThreads>(v): warp butterflies, then the warps' sums in warp order (fixed order)
//   memory         Vec16, load_16, load_16_read_only, store_16 (16-byte packed), store_e4m3 / copy_e4m3
//   flags          store_release_system, load_acquire_system, load_relaxed_system (32-bit flag words)
//   progress       spin_pause() (inside a flag wait), kSpinsPerPoll, timer_ns(), trap()
//   elements       bf16_t, fp16_t, to_float<T>, from_float<T>, reciprocal_sqrt, e4m3_from_float, e4m3_to_float
//   multicast      MulticastSpan, multicast_staging(team), multimem_ld_reduce_16<T, kRanks>, multimem_st_16<T, kRanks>,
//                  multicast_alias_fence() (NVLS, sm_90+; on the host the multicast address is the set of peer
//                  staging buffers: ld_reduce loads every peer's vector and adds in fp32 in rank order, st stores to
//                  every peer)
//
// On the host every block runs on its own OS thread and its threads run as fibers (host_executor.h explains
// why), so the host flag wait yields (spin_pause) instead of burning the core its peers need.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/kernel_types.h"
#include "kernels/team/team_layout.h"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#else
#include <cmath>

#include "kernels/device/host_executor.h"
#endif

#if defined(__CUDACC__)
#define ARFIT_DEVICE __device__ __forceinline__
#define ARFIT_KERNEL(threads) __global__ void __launch_bounds__(threads, 1)
#define ARFIT_UNROLL _Pragma("unroll")
#else
#define ARFIT_DEVICE inline
#define ARFIT_KERNEL(threads) inline void
#define ARFIT_UNROLL
#endif

namespace arfit::kernels::device {

// Elements of T in one 16-byte packed load or store (kVectorBytes); also the e4m3 bytes of one pack (store_e4m3).
template <typename T>
struct VectorWidth {
  static constexpr int value = kVectorBytes / static_cast<int>(sizeof(T));
};

#if defined(__CUDACC__)
// =============================================================================================== CUDA

using Vec16 = uint4;
using bf16_t = __nv_bfloat16;
using fp16_t = __half;

ARFIT_DEVICE int thread_index() { return static_cast<int>(threadIdx.x); }
ARFIT_DEVICE int block_index() { return static_cast<int>(blockIdx.x); }
ARFIT_DEVICE int grid_blocks() { return static_cast<int>(gridDim.x); }
ARFIT_DEVICE void sync_threads() { __syncthreads(); }
// __syncthreads_or: a block barrier that also tells every thread whether any thread's predicate was true.
ARFIT_DEVICE bool sync_threads_or(bool predicate) { return __syncthreads_or(predicate ? 1 : 0) != 0; }

// Sum of `value` over the block in a fixed order (xor butterfly within each warp, then the warp sums in
// warp order), so every rank computing the same row gets the same bits. Every thread must call it.
template <int kThreads>
ARFIT_DEVICE float block_sum(float value) {
  static_assert(kThreads % 32 == 0, "whole warps");
  constexpr int kWarps = kThreads / 32;
  __shared__ float warp_sums[kWarps];
  ARFIT_UNROLL
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xffffffffu, value, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = value;
  __syncthreads();
  float total = 0;
  ARFIT_UNROLL
  for (int w = 0; w < kWarps; ++w) total += warp_sums[w];
  __syncthreads();  // warp_sums is reused by the next call
  return total;
}

// Read-only path (ld.global.nc): only for buffers no thread writes during the launch (the user's input
// when it does not alias an output, gamma).
ARFIT_DEVICE Vec16 load_16_read_only(const void* p) {
  Vec16 v;
  asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// Coherent weak load: peers' staging/scratch buffers (written during the launch, ordered by the barrier)
// and buffers that may alias an output. `volatile` + "memory" keep it on its side of the barrier in
// program order (the compiler may not move it across the barrier's asm).
ARFIT_DEVICE Vec16 load_16(const void* p) {
  Vec16 v;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// Weak 16-byte store; published to peers by the next barrier's release.
ARFIT_DEVICE void store_16(void* p, Vec16 v) {
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
}

// e4m3 of W values (W = VectorWidth<T>: 8 for 16-bit T, 4 for fp32) times inv_scale, saturating to +-448, stored
// with one 8- or 4-byte store, so dst needs W-byte alignment only (fp8_pack_bytes, checked by the validation).
template <int W>
ARFIT_DEVICE void store_e4m3(std::uint8_t* dst, const float* values, float inv_scale) {
  static_assert(W == 8 || W == 4);
  std::uint32_t word[W / 4];
  ARFIT_UNROLL
  for (int k = 0; k < W / 4; ++k) {
    const auto lo = __nv_cvt_float2_to_fp8x2(make_float2(values[4 * k] * inv_scale, values[4 * k + 1] * inv_scale),
                                             __NV_SATFINITE, __NV_E4M3);
    const auto hi = __nv_cvt_float2_to_fp8x2(make_float2(values[4 * k + 2] * inv_scale, values[4 * k + 3] * inv_scale),
                                             __NV_SATFINITE, __NV_E4M3);
    word[k] = static_cast<std::uint32_t>(lo) | (static_cast<std::uint32_t>(hi) << 16);
  }
  if constexpr (W == 8) {
    asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(dst), "r"(word[0]), "r"(word[1]) : "memory");
  } else {
    asm volatile("st.global.u32 [%0], %1;" ::"l"(dst), "r"(word[0]) : "memory");
  }
}

// Copies W e4m3 bytes (the unit store_e4m3 writes) with coherent loads.
template <int W>
ARFIT_DEVICE void copy_e4m3(std::uint8_t* dst, const std::uint8_t* src) {
  if constexpr (W == 8) {
    std::uint32_t a, b;
    asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(a), "=r"(b) : "l"(src) : "memory");
    asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(dst), "r"(a), "r"(b) : "memory");
  } else {
    std::uint32_t a;
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(a) : "l"(src) : "memory");
    asm volatile("st.global.u32 [%0], %1;" ::"l"(dst), "r"(a) : "memory");
  }
}

// One e4m3 byte of x (round to nearest even, saturating to +-448; NaN stays NaN): the NVFP4 block scales and
// LOWPRECISION's quantised transport.
ARFIT_DEVICE std::uint8_t e4m3_from_float(float x) {
  return static_cast<std::uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// 8 bytes (two words, `lo` first) with one weak store: the packed e2m1 of one NVFP4 block.
ARFIT_DEVICE void store_8(void* p, std::uint32_t lo, std::uint32_t hi) {
  asm volatile("st.global.v2.u32 [%0], {%1, %2};" ::"l"(p), "r"(lo), "r"(hi) : "memory");
}

// One byte, weak (an NVFP4 block scale); the coherent load reads a peer's scratch after the barrier, `volatile` +
// "memory" keep both on their side of it as load_16 / store_16 do.
ARFIT_DEVICE void store_byte(void* p, std::uint8_t v) {
  asm volatile("st.global.u8 [%0], %1;" ::"l"(p), "h"(static_cast<unsigned short>(v)) : "memory");
}
ARFIT_DEVICE std::uint8_t load_byte(const void* p) {
  unsigned short v;
  asm volatile("ld.global.u8 %0, [%1];" : "=h"(v) : "l"(p) : "memory");
  return static_cast<std::uint8_t>(v);
}

// Release at system scope: a peer (another GPU over NVLink/PCIe, or this GPU in virtual mode) that acquires
// this flag sees every write the releasing thread observed before it (cumulative over the CTA barrier).
ARFIT_DEVICE void store_release_system(std::uint32_t* flag, std::uint32_t value) {
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value) : "memory");
}

// Acquire at system scope: once the peer's flag value is read, the peer's published data is visible.
ARFIT_DEVICE std::uint32_t load_acquire_system(const std::uint32_t* flag) {
  std::uint32_t value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

// Relaxed at system scope: the abort word in host-mapped memory; no data is published with it, it only has
// to be seen eventually (the load must not be hoisted out of the wait loop: volatile asm).
ARFIT_DEVICE std::uint32_t load_relaxed_system(const std::uint32_t* flag) {
  std::uint32_t value;
  asm volatile("ld.relaxed.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

// Inside a flag wait. Nothing on the GPU: the waiting warp only competes with its own block's other warps,
// which are parked at the barrier after the wait.
ARFIT_DEVICE void spin_pause() {}
// Spins between two looks at the abort word and the clock: a poll of host-mapped memory crosses PCIe.
inline constexpr unsigned kSpinsPerPoll = 1024;

ARFIT_DEVICE std::uint64_t timer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Ends the launch with an error (cudaErrorLaunchFailure; the context is unusable afterwards).
ARFIT_DEVICE void trap() { __trap(); }

template <typename T>
ARFIT_DEVICE float to_float(T x);
template <>
ARFIT_DEVICE float to_float<float>(float x) { return x; }
template <>
ARFIT_DEVICE float to_float<fp16_t>(fp16_t x) { return __half2float(x); }
template <>
ARFIT_DEVICE float to_float<bf16_t>(bf16_t x) { return __bfloat162float(x); }

template <typename T>
ARFIT_DEVICE T from_float(float x);
template <>
ARFIT_DEVICE float from_float<float>(float x) { return x; }
template <>
ARFIT_DEVICE fp16_t from_float<fp16_t>(float x) { return __float2half_rn(x); }
template <>
ARFIT_DEVICE bf16_t from_float<bf16_t>(float x) { return __float2bfloat16_rn(x); }

ARFIT_DEVICE float reciprocal_sqrt(float x) { return rsqrtf(x); }

#else
// =============================================================================================== host

struct Vec16 {
  std::uint32_t x, y, z, w;
};
using bf16_t = host::bf16_t;
using fp16_t = host::fp16_t;

ARFIT_DEVICE int thread_index() { return host::current().thread; }
ARFIT_DEVICE int block_index() { return host::current().block->index; }
ARFIT_DEVICE int grid_blocks() { return host::current().block->launch->blocks; }
ARFIT_DEVICE void sync_threads() { host::sync_threads_or(false); }
ARFIT_DEVICE bool sync_threads_or(bool predicate) { return host::sync_threads_or(predicate); }

// The GPU's fixed order, computed from every thread's value: the xor butterfly within each warp (lanes
// exchange partial sums at offsets 16, 8, 4, 2, 1; every lane ends with the same bits, lane 0's are kept),
// then the warp sums added in warp order. Bit-identical to the CUDA block_sum for the same values.
template <int kThreads>
ARFIT_DEVICE float block_sum(float value) {
  if constexpr (kThreads == 1) {
    return value;
  } else {
    static_assert(kThreads % 32 == 0, "whole warps");
    float* slots = host::current().block->slots.data();
    slots[thread_index()] = value;
    sync_threads();
    float total = 0;
    for (int w = 0; w < kThreads / 32; ++w) {
      float lane[32];
      std::memcpy(lane, slots + 32 * w, sizeof lane);
      for (int offset = 16; offset > 0; offset >>= 1) {
        float next[32];
        for (int l = 0; l < 32; ++l) next[l] = lane[l] + lane[l ^ offset];
        std::memcpy(lane, next, sizeof lane);
      }
      total += lane[0];
    }
    sync_threads();  // slots are reused by the next call
    return total;
  }
}

// Plain 16-byte copies: the ordering that matters comes from the flags below (and ThreadSanitizer checks
// exactly that: a data access not ordered by a flag's release/acquire is reported as a race).
ARFIT_DEVICE Vec16 load_16(const void* p) {
  Vec16 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
ARFIT_DEVICE Vec16 load_16_read_only(const void* p) { return load_16(p); }
ARFIT_DEVICE void store_16(void* p, Vec16 v) { std::memcpy(p, &v, sizeof v); }

template <int W>
ARFIT_DEVICE void store_e4m3(std::uint8_t* dst, const float* values, float inv_scale) {
  static_assert(W == 8 || W == 4);
  std::uint8_t bytes[W];
  for (int k = 0; k < W; ++k) bytes[k] = host::float_to_e4m3_satfinite(values[k] * inv_scale);
  std::memcpy(dst, bytes, W);
}

template <int W>
ARFIT_DEVICE void copy_e4m3(std::uint8_t* dst, const std::uint8_t* src) {
  std::memcpy(dst, src, W);
}

ARFIT_DEVICE std::uint8_t e4m3_from_float(float x) { return host::float_to_e4m3_satfinite(x); }

ARFIT_DEVICE void store_8(void* p, std::uint32_t lo, std::uint32_t hi) {
  const std::uint32_t words[2] = {lo, hi};
  std::memcpy(p, words, sizeof words);
}
ARFIT_DEVICE void store_byte(void* p, std::uint8_t v) { *static_cast<std::uint8_t*>(p) = v; }
ARFIT_DEVICE std::uint8_t load_byte(const void* p) { return *static_cast<const std::uint8_t*>(p); }

// The device's st.release.sys: a release store on the flag word (C++17 has no std::atomic_ref, so the GCC
// __atomic builtins on the plain word; the same 32-bit word the GPU accesses, layout unchanged). An acquire
// load that reads this value synchronises with it: everything the storing thread did before (and, through
// sync_threads, everything its block did) happens before the loading thread's subsequent accesses.
ARFIT_DEVICE void store_release_system(std::uint32_t* flag, std::uint32_t value) {
  __atomic_store_n(flag, value, __ATOMIC_RELEASE);
}

// The device's ld.acquire.sys: an acquire load pairing with store_release_system above.
ARFIT_DEVICE std::uint32_t load_acquire_system(const std::uint32_t* flag) {
  return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

// The device's ld.relaxed.sys on the abort word: atomic (no data race with the host thread raising it) but
// unordered, as on the GPU. A host launch may also name an external abort flag (the bench watchdog's), read
// here too: on the GPU the host side copies that flag into the word, on the host the kernel thread reads it.
ARFIT_DEVICE std::uint32_t load_relaxed_system(const std::uint32_t* flag) {
  const std::uint32_t word = __atomic_load_n(flag, __ATOMIC_RELAXED);
  return word != 0 ? word : host::external_abort_requested();
}

// Yields the fiber (its block's other threads run), and the OS thread when its whole block only waits, so
// 8 ranks x several blocks make progress on 2 cores.
ARFIT_DEVICE void spin_pause() { host::spin_pause(); }
// Spins between two looks at the abort word and the clock: a host spin may yield the core for a whole scheduler
// tick, so poll often enough that an abort is seen within milliseconds on a loaded machine.
inline constexpr unsigned kSpinsPerPoll = 16;

ARFIT_DEVICE std::uint64_t timer_ns() { return host::timer_ns(); }

// Fails the launch (host::launch throws KernelTrap naming the block and thread) instead of hanging.
[[noreturn]] inline void trap() { host::trap("trap() in a barrier wait: a peer never arrived"); }

template <typename T>
ARFIT_DEVICE float to_float(T x);
template <>
ARFIT_DEVICE float to_float<float>(float x) { return x; }
template <>
ARFIT_DEVICE float to_float<fp16_t>(fp16_t x) { return host::fp16_to_float(x.bits); }
template <>
ARFIT_DEVICE float to_float<bf16_t>(bf16_t x) { return host::bf16_to_float(x.bits); }

template <typename T>
ARFIT_DEVICE T from_float(float x);
template <>
ARFIT_DEVICE float from_float<float>(float x) { return x; }
template <>
ARFIT_DEVICE fp16_t from_float<fp16_t>(float x) { return fp16_t{host::float_to_fp16(x)}; }
template <>
ARFIT_DEVICE bf16_t from_float<bf16_t>(float x) { return bf16_t{host::float_to_bf16(x)}; }

// rsqrtf is an approximation on the GPU (within 2 ulp); the host computes it correctly rounded from the
// square root. Both are far inside the tolerances the checks use.
ARFIT_DEVICE float reciprocal_sqrt(float x) { return 1.0f / std::sqrt(x); }

#endif

// ---------------------------------------------------------------- target-independent helpers

// One 16-byte vector of T viewed as elements.
template <typename T>
union Packed16 {
  Vec16 raw;
  T element[VectorWidth<T>::value];
  ARFIT_DEVICE Packed16() : raw{} {}
};

// acc[k] += element k of `raw` (fp32 accumulation).
template <typename T>
ARFIT_DEVICE void accumulate(Vec16 raw, float* acc) {
  Packed16<T> p;
  p.raw = raw;
  ARFIT_UNROLL
  for (int k = 0; k < VectorWidth<T>::value; ++k) acc[k] += to_float<T>(p.element[k]);
}

// Rounds W fp32 values to T and packs them into one vector.
template <typename T>
ARFIT_DEVICE Vec16 pack(const float* values) {
  Packed16<T> p;
  ARFIT_UNROLL
  for (int k = 0; k < VectorWidth<T>::value; ++k) p.element[k] = from_float<T>(values[k]);
  return p.raw;
}

// ---------------------------------------------------------------- multicast (NVLS)
//
// A multicast object (cuMulticastCreate, bound to every rank's staging buffer with cuMulticastBindMem) gives one
// address whose offset k is offset k of every rank's staging. multimem.ld_reduce through it returns the sum over the
// ranks (the NVSwitch reduces), multimem.st through it writes every rank's copy. Memory-ordering rules the kernels
// follow (all_reduce_kernels.h), the same on both targets:
//  * the loads and stores are .relaxed.sys: they carry no ordering themselves; the team barrier's release/acquire
//    flags (unicast) order them with the phases before and after;
//  * the unicast stores that filled a staging buffer and the multicast accesses that read or overwrite it are
//    accesses to the same memory through two virtual addresses: multicast_alias_fence() after an acquiring barrier
//    and before a releasing one orders the two address spaces (fence.proxy.alias).
// On the host the multicast address is emulated as the set of peer buffers (team.staging[]), so ThreadSanitizer sees
// every peer access the GPU's switch would make, ordered only by the same barriers.

#if defined(__CUDACC__)

// The multicast address of the staging buffers (TeamPointers::multicast_staging).
struct MulticastSpan {
  char* address;
};
ARFIT_DEVICE MulticastSpan multicast_staging(const TeamPointers& team) {
  return MulticastSpan{static_cast<char*>(team.multicast_staging)};
}

// Sum over every rank of the 16-byte vector at element `element` of the staging buffers, rounded to T.
// bf16/fp16 with .acc::f32 (the switch accumulates in fp32, as the host emulation does); the order in which the
// switch adds the ranks is not specified, so two ranks' one-shot results may differ in the last bit (PyTorch's
// note [multimem_one_shot_all_reduce] says the same). Only sm_90+ has multimem; older architectures trap, and the
// strategy is refused before a launch on them (validate_multicast_device).
template <typename T, int kRanks>
ARFIT_DEVICE Vec16 multimem_ld_reduce_16(const MulticastSpan& mc, std::int64_t element) {
  Vec16 v{};
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const void* p = mc.address + element * static_cast<std::int64_t>(sizeof(T));
  if constexpr (sizeof(T) == 4) {
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  } else if constexpr (std::is_same_v<T, bf16_t>) {
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.bf16x2 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  } else {
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.acc::f32.v4.f16x2 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
  }
#else
  (void)mc;
  (void)element;
  trap();
#endif
  return v;
}

// Stores the 16-byte vector at element `element` of every rank's staging buffer (one switch-replicated store).
template <typename T, int kRanks>
ARFIT_DEVICE void multimem_st_16(const MulticastSpan& mc, std::int64_t element, Vec16 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  void* p = mc.address + element * static_cast<std::int64_t>(sizeof(T));
  asm volatile("multimem.st.relaxed.sys.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
               "r"(v.w)
               : "memory");
#else
  (void)mc;
  (void)element;
  (void)v;
  trap();
#endif
}

// Orders this thread's accesses through the unicast and the multicast address of the same memory (virtual aliases).
ARFIT_DEVICE void multicast_alias_fence() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.alias;" ::: "memory");
#endif
}

#else

// The host's multicast address: the peers' staging buffers themselves, in rank order.
struct MulticastSpan {
  void* const* peers;
};
ARFIT_DEVICE MulticastSpan multicast_staging(const TeamPointers& team) { return MulticastSpan{team.staging}; }

// The switch's reduction, emulated: every peer's vector loaded (plain loads, ordered only by the team barrier, as on
// the GPU) and added in fp32 in rank order 0..kRanks-1, rounded to T once.
template <typename T, int kRanks>
ARFIT_DEVICE Vec16 multimem_ld_reduce_16(const MulticastSpan& mc, std::int64_t element) {
  float acc[VectorWidth<T>::value] = {};
  for (int p = 0; p < kRanks; ++p) accumulate<T>(load_16(static_cast<const T*>(mc.peers[p]) + element), acc);
  return pack<T>(acc);
}

// The switch's replication, emulated: the vector stored into every peer's staging, rank 0 first.
template <typename T, int kRanks>
ARFIT_DEVICE void multimem_st_16(const MulticastSpan& mc, std::int64_t element, Vec16 v) {
  for (int p = 0; p < kRanks; ++p) store_16(static_cast<T*>(mc.peers[p]) + element, v);
}

// One address per buffer on the host: nothing to order between aliases.
ARFIT_DEVICE void multicast_alias_fence() {}

#endif

// The value of an e4m3 byte (bias 7, 3 mantissa bits; the kernels only decode bytes e4m3_from_float made from finite
// values, so never NaN; equal to __nv_cvt_fp8_to_halfraw's value for every such byte, the tests check all 256 codes). Exact on both targets: (8 + m) * 2^e / 1024 and m / 512 are exact in fp32.
ARFIT_DEVICE float e4m3_to_float(std::uint8_t bits) {
  const int exponent = (bits >> 3) & 0xf;
  const int mantissa = bits & 0x7;
  const float magnitude = exponent == 0 ? static_cast<float>(mantissa) * (1.0f / 512)
                                        : static_cast<float>((8 + mantissa) << exponent) * (1.0f / 1024);
  return (bits & 0x80) ? -magnitude : magnitude;
}

// e2m1 code (sign bit 0x8, magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6) of x, round to nearest even and saturating at 6,
// as sm_100's cvt.rn.satfinite.e2m1x2.f32 rounds; NaN gives 6 (0x7). Software on every target (sm_80/90 have no
// e2m1 conversion) so the GPU and the host produce the same bits. Ties go to the even code: 0.25 -> 0, 0.75 -> 1,
// 1.25 -> 1, 1.75 -> 2, 2.5 -> 2, 3.5 -> 4, 5 -> 4.
ARFIT_DEVICE std::uint32_t e2m1_from_float(float x) {
  const std::uint32_t sign = x < 0.0f ? 0x8u : 0u;
  const float a = x < 0.0f ? -x : x;
  std::uint32_t code;
  if (a <= 0.25f) code = 0;
  else if (a < 0.75f) code = 1;
  else if (a <= 1.25f) code = 2;
  else if (a < 1.75f) code = 3;
  else if (a <= 2.5f) code = 4;
  else if (a < 3.5f) code = 5;
  else if (a <= 5.0f) code = 6;
  else code = 7;  // above 5, and NaN (every comparison false)
  return sign | code;
}

// The host validation asks fp8_out for fp8_pack_bytes(dtype) alignment (kernels/kernel_types.h): that must be the
// W bytes store_e4m3<W> / copy_e4m3<W> write at once for each element type.
static_assert(VectorWidth<bf16_t>::value == fp8_pack_bytes(DType::BF16) &&
                  VectorWidth<fp16_t>::value == fp8_pack_bytes(DType::FP16) &&
                  VectorWidth<float>::value == fp8_pack_bytes(DType::FP32),
              "fp8_out's validated alignment is the e4m3 pack the kernels store");

}  // namespace arfit::kernels::device
