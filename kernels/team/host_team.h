// A virtual team in host memory: `nranks` ranks driven by one process, each with its own workspace laid out as
// on a GPU (kernels/team/team_layout.h), for running the kernels on the CPU (all_reduce_on_host). The
// kernels-host tests use it; bench/host builds its own view over an MPI shared-memory window instead.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/all_reduce.h"
#include "kernels/team/page_aligned_buffer.h"

namespace arfit::kernels {

class HostTeam {
 public:
  // max_bytes: the largest message (bytes per rank), rounded up to a multiple of 128. Staging and scratch are
  // filled with 0xFF bytes (NaN in every dtype), so data a kernel reads before anybody wrote it shows.
  HostTeam(int nranks, std::int64_t max_bytes, int max_blocks_per_rank = kMaxBlocksPerRank);
  ~HostTeam();
  HostTeam(const HostTeam&) = delete;
  HostTeam& operator=(const HostTeam&) = delete;

  // The team as the CPU launch reads it, checked once when the team was built (or its timeout changed).
  const HostTeamView& view() const { return view_; }
  // What the view is built from: all ranks local, this team's workspaces, limits and abort word.
  HostTeamSpec spec() const;
  // Zeroes every flag and epoch (no launch may be running).
  void reset_signals();
  // The abort word the kernels' barrier waits poll: raise it from another thread to stop a launch.
  void request_abort();
  void clear_abort();
  void set_barrier_timeout_ns(std::uint64_t ns);

 private:
  int nranks_ = 0;
  std::int64_t max_bytes_ = 0;
  int max_blocks_per_rank_ = 0;
  std::uint64_t barrier_timeout_ns_ = kDefaultBarrierTimeoutNs;
  std::vector<PageAlignedBuffer> buffers_;
  std::uint32_t abort_word_ = 0;  // accessed atomically (__atomic builtins, like the kernels' flags)
  HostTeamView view_;
};

}  // namespace arfit::kernels
