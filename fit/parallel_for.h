// The one parallel loop of fit/ (model-set fitting and every evaluation protocol), also the adaptive simulation's
// (planner/simulate.cpp, which replays fits table by table). Internal to those components.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace arfit::fit::detail {

// fn(i) for i in [0, n) on up to `threads` threads (at most n; 1 or fewer: in this thread, in order). Items
// are handed out one at a time, so uneven items balance. Each fn(i) must write only its own slot: the result
// then does not depend on the number of threads.
//
// The calling thread takes items too. An exception thrown by fn (std::bad_alloc under a memory limit) stops the
// handing out of items and is rethrown here once every thread has finished, as it would be without threads: one
// escaping a worker thread would end the process with std::terminate (an abort, exit 134) instead of the command's
// error. A thread that cannot be started (no memory for its stack) leaves its share to the others.
template <typename Fn>
void parallel_for(std::size_t n, int threads, Fn fn) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto work = [&] {
    try {
      for (std::size_t i = next++; i < n && !stop; i = next++) fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
      stop = true;
    }
  };
  std::vector<std::thread> pool;
  try {
    pool.reserve(static_cast<std::size_t>(threads - 1));
    for (int w = 1; w < threads; ++w) pool.emplace_back(work);
  } catch (const std::exception&) {
    // std::system_error (no thread) or std::bad_alloc (no room for the list): fewer threads share the items.
  }
  work();
  for (auto& th : pool) th.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace arfit::fit::detail
