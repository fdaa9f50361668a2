#include "kernels/team.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/device/cuda_check.h"
#include "kernels/device/launchers.h"
#include "kernels/team/multicast_staging.h"

namespace arfit::kernels {

namespace {

// Checks the team's size and returns its per-message limit (team_max_bytes), before anything is allocated.
std::int64_t checked_team_size(int nranks, std::int64_t max_bytes) {
  check_team_ranks("Team", nranks);
  return team_max_bytes("Team", max_bytes);
}

// Blocks per rank the device keeps resident for `local_ranks` ranks (occupancy of the kernels as compiled).
int co_resident_blocks(int device, int local_ranks) {
  int sms = 0;
  ARFIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return co_resident_blocks_per_rank(device::min_active_blocks_per_sm(), sms, local_ranks);
}

// The abort word: pinned host memory mapped into the device, polled by waiting blocks.
void allocate_abort_word(std::uint32_t** host, const std::uint32_t** device) {
  ARFIT_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(host), sizeof(std::uint32_t), cudaHostAllocMapped));
  __atomic_store_n(*host, 0u, __ATOMIC_RELAXED);
  void* mapped = nullptr;
  ARFIT_CUDA_CHECK(cudaHostGetDevicePointer(&mapped, *host, 0));
  *device = static_cast<const std::uint32_t*>(mapped);
}

}  // namespace

std::unique_ptr<Team> Team::create_virtual(int nranks, std::int64_t max_bytes, int device) {
  const std::int64_t limit = checked_team_size(nranks, max_bytes);
  std::unique_ptr<Team> team(new Team());
  team->nranks_ = nranks;
  team->first_rank_ = 0;
  team->local_ranks_ = nranks;
  team->device_ = device;
  team->max_bytes_ = limit;
  ARFIT_CUDA_CHECK(cudaSetDevice(device));
  team->max_blocks_per_rank_ = co_resident_blocks(device, nranks);
  allocate_abort_word(&team->abort_host_, &team->abort_device_);
  for (int r = 0; r < nranks; ++r) {
    void* base = nullptr;
    ARFIT_CUDA_CHECK(cudaMalloc(&base, static_cast<std::size_t>(workspace_allocation_bytes(team->max_bytes_))));
    team->owned_.push_back(base);
    team->workspace_.push_back(base);
  }
  team->reset_signals(nullptr);
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  // A multicast object binds one memory per device: the virtual ranks' staging buffers, all on one device, cannot
  // each be bound to it, so the multimem strategies run on IPC teams only.
  team->multicast_refusal_ = "virtual ranks on one GPU cannot form a multicast team; run one rank per GPU";
  return team;
}

std::unique_ptr<Team> Team::create_ipc(HandleExchange& exchange, std::int64_t max_bytes, int device) {
  const int nranks = exchange.size();
  const std::int64_t limit = checked_team_size(nranks, max_bytes);
  std::unique_ptr<Team> team(new Team());
  team->nranks_ = nranks;
  team->first_rank_ = exchange.rank();
  team->local_ranks_ = 1;
  team->device_ = device;
  team->max_bytes_ = limit;
  ARFIT_CUDA_CHECK(cudaSetDevice(device));

  // Every rank must use the same block partition and the same limit, and a GPU of its own.
  struct Agreed {
    std::int64_t max_bytes;
    std::int32_t blocks;
    std::int32_t rank;
    char pci_bus_id[32];  // to check that this GPU can reach every peer's GPU directly (P2P)
  };
  Agreed mine{team->max_bytes_, co_resident_blocks(device, 1), team->first_rank_, {}};
  ARFIT_CUDA_CHECK(cudaDeviceGetPCIBusId(mine.pci_bus_id, sizeof(mine.pci_bus_id), device));
  std::vector<Agreed> all(static_cast<std::size_t>(nranks));
  exchange.all_gather(&mine, all.data(), sizeof(Agreed));
  std::vector<std::string> bus_ids;
  for (const Agreed& a : all) bus_ids.emplace_back(a.pci_bus_id, strnlen(a.pci_bus_id, sizeof(a.pci_bus_id)));
  if (const auto shared = ranks_sharing_a_device(bus_ids)) {
    // Every rank sees the same list, so every rank refuses (nobody waits in a later collective).
    throw KernelError("Team: ranks " + std::to_string(shared->first) + " and " + std::to_string(shared->second) +
                          " both use GPU " + bus_ids[static_cast<std::size_t>(shared->first)] +
                          "; IPC teams need one GPU per rank (more ranks per node than GPUs? use --virtual-ranks "
                          "to play all ranks on one GPU)",
                      KernelParam::Device);
  }
  team->max_blocks_per_rank_ = mine.blocks;
  for (int r = 0; r < nranks; ++r) {
    if (all[static_cast<std::size_t>(r)].max_bytes != mine.max_bytes) {
      throw KernelError("Team: ranks disagree on max_bytes (rank " + std::to_string(r) + " asked for " +
                        std::to_string(all[static_cast<std::size_t>(r)].max_bytes) + ", this rank " +
                        std::to_string(mine.max_bytes) + ")");
    }
    team->max_blocks_per_rank_ = std::min(team->max_blocks_per_rank_, static_cast<int>(all[static_cast<std::size_t>(r)].blocks));
    // The kernels load from and store to peers' memory: every peer GPU that this process can see must be
    // peer-accessible (NVLink or PCIe P2P). Peers on GPUs hidden from this process are left to
    // cudaIpcOpenMemHandle, which fails with its own error when the mapping is impossible.
    int peer_device = -1;
    if (r != team->first_rank_ &&
        cudaDeviceGetByPCIBusId(&peer_device, all[static_cast<std::size_t>(r)].pci_bus_id) == cudaSuccess &&
        peer_device != device) {
      int can_access = 0;
      ARFIT_CUDA_CHECK(cudaDeviceCanAccessPeer(&can_access, device, peer_device));
      if (!can_access) {
        throw KernelError("Team: GPU " + std::string(mine.pci_bus_id) + " (rank " + std::to_string(mine.rank) +
                          ") cannot access GPU " + all[static_cast<std::size_t>(r)].pci_bus_id + " (rank " +
                          std::to_string(r) + ") directly; the custom all-reduce needs peer access (NVLink or PCIe P2P)");
      }
    }
    cudaGetLastError();  // cudaDeviceGetByPCIBusId failing for an invisible GPU is not an error here
  }

  allocate_abort_word(&team->abort_host_, &team->abort_device_);
  void* base = nullptr;
  ARFIT_CUDA_CHECK(cudaMalloc(&base, static_cast<std::size_t>(workspace_allocation_bytes(team->max_bytes_))));
  team->owned_.push_back(base);
  ARFIT_CUDA_CHECK(cudaMemset(base, 0, sizeof(RankSignals)));
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  cudaIpcMemHandle_t handle;
  ARFIT_CUDA_CHECK(cudaIpcGetMemHandle(&handle, base));
  std::vector<cudaIpcMemHandle_t> handles(static_cast<std::size_t>(nranks));
  exchange.all_gather(&handle, handles.data(), sizeof(cudaIpcMemHandle_t));
  for (int r = 0; r < nranks; ++r) {
    void* peer = base;
    if (r != team->first_rank_) {
      ARFIT_CUDA_CHECK(cudaIpcOpenMemHandle(&peer, handles[static_cast<std::size_t>(r)], cudaIpcMemLazyEnablePeerAccess));
      team->mapped_.push_back(peer);
    }
    team->workspace_.push_back(peer);
  }
  // The multimem kernels' staging, bound to a multicast object (collective: every rank ends with it, or every rank
  // without it and the same reason).
  MulticastStaging::Outcome multicast = MulticastStaging::create(exchange, device, team->max_bytes_);
  team->multicast_ = std::move(multicast.staging);
  team->multicast_refusal_ = std::move(multicast.refusal);
  // Nobody launches before every rank has zeroed its flags and mapped its peers.
  exchange.barrier();
  // From here on teardown and recovery are collective (a team that failed to build is freed locally).
  team->exchange_ = &exchange;
  return team;
}

