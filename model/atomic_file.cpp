#include "model/atomic_file.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <streambuf>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <vector>

#include "model/errors.h"
#include "model/text.h"

namespace arfit {
namespace {

std::string sys_reason(int err) { return std::strerror(err); }

// ---------------------------------------------------------------- inputs of this process

struct InputFile {
  dev_t dev;
  ino_t ino;
  std::string path;
};

std::mutex& inputs_mutex() {
  static std::mutex m;
  return m;
}
std::vector<InputFile>& inputs() {
  static std::vector<InputFile> v;
  return v;
}

void remember_input(const struct stat& st, const std::string& path) {
  std::lock_guard<std::mutex> lock(inputs_mutex());
  for (const InputFile& f : inputs())
    if (f.dev == st.st_dev && f.ino == st.st_ino) return;
  inputs().push_back({st.st_dev, st.st_ino, path});
}

// What was read through each input path as given: the file it named then and the fingerprint of the bytes (the
// last read, when it was read more than once).
struct ReadFingerprint {
  dev_t dev;
  ino_t ino;
  std::string fnv1a64;
};

std::map<std::string, ReadFingerprint>& fingerprints_by_path() {
  static std::map<std::string, ReadFingerprint> m;
  return m;
}

void remember_fingerprint(const struct stat& st, const std::string& path, std::string fingerprint) {
  std::lock_guard<std::mutex> lock(inputs_mutex());
  fingerprints_by_path()[path] = {st.st_dev, st.st_ino, std::move(fingerprint)};
}

bool names_file(const std::string& path, dev_t dev, ino_t ino) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

// The fingerprint of the bytes read through `path`, else through another name (./x, a link) of the file `path`
// names now, or "" when it was not read whole. Found by the path first: a file renamed over the path after the
// read (an editor's save, another arfit's atomic write) is not what was read; and an inode number only names a
// file while that file exists (a deleted input's number is given to the next new file), so another name counts
// while it still names the same file.
std::string recorded_fingerprint(const std::string& path) {
  std::lock_guard<std::mutex> lock(inputs_mutex());
  if (const auto it = fingerprints_by_path().find(path); it != fingerprints_by_path().end()) return it->second.fnv1a64;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  for (const auto& [read_path, read] : fingerprints_by_path())
    if (read.dev == st.st_dev && read.ino == st.st_ino && names_file(read_path, read.dev, read.ino)) return read.fnv1a64;
  return "";
}

// The input path recorded for this file, or "" when it is not an input.
std::string input_named(const struct stat& st) {
  std::lock_guard<std::mutex> lock(inputs_mutex());
  for (const InputFile& f : inputs())
    if (f.dev == st.st_dev && f.ino == st.st_ino) return f.path;
  return "";
}

// ---------------------------------------------------------------- temporary files and signals

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

// What the signal handler and an out-of-memory end remove: the published temporary files and staging folders.
void remove_registered_temporaries() {
  for (TempSlot& s : g_temp)
    if (s.state.load() == 2) ::unlink(s.path);  // unlink is async-signal-safe
  for (TempSlot& s : g_staging)
    if (s.state.load() == 2) remove_staging_folder_in_handler(s.path);
}

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

// Blocks the cleanup signals in this thread while alive: between creating a temporary file (or staging folder) and
// registering it, a signal would leave it behind; between registering a name and finding that it is taken, the
// handler would remove another's file.
class BlockCleanupSignals {
 public:
  BlockCleanupSignals() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kCleanupSignals) sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, &saved_);
  }
  ~BlockCleanupSignals() { ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  BlockCleanupSignals(const BlockCleanupSignals&) = delete;
  BlockCleanupSignals& operator=(const BlockCleanupSignals&) = delete;

 private:
  sigset_t saved_;
};

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

// A temporary file or staging folder of this process, created under a name nothing else has: made with O_EXCL
// (mkdir for a folder), so a file that already has the name (a stale temporary of an earlier process with this
// pid, one of a process with the same pid in another PID namespace writing into a shared folder, a user's file) is
// never truncated or removed; the next name is taken instead (nor written through: O_EXCL and mkdir do not follow a
// symbolic link). Registered in `table` for removal on the signals.
struct CreatedTemporary {
  std::string path;
  int fd = -1;  // for a file: open for writing
  int slot = -1;
};

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

