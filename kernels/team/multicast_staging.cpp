#include "kernels/team/multicast_staging.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

#include "kernels/all_reduce.h"
#include "kernels/device/cuda_check.h"
#include "kernels/team.h"
#include "kernels/team/fd_passing.h"
#include "kernels/team/multicast_driver.h"

namespace arfit::kernels {

namespace {

using std::chrono::milliseconds;

// Generous: the peers are in the middle of the same collective setup, a few driver calls behind at most.
constexpr milliseconds kFdTimeout{60000};
constexpr std::uint32_t kAllocationTag = 1, kMulticastTag = 2;
constexpr CUmemAllocationHandleType kHandleType = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

template <typename F>
void find_entry(F* fn, const char* name) {
  void* entry = cuda_driver_entry_point(name, CUDA_VERSION);
  if (!entry) throw DeviceError(std::string("the CUDA driver has no ") + name + " at version " + std::to_string(CUDA_VERSION));
  *fn = reinterpret_cast<F>(entry);
}

MulticastDriver load_driver() {
  MulticastDriver d{};
  find_entry(&d.error_name, "cuGetErrorName");
  find_entry(&d.device_get, "cuDeviceGet");
  find_entry(&d.allocation_granularity, "cuMemGetAllocationGranularity");
  find_entry(&d.multicast_granularity, "cuMulticastGetGranularity");
  find_entry(&d.create, "cuMemCreate");
  find_entry(&d.release, "cuMemRelease");
  find_entry(&d.address_reserve, "cuMemAddressReserve");
  find_entry(&d.address_free, "cuMemAddressFree");
  find_entry(&d.map, "cuMemMap");
  find_entry(&d.unmap, "cuMemUnmap");
  find_entry(&d.set_access, "cuMemSetAccess");
  find_entry(&d.export_handle, "cuMemExportToShareableHandle");
  find_entry(&d.import_handle, "cuMemImportFromShareableHandle");
  find_entry(&d.multicast_create, "cuMulticastCreate");
  find_entry(&d.multicast_add_device, "cuMulticastAddDevice");
  find_entry(&d.multicast_bind_mem, "cuMulticastBindMem");
  find_entry(&d.multicast_unbind, "cuMulticastUnbind");
  return d;
}


void check(const MulticastDriver& d, CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  const char* name = nullptr;
  d.error_name(result, &name);
  throw DeviceError(std::string(call) + ": " + (name ? name : "CUresult " + std::to_string(result)));
}

// One rank's verdict on a setup phase, gathered from every rank: "rank R: <its error>" for the first rank that
// failed, or empty when all succeeded. Every rank gets the same answer, so every rank takes the same path. It is
// also a rendezvous: no rank leaves the all-gather before every rank has finished the phase and contributed.
std::string agree(HandleExchange& exchange, const std::string& my_error) {
  struct Verdict {
    std::int32_t failed;
    char error[252];
  };
  static_assert(sizeof(Verdict) == 256);
  Verdict mine{};
  mine.failed = my_error.empty() ? 0 : 1;
  std::strncpy(mine.error, my_error.c_str(), sizeof(mine.error) - 1);
  std::vector<Verdict> all(static_cast<std::size_t>(exchange.size()));
  exchange.all_gather(&mine, all.data(), sizeof(Verdict));
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r].failed) return "rank " + std::to_string(r) + ": " + std::string(all[r].error, strnlen(all[r].error, 252));
  }
  return "";
}

// Runs one phase and returns its error text (empty when it succeeded).
template <typename F>
std::string attempt(F&& phase) {
  try {
    phase();
  } catch (const std::exception& e) {
    return e.what()[0] ? e.what() : "unknown error";
  }
  return "";
}

CUmulticastObjectProp multicast_properties(int nranks, std::size_t bytes) {
  CUmulticastObjectProp prop{};
  prop.numDevices = static_cast<unsigned int>(nranks);
  prop.size = bytes;
  prop.handleTypes = kHandleType;
  return prop;
}

}  // namespace

// Loaded once per process (a failed load throws, and the next team tries again).
const MulticastDriver& cuda_multicast_driver() {
  static const MulticastDriver loaded = load_driver();
  return loaded;
}

MulticastStaging::Outcome MulticastStaging::create(HandleExchange& exchange, int device, std::int64_t max_bytes) {
  const MulticastDriver* d = nullptr;
  const std::string unsupported = attempt([&] {
    if (!device_supports_multicast(device)) {
      throw DeviceError("GPU " + std::to_string(device) + " has no multicast (NVLS) support");
    }
    d = &cuda_multicast_driver();
  });
  return create_with(exchange, device, max_bytes, d, unsupported);
}

