// The collective logic of the multicast staging (kernels/team/multicast_staging.h), without a GPU: ranks are threads,
// the HandleExchange is shared memory, the descriptors travel through the real fd passer, and the CUDA driver is an
// emulation (EmulatedDriver below) that keeps the objects' books and enforces the rules the real driver does:
// memory is bound only after every device of the multicast object was added, handles and mappings are released.
// What it shows: every rank ends with the staging or every rank without it, with the same reason, whichever rank's
// driver call fails; nothing is left allocated, mapped or bound after a failure or after the collective teardown;
// staging()[r] is rank r's memory on every rank; one rank slow to add its device does not make a peer bind early.
// What it cannot show: the real driver's behaviour (that is test_kernels_ipc on a multicast GPU).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "kernels/team.h"
#include "kernels/team/multicast_driver.h"
#include "kernels/team/multicast_staging.h"
#include "thread_exchange.h"

namespace arfit::kernels {
namespace {

using arfit::kernels::testing::ThreadExchange;
using arfit::kernels::testing::ThreadGroup;

// ---- the emulated driver: one process-wide book, as the driver keeps one per process (ranks are threads here) ----
thread_local int tl_rank = -1;  // the rank (and device) of the calling thread

struct Book {
  struct Object {
    int owner;             // rank that created it
    bool multicast;
    unsigned devices;      // multicast: numDevices
    std::set<int> added;   // multicast: devices added
    std::set<int> bound;   // multicast: devices whose memory is bound
  };
  std::mutex m;
  std::uint64_t next_id = 1;
  unsigned long long next_address = 1ull << 40;
  unsigned long long next_handle = 0x1000;
  std::map<std::uint64_t, Object> objects;          // id -> object
  std::map<unsigned long long, std::uint64_t> handles;  // live handle -> object id
  std::set<unsigned long long> reservations;
  std::map<unsigned long long, unsigned long long> mappings;  // address -> handle
  int calls = 0;
  std::string fail_call;  // this call fails with CUDA_ERROR_OUT_OF_MEMORY on fail_rank
  int fail_rank = -1;
  int slow_add_rank = -1;  // this rank's cuMulticastAddDevice takes 100 ms