// Keeps a temporary file registered while it may exist on disk. With more than kTempSlots concurrent writes (or an
// over-long path) the file is still removed on errors, only not on signals.
class TempRegistration {
 public:
  explicit TempRegistration(int slot) : slot_(slot) {}
  ~TempRegistration() { release_in(g_temp, slot_); }
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;

 private:
  int slot_ = -1;
};

// ---------------------------------------------------------------- output stream over a file descriptor

// An ostream buffer writing to a descriptor and keeping errno of the first failed write, so that a full disk
// is reported as "No space left on device" rather than a bare stream failure.
class FdOutBuf : public std::streambuf {
 public:
  explicit FdOutBuf(int fd) : fd_(fd), buf_(1 << 16) { setp(buf_.data(), buf_.data() + buf_.size()); }
  int error() const { return err_; }

 protected:
  int_type overflow(int_type c) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return drain() ? 0 : -1; }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    if (n < static_cast<std::streamsize>(buf_.size())) return std::streambuf::xsputn(s, n);
    if (!drain() || !write_all(s, static_cast<std::size_t>(n))) return 0;
    return n;
  }

 private:
  bool drain() {
    const std::size_t n = static_cast<std::size_t>(pptr() - pbase());
    const bool ok = n == 0 || write_all(pbase(), n);
    setp(buf_.data(), buf_.data() + buf_.size());
    return ok;
  }
  bool write_all(const char* p, std::size_t n) {
    if (err_) return false;
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        err_ = errno;
        return false;
      }
      p += w;
      n -= static_cast<std::size_t>(w);
    }
    return true;
  }

  int fd_;
  std::vector<char> buf_;
  int err_ = 0;
};

// ---------------------------------------------------------------- the output-path rule

struct ResolvedOutput {
  std::string target;  // the path to replace: `path`, or the file its symbolic link names
  bool exists = false;
  mode_t mode = 0;     // permissions of the existing file, kept by the replacement
};

std::string file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISREG(m)) return "a regular file";
  return "not a regular file";
}

std::atomic<bool> standard_output_moved{false};  // standard_output_fd has pointed the process's fd 1 away

// The descriptor of standard output for an output named "-", taken once: the process's fd 1 is duplicated for the
// writer and then points at standard error, so a command's report never mixes into the data.
int standard_output_fd() {
  static std::once_flag once;
  static int fd = -1, err = 0;
  std::call_once(once, [] {
    std::cout.flush();
    std::fflush(stdout);
    fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) {
      err = errno;
    } else if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
      // Standard error is closed (2>&-): the report is dropped rather than left on the data's descriptor.
      const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
      if (null >= 0) {
        ::dup2(null, STDOUT_FILENO);
        ::close(null);
      }
    }
    standard_output_moved = fd >= 0;
  });
  if (fd < 0) throw std::runtime_error("-: cannot use standard output: " + sys_reason(err));
  return fd;
}