Team::~Team() {
  // Teardown must not throw: errors here are ignored (the context may already be shutting down).
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
  auto close_imports = [this] {
    for (void* p : mapped_) cudaIpcCloseMemHandle(p);
    if (multicast_) multicast_->close_imports();
  };
  // After the barrier: no peer maps this rank's workspace or staging any more, nor uses the multicast object.
  auto free_own = [this] {
    for (void* p : owned_) cudaFree(p);
    if (multicast_) multicast_->free_own();
  };
  if (exchange_) {
    ipc_teardown(*exchange_, close_imports, free_own);
  } else {
    close_imports();
    free_own();
  }
  if (abort_host_) cudaFreeHost(abort_host_);
}

TeamPointers Team::pointers(int blocks_per_rank) const {
  return team_pointers(workspace_.data(), nranks_, first_rank_, local_ranks_, max_bytes_, blocks_per_rank, abort_device_,
                       barrier_timeout_ns_);
}

TeamPointers Team::multimem_pointers(int blocks_per_rank) const {
  TeamPointers t = pointers(blocks_per_rank);
  if (!multicast_) return t;
  // The multimem kernels write their input into staging[me] and read the sums through the multicast address (both
  // the same memory), and their scalar tail reads peers' staging[p] unicast: all must be the multicast-bound buffers.
  for (int r = 0; r < nranks_; ++r) t.staging[r] = multicast_->staging()[static_cast<std::size_t>(r)];
  t.multicast_staging = multicast_->multicast_address();
  return t;
}

void Team::request_abort() { __atomic_store_n(abort_host_, 1u, __ATOMIC_RELAXED); }

void Team::reset_signals(void* stream) {
  ARFIT_CUDA_CHECK(cudaSetDevice(device_));
  for (void* p : owned_) ARFIT_CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(RankSignals), static_cast<cudaStream_t>(stream)));
}

void Team::recover(void* stream) {
  ARFIT_CUDA_CHECK(cudaSetDevice(device_));
  // This process's kernels have stopped (they saw the abort word, or finished) before anything is reset; a
  // trapped kernel surfaces here as the launch's error. The rendezvous below happen whatever this rank found,
  // so that no peer waits in a barrier this rank skipped.
  const cudaError_t stopped = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  if (exchange_) exchange_->barrier();  // ... and so have every peer's, which read and write our flags
  if (stopped == cudaSuccess) {
    reset_signals(stream);
    ARFIT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }
  __atomic_store_n(abort_host_, 0u, __ATOMIC_RELAXED);
  if (exchange_) exchange_->barrier();  // nobody launches before every rank is reset
  if (stopped != cudaSuccess) throw_cuda_error(stopped, "cudaStreamSynchronize (Team::recover)", __FILE__, __LINE__);
}

}  // namespace arfit::kernels
