// Shared by the kernels-host tests (test_kernels_host_matrix.cpp, test_kernels_host_exec.cpp): the run seed,
// host buffers, and one checked all-reduce case run through the CPU build of the kernels.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kernels/all_reduce.h"
#include "kernels/reference/check.h"
#include "kernels/team/host_team.h"
#include "kernels/team/page_aligned_buffer.h"

namespace arfit::kernels::testing {

// The seed of this run: ARFIT_KERNELS_HOST_SEED when set, otherwise drawn from std::random_device. Printed
// once per process ("kernels-host seed: S"), so a failing run can be repeated exactly.
std::uint64_t run_seed();
// A seed derived from the run seed and `salt` (a case, a launch), never 0 (0 turns randomisation off).
std::uint64_t derived_seed(std::uint64_t salt);
// ARFIT_KERNELS_HOST_QUICK=1 (the tsan label): cap message sizes at 64 KiB.
bool quick_mode();

// Where the outputs go.
enum class Placement {
  OutOfPlace,    // every buffer distinct
  InPlace,       // output == input
  FusedInPlace,  // residual_out == residual_in
  BothInPlace,   // both
};
std::string to_string(Placement p);

// An all-reduce case (dtype, fusion, nranks, count, hidden, fp8_scale of StrategyCase; its in_place is unused)
// and how it runs on the host.
struct HostCase : StrategyCase {
  HostCase() {
    nranks = 2;
    fp8_scale = 0.5f;
  }
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::OneShot;
  Placement placement = Placement::OutOfPlace;
  int threads_per_block = 64;
  std::string describe() const;
};

// Runs `launches` consecutive launches of `c` on `team` (its epochs continue from earlier launches), each with
// fresh seeded inputs and poisoned outputs, and checks every output of every rank after each launch: within
// tolerance of the double reference, e4m3 bytes of the stored output, all ranks bitwise identical. Adds gtest
// failures naming the case, the launch and the first wrong element.
void run_and_check(HostTeam& team, const HostCase& c, int launches, std::uint64_t seed);

}  // namespace arfit::kernels::testing
