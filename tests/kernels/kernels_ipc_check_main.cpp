// MPI program for the multi-GPU test (test_kernels_ipc.cpp launches it with mpirun -np N): one rank per
// process and GPU, workspaces registered once per team with cudaIpcGetMemHandle / cudaIpcOpenMemHandle
// (handles exchanged by MpiHandleExchange), then every custom strategy case is checked against the CPU
// reference on every rank (the multimem ones on the team's multicast staging where the GPUs support multicast,
// refused with the team's reason elsewhere), the outputs' hashes are compared across ranks (bitwise identity), and
// the NCCL strategies run on a real N-rank communicator. Prints "IPC CHECK PASSED" on rank 0 when everything held;
// exits non-zero otherwise.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "kernels/all_reduce.h"
#include "kernels/device/cuda_check.h"
#include "kernels/team/mpi_handle_exchange.h"
#include "kernels/reference/reference.h"
#include "kernels/strategy.h"
#include "kernels/team.h"

using namespace arfit;
using namespace arfit::kernels;

namespace {

int failures = 0;

void report(int rank, const std::string& what, const CheckResult& r) {
  if (!r.ok()) {
    ++failures;
    std::printf("rank %d: FAILED %s: %lld wrong of %lld (%s)\n", rank, what.c_str(), static_cast<long long>(r.wrong),
                static_cast<long long>(r.checked), r.first_wrong.c_str());
  }
}

std::uint64_t fnv1a(const std::vector<unsigned char>& bytes) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char b : bytes) h = (h ^ b) * 1099511628211ULL;
  return h;
}

// The unfused cases of every strategy: each dtype at sizes from one vector (and a scalar tail) to the team's limit.
std::vector<StrategyCase> unfused_cases(int nranks, std::int64_t max_bytes) {
  std::vector<StrategyCase> cases;
  for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
    for (std::int64_t bytes : std::vector<std::int64_t>{16, 100, 4100, 65536 + 12, 3 * (1 << 20) + 4, max_bytes}) {
      StrategyCase c;
      c.dtype = dtype;
      c.nranks = nranks;
      c.count = bytes / dtype_bytes(dtype);
      cases.push_back(c);
    }
  }
  return cases;
}

