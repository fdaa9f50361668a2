#include "kernels/team.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "kernels/cuda_check.h"

namespace arfit::kernels {

void throw_cuda_error(cudaError_t status, const char* call, const char* file, int line) {
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                    cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

std::string cuda_device_unavailable_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls start clean
    return "no CUDA device: cudaGetDeviceCount returned " + std::to_string(static_cast<int>(status)) + " (" +
           cudaGetErrorName(status) + ": " + cudaGetErrorString(status) + ")";
  }
  if (count == 0) return "no CUDA device: cudaGetDeviceCount returned 0 devices";
  return "";
}

namespace {

std::int64_t round_up(std::int64_t v, std::int64_t to) { return (v + to - 1) / to * to; }

void check_team_size(int nranks, std::int64_t max_bytes) {
  if (!custom_all_reduce_supports_ranks(nranks)) {
    throw KernelError("Team: unsupported rank count " + std::to_string(nranks) +
                      " (the custom kernels are instantiated for 2, 4 or 8 ranks)");
  }
  if (max_bytes <= 0) throw KernelError("Team: max_bytes must be positive, got " + std::to_string(max_bytes));
}

int co_resident_blocks(int device, int local_ranks) {
  int sms = 0;
  ARFIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  // __launch_bounds__(512, 1) guarantees one block per SM fits, so SM count / local ranks blocks per rank
  // are resident together (the barriers need every block of every rank running at once).
  const int blocks = std::min(kMaxBlocksPerRank, sms / local_ranks);
  if (blocks < 1) {
    throw KernelError("Team: device " + std::to_string(device) + " has " + std::to_string(sms) + " SMs, fewer than the " +
                      std::to_string(local_ranks) + " virtual ranks that must be co-resident");
  }
  return blocks;
}

}  // namespace

std::unique_ptr<Team> Team::create_virtual(int nranks, std::int64_t max_bytes, int device) {
  check_team_size(nranks, max_bytes);
  std::unique_ptr<Team> team(new Team());
  team->nranks_ = nranks;
  team->first_rank_ = 0;
  team->local_ranks_ = nranks;
  team->device_ = device;
  team->max_bytes_ = round_up(max_bytes, 128);
  ARFIT_CUDA_CHECK(cudaSetDevice(device));
  team->max_blocks_per_rank_ = co_resident_blocks(device, nranks);
  for (int r = 0; r < nranks; ++r) {
    void* base = nullptr;
    ARFIT_CUDA_CHECK(cudaMalloc(&base, static_cast<std::size_t>(workspace_allocation_bytes(team->max_bytes_))));
    team->owned_.push_back(base);
    team->table_.signals[r] = static_cast<RankSignals*>(base);
    team->table_.staging[r] = static_cast<char*>(base) + sizeof(RankSignals);
    team->table_.scratch[r] = static_cast<char*>(base) + sizeof(RankSignals) + team->max_bytes_;
  }
  team->reset_signals();
  return team;
}

std::unique_ptr<Team> Team::create_ipc(HandleExchange& exchange, std::int64_t max_bytes, int device) {
  const int nranks = exchange.size();
  check_team_size(nranks, max_bytes);
  std::unique_ptr<Team> team(new Team());
  team->nranks_ = nranks;
  team->first_rank_ = exchange.rank();
  team->local_ranks_ = 1;
  team->device_ = device;
  team->max_bytes_ = round_up(max_bytes, 128);
  ARFIT_CUDA_CHECK(cudaSetDevice(device));

  // Every rank must use the same block partition and the same limit.
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
    team->table_.signals[r] = static_cast<RankSignals*>(peer);
    team->table_.staging[r] = static_cast<char*>(peer) + sizeof(RankSignals);
    team->table_.scratch[r] = static_cast<char*>(peer) + sizeof(RankSignals) + team->max_bytes_;
  }
  // Nobody launches before every rank has zeroed its flags and mapped its peers.
  exchange.barrier();
  return team;
}

Team::~Team() {
  // Teardown must not throw: errors here are ignored (the context may already be shutting down).
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
  for (void* p : mapped_) cudaIpcCloseMemHandle(p);
  for (void* p : owned_) cudaFree(p);
}

TeamPointers Team::pointers(int blocks_per_rank) const {
  TeamPointers t = table_;
  t.max_bytes = max_bytes_;
  t.nranks = nranks_;
  t.first_rank = first_rank_;
  t.local_ranks = local_ranks_;
  t.blocks_per_rank = blocks_per_rank;
  return t;
}

void Team::reset_signals() {
  ARFIT_CUDA_CHECK(cudaSetDevice(device_));
  for (void* p : owned_) ARFIT_CUDA_CHECK(cudaMemset(p, 0, sizeof(RankSignals)));
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace arfit::kernels