MulticastStaging::Outcome MulticastStaging::create_with(HandleExchange& exchange, int device, std::int64_t max_bytes,
                                                        const MulticastDriver* d, const std::string& unsupported) {
  const int rank = exchange.rank(), nranks = exchange.size();
  // Phase 0: every rank's GPU supports multicast and its driver has the calls (else nothing is allocated anywhere).
  std::string refused = agree(exchange, unsupported);
  if (!refused.empty()) return {nullptr, "not every rank can join a multicast team (" + refused + ")"};

  std::unique_ptr<MulticastStaging> s(new MulticastStaging(*d));
  s->rank_ = rank;
  s->nranks_ = nranks;
  s->staging_.assign(static_cast<std::size_t>(nranks), nullptr);
  s->imported_.resize(static_cast<std::size_t>(nranks));
  auto abandon = [&](const std::string& why) {
    // Collective, in ipc_teardown's order: nobody releases memory a peer still maps.
    ipc_teardown(exchange, [&] { s->close_imports(); }, [&] { s->free_own(); });
    return Outcome{nullptr, "multicast setup failed: " + why};
  };

  // Phase 1: this rank's allocation, rank 0's multicast object, their descriptors, this rank's socket under rank 0's
  // token. Every socket is bound before phase 2 sends anything (the agreement below is a rendezvous).
  std::uint64_t token = rank == 0 ? draw_fd_passing_token() : 0;
  std::vector<std::uint64_t> tokens(static_cast<std::size_t>(nranks));
  exchange.all_gather(&token, tokens.data(), sizeof(token));
  OwnedFd own_fd, multicast_fd;
  std::unique_ptr<FdPasser> passer;
  refused = agree(exchange, attempt([&] {
                    s->allocate_own(device, max_bytes);
                    if (rank == 0) s->create_multicast_object();
                    own_fd = OwnedFd(s->export_handle(s->own_));
                    if (rank == 0) multicast_fd = OwnedFd(s->export_handle(s->multicast_));
                    passer = std::make_unique<FdPasser>(tokens[0], rank);
                  }));
  if (!refused.empty()) return abandon(refused);

  // Phase 2: the descriptors travel (rank 0's multicast object to every rank, every allocation to every peer).
  std::vector<OwnedFd> allocation_fds;
  refused = agree(exchange, attempt([&] {
                    if (rank == 0) {
                      for (int p = 1; p < nranks; ++p) passer->send(p, multicast_fd.get(), kMulticastTag, kFdTimeout);
                    }
                    allocation_fds = all_gather_fds(*passer, nranks, own_fd.get(), kAllocationTag, kFdTimeout);
                    if (rank != 0) multicast_fd = passer->receive(0, kMulticastTag, kFdTimeout);
                  }));
  if (!refused.empty()) return abandon(refused);

  // Phase 3: import, add this device to the multicast object, map the peers' allocations. The agreement that ends it
  // is the barrier the driver requires between cuMulticastAddDevice and cuMulticastBindMem: binding memory before
  // every participating device has been added is not allowed (CUDA driver API, cuMulticastCreate), so no rank binds
  // before every rank has added its device.
  refused = agree(exchange, attempt([&] {
                    std::vector<int> fds;
                    for (const OwnedFd& fd : allocation_fds) fds.push_back(fd.get());
                    s->import_peers_and_add_device(fds, multicast_fd.get());
                  }));
  if (!refused.empty()) return abandon(refused);

  // Phase 4: bind and map. The agreement after it: no rank's kernel uses the multicast address before every rank's
  // memory is bound to it (a multimem access reaches every bound device).
  refused = agree(exchange, attempt([&] { s->bind_and_map_multicast(); }));
  if (!refused.empty()) return abandon(refused);
  return {std::move(s), ""};
}

