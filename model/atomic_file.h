// Reading inputs and writing outputs, with one output-path rule for every writer.
//
// Writers never leave half-written outputs: they write "<path>.tmp.<pid>" in the same directory, then rename. The
// temporary is created exclusively: a file that already has the name is never truncated or removed (the next free
// "<path>.tmp.<pid>.<n>" is taken), and the name part is shortened where the whole would pass NAME_MAX.
// Before anything is created the output path must pass the output-path rule (check_output_path):
//   - an output that is the same file as an input of this process is refused: read_file records the
//     device and inode of every file it reads, so hard links, symbolic links and relative paths to an input
//     are caught, not only the same spelling;
//   - an existing output that is not a regular file (a device node, FIFO, socket or directory) is refused;
//   - a symbolic link is followed: the regular file it names is replaced and the link is kept (the user named
//     the link to mean its target, as cp and editors do); a dangling link, or one to anything else, is refused;
//   - an existing output without write permission (a read-only file) is refused, also for root.
// The path "-" is standard output, for an output written as one stream (write_file_atomically): it is written there
// (no temporary file), and from the first check or write of "-" on, what the process prints on standard output (a
// command's report) goes to standard error, so the data stays alone in the stream. Outputs that are folders or
// assembled as files (check_output_directory, StagingFolder, TemporaryOutput, move_into_place) refuse "-".
// Refusals throw OutputPathError (a usage error: the path came from an option); write failures throw
// std::runtime_error with the system's reason (strerror). Temporary files are removed when the process is
// stopped by SIGINT, SIGTERM, SIGHUP or SIGPIPE (an async-signal-safe handler unlinks them and re-raises the
// signal with its default action). SIGXFSZ (ulimit -f) is caught, so that a write past the limit fails with EFBIG
// like a full disk instead of killing the process; fail_cleanly_at_resource_limits does so for the whole run (standard
// output included) and for std::bad_alloc.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace arfit {

// Calls write(stream); on success flushes, closes and renames over `path` (or the file its symbolic link
// names). On any exception or write failure the temporary file is removed and the exception propagates.
// For "-" the stream is standard output (what was written before a failure has gone out).
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

// Same, for a complete string.
void write_string_atomically(const std::string& path, const std::string& content);

// Outputs of one run that belong together (eval's --json and --points, arbench's -o and --json): a run either
// replaces all of them or leaves all of them as they were. add() writes each member to its own temporary file beside
// the file it replaces (the rule checked, registered for removal on the signals above); commit() renames them all,
// and only after every one was written. A failed write (a full disk, ulimit -f), a refused path, an exception before
// commit() or one of the signals above removes every temporary and leaves every old output byte-identical. The
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
  // Writes standard output's member, checks every path again (the rule above), then renames each temporary over its
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

// True for "-", the name of standard output as an output path (the rule above).
bool is_standard_output(const std::string& path);
// True once an output "-" has been checked or written: the process's standard output (std::cout, stdout) then
// writes to standard error, so what is printed there is a report, no longer an output (model/stdout_check.h).
bool standard_output_taken();

// The file an output path replaces: `path`, or the regular file its symbolic link names (the rule above, which it
// checks). A file that becomes the output by a rename (a journal) belongs in this file's folder: a rename never
// crosses file systems.
std::string output_target(const std::string& path);

// Throws OutputPathError when `path` may not be written (the rule above). Every write checks it; commands also
// call it right after reading their inputs, to refuse before long work rather than after.
void check_output_path(const std::string& path);

// Throws OutputPathError unless `path`'s folder exists and this user may create files in it. For commands
// that write several outputs and create no folders: all are checked before the first is written, so a bad
// second path leaves the first output as it was.
void check_output_folder(const std::string& path);

// check_output_path, then check_output_folder: for an output file that write_file_atomically writes into its folder
// as it is (it creates no folder), so that a missing or unwritable folder is refused (a usage error naming the path)
// before the command works, not found by the write after it (a failed run).
void check_output_file(const std::string& path);

// Throws OutputPathError unless `dir` can hold a command's outputs: an existing folder this user may create
// files in, or a missing one whose nearest existing ancestor is such a folder (it is created then).
void check_output_directory(const std::string& dir);

// Moves a file written elsewhere (a staging folder of the same file system) over `path`, which must pass the
// rule; the mode of a replaced file is kept. For outputs assembled in a folder before they all appear.
void move_into_place(const std::string& staged, const std::string& path);

// A temporary file that another program fills (gnuplot renders an image into it), for outputs this process
// does not write itself. The rule is checked when it is created; the file is registered for removal on the
// signals above and removed on destruction unless commit() renamed it over `path` (checked again then).
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

// An exclusive lock on an output folder, held while a command moves its staged files into it: two runs writing into
// one folder at the same instant commit one after the other (the second waits, then replaces the first's files
// whole), so the folder always holds one run's complete set, never half of each. A flock(2) on the folder itself,
// so nothing is created in it (no lock file to list, skip or leave behind); the kernel releases it when the process
// ends, also on a crash. Blocks until the lock is free: a commit is a few renames. On one machine only: flock on a
// network file system's folder does not exclude runs on other machines. Best effort: where the folder cannot be
// opened (writable, not readable) or the file system refuses the lock (NFS wants a writable descriptor), the commit
// goes on without it (held() false), as it did before the lock existed.
class OutputFolderLock {
 public:
  explicit OutputFolderLock(const std::string& dir);  // `dir` must exist
  ~OutputFolderLock();
  bool held() const { return fd_ >= 0; }
  OutputFolderLock(const OutputFolderLock&) = delete;
  OutputFolderLock& operator=(const OutputFolderLock&) = delete;