  bool failing(const char* call) {
    ++calls;
    return fail_call == call && fail_rank == tl_rank;
  }
  unsigned long long new_handle(std::uint64_t object) {
    const unsigned long long h = next_handle++;
    handles[h] = object;
    return h;
  }
  void reset() {
    std::lock_guard<std::mutex> lock(m);
    objects.clear();
    handles.clear();
    reservations.clear();
    mappings.clear();
    calls = 0;
    fail_call.clear();
    fail_rank = slow_add_rank = -1;
  }
};
Book book;

#define FAIL_IF(call)                            \
  std::lock_guard<std::mutex> lock(book.m);      \
  if (book.failing(call)) return CUDA_ERROR_OUT_OF_MEMORY

CUresult error_name(CUresult r, const char** name) {
  *name = r == CUDA_ERROR_OUT_OF_MEMORY ? "CUDA_ERROR_OUT_OF_MEMORY"
          : r == CUDA_ERROR_ILLEGAL_STATE ? "CUDA_ERROR_ILLEGAL_STATE"
                                          : "CUDA_ERROR_INVALID_VALUE";
  return CUDA_SUCCESS;
}
CUresult device_get(CUdevice* device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult allocation_granularity(std::size_t* g, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) {
  *g = 4096;
  return CUDA_SUCCESS;
}
CUresult multicast_granularity(std::size_t* g, const CUmulticastObjectProp*, CUmulticastGranularity_flags) {
  *g = 65536;
  return CUDA_SUCCESS;
}
CUresult create(CUmemGenericAllocationHandle* h, std::size_t size, const CUmemAllocationProp* prop, unsigned long long) {
  FAIL_IF("cuMemCreate");
  if (size % 65536 != 0 || prop->requestedHandleTypes != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t id = book.next_id++;
  book.objects[id] = Book::Object{tl_rank, false, 0, {}, {}};
  *h = book.new_handle(id);
  return CUDA_SUCCESS;
}
CUresult release(CUmemGenericAllocationHandle h) {
  std::lock_guard<std::mutex> lock(book.m);
  return book.handles.erase(h) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult address_reserve(CUdeviceptr* p, std::size_t, std::size_t alignment, CUdeviceptr, unsigned long long) {
  FAIL_IF("cuMemAddressReserve");
  book.next_address = (book.next_address + (1ull << 30)) / alignment * alignment;
  *p = book.next_address;
  book.reservations.insert(*p);
  return CUDA_SUCCESS;
}
CUresult address_free(CUdeviceptr p, std::size_t) {
  std::lock_guard<std::mutex> lock(book.m);
  if (book.mappings.count(p)) return CUDA_ERROR_ILLEGAL_STATE;  // unmap first
  return book.reservations.erase(p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult map(CUdeviceptr p, std::size_t, std::size_t, CUmemGenericAllocationHandle h, unsigned long long) {
  FAIL_IF("cuMemMap");
  if (!book.reservations.count(p) || !book.handles.count(h)) return CUDA_ERROR_INVALID_VALUE;
  book.mappings[p] = h;
  return CUDA_SUCCESS;
}
CUresult unmap(CUdeviceptr p, std::size_t) {
  std::lock_guard<std::mutex> lock(book.m);
  return book.mappings.erase(p) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult set_access(CUdeviceptr p, std::size_t, const CUmemAccessDesc* desc, std::size_t count) {
  FAIL_IF("cuMemSetAccess");
  if (!book.mappings.count(p) || count != 1 || desc->location.id != tl_rank) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}
// A descriptor is a real one (memfd) holding the object's id, so it survives the real fd passer.
CUresult export_handle(void* shareable, CUmemGenericAllocationHandle h, CUmemAllocationHandleType, unsigned long long) {
  FAIL_IF("cuMemExportToShareableHandle");
  if (!book.handles.count(h)) return CUDA_ERROR_INVALID_VALUE;
  const int fd = ::memfd_create("emulated-cu-handle", MFD_CLOEXEC);
  const std::uint64_t id = book.handles[h];
  if (fd < 0 || ::pwrite(fd, &id, sizeof(id), 0) != sizeof(id)) return CUDA_ERROR_OPERATING_SYSTEM;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}
CUresult import_handle(CUmemGenericAllocationHandle* h, void* os_handle, CUmemAllocationHandleType) {
  FAIL_IF("cuMemImportFromShareableHandle");
  std::uint64_t id = 0;
  const int fd = static_cast<int>(reinterpret_cast<std::uintptr_t>(os_handle));
  if (::pread(fd, &id, sizeof(id), 0) != sizeof(id) || !book.objects.count(id)) return CUDA_ERROR_INVALID_VALUE;
  *h = book.new_handle(id);
  return CUDA_SUCCESS;
}
CUresult multicast_create(CUmemGenericAllocationHandle* h, const CUmulticastObjectProp* prop) {
  FAIL_IF("cuMulticastCreate");
  if (prop->size % 65536 != 0) return CUDA_ERROR_INVALID_VALUE;
  const std::uint64_t id = book.next_id++;
  book.objects[id] = Book::Object{tl_rank, true, prop->numDevices, {}, {}};
  *h = book.new_handle(id);
  return CUDA_SUCCESS;
}
CUresult multicast_add_device(CUmemGenericAllocationHandle mc, CUdevice device) {
  if (tl_rank == book.slow_add_rank) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  FAIL_IF("cuMulticastAddDevice");
  if (!book.handles.count(mc)) return CUDA_ERROR_INVALID_VALUE;
  book.objects[book.handles[mc]].added.insert(device);
  return CUDA_SUCCESS;
}
CUresult multicast_bind_mem(CUmemGenericAllocationHandle mc, std::size_t mc_offset, CUmemGenericAllocationHandle mem,
                            std::size_t mem_offset, std::size_t, unsigned long long) {
  FAIL_IF("cuMulticastBindMem");
  if (!book.handles.count(mc) || !book.handles.count(mem) || mc_offset != 0 || mem_offset != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Book::Object& object = book.objects[book.handles[mc]];
  // The driver's rule: every device is added before any memory is bound.
  if (object.added.size() != object.devices) return CUDA_ERROR_ILLEGAL_STATE;
  object.bound.insert(book.objects[book.handles[mem]].owner);
  return CUDA_SUCCESS;
}
CUresult multicast_unbind(CUmemGenericAllocationHandle mc, CUdevice device, std::size_t, std::size_t) {
  std::lock_guard<std::mutex> lock(book.m);
  if (!book.handles.count(mc)) return CUDA_ERROR_INVALID_VALUE;
  return book.objects[book.handles[mc]].bound.erase(device) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

const MulticastDriver kEmulated{error_name,     device_get, allocation_granularity, multicast_granularity,
                                create,         release,    address_reserve,        address_free,
                                map,            unmap,      set_access,             export_handle,
                                import_handle,  multicast_create, multicast_add_device, multicast_bind_mem,
                                multicast_unbind};

struct RankResult {
  bool has_staging = false;
  std::string refusal;
  std::vector<int> staging_owner;  // owner rank of the memory mapped at staging()[r]
  bool multicast_mapped = false;   // multicast_address() maps a multicast object
};

// Every rank builds the staging (rank `unsupported_rank` reports no multicast); a built one is torn down collectively.
std::vector<RankResult> run_team(int nranks, int unsupported_rank = -1) {
  ThreadGroup group(nranks);
  std::vector<RankResult> results(static_cast<std::size_t>(nranks));
  std::vector<std::thread> ranks;
  for (int r = 0; r < nranks; ++r) {
    ranks.emplace_back([&, r] {
      tl_rank = r;
      ThreadExchange exchange(group, r);
      const std::string unsupported = r == unsupported_rank ? "GPU " + std::to_string(r) + " has no multicast" : "";
      MulticastStaging::Outcome o =
          MulticastStaging::create_with(exchange, r, 100000, unsupported.empty() ? &kEmulated : nullptr, unsupported);
      RankResult& mine = results[static_cast<std::size_t>(r)];
      mine.has_staging = o.staging != nullptr;
      mine.refusal = o.refusal;
      if (!o.staging) return;
      {
        std::lock_guard<std::mutex> lock(book.m);
        for (void* p : o.staging->staging()) {
          const auto at = book.mappings.find(reinterpret_cast<unsigned long long>(p));
          mine.staging_owner.push_back(at == book.mappings.end() ? -1 : book.objects[book.handles[at->second]].owner);
        }
        const auto mc = book.mappings.find(reinterpret_cast<unsigned long long>(o.staging->multicast_address()));
        mine.multicast_mapped = mc != book.mappings.end() && book.objects[book.handles[mc->second]].multicast;
      }
      ipc_teardown(exchange, [&] { o.staging->close_imports(); }, [&] { o.staging->free_own(); });
    });
  }
  for (std::thread& t : ranks) t.join();
  return results;
}

void expect_nothing_left(const std::string& context) {
  std::lock_guard<std::mutex> lock(book.m);
  EXPECT_TRUE(book.handles.empty()) << context << ": " << book.handles.size() << " handles not released";
  EXPECT_TRUE(book.mappings.empty()) << context << ": " << book.mappings.size() << " mappings left";
  EXPECT_TRUE(book.reservations.empty()) << context << ": " << book.reservations.size() << " address ranges left";
  for (const auto& [id, object] : book.objects) {
    EXPECT_TRUE(object.bound.empty()) << context << ": object " << id << " still has bound memory";
  }
}

TEST(MulticastStaging, EveryRankMapsEveryRanksStagingAndTheMulticastObjectThenReleasesAll) {
  constexpr int kRanks = 4;
  book.reset();
  book.slow_add_rank = 3;  // a peer that binds before rank 3 has added its device would be refused (ILLEGAL_STATE)
  const std::vector<RankResult> results = run_team(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    const RankResult& result = results[static_cast<std::size_t>(r)];
    EXPECT_TRUE(result.has_staging) << "rank " << r << ": " << result.refusal;
    EXPECT_EQ(result.refusal, "");
    EXPECT_EQ(result.staging_owner, (std::vector<int>{0, 1, 2, 3})) << "rank " << r;
    EXPECT_TRUE(result.multicast_mapped) << "rank " << r;
  }
  expect_nothing_left("after the teardown");
}

TEST(MulticastStaging, AFailedDriverCallOnAnyRankLeavesEveryRankWithoutStagingAndNothingAllocated) {
  constexpr int kRanks = 4;
  const std::vector<std::pair<std::string, int>> failures = {
      {"cuMemCreate", 2},          {"cuMulticastCreate", 0}, {"cuMemExportToShareableHandle", 1},
      {"cuMemAddressReserve", 3},  {"cuMemImportFromShareableHandle", 1}, {"cuMulticastAddDevice", 2},
      {"cuMemMap", 0},             {"cuMulticastBindMem", 3}, {"cuMemSetAccess", 1}};
  for (const auto& [call, rank] : failures) {
    book.reset();
    book.fail_call = call;
    book.fail_rank = rank;
    const std::vector<RankResult> results = run_team(kRanks);
    const std::string context = call + " failing on rank " + std::to_string(rank);
    for (int r = 0; r < kRanks; ++r) {
      const RankResult& result = results[static_cast<std::size_t>(r)];
      EXPECT_FALSE(result.has_staging) << context << ", rank " << r;
      EXPECT_EQ(result.refusal.rfind("multicast setup failed: rank " + std::to_string(rank) + ": " + call, 0), 0u)
          << context << ", rank " << r << ": " << result.refusal;
      EXPECT_NE(result.refusal.find("CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << result.refusal;
    }
    expect_nothing_left(context);
  }
}

TEST(MulticastStaging, ARankWithoutMulticastStopsEveryRankBeforeAnyDriverCall) {
  book.reset();
  const std::vector<RankResult> results = run_team(2, /*unsupported_rank=*/1);
  for (const RankResult& result : results) {
    EXPECT_FALSE(result.has_staging);
    EXPECT_EQ(result.refusal, "not every rank can join a multicast team (rank 1: GPU 1 has no multicast)");
  }
  std::lock_guard<std::mutex> lock(book.m);
  EXPECT_EQ(book.calls, 0);
}

}  // namespace
}  // namespace arfit::kernels
