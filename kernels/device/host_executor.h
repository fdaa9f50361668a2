// Runs CUDA-style kernels (the bodies of kernels/device/all_reduce_kernels.h, through the host half of
// kernels/device/primitives.h) on the CPU: a grid of blocks, each block's threads synchronising with
// __syncthreads and exchanging values through block sums, every block of every virtual rank running at the
// same time as the others.
//
// Execution model: one OS thread per block, the block's threads as fibers (Boost.Context) on that thread.
//  * Why not one OS thread per CUDA thread: a block barrier then costs a futex wake-up per thread, and the
//    fused epilogue has several barriers per row (block sums); 8 ranks x 4 blocks x 64 threads would be 2048
//    threads on 2 cores. Fibers make a barrier a handful of user-space context switches (tens of ns each).
//  * Why not sequential blocks: the barrier protocol is the thing under test; blocks of different ranks
//    must really run concurrently (as co-resident CUDA blocks do), so each block gets its own OS thread and
//    the flags are real atomics written and read by different threads.
//  * A thread spinning on a flag yields its fiber (spin_pause); when no fiber of the block can move, the OS
//    thread yields and then sleeps with a growing back-off, so the blocks that do have work get the cores.
//  * ThreadSanitizer: every fiber switch is announced with __tsan_switch_to_fiber, so TSan sees each CUDA
//    thread as its own thread; the switch itself orders the fibers of one block (it plays __syncthreads),
//    while blocks (and so ranks) are ordered only by the flags' release/acquire, which is what TSan checks.
//  * A trap (barrier timeout) or an exception in any thread ends the whole launch (as a trap ends a CUDA
//    context): the other blocks stop at their next wait, and launch() throws KernelTrap naming the block and
//    thread. Threads that leave a block while others wait at a barrier are reported the same way.
//  * Randomisation (LaunchOptions::seed): blocks start in a shuffled order after seeded random delays, and
//    each block resumes its fibers in a new seeded order on every pass, to shake out ordering assumptions.
//
// A launch of one block of one thread (the host backend's configuration) runs inline on the calling thread:
// no thread, no fiber.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/device/host_elements.h"
#include "kernels/kernel_types.h"

namespace arfit::kernels::device::host {

struct LaunchOptions {
  // 0: blocks start in index order without delays and fibers run in thread order (deterministic);
  // otherwise the seed of the start order, the start delays and the fiber order.
  std::uint64_t seed = 0;
  int max_start_delay_us = 0;  // each block sleeps a seeded random time in [0, max] before it starts
  // An abort flag the kernels' barrier waits read next to their abort word (the bench watchdog's flag).
  const std::atomic<bool>* external_abort = nullptr;
};

// A kernel thread called trap(), threw, or left its block while others waited at a barrier.
class KernelTrap : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

struct Launch;
struct Fiber;

// One block: its barrier state and the shared memory block_sum uses.
struct BlockState {
  Launch* launch = nullptr;
  int index = 0;
  int threads = 1;
  // __syncthreads: threads arrived at the current barrier, completed barriers, and the OR of predicates.
  int arrived = 0;
  std::uint64_t generation = 0;
  bool predicate_or = false;
  bool result_or = false;
  std::vector<float> slots;  // block_sum: one value per thread
  // Scheduler bookkeeping: anything that lets the block move on (an arrival, a completed barrier, a
  // finished or started thread) bumps `events`; a pass without events backs off.
  std::uint64_t events = 0;
  bool cancelled = false;  // the launch trapped: fibers unwind at their next wait
};

// What a kernel thread sees: its block and its index.
struct ThreadContext {
  BlockState* block = nullptr;
  int thread = 0;
  Fiber* fiber = nullptr;  // nullptr when the block runs inline (one thread)
  std::uint64_t spins = 0;  // inline only: consecutive spin_pause calls of the current wait
};

struct Launch {
  int blocks = 0;
  LaunchOptions options;
  std::atomic<bool> trapped{false};
  std::mutex error_mutex;
  std::string error;  // the first trap's or exception's description
};

// The calling kernel thread's context (set by the scheduler before it resumes a fiber).
inline thread_local ThreadContext* tl_current = nullptr;
inline ThreadContext& current() { return *tl_current; }

// __syncthreads_or for the calling kernel thread.
bool sync_threads_or(bool predicate);
// Inside a flag wait: yield the fiber (or, inline, pause and then yield the OS thread).
void spin_pause();
std::uint64_t timer_ns();
[[noreturn]] void trap(const char* why);
// 1 when the launch's LaunchOptions::external_abort is raised, else 0.
std::uint32_t external_abort_requested();

// Runs body() as every thread of a grid of `blocks` blocks of `threads` threads and waits for all of them.
// Throws KernelTrap when a thread trapped or threw (after every block has stopped).
void launch(int blocks, int threads, const LaunchOptions& options, const std::function<void()>& body);

}  // namespace arfit::kernels::device::host
