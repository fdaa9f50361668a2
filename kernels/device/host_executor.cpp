#include "kernels/device/host_executor.h"
#include "model/splitmix64.h"

#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <algorithm>
#include <numeric>
#include <random>
#include <thread>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#if defined(__SANITIZE_THREAD__)
#define ARFIT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ARFIT_TSAN 1
#endif
#endif

#if defined(ARFIT_TSAN)
// ThreadSanitizer's fiber API (sanitizer/tsan_interface.h): without it TSan would see all fibers of a block as
// one thread whose stack jumps around.
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
}
#endif

namespace arfit::kernels::device::host {

namespace context = boost::context;

namespace {

// Kernel frames are small; the guard page below each stack turns an overflow into a crash, not corruption.
#if defined(ARFIT_TSAN)
constexpr std::size_t kFiberStackBytes = 256 * 1024;
#else
constexpr std::size_t kFiberStackBytes = 64 * 1024;
#endif

// Unwinds a fiber of a cancelled launch from its wait (caught at the fiber's entry).
struct Cancelled {};
// Thrown by trap() after the launch recorded the reason.
struct Trapped {};

// Announces a fiber switch to ThreadSanitizer (no-op otherwise). Flags 0: the switch orders the two fibers,
// as the block barrier it implements does.
void announce_switch([[maybe_unused]] void* tsan_fiber) {
#if defined(ARFIT_TSAN)
  __tsan_switch_to_fiber(tsan_fiber, 0);
#endif
}

// Fiber stacks are reused across launches (a launch of 8 ranks x 3 blocks x 64 threads would otherwise map,
// protect and unmap 1536 stacks). The pool's mutex also orders a stack's last use before its next one, for TSan.
class StackPool {
 public:
  context::stack_context allocate() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        const context::stack_context s = free_.back();
        free_.pop_back();
        return s;
      }
    }
    return context::protected_fixedsize_stack(kFiberStackBytes).allocate();
  }
  void release(const context::stack_context& s) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(s);
  }

 private:
  std::mutex mutex_;
  std::vector<context::stack_context> free_;  // kept for the process's lifetime
};

#if defined(ARFIT_TSAN)
// TSan's fiber states are as costly to create as threads: reused across launches like the stacks.
class TsanFiberPool {
 public:
  void* acquire() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty()) {
        void* f = free_.back();
        free_.pop_back();
        return f;
      }
    }
    return __tsan_create_fiber(0);
  }
  void release(void* f) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(f);
  }

 private:
  std::mutex mutex_;
  std::vector<void*> free_;
};
TsanFiberPool& tsan_fiber_pool() {
  static TsanFiberPool* pool = new TsanFiberPool();
  return *pool;
}
#endif

StackPool& stack_pool() {
  static StackPool* pool = new StackPool();  // never destroyed: fibers may outlive static destruction order
  return *pool;
}

// The stack allocator Boost.Context's fiber takes (allocate / deallocate), backed by the pool.
struct PooledStack {
  context::stack_context allocate() { return stack_pool().allocate(); }
  void deallocate(context::stack_context& s) noexcept { stack_pool().release(s); }
};

void record_failure(Launch& launch, const std::string& what) {
  std::lock_guard<std::mutex> lock(launch.error_mutex);
  if (launch.error.empty()) launch.error = what;
  launch.trapped.store(true);
}

std::string where(const ThreadContext& t) {
  return "block " + std::to_string(t.block->index) + " thread " + std::to_string(t.thread);
}

// When no fiber of a block could move in a whole pass: give the core away, first briefly, then with a
// growing sleep (a block that waits for a slow peer must not take the core that peer needs).
void back_off(int idle_passes) {
  if (idle_passes < 64) {
    std::this_thread::yield();
  } else {
    const int shift = std::min((idle_passes - 64) / 16, 4);
    std::this_thread::sleep_for(std::chrono::microseconds(std::min(200, 16 << shift)));
  }
}

}  // namespace

