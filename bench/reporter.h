// Reporters format records; only rank 0 has them. Console (progress + ETA), sample CSV (rows appended and
// flushed per case to the journal NAME.partial, moved over NAME when the run ends), JSON (all records, written
// atomically at the end).
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "bench/record.h"
#include "io/atomic_output.h"

namespace arfit::bench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void start(const RunHeader&, std::size_t /*planned*/, std::size_t /*already_done*/) {}
  virtual void report(const Record& r) = 0;
  // The run ended: a reporter that writes files adds them to `outputs` (io/atomic_output.h OutputSet), which the
  // runner commits once every reporter finished, so -o and --json are replaced together or (a failed write, a kill)
  // neither.
  virtual void finish(const RunSummary&, OutputSet& /*outputs*/) {}
};

class ConsoleReporter : public Reporter {
 public:
  ConsoleReporter(std::ostream& out, std::ostream& err, bool quiet) : out_(out), err_(err), quiet_(quiet) {}
  void start(const RunHeader& header, std::size_t planned, std::size_t already_done) override;
  void report(const Record& r) override;
  void finish(const RunSummary& s, OutputSet& outputs) override;

 private:
  std::ostream& out_;
  std::ostream& err_;
  bool quiet_;
  std::size_t planned_ = 0, done_ = 0, this_session_ = 0;
  double session_s_ = 0;
};

// The journal of the sample CSV `output`: the sibling file "NAME.partial" the rows stream into while the run
// lasts. A killed or crashed run leaves NAME as it was and its finished rows here, for --resume.
std::string journal_path(const std::string& output);

// How the journal starts (rank 0 decides before the run, the CsvReporter acts on it).
enum class JournalStart {
  Fresh,           // a new journal with this run's header (no output yet, or --overwrite)
  Continue,        // --resume: the existing journal is appended to (its partial last row already cut)
  CopyOfOutput,    // --resume without a journal: the journal starts as a copy of the output's rows
};

// Output file state found before the run (rank 0).
struct OutputState {
  std::string journal;                       // journal_path(output_target(output)): beside the file it replaces
  JournalStart start = JournalStart::Fresh;
  std::string copied_output;                 // CopyOfOutput: the output's bytes, a partial last row cut
  std::set<std::string> finished;            // Case::key()s already in the journal or output
  // The run a --resume continues: its rows' Sample::source ("arbench <start time>", the first row's), which the
  // new rows take too, so that the finished file reads as one run (one group per curve) and not as one run per
  // session. Empty when fresh.
  std::string source;
  std::vector<Sample> rows;                  // the rows continued (--resume), as read: --plan adaptive replays them
  bool resumed() const { return start != JournalStart::Fresh; }
};

// Checks the output path and its journal against the output-path rule (io/output_path_rule.h:
// OutputPathError) and --resume / --overwrite and, for --resume, reads the finished cases: from the journal
// when it exists (a run that was killed), else from the output. The file is validated whole in memory first;
// only then is a journal's partial last line (a kill mid-write) cut off, so a file --resume refuses is left as
// it was, and the output itself is never touched here.
// Throws GridError naming the option on conflicts: the output or its journal exists without --resume /
// --overwrite (naming -o/--output), or the file resumed was written for a different grid or plan, or (naming
// -G/--cuda-graph) measured in another CUDA-graph mode: `cuda_graph` is this run's header value
// (cuda_graph_header_value), compared with the file's (absent = "off"); InputError (bad data, exit 1) when
// the file is not a readable sample file. `device` (DeviceInfo::device of this run; "" = not checked) must be
// the file's `device`, naming --resume: a job restarted on other hardware would put two machines' timings in
// one run. Every row continued must be a case of `planned` (Case::key()s; null = not checked), appear once, and
// come from `backend` (Sample::backend, "" = not checked): an edited, duplicated or foreign row would stay in the
// output beside the case measured again (InputError naming the file, line and column; the file untouched).
// `run_header` (this run's make_run_header; null = not checked): the file's `world_size` and `timing` (warm-up,
// iterations, buffer rotation), when it records them, must be this run's, or the header kept from the first
// session would misdescribe the rows measured now (GridError naming --resume, or -w/-n/--buffers).
// `columns`: the extra columns this run writes (CsvReporter's); the file's must be the same.
OutputState inspect_output(const std::string& path, const std::string& grid_json, bool resume, bool overwrite,
                           const std::string& cuda_graph = "off", const std::string& device = "",
                           const std::set<std::string>* planned = nullptr, const std::string& backend = "",
                           const RunHeader* run_header = nullptr,
                           const std::vector<std::string>& columns = {"note"});