void MulticastStaging::allocate_own(int device_ordinal, std::int64_t max_bytes) {
  const MulticastDriver& d = *driver_;
  CUdevice device = 0;
  check(d, d.device_get(&device, device_ordinal), "cuDeviceGet");
  device_ = device;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  prop.requestedHandleTypes = kHandleType;
  std::size_t allocation_granularity = 0, multicast_granularity = 0;
  check(d, d.allocation_granularity(&allocation_granularity, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        "cuMemGetAllocationGranularity");
  const CUmulticastObjectProp mc = multicast_properties(nranks_, static_cast<std::size_t>(max_bytes));
  // The minimum multicast granularity, not the recommended one: the recommended can be far larger than a staging
  // buffer needs, and this memory sits beside the model's on an inference GPU.
  check(d, d.multicast_granularity(&multicast_granularity, &mc, CU_MULTICAST_GRANULARITY_MINIMUM),
        "cuMulticastGetGranularity");
  // Both are powers of two: the larger is a multiple of the smaller. Every rank computes the same (same GPU model).
  granularity_ = std::max(allocation_granularity, multicast_granularity);
  bytes_ = (static_cast<std::size_t>(max_bytes) + granularity_ - 1) / granularity_ * granularity_;
  check(d, d.create(&own_, bytes_, &prop, 0), "cuMemCreate");
  has_own_ = true;
  staging_[static_cast<std::size_t>(rank_)] = reinterpret_cast<void*>(map_here(own_));
}

int MulticastStaging::export_handle(AllocationHandle handle) const {
  int fd = -1;
  check(*driver_, driver_->export_handle(&fd, handle, kHandleType, 0), "cuMemExportToShareableHandle");
  return fd;
}

void MulticastStaging::create_multicast_object() {
  const CUmulticastObjectProp prop = multicast_properties(nranks_, bytes_);
  check(*driver_, driver_->multicast_create(&multicast_, &prop), "cuMulticastCreate");
  has_multicast_ = true;
}

void MulticastStaging::import_peers_and_add_device(const std::vector<int>& allocation_fds, int multicast_fd) {
  const MulticastDriver& d = *driver_;
  auto as_handle = [](int fd) { return reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)); };
  if (!has_multicast_) {
    check(d, d.import_handle(&multicast_, as_handle(multicast_fd), kHandleType), "cuMemImportFromShareableHandle (multicast)");
    has_multicast_ = true;
  }
  check(d, d.multicast_add_device(multicast_, device_), "cuMulticastAddDevice");
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    AllocationHandle peer = 0;
    check(d, d.import_handle(&peer, as_handle(allocation_fds[static_cast<std::size_t>(r)]), kHandleType),
          "cuMemImportFromShareableHandle (peer staging)");
    imported_[static_cast<std::size_t>(r)] = peer;
    staging_[static_cast<std::size_t>(r)] = reinterpret_cast<void*>(map_here(peer));
  }
}

void MulticastStaging::bind_and_map_multicast() {
  const MulticastDriver& d = *driver_;
  // This rank's whole allocation at offset 0 of the object: offset k of the multicast address is offset k of every
  // rank's staging.
  check(d, d.multicast_bind_mem(multicast_, 0, own_, 0, bytes_, 0), "cuMulticastBindMem");
  bound_ = true;
  multicast_address_ = map_here(multicast_);
}

MulticastStaging::DeviceAddress MulticastStaging::map_here(AllocationHandle handle) const {
  const MulticastDriver& d = *driver_;
  CUdeviceptr address = 0;
  check(d, d.address_reserve(&address, bytes_, granularity_, 0, 0), "cuMemAddressReserve");
  const char* failed = "cuMemMap";
  CUresult result = d.map(address, bytes_, 0, handle, 0);
  if (result == CUDA_SUCCESS) {
    CUmemAccessDesc access{};
    access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    access.location.id = device_;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    failed = "cuMemSetAccess";
    result = d.set_access(address, bytes_, &access, 1);
    if (result != CUDA_SUCCESS) d.unmap(address, bytes_);
  }
  if (result != CUDA_SUCCESS) {
    d.address_free(address, bytes_);  // nothing half-built is left for the teardown to miss
    check(d, result, failed);
  }
  return address;
}

void MulticastStaging::unmap_here(DeviceAddress address) const {
  driver_->unmap(address, bytes_);
  driver_->address_free(address, bytes_);
}

// Teardown errors are ignored, as in Team::~Team (the context may be shutting down); each step runs once.
void MulticastStaging::close_imports() {
  for (int r = 0; r < nranks_; ++r) {
    if (r == rank_) continue;
    const auto i = static_cast<std::size_t>(r);
    if (staging_[i]) unmap_here(reinterpret_cast<DeviceAddress>(staging_[i]));
    staging_[i] = nullptr;
    if (imported_[i]) driver_->release(*imported_[i]);
    imported_[i].reset();
  }
}

void MulticastStaging::free_own() {
  const MulticastDriver& d = *driver_;
  if (multicast_address_) unmap_here(multicast_address_);
  multicast_address_ = 0;
  if (bound_) d.multicast_unbind(multicast_, device_, 0, bytes_);
  bound_ = false;
  if (has_multicast_) d.release(multicast_);
  has_multicast_ = false;
  if (!staging_.empty() && staging_[static_cast<std::size_t>(rank_)]) {
    unmap_here(reinterpret_cast<DeviceAddress>(staging_[static_cast<std::size_t>(rank_)]));
    staging_[static_cast<std::size_t>(rank_)] = nullptr;
  }
  if (has_own_) d.release(own_);
  has_own_ = false;
}

MulticastStaging::~MulticastStaging() {
  close_imports();
  free_own();
}

}  // namespace arfit::kernels