// One kernel thread of a block run as a fiber.
struct Fiber {
  ThreadContext context;
  context::fiber self;       // the suspended fiber; resuming it runs the thread until its next wait
  context::fiber scheduler;  // inside the fiber: where to switch back to
  void* tsan_fiber = nullptr;
  void* scheduler_tsan_fiber = nullptr;
  bool done = false;
};

namespace {

// Switches from a running fiber back to its block's scheduler; unwinds the fiber when the launch was cancelled.
void yield_to_scheduler(Fiber& f) {
  announce_switch(f.scheduler_tsan_fiber);
  f.scheduler = std::move(f.scheduler).resume();
  if (f.context.block->cancelled) throw Cancelled{};
}

void run_inline(BlockState& block, const std::function<void()>& body) {
  ThreadContext context{&block, 0, nullptr, 0};
  ThreadContext* const saved = tl_current;
  tl_current = &context;
  try {
    body();
  } catch (const Trapped&) {
  } catch (const Cancelled&) {
  } catch (const std::exception& e) {
    record_failure(*block.launch, where(context) + ": " + e.what());
  }
  tl_current = saved;
}

void run_block(BlockState& block, const std::function<void()>& body, std::uint64_t seed) {
  if (block.threads == 1) {
    run_inline(block, body);
    return;
  }
  block.slots.assign(static_cast<std::size_t>(block.threads), 0.0f);
#if defined(ARFIT_TSAN)
  void* const scheduler_tsan_fiber = __tsan_get_current_fiber();
#else
  void* const scheduler_tsan_fiber = nullptr;
#endif
  std::vector<std::unique_ptr<Fiber>> fibers;
  for (int t = 0; t < block.threads; ++t) {
    auto f = std::make_unique<Fiber>();
    f->context = ThreadContext{&block, t, f.get(), 0};
    f->scheduler_tsan_fiber = scheduler_tsan_fiber;
#if defined(ARFIT_TSAN)
    f->tsan_fiber = tsan_fiber_pool().acquire();
#endif
    Fiber* const raw = f.get();
    f->self = context::fiber(std::allocator_arg, PooledStack{},
                             [raw, &body](context::fiber&& scheduler) {
                               raw->scheduler = std::move(scheduler);
                               ++raw->context.block->events;  // started
                               try {
                                 if (!raw->context.block->cancelled) body();
                               } catch (const context::detail::forced_unwind&) {
                                 throw;  // Boost.Context's own unwinding of a destroyed fiber
                               } catch (const Cancelled&) {
                               } catch (const Trapped&) {
                               } catch (const std::exception& e) {
                                 record_failure(*raw->context.block->launch, where(raw->context) + ": " + e.what());
                               }
                               raw->done = true;
                               ++raw->context.block->events;  // finished
                               announce_switch(raw->scheduler_tsan_fiber);
                               return std::move(raw->scheduler);
                             });
    fibers.push_back(std::move(f));
  }

  std::vector<int> order(static_cast<std::size_t>(block.threads));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 rng(seed);
  int finished = 0;
  int idle_passes = 0;
  while (finished < block.threads) {
    if (block.launch->trapped.load(std::memory_order_relaxed)) block.cancelled = true;
    if (seed != 0) std::shuffle(order.begin(), order.end(), rng);
    const std::uint64_t events_before = block.events;
    for (int t : order) {
      Fiber& f = *fibers[static_cast<std::size_t>(t)];
      if (f.done) continue;
      tl_current = &f.context;
      announce_switch(f.tsan_fiber);
      f.self = std::move(f.self).resume();
      tl_current = nullptr;
      if (f.done) ++finished;
    }
    if (finished == block.threads || block.cancelled) continue;
    if (block.arrived > 0 && block.arrived + finished == block.threads) {
      // CUDA leaves this undefined (a barrier that can never complete); here it fails the launch.
      record_failure(*block.launch, "block " + std::to_string(block.index) + ": " + std::to_string(finished) +
                                        " threads left the kernel while " + std::to_string(block.arrived) +
                                        " waited at a block barrier");
      block.cancelled = true;
      continue;
    }
    if (block.events == events_before) {
      back_off(idle_passes++);
    } else {
      idle_passes = 0;
    }
  }
#if defined(ARFIT_TSAN)
  for (auto& f : fibers) tsan_fiber_pool().release(f->tsan_fiber);
#endif
}

}  // namespace