 private:
  int fd_ = -1;
};

// A hidden folder inside an output folder where a command assembles all its outputs before any of them appears
// (several figures and their scripts, a report's tables): files are written or rendered into it, then commit()
// checks every destination (the rule above) before it moves the first one, so a failed or refused run leaves the
// folder's old files byte-identical. `dir` is created when missing. On destruction without commit() (an exception)
// the staging folder and everything in it is removed, and so are the folders made for `dir` when they are left
// empty; on the signals above the handler removes the staging folder and its files (not `dir`).
class StagingFolder {
 public:
  // Creates `dir` and "<dir>/.arfit-<what>.tmp.<pid>" (or ".<n>" after it, where the name is taken: a folder that
  // has it, a stale one or another process's, is never removed).
  StagingFolder(const std::string& dir, const std::string& what);
  ~StagingFolder();
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;
  const std::string& path() const { return path_; }
  // Where a file to be moved to "<dir>/<name>" is staged.
  std::string file(const std::string& name) const;
  // Takes `dir`'s OutputFolderLock (waiting for another run's commit) and holds it until destruction. commit()
  // takes it itself; a command calls lock() earlier when it also writes a file made from the folder's contents
  // (plot's index page), so that no other run's commit falls between reading the folder and committing.
  void lock();
  // Under the lock: checks "<dir>/<name>" for every name, then moves each staged file there, in order, and removes
  // the staging folder. Returns the destinations.
  std::vector<std::string> commit(const std::vector<std::string>& names);

 private:
  void remove();

  std::string dir_, path_;
  std::unique_ptr<OutputFolderLock> lock_;
  std::vector<std::string> created_;  // folders made for `dir`, deepest first
  int slot_ = -1;
  bool committed_ = false;
};

// True for a folder name StagingFolder uses (".arfit-<what>.tmp.<pid>"): readers of an output folder (the figure
// index) skip them, so they never list the half-assembled outputs of a run still going.
bool is_staging_folder_name(const std::string& name);

// What a program says when memory runs out (std::bad_alloc's own what() says only "std::bad_alloc").
inline constexpr const char* kOutOfMemoryMessage =
    "out of memory (a memory limit such as ulimit -v, or inputs too large for this machine)";

// For a program's main, first thing: the limits of ulimit end the run as a failed run (exit 1 and a message), not as a
// kill or an abort that leaves temporary files behind.
//   - ulimit -f: SIGXFSZ is caught (when at its default), so a write past the limit fails with EFBIG, also on
//     standard output ("writing standard output failed: File too large"); exec gives children the default back.
//   - ulimit -v: a std::bad_alloc that reaches std::terminate (one thrown where no exception may pass: a library's
//     destructor that allocates while an earlier std::bad_alloc unwinds the stack, as nlohmann::json's does) removes
//     the temporary files of writes in flight (as the signal handler does), prints "<program>: error: " +
//     kOutOfMemoryMessage and exits with 1. Any other reason for std::terminate keeps the previous handler (abort).
// `program` must outlive the process.
void fail_cleanly_at_resource_limits(const char* program);

// Largest file the readers take: 1 GiB, some hundred times the largest measurement log or models file.
inline constexpr std::size_t kMaxInputBytes = std::size_t{1} << 30;

// Reads a whole text file as every reader sees it: a leading UTF-8 byte-order mark is dropped and lone
// carriage returns (classic Mac line ends) become line feeds, so line numbers in messages are the lines an
// editor shows; CRLF is kept. Records the file as an input of this process. Throws std::runtime_error naming
// the path and the system's reason, for a character or block device (/dev/zero, a disk, a terminal: refused before
// reading; FIFOs and pipes are read), and past `max_bytes` (a FIFO fed forever stops there instead of filling the
// memory).
std::string read_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes);
// Why `path`, named as an input on a command line, holds no bytes to read, or "" when it does (a regular file, a
// FIFO, a pipe such as /dev/stdin or a process substitution; links followed): "PATH: no such file", "PATH: is a
// directory, not a file", "PATH: is a character device, not a file; give a file, a pipe or a FIFO" (the words
// read_file refuses a device with). The one check of input paths: every arfit command refuses these as usage
// errors (exit 2) before any work, where a device was exit 1 after the options and plot took a FIFO for no file.
std::string input_path_problem(const std::string& path);
// read_file for a command's input: a file that cannot be read is bad input (InputError naming the path, exit 1).
std::string read_input_file(const std::string& path);
// The bytes as they are, of the output a writer continues (arbench --resume measures and appends to it): not
// recorded as an input, since it is this run's output.
std::string read_file_bytes(const std::string& path);
// The fingerprint a models file records next to an input's path (`inputs` / `priors`; codegen's banner): FNV-1a
// 64 of the file's bytes (fnv1a64_hex, model/text.h) as this process read them with read_file, or as they are
// now when it has not read them; "" when the file cannot be read.
std::string input_fingerprint(const std::string& path);
// The text normalisation read_file applies.
std::string normalize_text(std::string text);

// True when both paths name the same file: the same device and inode when they exist, else the same path
// once symbolic links and "." / ".." are resolved. Two outputs of one command must not be the same file.
bool same_path(const std::string& a, const std::string& b);

}  // namespace arfit
