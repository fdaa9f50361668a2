// A team of ranks whose workspaces are registered once and mapped into each other: the resource the
// custom all-reduce kernels run on. Two ways to build one:
//  * create_ipc: one rank per process and GPU. Each process allocates its workspace, exports it with
//    cudaIpcGetMemHandle, the handles are exchanged through a HandleExchange (MPI in
//    kernels/mpi_handle_exchange.h, so this library itself does not link MPI), and each process maps its
//    peers' workspaces with cudaIpcOpenMemHandle.
//  * create_virtual: N "virtual ranks" in one process on one device (separate workspaces, peer pointers
//    into the same device). One launch covers all ranks, so they are co-resident, and the kernels run the
//    same device code, barriers included. For correctness testing on a single GPU; not an NVLink timing.
// Destruction frees everything this process allocated or mapped (close IPC mappings, then free).
// In IPC mode call HandleExchange::barrier() before destroying the teams so no peer still uses a mapping.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/all_reduce.h"
#include "kernels/team_layout.h"

namespace arfit::kernels {

// Collective exchange of small blobs among the processes of a team.
class HandleExchange {
 public:
  virtual ~HandleExchange() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Gathers `bytes` from every rank into `all` (size() * bytes, in rank order).
  virtual void all_gather(const void* mine, void* all, std::size_t bytes) = 0;
  virtual void barrier() = 0;
};

class Team {
 public:
  // max_bytes: the largest message (bytes per rank) the team accepts; rounded up to a multiple of 128.
  static std::unique_ptr<Team> create_virtual(int nranks, std::int64_t max_bytes, int device = 0);
  static std::unique_ptr<Team> create_ipc(HandleExchange& exchange, std::int64_t max_bytes, int device);
  ~Team();
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;

  int nranks() const { return nranks_; }
  int first_rank() const { return first_rank_; }
  int local_ranks() const { return local_ranks_; }
  bool is_virtual() const { return local_ranks_ > 1; }
  int device() const { return device_; }
  std::int64_t max_bytes() const { return max_bytes_; }
  // Blocks per rank that are guaranteed co-resident with all other local ranks' blocks (one block per SM
  // at most, agreed as the minimum over all ranks so every rank launches the same partition).
  int max_blocks_per_rank() const { return max_blocks_per_rank_; }
  TeamShape shape() const { return TeamShape{nranks_, local_ranks_, max_bytes_}; }
  // The pointer table for a launch using `blocks_per_rank` blocks per rank.
  TeamPointers pointers(int blocks_per_rank) const;
  // Resets all barrier flags and epochs (device-synchronous). Only when no collective is in flight on any rank.
  void reset_signals();

 private:
  Team() = default;
  int nranks_ = 0, first_rank_ = 0, local_ranks_ = 0, device_ = 0, max_blocks_per_rank_ = 0;
  std::int64_t max_bytes_ = 0;
  TeamPointers table_{};
  std::vector<void*> owned_;   // workspaces this process allocated (cudaFree on teardown)
  std::vector<void*> mapped_;  // peers' workspaces opened via IPC (cudaIpcCloseMemHandle on teardown)
};

}  // namespace arfit::kernels