bool sync_threads_or(bool predicate) {
  ThreadContext& t = current();
  BlockState& b = *t.block;
  if (b.threads == 1) {
    t.spins = 0;
    return predicate;
  }
  b.predicate_or = b.predicate_or || predicate;
  ++b.events;
  if (++b.arrived == b.threads) {
    // The last thread to arrive completes the barrier; the others see the new generation when resumed.
    b.arrived = 0;
    b.result_or = b.predicate_or;
    b.predicate_or = false;
    ++b.generation;
    return b.result_or;
  }
  const std::uint64_t generation = b.generation;
  while (b.generation == generation) yield_to_scheduler(*t.fiber);
  // Valid until the next barrier completes, which needs this thread to arrive there first.
  return b.result_or;
}

void spin_pause() {
  ThreadContext& t = current();
  if (t.fiber) {
    yield_to_scheduler(*t.fiber);
    return;
  }
  // Inline (one thread, e.g. one rank per process in bench/host): pause, then yield the core once the wait
  // gets long (ranks may outnumber cores). A trap elsewhere in the launch ends the wait.
  if (t.block->launch->trapped.load(std::memory_order_relaxed)) throw Cancelled{};
  if (++t.spins < 4096) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

std::uint64_t timer_ns() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

void trap(const char* why) {
  ThreadContext& t = current();
  record_failure(*t.block->launch, where(t) + ": " + why);
  throw Trapped{};
}

std::uint32_t external_abort_requested() {
  const std::atomic<bool>* flag = current().block->launch->options.external_abort;
  return flag && flag->load(std::memory_order_relaxed) ? 1u : 0u;
}

void launch(int blocks, int threads, const LaunchOptions& options, const std::function<void()>& body) {
  if (blocks < 1 || threads < 1) {
    throw KernelError("host launch: grid of " + std::to_string(blocks) + " blocks of " + std::to_string(threads) +
                      " threads");
  }
  Launch launch;
  launch.blocks = blocks;
  launch.options = options;
  std::vector<BlockState> states(static_cast<std::size_t>(blocks));
  for (int b = 0; b < blocks; ++b) {
    states[static_cast<std::size_t>(b)].launch = &launch;
    states[static_cast<std::size_t>(b)].index = b;
    states[static_cast<std::size_t>(b)].threads = threads;
  }
  auto block_seed = [&](int b) { return options.seed == 0 ? 0 : splitmix64(options.seed + static_cast<std::uint64_t>(b)); };
  if (blocks == 1) {
    run_block(states[0], body, block_seed(0));
  } else {
    std::vector<int> order(static_cast<std::size_t>(blocks));
    std::iota(order.begin(), order.end(), 0);
    if (options.seed != 0) std::shuffle(order.begin(), order.end(), std::mt19937_64(options.seed));
    std::vector<std::thread> workers;
    workers.reserve(order.size());
    try {
      for (int b : order) {
        workers.emplace_back([&, b] {
          const std::uint64_t seed = block_seed(b);
          if (seed != 0 && options.max_start_delay_us > 0) {
            std::this_thread::sleep_for(std::chrono::microseconds(seed % (static_cast<std::uint64_t>(options.max_start_delay_us) + 1)));
          }
          run_block(states[static_cast<std::size_t>(b)], body, seed);
        });
      }
    } catch (const std::exception& e) {
      // Could not start every block: the started ones would wait for the missing ones forever.
      record_failure(launch, std::string("host launch: starting block threads failed: ") + e.what());
      for (auto& w : workers) w.join();
      throw KernelTrap(launch.error);
    }
    for (auto& w : workers) w.join();
  }
  if (launch.trapped.load()) throw KernelTrap("kernel trapped on the host: " + launch.error);
}

}  // namespace arfit::kernels::device::host
