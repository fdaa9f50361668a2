// A team of ranks whose workspaces are registered once and mapped into each other: the resource the
// custom all-reduce kernels run on. Two ways to build one:
//  * create_ipc: one rank per process and GPU. Each process allocates its workspace, exports it with
//    cudaIpcGetMemHandle, the handles are exchanged through a HandleExchange (MPI in
//    kernels/team/mpi_handle_exchange.h, so this library itself does not link MPI), and each process maps its
//    peers' workspaces with cudaIpcOpenMemHandle.
//  * create_virtual: N "virtual ranks" in one process on one device (separate workspaces, peer pointers
//    into the same device). One launch covers all ranks, so they are co-resident, and the kernels run the
//    same device code, barriers included. For correctness testing on a single GPU; not an NVLink timing.
// The multimem strategies need more than the IPC workspace: every rank's staging bound to a CUDA multicast object.
// create_ipc builds one (kernels/team/multicast_staging.h) when every rank's GPU supports multicast; the multimem
// launches take their pointer table from multimem_pointers(). create_virtual never can: a multicast object binds one
// memory per device, and the virtual ranks share one device. multicast_refusal() says why a team has none.
// Destruction frees everything this process allocated or mapped. In IPC mode it is collective (every rank
// destroys its team, and the HandleExchange must outlive it): each rank closes its mappings of the peers'
// workspaces, all ranks meet, then each frees its own (ipc_teardown), so no rank frees memory a peer still maps.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kernels/all_reduce.h"
#include "kernels/team/team_layout.h"

namespace arfit::kernels {

class MulticastStaging;

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
  // The table of a multimem launch: the same signals (the IPC workspace), but staging[r] is rank r's multicast-bound
  // staging as mapped here and multicast_staging its multicast address. pointers() when the team has no multicast
  // staging (multicast_staging nullptr: validate_multicast_team refuses it).
  TeamPointers multimem_pointers(int blocks_per_rank) const;
  // Why the team has no multicast staging; empty when it has one.
  const std::string& multicast_refusal() const { return multicast_refusal_; }
  // A barrier wait longer than this traps (the launch fails, the CUDA context is lost). Default 20 s.
  void set_barrier_timeout_ns(std::uint64_t ns) { barrier_timeout_ns_ = ns; }

  // Stops this process's launches: raises the abort word (host-mapped memory) every block polls while it waits
  // in a barrier; the blocks leave their kernels instead of waiting for peers that will not come.
  void request_abort();
  // Collective over the team (every rank calls it, e.g. after the ranks agreed a case was aborted): waits until
  // this process's work on `stream` (cudaStream_t) has stopped, meets every rank, zeroes this process's flags and
  // epochs on that stream, clears the abort word, and meets every rank again, so no rank launches before all
  // were reset and no reset races a kernel still running. Throws DeviceError when a kernel trapped (the context
  // is lost then).
  void recover(void* stream);

 private:
  Team() = default;
  void reset_signals(void* stream);
  int nranks_ = 0, first_rank_ = 0, local_ranks_ = 0, device_ = 0, max_blocks_per_rank_ = 0;
  std::int64_t max_bytes_ = 0;
  std::uint64_t barrier_timeout_ns_ = kDefaultBarrierTimeoutNs;
  std::vector<void*> workspace_;   // every rank's workspace as seen from this process
  std::vector<void*> owned_;   // workspaces this process allocated (cudaFree on teardown)
  std::vector<void*> mapped_;  // peers' workspaces opened via IPC (cudaIpcCloseMemHandle on teardown)
  std::uint32_t* abort_host_ = nullptr;          // the abort word (cudaHostAlloc, mapped)
  const std::uint32_t* abort_device_ = nullptr;  // its device address
  HandleExchange* exchange_ = nullptr;           // IPC: the ranks' rendezvous for teardown and recovery
  std::unique_ptr<MulticastStaging> multicast_;  // IPC on multicast GPUs: the multimem kernels' staging
  std::string multicast_refusal_;                // why multicast_ is empty
};

// ---- host-side rules of team construction and teardown (no GPU needed; tested in tests/kernels) ----

// Blocks per rank that can all be resident at once when `local_ranks` ranks share `sms` SMs and an SM holds
// `active_blocks_per_sm` blocks of every kernel (cudaOccupancyMaxActiveBlocksPerMultiprocessor, minimum over
// the instantiations), capped at kMaxBlocksPerRank. Throws KernelError (Device) when not even one block per
// rank fits: the barriers would wait for blocks that can never start.
int co_resident_blocks_per_rank(int active_blocks_per_sm, int sms, int local_ranks);

// The rank counts every team shares (Team, HostTeam, HostTeamView): one the custom kernels are instantiated for.
// Throws KernelError (Ranks), the message starting with `who`.
void check_team_ranks(const std::string& who, int nranks);
// Blocks one launch may give a rank: 1..kMaxBlocksPerRank (the signal area has flags for that many). Throws
// KernelError (Device), the message starting with `who`.
void check_blocks_per_rank(const std::string& who, int blocks);

// The per-message limit of a team asked for `max_bytes`: rounded up to a multiple of 128 (staging and scratch
// slots stay aligned). Throws KernelError (Workspace), the message starting with `who`, when max_bytes is not
// positive or the rank's whole workspace (workspace_allocation_bytes of the result) would not fit in 64 bits: a
// wrapped size would allocate a few KiB for a team that then accepts messages of any size.
std::int64_t team_max_bytes(const std::string& who, std::int64_t max_bytes);

// The first two ranks whose devices have the same identifier (PCI bus id), if any: two IPC ranks on one GPU.
std::optional<std::pair<int, int>> ranks_sharing_a_device(const std::vector<std::string>& device_ids);

// The IPC teardown order, collective over `exchange`: close_imports() (this rank's mappings of its peers'
// memory), a barrier, then free_own() (its exported memory), so no rank frees memory a peer still maps.
void ipc_teardown(HandleExchange& exchange, const std::function<void()>& close_imports,
                  const std::function<void()>& free_own);

}  // namespace arfit::kernels
