// Temporary files and staging folders are removed when the process is stopped by SIGINT, SIGTERM, SIGHUP or SIGPIPE:
// they are registered in fixed tables that an async-signal-safe handler walks, unlinking them and re-raising the signal
// with its default action. SIGXFSZ (ulimit -f) is caught, so that a write past the limit fails with EFBIG like a full
// disk instead of killing the process (io/resource_limits.h does so for the whole run).
//
// For io/'s writers (io/atomic_output.h, io/staging_folder.h, io/resource_limits.h): not part of the interface.
#pragma once

#include <csignal>
#include <string>

namespace arfit::io_detail {

// Which table a temporary is registered in: the handler unlinks a file, and empties and removes a staging folder.
enum class TemporaryKind { File, StagingFolder };

// A temporary file or staging folder of this process, created under a name nothing else has: made with O_EXCL
// (mkdir for a folder), so a file that already has the name (a stale temporary of an earlier process with this
// pid, one of a process with the same pid in another PID namespace writing into a shared folder, a user's file) is
// never truncated or removed; the next name is taken instead (nor written through: O_EXCL and mkdir do not follow a
// symbolic link). Registered for removal on the signals.
struct CreatedTemporary {
  std::string path;
  int fd = -1;  // for a file: open for writing
  int slot = -1;
};

// Creates the temporary sibling of `target`: "<target>.tmp.<pid><suffix>" first, then "<target>.tmp.<pid>.<n><suffix>"
// while those are taken (the name part shortened where the whole would pass the folder's NAME_MAX). Throws
// std::runtime_error naming `output_for_messages` when none can be created.
CreatedTemporary create_unique_temporary(TemporaryKind kind, const std::string& target, const std::string& suffix,
                                         const std::string& output_for_messages);
// Takes a temporary off its table (slot -1: nothing to do): it has been renamed or removed.
void release_temporary(TemporaryKind kind, int slot);
// What the signal handler and an out-of-memory end remove: the published temporary files and staging folders.
// Async-signal-safe.
void remove_registered_temporaries();
// Installs SIGXFSZ's handler once (when the signal is at its default action).
void catch_file_size_limit();

// Blocks the cleanup signals in this thread while alive: between creating a temporary file (or staging folder) and
// registering it, a signal would leave it behind; between registering a name and finding that it is taken, the
// handler would remove another's file.
class BlockCleanupSignals {
 public:
  BlockCleanupSignals();
  ~BlockCleanupSignals();
  BlockCleanupSignals(const BlockCleanupSignals&) = delete;
  BlockCleanupSignals& operator=(const BlockCleanupSignals&) = delete;

 private:
  sigset_t saved_;
};

// Keeps a temporary file registered while it may exist on disk. With more than the table's slots of concurrent
// writes (or an over-long path) the file is still removed on errors, only not on signals.
class TempRegistration {
 public:
  explicit TempRegistration(int slot) : slot_(slot) {}
  ~TempRegistration() { release_temporary(TemporaryKind::File, slot_); }
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;

 private:
  int slot_ = -1;
};

}  // namespace arfit::io_detail
