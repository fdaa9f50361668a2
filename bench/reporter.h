// Reporters format records; only rank 0 has them. Console (progress + ETA), sample CSV (rows appended and
// flushed per case to the journal NAME.partial, moved over NAME when the run ends), JSON (all records, written
// atomically at the end).
#pragma once

#include <cstdio>
#include <memory>
#include <mutex>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "bench/record.h"

namespace arfit::bench {

class Reporter {
 public:
  virtual ~Reporter() = default;
  virtual void start(const RunHeader&, std::size_t /*planned*/, std::size_t /*already_done*/) {}
  virtual void report(const Record& r) = 0;
  virtual void finish(const RunSummary&) {}
};

class ConsoleReporter : public Reporter {
 public:
  ConsoleReporter(std::ostream& out, std::ostream& err, bool quiet) : out_(out), err_(err), quiet_(quiet) {}
  void start(const RunHeader& header, std::size_t planned, std::size_t already_done) override;
  void report(const Record& r) override;
  void finish(const RunSummary& s) override;

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
  bool resumed() const { return start != JournalStart::Fresh; }
};

// Checks the output path and its journal against the output-path rule (model/atomic_file.h:
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
OutputState inspect_output(const std::string& path, const std::string& grid_json, bool resume, bool overwrite,
                           const std::string& cuda_graph = "off", const std::string& device = "",
                           const std::set<std::string>* planned = nullptr, const std::string& backend = "",
                           const RunHeader* run_header = nullptr);

// The sample CSV: the model/ schema with one extra column, "note". Rows go to the journal (OutputState) and
// are flushed one by one; finish() (the run ended, whether or not cases failed) moves the journal over the
// output with move_into_place. Without finish() (a kill, a crash, a hung collective) the output is untouched.
class CsvReporter : public Reporter {
 public:
  CsvReporter(std::string path, OutputState state);
  ~CsvReporter() override;
  // Creates the output's folder and opens the journal (GridError naming -o/--output when it cannot): arbench
  // calls it before the run, so an unwritable place is a usage error of every rank, not an MPI_Abort at the
  // first case. start() opens it when this was not called.
  void open_journal();
  void start(const RunHeader& header, std::size_t planned, std::size_t already_done) override;
  void report(const Record& r) override;
  void finish(const RunSummary& s) override;

  static const std::vector<std::string>& extra_columns();

 private:
  std::string path_;
  OutputState state_;
  std::FILE* f_ = nullptr;
};

class JsonReporter : public Reporter {
 public:
  explicit JsonReporter(std::string path) : path_(std::move(path)) {}
  void start(const RunHeader& header, std::size_t planned, std::size_t already_done) override;
  void report(const Record& r) override;
  void finish(const RunSummary& s) override;

 private:
  std::string path_;
  RunHeader header_;
  std::vector<Record> records_;
};

}  // namespace arfit::bench
