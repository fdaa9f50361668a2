// Writing outputs atomically: writers never leave half-written outputs. They write "<path>.tmp.<pid>" in the same
// directory, then rename. The temporary is created exclusively: a file that already has the name is never truncated
// or removed (the next free "<path>.tmp.<pid>.<n>" is taken), and the name part is shortened where the whole would
// pass NAME_MAX. Every output passes the output-path rule first (io/output_path_rule.h); "-" is standard output for
// an output written as one stream. Write failures throw std::runtime_error with the system's reason (strerror).
// Temporary files are removed on the cleanup signals (io/temp_file_cleanup.h).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "io/output_path_rule.h"

namespace arfit {

// Calls write(stream); on success flushes, closes and renames over `path` (or the file its symbolic link
// names). On any exception or write failure the temporary file is removed and the exception propagates.
// For "-" the stream is standard output (what was written before a failure has gone out).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

// Same, for a complete string.
void write_string_atomically(const std::string& path, const std::string& content);

// Outputs of one run that belong together (eval's --json and --points, arbench's -o and --json): a run either
// replaces all of them or leaves all of them as they were. add() writes each member to its own temporary file beside
// the file it replaces (the rule checked, registered for removal on the cleanup signals); commit() renames them all,
// and only after every one was written. A failed write (a full disk, ulimit -f), a refused path, an exception before
// commit() or one of the cleanup signals removes every temporary and leaves every old output byte-identical. The
// renames run with those signals held off, so a Ctrl-C lands before the first or after the last; after their checks
// a rename fails only where the file system changed under the run, and the outputs renamed before it stay. "-" (standard output,
// at most one member) cannot be taken back: it is written at commit(), after the files and before their renames,
// so that a failed standard output moves no file either.
class OutputSet {
 public:
  OutputSet() = default;
  ~OutputSet();  // removes the temporaries commit() did not move
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;
  // Writes a member now (its temporary file), or for "-" keeps `write` for commit(): what it refers to must live
  // until then. A path naming the same file as an earlier member is refused (OutputPathError).
  void add(const std::string& path, std::function<void(std::ostream&)> write);
  void add(const std::string& path, std::string content);
  // A member written before, into a file of its own beside `path`'s target (arbench's journal), renamed over `path` by
  // commit(). The set never removes it: a run that fails keeps it where it is (the journal --resume continues).
  void add_written(const std::string& path, const std::string& written);
  // Writes standard output's member, checks every path again (the output-path rule), then renames each temporary over its
  // path in the order added. Returns the paths.
  std::vector<std::string> commit();

 private:
  struct Member {
    std::string path, temporary;  // temporary: empty for "-"
    int slot = -1;
    bool kept_on_failure = false;  // add_written's file
    std::function<void(std::ostream&)> write_standard_output;
  };
  void refuse_a_file_named_twice(const std::string& path) const;  // OutputPathError
  std::vector<Member> members_;
};

// A temporary file that another program fills (gnuplot renders an image into it), for outputs this process
// does not write itself. The rule is checked when it is created; the file is registered for removal on the
// cleanup signals and removed on destruction unless commit() renamed it over `path` (checked again then).
class TemporaryOutput {
 public:
  // The temporary path is `path`'s target + ".tmp.<pid>" + suffix (a suffix keeps an extension programs read), or
  // the next free name (see above); it is created empty, so that the name is this run's.
  explicit TemporaryOutput(const std::string& path, const std::string& suffix = "");
  ~TemporaryOutput();
  TemporaryOutput(const TemporaryOutput&) = delete;
  TemporaryOutput& operator=(const TemporaryOutput&) = delete;
  const std::string& path() const { return tmp_; }
  void commit();

 private:
  std::string output_, tmp_;
  int slot_ = -1;
  bool committed_ = false;
};

}  // namespace arfit
