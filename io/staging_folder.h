// Outputs assembled in a folder before any of them appears (plot's figures, breakdown's tables), and the lock that
// keeps two runs' commits into one folder apart. Every destination passes the output-path rule
// (io/output_path_rule.h); staging folders are removed on the cleanup signals (io/temp_file_cleanup.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace arfit {

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
// checks every destination (the output-path rule) before it moves the first one, so a failed or refused run leaves the
// folder's old files byte-identical. `dir` is created when missing. On destruction without commit() (an exception)
// the staging folder and everything in it is removed, and so are the folders made for `dir` when they are left
// empty; on the cleanup signals the handler removes the staging folder and its files (not `dir`).
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

}  // namespace arfit
