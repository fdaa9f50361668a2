// Helpers of the robustness suite: a folder snapshot (every entry's kind, mode and bytes) to assert that a
// refused or failed command changed nothing and left no temporary file, and the fixture files the cases
// start from. Other suites joining the `robustness` label can include it (tests/robustness is on their
// include path when they link arfit_robustness_support).
#pragma once

#include <gtest/gtest.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "test_support.h"

namespace arfit::testing {

// Two strategies of `collective` on 8 ranks, 1 KiB .. 64 MiB, as arfit's sample CSV: enough for `fit`, `codegen`,
// `predict`.
inline std::string synthetic_samples(const std::string& collective = "allreduce") {
  std::string s = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (const auto& [strategy, alpha, gbps] : {std::tuple<const char*, double, double>{"NCCL", 10, 100}, {"ONESHOT", 5, 60}})
    for (long b = 1024; b <= (64L << 20); b *= 2)
      s += collective + "," + strategy + ",NONE,bf16,8," + std::to_string(b) + "," +
           std::to_string(alpha + static_cast<double>(b) / (gbps * 1e3)) + "\n";
  return s;
}

struct EntryState {
  mode_t mode = 0;       // lstat: kind and permissions
  std::string content;   // file bytes, or the target of a symbolic link
  bool operator==(const EntryState& o) const { return mode == o.mode && content == o.content; }
};

// Every entry of `dir` (not recursive), by name.
inline std::map<std::string, EntryState> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, EntryState> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    struct stat st {};
    ::lstat(e.path().c_str(), &st);
    EntryState s;
    s.mode = st.st_mode;
    if (S_ISLNK(st.st_mode)) s.content = std::filesystem::read_symlink(e.path()).string();
    else if (S_ISREG(st.st_mode)) s.content = slurp(e.path().string());
    out[e.path().filename().string()] = s;
  }
  return out;
}

// The folder is exactly as it was: same names, kinds, modes and bytes (so no input changed and no
// temporary file or partial output was left behind).
inline void expect_unchanged(const std::map<std::string, EntryState>& before, const std::filesystem::path& dir,
                             const std::string& what) {
  const auto after = snapshot(dir);
  for (const auto& [name, s] : before) {
    auto it = after.find(name);
    if (it == after.end()) {
      ADD_FAILURE() << what << ": " << name << " disappeared";
      continue;
    }
    EXPECT_TRUE(it->second == s) << what << ": " << name << " changed";
  }
  for (const auto& [name, s] : after)
    EXPECT_TRUE(before.count(name)) << what << ": " << name << " was left behind";
}

// Runs the built arfit with `args` in `dir` (its standard error too).
inline CommandResult arfit_in(const TempDir& dir, const std::string& args) {
  return run_command("cd " + dir.path().string() + " && " + arfit_bin() + " " + args + " 2>&1");
}

// Runs `args` in `dir` and checks the exit code, that the output holds every `needles` string, and that the folder is
// unchanged (no input changed, nothing left behind).
inline CommandResult expect_refused_in(const TempDir& dir, const std::string& args, int exit_code,
                                       const std::vector<std::string>& needles) {
  const auto before = snapshot(dir.path());
  const CommandResult r = arfit_in(dir, args);
  EXPECT_EQ(r.exit_code, exit_code) << args << "\n" << r.output;
  for (const auto& n : needles) EXPECT_NE(r.output.find(n), std::string::npos) << args << ": no '" << n << "' in\n" << r.output;
  expect_unchanged(before, dir.path(), args);
  return r;
}

// "file:LINE:" with a positive line somewhere in the output.
inline bool names_file_line(const std::string& output, const std::string& file) {
  for (std::size_t pos = output.find(file + ":"); pos != std::string::npos; pos = output.find(file + ":", pos + 1)) {
    std::size_t i = pos + file.size() + 1, j = i;
    while (j < output.size() && std::isdigit(static_cast<unsigned char>(output[j]))) ++j;
    if (j > i && j < output.size() && output[j] == ':' && output.substr(i, j - i) != "0") return true;
  }
  return false;
}

// Runs `write` in a forked child that must end by signal `sig`: `write` raises it in the middle of a write
// (what a Ctrl-C or a kill does), after checking its own preconditions (it calls std::_Exit(10) when one
// fails). A child that returns (13), throws (12) or ends otherwise fails the test.
inline void expect_killed_mid_write(int sig, const std::function<void()>& write) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      write();
    } catch (...) {
      std::_Exit(12);
    }
    std::_Exit(13);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "signal " << sig << ": exit " << (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  EXPECT_EQ(WTERMSIG(status), sig);
}

}  // namespace arfit::testing
