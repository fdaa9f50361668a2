#include "io/temp_file_cleanup.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/system_reason.h"

namespace arfit::io_detail {
namespace {

// Temporary files being written, in a fixed table the signal handler can walk without allocating or locking:
// a slot is claimed (0 -> 1), filled, published (2); the handler unlinks published slots only.
constexpr int kTempSlots = 32;
constexpr std::size_t kTempPathMax = 4096;
struct TempSlot {
  std::atomic<int> state{0};
  char path[kTempPathMax];
};
TempSlot g_temp[kTempSlots];
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs lock-free slot states");

// Staging folders (StagingFolder) being filled, in a table of the same kind: the handler empties and removes them.
constexpr int kStagingSlots = 4;
TempSlot g_staging[kStagingSlots];

// Not SIGXFSZ: it is caught (catch_file_size_limit), so that a write past ulimit -f fails as a full disk does.
constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
struct sigaction g_previous[sizeof kCleanupSignals / sizeof kCleanupSignals[0]];

// Removes the files of a staging folder (it holds files only) and the folder, with async-signal-safe calls only:
// opendir/readdir may allocate, so the entries are read with the getdents64 system call. Entries are unlinked
// while the folder is read, so it is read again until a pass finds nothing left (a few passes at most).
void remove_staging_folder_in_handler(const char* path) {
#ifdef __linux__
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    struct Entry {  // struct linux_dirent64
      std::uint64_t ino;
      std::int64_t off;
      unsigned short reclen;
      unsigned char type;
      char name[1];
    };
    alignas(8) char buf[8192];
    for (int pass = 0; pass < 8; ++pass) {
      bool removed = false;
      ::lseek(fd, 0, SEEK_SET);
      for (long n; (n = ::syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0;)
        for (long at = 0; at < n;) {
          const Entry* e = reinterpret_cast<const Entry*>(buf + at);
          at += e->reclen;
          if (e->name[0] == '.' && (e->name[1] == 0 || (e->name[1] == '.' && e->name[2] == 0))) continue;
          removed = ::unlinkat(fd, e->name, 0) == 0 || removed;
        }
      if (!removed) break;
    }
    ::close(fd);
  }
#endif
  ::rmdir(path);
}

}  // namespace

void remove_registered_temporaries() {
  for (TempSlot& s : g_temp)
    if (s.state.load() == 2) ::unlink(s.path);  // unlink is async-signal-safe
  for (TempSlot& s : g_staging)
    if (s.state.load() == 2) remove_staging_folder_in_handler(s.path);
}

namespace {

extern "C" void remove_temporaries_and_reraise(int sig) {
  const int saved_errno = errno;
  remove_registered_temporaries();
  // Restore what was there before (the default action: we only install over SIG_DFL) and deliver the signal
  // again; it is blocked inside this handler and terminates the process as soon as the handler returns.
  for (std::size_t i = 0; i < sizeof kCleanupSignals / sizeof kCleanupSignals[0]; ++i)
    if (kCleanupSignals[i] == sig) ::sigaction(sig, &g_previous[i], nullptr);
  ::raise(sig);
  errno = saved_errno;
}

// SIGXFSZ's default action (ulimit -f reached) kills the process in the middle of a write, leaving the temporary file
// behind and the exit status a signal's. With a handler installed the write fails with EFBIG instead, and the failed
// write is reported and cleaned up as a full disk is ("cannot write: File too large", exit 1). A handler that does
// nothing rather than SIG_IGN: exec resets a handler to the default, so gnuplot, which arfit runs, still dies of the
// limit instead of finishing a truncated image it would report as drawn.
extern "C" void note_file_size_limit(int) {}

}  // namespace

void catch_file_size_limit() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    // A process that set its own disposition (a test harness, `trap '' XFSZ`) keeps it.
    if (::sigaction(SIGXFSZ, nullptr, &old) != 0 || old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) return;
    struct sigaction sa {};
    sa.sa_handler = note_file_size_limit;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    ::sigaction(SIGXFSZ, &sa, nullptr);
  });
}

