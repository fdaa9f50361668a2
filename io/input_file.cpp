#include "io/input_file.h"

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "io/system_reason.h"
#include "model/errors.h"
#include "model/text.h"

namespace arfit {
namespace {

using io_detail::file_type_words;
using io_detail::sys_reason;

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


std::string device_problem(const std::string& path, mode_t mode) {
  return path + ": is " + file_type_words(mode) + ", not a file; give a file, a pipe or a FIFO";
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

}  // namespace

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

}  // namespace arfit

namespace arfit::io_detail {

std::string input_named(dev_t dev, ino_t ino) {
  std::lock_guard<std::mutex> lock(inputs_mutex());
  for (const InputFile& f : inputs())
    if (f.dev == dev && f.ino == ino) return f.path;
  return "";
}

std::string file_type_words(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISREG(m)) return "a regular file";
  return "not a regular file";
}

}  // namespace arfit::io_detail