ResolvedOutput resolve_output(const std::string& path) {
  ResolvedOutput out;
  out.target = path;
  if (path.empty()) throw OutputPathError("empty output path");
  if (is_standard_output(path))
    throw OutputPathError("-: standard output takes an output written as one stream; this one is assembled as a file "
                          "(a journal, a rendered image, a staged report): name a file (./- for a file named '-')");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return out;  // a new file (a missing folder is reported when the file is created)
    if (errno == ENOTDIR) {
      // A file stands where a folder of the path would be (samples.csv/out.json): name it, as the folder checks do.
      const int err = errno;
      struct stat up_st {};
      for (std::filesystem::path up = std::filesystem::path(path).parent_path(); !up.empty(); up = up.parent_path())
        if (::stat(up.c_str(), &up_st) == 0)
          throw OutputPathError(path + ": " + up.string() + " is " + file_kind(up_st.st_mode) + ", not a folder");
      throw OutputPathError(path + ": " + sys_reason(err));
    }
    // A path the system cannot resolve as named (too long, a loop of symbolic links, a folder this user may not
    // search) is the option's value to correct, as the folder checks say.
    if (errno == ENAMETOOLONG || errno == ELOOP || errno == EACCES) throw OutputPathError(path + ": " + sys_reason(errno));
    throw std::runtime_error(path + ": cannot check the output path: " + sys_reason(errno));
  }
  if (S_ISLNK(st.st_mode)) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (!real) throw OutputPathError(path + ": is a symbolic link to a missing file (" + sys_reason(errno) + "); refusing to write through it");
    out.target = real;
    std::free(real);
    if (::stat(out.target.c_str(), &st) != 0) throw std::runtime_error(path + ": cannot check the output path: " + sys_reason(errno));
    if (!S_ISREG(st.st_mode))
      throw OutputPathError(path + ": is a symbolic link to " + file_kind(st.st_mode) + " (" + out.target +
                            "); an output must be a regular file");
  } else if (!S_ISREG(st.st_mode)) {
    throw OutputPathError(path + ": is " + file_kind(st.st_mode) + "; an output must be a regular file (replacing it would destroy it)");
  }
  const std::string input = input_named(st);
  if (!input.empty())
    throw OutputPathError(path + ": is an input of this run" + (input == path ? std::string() : " (the same file as " + input + ")") +
                          "; write the output to another file");
  // Root may write anything, so the permission bits are checked too: a read-only file stays read-only.
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if ((st.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
    throw OutputPathError(path + ": is read-only (mode " + mode + "); refusing to replace it");
  if (::access(out.target.c_str(), W_OK) != 0) {
    if (errno == EACCES) throw OutputPathError(path + ": is not writable by this user (mode " + mode + "); refusing to replace it");
    throw std::runtime_error(path + ": cannot write: " + sys_reason(errno));  // e.g. a read-only file system
  }
  out.exists = true;
  out.mode = st.st_mode & 07777;
  return out;
}

// read_file's refusal of a device, and input_path_problem's.
std::string device_problem(const std::string& path, mode_t mode) {
  return path + ": is " + file_kind(mode) + ", not a file; give a file, a pipe or a FIFO";
}

std::string read_bytes(const std::string& path, bool is_input, std::size_t max_bytes = kMaxInputBytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(path + ": cannot open: " + sys_reason(errno));
  std::string out;
  struct stat st {};
  const bool known = ::fstat(fd, &st) == 0;
  if (known) {
    // A device never ends (/dev/zero, /dev/urandom) or is no file of measurements (a disk, a terminal): refused before
    // a byte is read. FIFOs and pipes (/dev/stdin fed by a pipe, a process substitution) are streams of a file's bytes.
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
      ::close(fd);
      throw std::runtime_error(device_problem(path, st.st_mode));
    }
    if (is_input) remember_input(st, path);
    if (S_ISREG(st.st_mode) && st.st_size > 0 && static_cast<std::uint64_t>(st.st_size) <= max_bytes)
      out.reserve(static_cast<std::size_t>(st.st_size));
  }
  std::vector<char> buf(1 << 16);
  while (true) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(path + ": cannot read: " + sys_reason(err));
    }
    if (out.size() + static_cast<std::size_t>(n) > max_bytes) {
      ::close(fd);
      throw std::runtime_error(path + ": larger than " + std::to_string(max_bytes >> 20) +
                               " MiB, more than any measurement or models file (a device or an endless stream?)");
    }
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  // What a models file records of its inputs, taken from these bytes: hashing the file again later would read a
  // FIFO twice and could hash another version of the file than the one read.
  if (known && is_input) remember_fingerprint(st, path, fnv1a64_hex(out));
  return out;
}

// ---------------------------------------------------------------- out of memory

const char* g_program = "arfit";
std::terminate_handler g_previous_terminate = nullptr;

void write_to_stderr(const char* text) {
  for (std::size_t n = std::strlen(text); n > 0;) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

// std::terminate's handler: a std::bad_alloc ends the process as a failed run, anything else as before. Writes with
// write(2) and no allocation: memory is what ran out.
[[noreturn]] void terminate_on_out_of_memory() {
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      remove_registered_temporaries();
      write_to_stderr(g_program);
      write_to_stderr(": error: ");
      write_to_stderr(kOutOfMemoryMessage);
      write_to_stderr("\n");
      ::_exit(1);
    } catch (...) {
    }
  }
  if (g_previous_terminate) g_previous_terminate();
  std::abort();
}

}  // namespace

void fail_cleanly_at_resource_limits(const char* program) {
  catch_file_size_limit();  // also for what goes to standard output, which no temporary file registers
  g_program = program;
  g_previous_terminate = std::set_terminate(terminate_on_out_of_memory);
}

bool is_standard_output(const std::string& path) { return path == "-"; }

bool standard_output_taken() { return standard_output_moved; }

std::string output_target(const std::string& path) { return resolve_output(path).target; }

