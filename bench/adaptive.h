// --plan adaptive: arbench measures, in rounds, what the models are least sure of, until the table's regret is
// promised (--until-regret) or the measuring time is spent (--budget).
//
// The grid's every case is a candidate, and the table's cells are the cases that differ only in strategy (the
// strategy table codegen writes chooses among them). Rank 0 decides each round with planner/ (fit the measured cases
// with the fit library, assess the table, choose the next batch by expected regret removed per second of predicted
// measuring cost; planner/loop.h) and broadcasts it, after the ranks' agreement that deciding went well
// (agree_on_step, bench/agreement.h), so every rank measures the same cases; the Runner measures them, and the
// rounds' records go to the reporters like any plan's. Measuring is the Runner's, reporting the reporters',
// deciding the planner's: this file only connects them.
//
// Journal and resume. Each row of the sample CSV records its round and the seconds its case took (CsvReporter's
// adaptive columns). A round's decision depends only on the rows of the rounds before it, so a resumed run
// (--resume) decides the last round of the journal again from the rows before it, measures what that round has not
// measured yet, and goes on: the same decisions as a run that was never stopped, given the same measurements, and
// no case measured twice.
#pragma once

#include <mpi.h>
#include <vector>

#include "bench/options.h"
#include "bench/reporter.h"
#include "bench/runner.h"
#include "planner/loop.h"

namespace arfit::bench {

// The target table of a planned grid: case k of the table is grid.cases[k]; `system` labels its curves.
planner::TargetTable target_table(const PlannedGrid& grid, const std::string& system, int nnodes);

// What the rows of a journal (OutputState::rows) measured, per case of the grid: its time (0 when it failed), the
// seconds it took and its round (its `round` and `wall_s` columns). Rows of no planned case are not here
// (inspect_output refuses them).
planner::Measurements journal_measurements(const PlannedGrid& grid, const std::vector<Sample>& rows);

struct AdaptiveResult {
  RunSummary summary;  // the runner's, every rank
  StopReport stop;     // rank 0's
};

// Collective over `world`: starts `runner` with `reporters` (rank 0's), runs the rounds from `resumed` (rank 0's
// journal; empty elsewhere) until a stop rule holds, reports each round and the stop to `rounds` (rank 0's; the stop
// before the runner finishes, so that the JSON file the runner's outputs commit holds it), and finishes the runner.
// `loop` is rank 0's (the other ranks follow its batches).
AdaptiveResult run_adaptive(MPI_Comm world, Runner& runner, const PlannedGrid& grid, const planner::TargetTable& table,
                            planner::Measurements resumed, const planner::LoopOptions& loop, const RunHeader& header,
                            std::size_t resumed_cases, const std::vector<Reporter*>& reporters,
                            const std::vector<RoundReporter*>& rounds);

}  // namespace arfit::bench
