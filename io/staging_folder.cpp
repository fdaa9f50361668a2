#include "io/staging_folder.h"

#include <cerrno>
#include <fcntl.h>
#include <filesystem>
#include <stdexcept>
#include <sys/file.h>
#include <unistd.h>

#include "io/output_path_rule.h"
#include "io/temp_file_cleanup.h"

namespace arfit {

using io_detail::CreatedTemporary;
using io_detail::TemporaryKind;

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
    const CreatedTemporary t = io_detail::create_unique_temporary(TemporaryKind::StagingFolder, staging, "", dir);
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
  io_detail::release_temporary(TemporaryKind::StagingFolder, slot_);
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

}  // namespace arfit