void check_output_path(const std::string& path) {
  if (is_standard_output(path)) standard_output_fd();
  else resolve_output(path);
}

namespace {

// The checks both folder rules end with: `folder` (whose stat is `st`) must be a folder this user may create files
// in. Messages start with `output`, the path the option gave, and name `folder` unless it is that path itself.
void require_writable_folder(const std::string& output, const std::string& folder, const struct stat& st,
                             const std::string& not_a_folder_hint) {
  const std::string named = folder == output ? std::string() : folder + " ";
  if (!S_ISDIR(st.st_mode))
    throw OutputPathError(output + ": " + named + "is " + file_kind(st.st_mode) + ", not a folder" + not_a_folder_hint);
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    throw OutputPathError(output + ": cannot create files in the folder " + folder + " (" + sys_reason(errno) + ")");
}

}  // namespace

void check_output_directory(const std::string& dir) {
  if (dir.empty()) throw OutputPathError("empty output folder name");
  if (is_standard_output(dir))
    throw OutputPathError("-: standard output is one stream, not a folder of outputs: name a folder (./- for a folder named '-')");
  // The folder itself when it exists, else its nearest existing ancestor, in which it will be created.
  std::filesystem::path at = std::filesystem::path(dir);
  struct stat st {};
  while (::stat(at.c_str(), &st) != 0) {
    // ENOTDIR: a file stands where a folder of the path would be (file.csv/sub): its parent shows which.
    if (errno != ENOENT && errno != ENOTDIR) throw OutputPathError(dir + ": cannot check the output folder: " + sys_reason(errno));
    const std::filesystem::path up = at.parent_path();
    at = up.empty() || up == at ? std::filesystem::path(".") : up;
  }
  require_writable_folder(dir, at.string(), st, "; name a folder for the outputs");
}

void check_output_folder(const std::string& path) {
  if (is_standard_output(path)) return;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string folder = parent.empty() ? "." : parent.string();
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0)
    throw OutputPathError(path + ": the folder " + folder + " does not exist (" + sys_reason(errno) + ")");
  require_writable_folder(path, folder, st, "");
}

void check_output_file(const std::string& path) {
  check_output_path(path);
  check_output_folder(path);
}

namespace {

// Renames `from` over the output (or the regular file its link names), keeping a replaced file's mode.
void rename_over_output(const std::string& from, const std::string& path) {
  const ResolvedOutput out = resolve_output(path);
  if (out.exists && ::chmod(from.c_str(), out.mode) != 0)
    throw std::runtime_error(path + ": cannot set the permissions of " + from + ": " + sys_reason(errno));
  if (std::rename(from.c_str(), out.target.c_str()) != 0)
    throw std::runtime_error(path + ": cannot move " + from + " into place: " + sys_reason(errno));
}

}  // namespace

void move_into_place(const std::string& staged, const std::string& path) { rename_over_output(staged, path); }

TemporaryOutput::TemporaryOutput(const std::string& path, const std::string& suffix) : output_(path) {
  // Created empty, so that the name is this run's: the other program opens it for writing and truncates it.
  const CreatedTemporary t = create_unique(g_temp, resolve_output(path).target, suffix, path, false);
  ::close(t.fd);
  tmp_ = t.path;
  slot_ = t.slot;
}

TemporaryOutput::~TemporaryOutput() {
  if (!committed_) ::unlink(tmp_.c_str());
  release_in(g_temp, slot_);
}

void TemporaryOutput::commit() {
  rename_over_output(tmp_, output_);
  committed_ = true;
}

namespace {
constexpr const char* kStagingPrefix = ".arfit-";
constexpr const char* kStagingInfix = ".tmp.";
}  // namespace

bool is_staging_folder_name(const std::string& name) {
  return name.rfind(kStagingPrefix, 0) == 0 && name.find(kStagingInfix) != std::string::npos;
}

