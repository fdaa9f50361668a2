// The multimem strategies' staging on a GPU IPC team: every rank's staging buffer bound to one CUDA multicast
// object (NVLS), so that one address reaches offset k of every rank's buffer. CUDA builds only (arfit_kernels).
//
// Built collectively by Team::create_ipc when every rank's GPU reports CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED:
//  1. each rank allocates its staging with cuMemCreate (max_bytes rounded up to the multicast granularity, shareable
//     as a POSIX file descriptor) and maps it locally;
//  2. rank 0 creates the multicast object (cuMulticastCreate, one device per rank) and exports it as a descriptor;
//     every rank exports its allocation the same way;
//  3. the descriptors travel over unix-domain sockets (kernels/team/fd_passing.h; MPI cannot carry them): rank 0's
//     multicast object to every rank, every rank's allocation to every other rank;
//  4. every rank imports them, adds its device to the multicast object (cuMulticastAddDevice) and maps its peers'
//     allocations (the kernels' scalar tail reads peers' staging through unicast pointers);
//  5. after a rendezvous of all ranks (no bind before every device was added), every rank binds its allocation at
//     offset 0 (cuMulticastBindMem) and maps the multicast object: that address is TeamPointers::multicast_staging.
// Every phase ends with an agreement over the HandleExchange, so on a failure every rank releases what it built and
// the team has no multicast staging on any rank (the multimem strategies are refused, saying why).
// The driver API is reached through cudaGetDriverEntryPointByVersion, so nothing links libcuda
// (kernels/team/multicast_driver.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace arfit::kernels {

class HandleExchange;
struct MulticastDriver;  // the driver calls it makes (kernels/team/multicast_driver.h)

class MulticastStaging {
 public:
  // What create() ends with, the same on every rank: the staging, or no staging and the reason.
  struct Outcome {
    std::unique_ptr<MulticastStaging> staging;
    std::string refusal;  // empty when staging is set
  };
  // Collective over `exchange` (one rank per process, `device` this rank's GPU, current). Throws only what the
  // exchange throws; CUDA and socket failures end as a refusal ("multicast setup failed: rank R: <call>: <error>").
  static Outcome create(HandleExchange& exchange, int device, std::int64_t max_bytes);
  // create() after this rank's support check: `unsupported` is its reason not to take part (empty: it can, and
  // `driver` makes the driver calls; the tests pass an emulation of the driver, kernels/team/multicast_driver.h).
  static Outcome create_with(HandleExchange& exchange, int device, std::int64_t max_bytes, const MulticastDriver* driver,
                             const std::string& unsupported);
  // Releases whatever this process still holds, without meeting anyone (for a team that failed to build; a built
  // team is torn down with close_imports / free_own in ipc_teardown's order).
  ~MulticastStaging();
  MulticastStaging(const MulticastStaging&) = delete;
  MulticastStaging& operator=(const MulticastStaging&) = delete;

  void* multicast_address() const { return reinterpret_cast<void*>(multicast_address_); }
  // Rank r's staging allocation as mapped in this process, for every rank.
  const std::vector<void*>& staging() const { return staging_; }
  std::size_t bytes_per_rank() const { return bytes_; }

  // Teardown, first half: unmaps this process's mappings of its peers' allocations and drops its references to them.
  void close_imports();
  // Teardown, second half (after every rank's first half, so no peer still maps or reads this rank's memory):
  // unbinds this rank's allocation, unmaps and releases the multicast object and the allocation.
  void free_own();

 private:
  // cuda.h's handle and address types (both unsigned long long), kept out of this header.
  using AllocationHandle = unsigned long long;  // CUmemGenericAllocationHandle
  using DeviceAddress = unsigned long long;     // CUdeviceptr

  explicit MulticastStaging(const MulticastDriver& driver) : driver_(&driver) {}
  // The phases of create() (each throws DeviceError naming the driver call that failed).
  void allocate_own(int device_ordinal, std::int64_t max_bytes);
  int export_handle(AllocationHandle handle) const;
  void create_multicast_object();
  void import_peers_and_add_device(const std::vector<int>& allocation_fds, int multicast_fd);
  void bind_and_map_multicast();
  DeviceAddress map_here(AllocationHandle handle) const;
  void unmap_here(DeviceAddress address) const;

  const MulticastDriver* driver_;
  int device_ = 0;  // CUdevice
  int rank_ = 0, nranks_ = 0;
  std::size_t bytes_ = 0, granularity_ = 0;
  bool has_own_ = false, has_multicast_ = false, bound_ = false;
  AllocationHandle own_ = 0, multicast_ = 0;
  std::vector<std::optional<AllocationHandle>> imported_;  // index rank: peers' allocations (imported)
  std::vector<void*> staging_;  // index rank: every rank's allocation mapped here; nullptr where not mapped
  DeviceAddress multicast_address_ = 0;
};

}  // namespace arfit::kernels
