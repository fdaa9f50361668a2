// A HandleExchange between threads of one process (each thread a rank): the teams' collective rules — the IPC
// teardown order, the multicast setup's agreements — tested without MPI or a GPU.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <mutex>
#include <vector>

#include "kernels/team.h"

namespace arfit::kernels::testing {

// The ranks' meeting point: a reusable barrier (generations, so a fast rank's next barrier does not pass this one)
// and an all-gather through per-rank slots.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), slots_(static_cast<std::size_t>(size)) {}
  int size() const { return size_; }
  void barrier() {
    std::unique_lock<std::mutex> lock(m_);
    const int generation = generation_;
    if (++arrived_ == size_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
    } else {
      cv_.wait(lock, [&] { return generation_ != generation; });
    }
  }
  void all_gather(int rank, const void* mine, void* all, std::size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(m_);
      slots_[static_cast<std::size_t>(rank)].assign(static_cast<const char*>(mine), static_cast<const char*>(mine) + bytes);
    }
    barrier();
    {
      std::lock_guard<std::mutex> lock(m_);
      for (int r = 0; r < size_; ++r) std::memcpy(static_cast<char*>(all) + r * bytes, slots_[static_cast<std::size_t>(r)].data(), bytes);
    }
    barrier();  // nobody overwrites a slot before every rank has read it
  }

 private:
  int size_;
  std::mutex m_;
  std::condition_variable cv_;
  int arrived_ = 0, generation_ = 0;
  std::vector<std::vector<char>> slots_;
};

// One rank's view of the group.
class ThreadExchange : public HandleExchange {
 public:
  ThreadExchange(ThreadGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }
  void all_gather(const void* mine, void* all, std::size_t bytes) override { group_.all_gather(rank_, mine, all, bytes); }
  void barrier() override { group_.barrier(); }

 private:
  ThreadGroup& group_;
  int rank_;
};

}  // namespace arfit::kernels::testing
