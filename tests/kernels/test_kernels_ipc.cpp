// Multi-process, multi-GPU check of the IPC path (Team::create_ipc over MPI) and of the NCCL strategies on a
// real communicator: runs kernels_ipc_check (kernels_ipc_check_main.cpp) under mpirun with one rank per GPU
// (2, 4 or 8, as many as there are GPUs). Skips with the reason when fewer than two GPUs are visible.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/device/cuda_check.h"
#include "test_support.h"

namespace {

TEST(KernelIpc, OneRankPerGpuMatchesReferenceAndIsBitwiseIdentical) {
  const std::string reason = arfit::kernels::cuda_device_unavailable_reason();
  if (!reason.empty()) GTEST_SKIP() << reason;
  int devices = 0;
  ASSERT_EQ(cudaGetDeviceCount(&devices), cudaSuccess);
  if (devices < 2) GTEST_SKIP() << "needs at least 2 GPUs for one rank per GPU; cudaGetDeviceCount found " << devices;
  const int ranks = devices >= 8 ? 8 : devices >= 4 ? 4 : 2;
  const std::string command = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe -np " +
                              std::to_string(ranks) + " " + KERNELS_IPC_CHECK_BIN;
  const arfit::testing::CommandResult r = arfit::testing::run_command(command);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("IPC CHECK PASSED on " + std::to_string(ranks) + " ranks"), std::string::npos) << r.output;
}

}  // namespace
