// The one parallel loop of fit/ (model-set fitting and every evaluation protocol). Internal to the component.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace arfit::fit::detail {

// fn(i) for i in [0, n) on up to `threads` threads (at most n; 1 or fewer: in this thread, in order). Items
// are handed out one at a time, so uneven items balance. Each fn(i) must write only its own slot: the result
// then does not depend on the number of threads.
template <typename Fn>
void parallel_for(std::size_t n, int threads, Fn fn) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) fn(i);
    });
  for (auto& th : pool) th.join();
}

}  // namespace arfit::fit::detail