namespace {

void install_cleanup_handlers() {
  catch_file_size_limit();
  static std::once_flag once;
  std::call_once(once, [] {
    for (std::size_t i = 0; i < sizeof kCleanupSignals / sizeof kCleanupSignals[0]; ++i) {
      struct sigaction old {};
      if (::sigaction(kCleanupSignals[i], nullptr, &old) != 0) continue;
      // A signal the process ignores (nohup) or handles itself (MPI, a test harness) is left alone.
      if (old.sa_handler != SIG_DFL || (old.sa_flags & SA_SIGINFO)) continue;
      g_previous[i] = old;
      struct sigaction sa {};
      sa.sa_handler = remove_temporaries_and_reraise;
      sigemptyset(&sa.sa_mask);
      sa.sa_flags = 0;
      ::sigaction(kCleanupSignals[i], &sa, nullptr);
    }
  });
}

// Puts a path the signal handler removes in the table. Returns the slot, or -1 when none is free or the path is too
// long: the file is then still removed on errors, only not on signals.
template <int N>
int register_in(TempSlot (&table)[N], const std::string& path) {
  install_cleanup_handlers();
  if (path.size() >= kTempPathMax) return -1;
  for (int i = 0; i < N; ++i) {
    int free_state = 0;
    if (table[i].state.compare_exchange_strong(free_state, 1)) {
      std::memcpy(table[i].path, path.c_str(), path.size() + 1);
      table[i].state.store(2);
      return i;
    }
  }
  return -1;
}

void release_in(TempSlot* table, int slot) {
  if (slot >= 0) table[slot].state.store(0);
}

// The longest file name `folder` takes (NAME_MAX; 255 where the system does not say).
std::size_t longest_name_in(const std::string& folder) {
  const long n = ::pathconf(folder.empty() ? "." : folder.c_str(), _PC_NAME_MAX);
  return n > 0 ? static_cast<std::size_t>(n) : 255;
}

// `name` cut to at most `max` bytes, not inside a UTF-8 character.
std::string cut_name(const std::string& name, std::size_t max) {
  if (name.size() <= max) return name;
  std::size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  return name.substr(0, n);
}

// Names of a temporary sibling of `target` (a file or a folder), "<target>.tmp.<pid><suffix>" first, then
// "<target>.tmp.<pid>.<n><suffix>" while those are taken. The name part is shortened where the whole would pass the
// folder's NAME_MAX, so every name a target may have, its temporary can have too.
class TemporaryNames {
 public:
  TemporaryNames(const std::string& target, std::string suffix) : suffix_(std::move(suffix)) {
    const std::filesystem::path t(target);
    folder_ = t.parent_path().string();
    name_ = t.filename().string();
    max_ = longest_name_in(folder_);
  }
  std::string operator()(int attempt) const {
    const std::string tail = ".tmp." + std::to_string(::getpid()) + (attempt ? "." + std::to_string(attempt) : "") + suffix_;
    const std::string name = cut_name(name_, max_ > tail.size() ? max_ - tail.size() : 0) + tail;
    return folder_.empty() ? name : (std::filesystem::path(folder_) / name).string();
  }

 private:
  std::string folder_, name_, suffix_;
  std::size_t max_;
};

// A name is tried at most this often: far more than any folder's stale temporaries of one pid.
constexpr int kTemporaryAttempts = 1000;

template <int N>
CreatedTemporary create_unique(TempSlot (&table)[N], const std::string& target, const std::string& suffix,
                               const std::string& output_for_messages, bool folder) {
  install_cleanup_handlers();
  const TemporaryNames names(target, suffix);
  int err = 0;
  for (int attempt = 0; attempt < kTemporaryAttempts; ++attempt) {
    CreatedTemporary t;
    t.path = names(attempt);
    BlockCleanupSignals blocked;
    bool created;
    if (folder) {
      created = ::mkdir(t.path.c_str(), 0777) == 0;
    } else {
      t.fd = ::open(t.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      created = t.fd >= 0;
    }
    if (created) {
      t.slot = register_in(table, folder ? std::filesystem::absolute(t.path).string() : t.path);
      return t;
    }
    err = errno;
    if (err != EEXIST) break;
  }
  throw std::runtime_error(output_for_messages + ": cannot create the temporary " + (folder ? "folder " : "file ") +
                           names(0) + ": " + sys_reason(err ? err : EEXIST));
}

}  // namespace

CreatedTemporary create_unique_temporary(TemporaryKind kind, const std::string& target, const std::string& suffix,
                                         const std::string& output_for_messages) {
  if (kind == TemporaryKind::StagingFolder) return create_unique(g_staging, target, suffix, output_for_messages, true);
  return create_unique(g_temp, target, suffix, output_for_messages, false);
}

void release_temporary(TemporaryKind kind, int slot) { release_in(kind == TemporaryKind::StagingFolder ? g_staging : g_temp, slot); }


BlockCleanupSignals::BlockCleanupSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kCleanupSignals) sigaddset(&set, sig);
  ::pthread_sigmask(SIG_BLOCK, &set, &saved_);
}

BlockCleanupSignals::~BlockCleanupSignals() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }

}  // namespace arfit::io_detail
