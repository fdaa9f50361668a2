// The ranks' agreement before the first collective: every rank brings what its own command line asked for
// (a run, --help, --version, or a usage error) and a fingerprint of each part of its plan; one MPI_Allgather
// hands every rank all of them, so each rank decides alone, from the same data, how the job goes on (no second
// round that a rank which already left could leave hanging), and rank 0 can name what differed.
#pragma once

#include <array>
#include <cstdint>
#include <mpi.h>
#include <string>
#include <type_traits>
#include <vector>

#include "bench/options.h"
#include "bench/plan.h"

namespace arfit::bench {

// The parts of a plan the ranks must share, each named by the option(s) that set it.
inline constexpr std::size_t kPlanParts = 19;
const std::array<const char*, kPlanParts>& plan_part_names();

// One rank's contribution: plain bytes (sent as MPI_BYTE).
struct RankPlan {
  enum Kind : std::uint32_t { kRun = 0, kHelp = 1, kVersion = 2, kUsageError = 3, kFailed = 4 };
  std::uint32_t kind = kRun;
  std::uint32_t reserved = 0;
  std::uint64_t error_hash = 0;            // kUsageError, kFailed: the message's fingerprint (alike on every rank?)
  char error_option[48] = {};              // kUsageError: the option it names (truncated)
  std::array<std::uint64_t, kPlanParts> part{};  // kRun: one fingerprint per plan part
};
static_assert(std::is_trivially_copyable_v<RankPlan>, "sent as bytes");

// This rank's RankPlan from its parsed options and planned grid (kRun, kHelp, kVersion) or its usage error.
RankPlan plan_of_rank(const Options& opt, const PlannedGrid& grid);
RankPlan usage_error_of_rank(const std::string& option, const std::string& message);
// Planning failed on this rank for another reason (out of memory, an unexpected error): a failed run.
RankPlan failure_of_rank(const std::string& message);

// What the job does after the agreement, the same on every rank given the same `all` (one entry per rank).
struct Verdict {
  RankPlan::Kind kind = RankPlan::kRun;  // what every rank does when status is 0 (run, print help or version)
  int status = 0;                        // 0 go on; 1 a rank failed, 2 usage error (every rank leaves with it)
  bool print_own_error = false;          // this rank says its own error (rank 0's speaks for all alike)
  std::string message;                   // rank 0 prints it: which ranks differed from rank 0 and how
};
Verdict judge_agreement(const std::vector<RankPlan>& all, int rank);

// Collective over `world`: gathers every rank's plan (one MPI_Allgather) and judges it.
Verdict agree_on_the_run(MPI_Comm world, const RankPlan& mine);

// A later step that may fail on some ranks only (the backend's creation), agreed on the same way: every rank
// leaves with the worst status (0: all went well), and each distinct error is said once, by the lowest rank
// that has it (`say_own_error`), so eight ranks without a GPU print one line, and a lone rank's reason is never lost.
struct StepOutcome {
  int status = 0;
  bool say_own_error = false;
};
StepOutcome agree_on_step(MPI_Comm world, int status, const std::string& error);

}  // namespace arfit::bench
