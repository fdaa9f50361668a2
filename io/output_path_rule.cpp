#include "io/output_path_rule.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>

#include "io/input_file.h"
#include "io/system_reason.h"
#include "model/errors.h"

namespace arfit {
namespace io_detail {
namespace {

std::atomic<bool> standard_output_moved{false};  // standard_output_fd has pointed the process's fd 1 away


}  // namespace

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
          throw OutputPathError(path + ": " + up.string() + " is " + file_type_words(up_st.st_mode) + ", not a folder");
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
      throw OutputPathError(path + ": is a symbolic link to " + file_type_words(st.st_mode) + " (" + out.target +
                            "); an output must be a regular file");
  } else if (!S_ISREG(st.st_mode)) {
    throw OutputPathError(path + ": is " + file_type_words(st.st_mode) + "; an output must be a regular file (replacing it would destroy it)");
  }
  const std::string input = input_named(st.st_dev, st.st_ino);
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


}  // namespace io_detail

using io_detail::file_type_words;
using io_detail::ResolvedOutput;
using io_detail::resolve_output;
using io_detail::standard_output_fd;
using io_detail::sys_reason;

bool is_standard_output(const std::string& path) { return path == "-"; }

bool standard_output_taken() { return io_detail::standard_output_moved; }

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
    throw OutputPathError(output + ": " + named + "is " + file_type_words(st.st_mode) + ", not a folder" + not_a_folder_hint);
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
