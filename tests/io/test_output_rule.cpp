// io/output_path_rule.h, the output rule across two file systems: read_file records an input by its device and
// inode, so a name on one file system of an input on another (a symbolic link) is refused, and the other files of
// either are written. (A file that only shares the input's inode number on another file system is no input either,
// the device tells them apart; such a pair cannot be made on purpose, so it is not tested.) Needs /dev/shm on
// another file system than the temporary folder; skipped with the reason otherwise.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "io/staging_folder.h"
#include "model/errors.h"
#include "test_support.h"

using namespace arfit;

namespace {

// A folder under /dev/shm, removed with what it holds.
struct ShmDir {
  std::string path;
  ShmDir() {
    std::string tmpl = "/dev/shm/arfit-test-XXXXXX";
    if (::mkdtemp(tmpl.data())) path = tmpl;
  }
  ~ShmDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};

dev_t device_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? st.st_dev : 0;
}

}  // namespace

TEST(OutputRule, InputsAreKnownByDeviceAndInodeAcrossFileSystems) {
  arfit::testing::TempDir here;
  ShmDir shm;
  if (shm.path.empty()) GTEST_SKIP() << "no /dev/shm folder could be made";
  if (device_of(shm.path) == device_of(here.path().string()))
    GTEST_SKIP() << "/dev/shm and " << here.path() << " are one file system";
  const std::string input = shm.path + "/samples.csv";
  {
    std::ofstream(input) << "read\n";
  }
  ASSERT_EQ(read_input_file(input), "read\n");
  // A link on the other file system to the input: refused, as the input's own name is.
  const std::string link = here.file("link.csv");
  ASSERT_EQ(::symlink(input.c_str(), link.c_str()), 0);
  EXPECT_THROW(check_output_path(link), OutputPathError);
  EXPECT_THROW(check_output_path(input), OutputPathError);
  // Another file of either file system is written, whatever its inode number.
  const std::string other = here.write("other.csv", "old\n");
  const std::string beside = shm.path + "/beside.csv";
  EXPECT_NO_THROW(write_string_atomically(other, "new\n"));
  EXPECT_NO_THROW(write_string_atomically(beside, "new\n"));
  EXPECT_EQ(arfit::testing::slurp(other), "new\n");
  EXPECT_EQ(arfit::testing::slurp(input), "read\n");
}

// The folder lock is a guard against two commits at one instant, never a reason to refuse a run: where the folder
// cannot be opened (here: it is gone; in use: a folder writable but not readable) or its file system refuses
// flock (NFS without a writable descriptor), the lock is simply not held and the commit goes on as before.
TEST(OutputRule, FolderLockIsHeldWhereItCanBeAndNeverRefusesWhereItCannot) {
  arfit::testing::TempDir t;
  {
    OutputFolderLock lock(t.path().string());
    EXPECT_TRUE(lock.held());
  }
  const std::string gone = t.file("gone");
  std::unique_ptr<OutputFolderLock> lock;
  EXPECT_NO_THROW(lock = std::make_unique<OutputFolderLock>(gone));
  EXPECT_FALSE(lock->held());
}