// Runs `c` `runs` times on the team, then the descriptor's check against the reference.
void run_and_check(int rank, const char* name, const StrategyContext& ctx, const StrategyCase& c, int runs) {
  const StrategyDescriptor& s = *find_strategy(name, Collective::AllReduce);
  auto state = s.init(ctx, c);
  for (int i = 0; i < runs; ++i) s.run(*state, nullptr);
  const std::string shape = c.fusion == FusionOp::None ? std::to_string(c.count * dtype_bytes(c.dtype)) + " B"
                                                       : to_string(c.fusion);
  report(rank, std::string(name) + " " + to_string(c.dtype) + " " + shape, s.check(*state));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  try {
    int devices = 0;
    ARFIT_CUDA_CHECK(cudaGetDeviceCount(&devices));
    const int device = rank % devices;
    ARFIT_CUDA_CHECK(cudaSetDevice(device));
    MpiHandleExchange exchange(MPI_COMM_WORLD);
    constexpr std::int64_t kMaxBytes = 8 << 20;
    std::unique_ptr<Team> team = Team::create_ipc(exchange, kMaxBytes, device);

    StrategyContext ctx;
    ctx.nranks = size;
    ctx.first_rank = rank;
    ctx.local_ranks = 1;
    ctx.device = device;
    ctx.team = team.get();
    ctx.seed = 11;

    for (const char* name : {"ONESHOT", "TWOSHOT"}) {
      for (const StrategyCase& c : unfused_cases(size, kMaxBytes)) run_and_check(rank, name, ctx, c, 5);
      for (DType dtype : {DType::BF16, DType::FP16, DType::FP32}) {
        for (FusionOp fusion : all_fusion_ops()) {
          if (fusion == FusionOp::None) continue;
          StrategyCase c;
          c.dtype = dtype;
          c.nranks = size;
          c.fusion = fusion;
          c.hidden = 4096;
          c.count = 37 * 4096;
          run_and_check(rank, name, ctx, c, 1);
        }
      }
    }

    // The multimem strategies run on the team's multicast staging (GPUs with multicast: an NVSwitch system). A GPU
    // that reports multicast support but whose team could not build the multicast object is a failure; elsewhere the
    // strategies must refuse with the team's reason.
    const bool multicast = team->multimem_pointers(1).multicast_staging != nullptr;
    if (device_supports_multicast(device) && !multicast) {
      ++failures;
      std::printf("rank %d: FAILED the GPU supports multicast but the team has none: %s\n", rank,
                  team->multicast_refusal().c_str());
    }
    if (rank == 0 && !multicast) std::printf("multimem strategies refused: %s\n", team->multicast_refusal().c_str());
    for (const char* name : {"MULTIMEM_ONESHOT", "MULTIMEM_TWOSHOT"}) {
      for (const StrategyCase& c : unfused_cases(size, kMaxBytes)) {
        if (multicast) {
          run_and_check(rank, name, ctx, c, 5);
          continue;
        }
        try {
          find_strategy(name, Collective::AllReduce)->init(ctx, c);
          ++failures;
          std::printf("rank %d: FAILED %s ran on a team without multicast\n", rank, name);
        } catch (const KernelError& e) {
          if (e.parameter() != KernelParam::Device) {
            ++failures;
            std::printf("rank %d: FAILED %s refused for another reason: %s\n", rank, name, e.what());
          }
        }
      }
    }

    // Bitwise identity across processes: hash one rank's output and compare with everyone's. MULTIMEM_TWOSHOT too
    // (each sum is computed once, by its owner, and stored to every rank); not MULTIMEM_ONESHOT, whose every rank
    // reduces in the switch's order (which may differ in the last bit between ranks).
    std::vector<AllReduceAlgorithm> identical = {AllReduceAlgorithm::OneShot, AllReduceAlgorithm::TwoShot};
    if (multicast) identical.push_back(AllReduceAlgorithm::MultimemTwoShot);
    for (AllReduceAlgorithm algorithm : identical) {
      const std::int64_t count = (1 << 20) + 5;
      std::vector<unsigned char> host(static_cast<std::size_t>(count) * 2);
      fill_seeded(DType::BF16, host.data(), count, 77, InputRole::Data, rank);
      void *in = nullptr, *out = nullptr;
      ARFIT_CUDA_CHECK(cudaMalloc(&in, host.size()));
      ARFIT_CUDA_CHECK(cudaMalloc(&out, host.size()));
      ARFIT_CUDA_CHECK(cudaMemcpy(in, host.data(), host.size(), cudaMemcpyHostToDevice));
      AllReduceParams p;
      p.dtype = DType::BF16;
      p.count = count;
      p.buffers.push_back(AllReduceBuffers{in, out, nullptr, nullptr, nullptr, nullptr});
      all_reduce(algorithm, *team, p, nullptr);
      ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
      ARFIT_CUDA_CHECK(cudaMemcpy(host.data(), out, host.size(), cudaMemcpyDeviceToHost));
      std::uint64_t mine = fnv1a(host);
      std::vector<std::uint64_t> all(static_cast<std::size_t>(size));
      MPI_Allgather(&mine, 8, MPI_BYTE, all.data(), 8, MPI_BYTE, MPI_COMM_WORLD);
      for (int r = 0; r < size; ++r) {
        if (all[static_cast<std::size_t>(r)] != mine) {
          ++failures;
          std::printf("rank %d: FAILED %s output differs bitwise from rank %d\n", rank, to_string(algorithm).c_str(), r);
        }
      }
      cudaFree(in);
      cudaFree(out);
    }

    // NCCL strategies on the real N-rank communicator.
    ncclUniqueId id;
    if (rank == 0) ncclGetUniqueId(&id);
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm = nullptr;
    if (ncclCommInitRank(&comm, size, id, rank) != ncclSuccess) throw DeviceError("ncclCommInitRank failed");
    StrategyContext nccl_ctx = ctx;
    nccl_ctx.team = nullptr;
    nccl_ctx.nccl_comm = comm;
    for (Collective collective : {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter,
                                  Collective::AllToAll, Collective::AllToAllV}) {
      const StrategyDescriptor& s = *find_strategy("NCCL", collective);
      StrategyCase c;
      c.collective = collective;
      c.dtype = DType::BF16;
      c.nranks = size;
      c.count = 4096 * size;
      for (int i = 0; i < size * size; ++i) c.alltoallv_counts.push_back(100 + 37 * i);
      auto state = s.init(nccl_ctx, c);
      s.run(*state, nullptr);
      report(rank, "NCCL " + to_string(collective), s.check(*state));
    }
    {
      const StrategyDescriptor& s = *find_strategy("NCCL", Collective::AllReduce);
      StrategyCase c;
      c.dtype = DType::BF16;
      c.nranks = size;
      c.fusion = FusionOp::ResidualRmsNormQuantFp8;
      c.hidden = 2048;
      c.count = 9 * 2048;
      auto state = s.init(nccl_ctx, c);
      report(rank, "NCCL all-reduce + residual/RMSNorm/FP8", s.check(*state));
    }
    ncclCommDestroy(comm);

    exchange.barrier();  // nobody unmaps while a peer might still use the mapping
    team.reset();
  } catch (const std::exception& e) {
    std::printf("rank %d: FAILED with exception: %s\n", rank, e.what());
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && total == 0) std::printf("IPC CHECK PASSED on %d ranks\n", size);
  std::fflush(stdout);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