OutputFolderLock::OutputFolderLock(const std::string& dir) {
  // Best effort where the file system cannot lock: a folder that can be written but not read cannot be opened, and
  // NFS emulates flock with a write lock, which a read-only descriptor (all a folder gives) cannot take (EBADF,
  // ENOLCK). Refusing there would stop every breakdown and plot on such a folder for a guard against a rare race,
  // so the commit goes on unlocked, as before the lock existed. Only EINTR is retried.
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return;
  int rc;
  while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

OutputFolderLock::~OutputFolderLock() {
  if (fd_ >= 0) ::close(fd_);
}  // closing the last descriptor releases the lock

StagingFolder::StagingFolder(const std::string& dir, const std::string& what) : dir_(dir) {
  namespace fs = std::filesystem;
  if (is_standard_output(dir)) check_output_directory(dir);  // refuses it: standard output holds no folder
  std::error_code ec;
  for (fs::path p = fs::absolute(dir); !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    created_.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  const std::string staging = (fs::path(dir) / (kStagingPrefix + what)).string();
  try {
    fs::create_directories(dir);
  } catch (const fs::filesystem_error& e) {
    const std::string why = dir + ": cannot create the folder: " + e.code().message();
    remove();
    throw std::runtime_error(why);
  }
  try {
    const CreatedTemporary t = create_unique(g_staging, staging, "", dir, true);
    path_ = t.path;
    slot_ = t.slot;
  } catch (...) {
    remove();
    throw;
  }
}

StagingFolder::~StagingFolder() { remove(); }  // then lock_ is released

void StagingFolder::lock() {
  if (!lock_) lock_ = std::make_unique<OutputFolderLock>(dir_);
}

void StagingFolder::remove() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
  if (!committed_)
    for (const auto& d : created_) std::filesystem::remove(d, ec);  // only when empty
  release_in(g_staging, slot_);
  slot_ = -1;
  path_.clear();
  created_.clear();
}

std::string StagingFolder::file(const std::string& name) const { return (std::filesystem::path(path_) / name).string(); }

std::vector<std::string> StagingFolder::commit(const std::vector<std::string>& names) {
  // Every destination passes the output-path rule before the first one is replaced: a refused name (an input of
  // this run, a read-only file) leaves the folder as it was. Checked under the lock, as the folder will be moved into.
  lock();
  std::vector<std::string> out;
  for (const auto& n : names) {
    out.push_back((std::filesystem::path(dir_) / n).string());
    check_output_path(out.back());
  }
  committed_ = true;  // from here on `dir` holds outputs: it stays
  for (std::size_t i = 0; i < names.size(); ++i) move_into_place(file(names[i]), out[i]);
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  return out;
}

namespace {

// write_file_atomically for "-": the stream goes straight to standard output's descriptor (nothing to rename).
void write_standard_output(const std::function<void(std::ostream&)>& write) {
  FdOutBuf buf(standard_output_fd());
  std::ostream os(&buf);
  write(os);
  os.flush();
  if (!os || buf.error()) throw std::runtime_error("-: cannot write standard output: " + sys_reason(buf.error() ? buf.error() : EIO));
}

// A temporary file of the output `path` (the output-path rule checked, created beside the file it replaces),
// holding what `write` wrote, closed, with a replaced file's mode. Registered for removal on the signals until the
// caller renames or removes it and releases `slot`. When writing fails it is removed and released, and the exception
// propagates.
struct WrittenTemporary {
  std::string path;    // the temporary
  std::string target;  // the file it replaces (output_target)
  int slot = -1;
};

WrittenTemporary write_temporary(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const ResolvedOutput out = resolve_output(path);
  const CreatedTemporary created = create_unique(g_temp, out.target, "", path, false);
  const std::string& tmp = created.path;
  int fd = created.fd;
  try {
    if (out.exists && ::fchmod(fd, out.mode) != 0)
      throw std::runtime_error(path + ": cannot set the permissions of " + tmp + ": " + sys_reason(errno));
    FdOutBuf buf(fd);
    std::ostream os(&buf);
    write(os);
    os.flush();
    if (!os || buf.error()) throw std::runtime_error(path + ": cannot write: " + sys_reason(buf.error() ? buf.error() : EIO));
    const int closed = ::close(fd);
    fd = -1;
    if (closed != 0) throw std::runtime_error(path + ": cannot write: " + sys_reason(errno));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    release_in(g_temp, created.slot);
    throw;
  }
  return {tmp, out.target, created.slot};
}

}  // namespace

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  if (is_standard_output(path)) return write_standard_output(write);
  const WrittenTemporary written = write_temporary(path, write);
  const TempRegistration registration(written.slot);
  if (std::rename(written.path.c_str(), written.target.c_str()) != 0) {
    const int err = errno;
    ::unlink(written.path.c_str());
    throw std::runtime_error(path + ": cannot rename the temporary file into place: " + sys_reason(err));
  }
}

