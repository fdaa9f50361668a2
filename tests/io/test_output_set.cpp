// io/atomic_output.h OutputSet: the outputs of one run are replaced together after all of them are written, or
// (a failed write, a refused path, a kill before commit) not at all, and no temporary file is left behind.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/atomic_output.h"
#include "model/errors.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::slurp;
using arfit::testing::TempDir;

namespace {

// Every file of `dir` with its bytes: a temporary left behind shows as an extra name.
std::map<std::string, std::string> files_of(const TempDir& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) out[e.path().filename().string()] = slurp(e.path().string());
  return out;
}

const std::map<std::string, std::string> kOld = {{"a.json", "old a\n"}, {"b.csv", "old b\n"}};

void write_old(const TempDir& dir) {
  for (const auto& [name, bytes] : kOld) dir.write(name, bytes);
}

// Ends the child with `code` when `ok` is false (a precondition or an expectation of the child failed).
void child_require(bool ok, int code) {
  if (!ok) std::_Exit(code);
}

}  // namespace

TEST(OutputSet, CommitReplacesEveryMemberAndNothingBefore) {
  TempDir dir;
  write_old(dir);
  {
    OutputSet outputs;
    outputs.add(dir.file("a.json"), std::string("new a\n"));
    outputs.add(dir.file("b.csv"), [](std::ostream& os) { os << "new b\n"; });
    // Written, not yet in place: the old outputs are what a reader sees until commit.
    EXPECT_EQ(slurp(dir.file("a.json")), "old a\n");
    EXPECT_EQ(slurp(dir.file("b.csv")), "old b\n");
    EXPECT_EQ(files_of(dir).size(), 4u) << "one temporary per member";
    EXPECT_EQ(outputs.commit(), (std::vector<std::string>{dir.file("a.json"), dir.file("b.csv")}));
  }
  EXPECT_EQ(files_of(dir), (std::map<std::string, std::string>{{"a.json", "new a\n"}, {"b.csv", "new b\n"}}));
}

TEST(OutputSet, AFailureInTheSecondMemberLeavesTheFirstOutputAsItWas) {
  TempDir dir;
  write_old(dir);
  {
    OutputSet outputs;
    outputs.add(dir.file("a.json"), std::string("new a\n"));
    EXPECT_THROW(outputs.add(dir.file("b.csv"),
                             [](std::ostream& os) {
                               os << "half of b";
                               throw std::runtime_error("the second output failed");
                             }),
                 std::runtime_error);
  }  // the run fails: no commit
  EXPECT_EQ(files_of(dir), kOld);
}

// A write past ulimit -f (a full disk fails the same way) in the second member: the error names it and the first
// output stays old. In a child process, whose file size limit the test may lower.
TEST(OutputSet, AWriteFailingAtTheFileSizeLimitReplacesNothing) {
  TempDir dir;
  write_old(dir);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const struct rlimit limit {4096, 4096};
    child_require(::setrlimit(RLIMIT_FSIZE, &limit) == 0, 10);
    int code = 11;
    try {
      OutputSet outputs;  // the failed run's end: destroyed before the child exits
      outputs.add(dir.file("a.json"), std::string(1000, 'a'));    // fits
      outputs.add(dir.file("b.csv"), std::string(1 << 20, 'b'));  // does not
    } catch (const std::runtime_error& e) {
      code = std::string(e.what()).find("b.csv: cannot write: File too large") != std::string::npos ? 0 : 12;
    }
    std::_Exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: no limit, 11: no failure, 12: another message";
  EXPECT_EQ(files_of(dir), kOld);
}

// Killed after both members were written, before commit: the signal handler removes both temporaries.
TEST(OutputSet, AKillBeforeCommitLeavesNoTemporaryAndTheOldOutputs) {
  TempDir dir;
  write_old(dir);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    OutputSet outputs;
    outputs.add(dir.file("a.json"), std::string("new a\n"));
    outputs.add(dir.file("b.csv"), std::string("new b\n"));
    child_require(std::distance(std::filesystem::directory_iterator(dir.path()), std::filesystem::directory_iterator()) == 4, 10);
    ::raise(SIGTERM);
    std::_Exit(11);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1) << " (10: no temporaries)";
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_EQ(files_of(dir), kOld);
}

// commit checks every destination before it moves the first: the second made read-only after it was written is
// refused, and the first is not replaced either.
TEST(OutputSet, ADestinationRefusedAtCommitMovesNoMember) {
  TempDir dir;
  write_old(dir);
  {
    OutputSet outputs;
    outputs.add(dir.file("a.json"), std::string("new a\n"));
    outputs.add(dir.file("b.csv"), std::string("new b\n"));
    ASSERT_EQ(::chmod(dir.file("b.csv").c_str(), 0444), 0);
    EXPECT_THROW(outputs.commit(), OutputPathError);
  }
  EXPECT_EQ(files_of(dir), kOld);
}

TEST(OutputSet, OneFileNamedTwiceIsRefused) {
  TempDir dir;
  write_old(dir);
  {
    OutputSet outputs;
    outputs.add(dir.file("a.json"), std::string("new a\n"));
    ::symlink("a.json", dir.file("link.json").c_str());
    try {
      outputs.add(dir.file("link.json"), std::string("other\n"));
      ADD_FAILURE() << "a second member naming a.json through a link was taken";
    } catch (const OutputPathError& e) {
      EXPECT_NE(std::string(e.what()).find("named twice among the outputs of one run"), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove(dir.file("link.json"));
  EXPECT_EQ(files_of(dir), kOld);
}

// A member written beforehand (arbench's journal) is moved on commit, and kept where it is when the run fails: it is
// the caller's, not a temporary of the set.
TEST(OutputSet, AFileWrittenBeforehandIsMovedOnCommitAndKeptOnFailure) {
  TempDir dir;
  write_old(dir);
  dir.write("b.csv.partial", "journal\n");
  {
    OutputSet outputs;
    outputs.add_written(dir.file("b.csv"), dir.file("b.csv.partial"));
    EXPECT_THROW(outputs.add(dir.file("a.json"), [](std::ostream&) { throw std::runtime_error("failed"); }), std::runtime_error);
  }
  std::map<std::string, std::string> expected = kOld;
  expected["b.csv.partial"] = "journal\n";
  EXPECT_EQ(files_of(dir), expected);
  {
    OutputSet outputs;
    outputs.add_written(dir.file("b.csv"), dir.file("b.csv.partial"));
    outputs.add(dir.file("a.json"), std::string("new a\n"));
    outputs.commit();
  }
  EXPECT_EQ(files_of(dir), (std::map<std::string, std::string>{{"a.json", "new a\n"}, {"b.csv", "journal\n"}}));
}