// The sample CSV: the model/ schema with the extra column "note", and with --plan adaptive "round" and "wall_s"
// (adaptive_columns: the round that measured the row and the seconds the case took, microseconds, which a resumed
// run replays). Rows go to the journal (OutputState) and are flushed one by one; finish() (the run ended, whether or
// not cases failed) closes it and adds it to the run's outputs, whose commit moves it over the output. Without
// finish() and the commit (a kill, a crash, a hung collective, the JSON failing to write) the output is untouched
// and the journal kept for --resume.
class CsvReporter : public Reporter {
 public:
  CsvReporter(std::string path, OutputState state, std::vector<std::string> columns = extra_columns());
  ~CsvReporter() override;
  // Creates the output's folder and opens the journal (GridError naming -o/--output when it cannot): arbench
  // calls it before the run, so an unwritable place is a usage error of every rank, not an MPI_Abort at the
  // first case. start() opens it when this was not called.
  void open_journal();
  void start(const RunHeader& header, std::size_t planned, std::size_t already_done) override;
  void report(const Record& r) override;
  void finish(const RunSummary& s, OutputSet& outputs) override;

  static const std::vector<std::string>& extra_columns();
  static const std::vector<std::string>& adaptive_columns();

 private:
  std::string path_;
  OutputState state_;
  std::vector<std::string> columns_;
  std::FILE* f_ = nullptr;
};

// --plan adaptive's rounds and its end (bench/adaptive.h), as rank 0 decides them.
struct RoundProgress {
  int round = 0;
  std::size_t batch = 0, measured = 0, planned = 0;  // cases this round, measured before it, in the grid
  double spent_s = 0, budget_s = 0;                  // measuring seconds so far; the budget (infinity: none)
  bool assessed = false;                             // the table was fitted and assessed (not the seed round)
  bool seed_tops = false;                            // the batch is the seed's second stage (planner/loop.h)
  int cells = 0, uncertain_cells = 0;
  double expected_regret = 0, regret_bound = 0;      // the table's geometric-mean regret: expected, 90 % bound
};

struct StopReport {
  int rounds = 0;
  std::string why;                                   // the stop rule in words
  std::string reason;  // the rule's name: planner::to_string(StopReason) (budget, regret, settled, exhausted), or timeout
  std::size_t measured = 0, planned = 0;
  double spent_s = 0, exhaustive_s = 0;              // measuring seconds; the whole grid's, estimated
  int cells = 0, uncertain_cells = 0;
  double expected_regret = 0, regret_bound = 0;
  std::string worst_cell;                            // the cell with the highest expected regret, and that regret
  double worst_regret = 0;
  // The seed's share (planner/loop.h SeedShare): its planned anchors, the cases its rounds measured and their
  // seconds, and the cases the loop chose by their value after it.
  std::size_t seed_anchors = 0, seed_cases = 0, chosen_cases = 0;
  double seed_s = 0;
  bool seed_tops = false;  // round 1 was the seed's second stage
  bool budget_ended() const { return reason == "budget"; }
};

class RoundReporter {
 public:
  virtual ~RoundReporter() = default;
  virtual void round(const RoundProgress& progress) = 0;
  virtual void stop(const StopReport& report) = 0;
};

// One line per round (not with -q) and the stop report (always: it is the run's result).
class ConsoleRoundReporter : public RoundReporter {
 public:
  ConsoleRoundReporter(std::ostream& out, bool quiet) : out_(out), quiet_(quiet) {}
  void round(const RoundProgress& p) override;
  void stop(const StopReport& r) override;

 private:
  std::ostream& out_;
  bool quiet_;
};

// The run as one JSON document: its header, summary and cases, and with --plan adaptive an "adaptive" object: this
// session's rounds (as the console's round lines: a resumed run's from the round it decided again) and the stop
// report, so that a script can follow the expected regret against the seconds spent and read why the loop stopped.
class JsonReporter : public Reporter, public RoundReporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}
  void start(const RunHeader& header, std::size_t planned, std::size_t already_done) override;
  void report(const Record& r) override;
  void finish(const RunSummary& s, OutputSet& outputs) override;
  void round(const RoundProgress& progress) override;
  void stop(const StopReport& report) override;

 private:
  std::string path_;
  RunHeader header_;
  std::vector<Record> records_;
  std::vector<RoundProgress> rounds_;
  std::optional<StopReport> stop_;
};

}  // namespace arfit::bench
