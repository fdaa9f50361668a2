// Reporters format records; only rank 0 has them. Console (progress + ETA), sample CSV (append + flush per
// case, the file --resume continues), JSON (all records, written atomically at the end).
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

// Output file state found before the run (rank 0).
struct OutputState {
  bool append = false;                 // the file exists and is continued (--resume)
  std::set<std::string> finished;      // Case::key()s already in the file
};

// Checks the output path against the output-path rule (model/atomic_file.h: OutputPathError) and --resume /
// --overwrite and, for --resume, reads the finished cases. The whole file is validated in memory first; only
// then is a partial last line (a kill mid-write) cut off, so a file --resume refuses is left as it was.
// Throws GridError naming the option on conflicts: the file exists without --resume/--overwrite, or it was
// written for a different grid or plan, or (naming -G/--cuda-graph) measured in another CUDA-graph mode:
// `cuda_graph` is this run's header value (cuda_graph_header_value), compared with the file's (absent =
// "off"); InputError (bad data, exit 1) when the file is not a readable sample file.
OutputState inspect_output(const std::string& path, const std::string& grid_json, bool resume, bool overwrite,
                           const std::string& cuda_graph = "off");

// The sample CSV: the model/ schema with one extra column, "note".
class CsvReporter : public Reporter {
 public:
  CsvReporter(std::string path, bool append);
  ~CsvReporter() override;
  void start(const RunHeader& header, std::size_t planned, std::size_t already_done) override;
  void report(const Record& r) override;

  static const std::vector<std::string>& extra_columns();

 private:
  std::string path_;
  bool append_;
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
