#include "io/atomic_output.h"

#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <streambuf>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "io/temp_file_cleanup.h"
#include "io/system_reason.h"
#include "model/errors.h"

namespace arfit {
namespace {

using io_detail::BlockCleanupSignals;
using io_detail::CreatedTemporary;
using io_detail::ResolvedOutput;
using io_detail::TempRegistration;
using io_detail::TemporaryKind;
using io_detail::resolve_output;
using io_detail::standard_output_fd;
using io_detail::sys_reason;

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

}  // namespace

TemporaryOutput::TemporaryOutput(const std::string& path, const std::string& suffix) : output_(path) {
  // Created empty, so that the name is this run's: the other program opens it for writing and truncates it.
  const CreatedTemporary t = io_detail::create_unique_temporary(TemporaryKind::File, resolve_output(path).target, suffix, path);
  ::close(t.fd);
  tmp_ = t.path;
  slot_ = t.slot;
}

TemporaryOutput::~TemporaryOutput() {
  if (!committed_) ::unlink(tmp_.c_str());
  io_detail::release_temporary(TemporaryKind::File, slot_);
}

void TemporaryOutput::commit() {
  move_into_place(tmp_, output_);
  committed_ = true;
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
  const CreatedTemporary created = io_detail::create_unique_temporary(TemporaryKind::File, out.target, "", path);
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
    io_detail::release_temporary(TemporaryKind::File, created.slot);
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
    move_into_place(m.temporary, m.path);
    m.temporary.clear();
    io_detail::release_temporary(TemporaryKind::File, m.slot);
    m.slot = -1;
  }
  return paths;
}

OutputSet::~OutputSet() {
  for (Member& m : members_) {
    if (!m.temporary.empty() && !m.kept_on_failure) ::unlink(m.temporary.c_str());
    io_detail::release_temporary(TemporaryKind::File, m.slot);
  }
}

}  // namespace arfit