void write_string_atomically(const std::string& path, const std::string& content) {
  write_file_atomically(path, [&](std::ostream& os) { os.write(content.data(), static_cast<std::streamsize>(content.size())); });
}

void OutputSet::refuse_a_file_named_twice(const std::string& path) const {
  for (const Member& m : members_)
    if (m.path == path || same_path(m.path, path))
      throw OutputPathError(path + ": named twice among the outputs of one run" +
                            (m.path == path ? "" : " (the same file as " + m.path + ")") + "; give each output its own file");
}

void OutputSet::add(const std::string& path, std::function<void(std::ostream&)> write) {
  refuse_a_file_named_twice(path);
  members_.reserve(members_.size() + 1);  // a temporary written is in members_, which the destructor removes
  Member m;
  m.path = path;
  if (is_standard_output(path)) {
    standard_output_fd();  // taken now, so that what the run prints from here on is its report, on standard error
    m.write_standard_output = std::move(write);
  } else {
    const WrittenTemporary written = write_temporary(path, write);
    m.temporary = written.path;
    m.slot = written.slot;
  }
  members_.push_back(std::move(m));
}

void OutputSet::add(const std::string& path, std::string content) {
  // Kept in the function for "-", whose write waits for commit().
  add(path, [content = std::move(content)](std::ostream& os) { os.write(content.data(), static_cast<std::streamsize>(content.size())); });
}

void OutputSet::add_written(const std::string& path, const std::string& written) {
  refuse_a_file_named_twice(path);
  Member m;
  m.path = path;
  m.temporary = written;
  m.kept_on_failure = true;
  members_.push_back(std::move(m));
}

std::vector<std::string> OutputSet::commit() {
  std::vector<std::string> paths;
  for (Member& m : members_) {
    paths.push_back(m.path);
    if (m.write_standard_output) {
      write_standard_output(m.write_standard_output);
      m.write_standard_output = nullptr;
    }
  }
  // Every destination passes the rule before the first is replaced (as StagingFolder::commit checks its names).
  for (const Member& m : members_)
    if (!m.temporary.empty()) resolve_output(m.path);
  const BlockCleanupSignals blocked;  // a signal now is delivered after the last rename
  for (Member& m : members_) {
    if (m.temporary.empty()) continue;
    rename_over_output(m.temporary, m.path);
    m.temporary.clear();
    release_in(g_temp, m.slot);
    m.slot = -1;
  }
  return paths;
}

OutputSet::~OutputSet() {
  for (Member& m : members_) {
    if (!m.temporary.empty() && !m.kept_on_failure) ::unlink(m.temporary.c_str());
    release_in(g_temp, m.slot);
  }
}

std::string normalize_text(std::string text) {
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) text.erase(0, 3);
  for (std::size_t i = text.find('\r'); i != std::string::npos; i = text.find('\r', i + 1))
    if (i + 1 == text.size() || text[i + 1] != '\n') text[i] = '\n';
  return text;
}

std::string input_path_problem(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errno == ENOENT || errno == ENOTDIR ? path + ": no such file" : path + ": " + sys_reason(errno);
  if (S_ISDIR(st.st_mode)) return path + ": is a directory, not a file";
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) return device_problem(path, st.st_mode);
  return "";
}

std::string read_file(const std::string& path, std::size_t max_bytes) { return normalize_text(read_bytes(path, true, max_bytes)); }

std::string read_file_bytes(const std::string& path) { return read_bytes(path, false); }

std::string input_fingerprint(const std::string& path) {
  if (std::string recorded = recorded_fingerprint(path); !recorded.empty()) return recorded;
  try {
    return fnv1a64_hex(read_file_bytes(path));
  } catch (const std::exception&) {
    return "";
  }
}

std::string read_input_file(const std::string& path) {
  try {
    return read_file(path);
  } catch (const std::runtime_error& e) {
    // The reader's message starts with the path; the InputError names it once.
    std::string why = e.what();
    if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);
    throw InputError(path, 0, "", why);
  }
}

bool same_path(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  const bool ea = ::stat(a.c_str(), &sa) == 0, eb = ::stat(b.c_str(), &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  std::error_code ec1, ec2;
  const auto ca = std::filesystem::weakly_canonical(std::filesystem::absolute(a, ec1), ec1);
  const auto cb = std::filesystem::weakly_canonical(std::filesystem::absolute(b, ec2), ec2);
  return !ec1 && !ec2 && ca == cb;
}

}  // namespace arfit
