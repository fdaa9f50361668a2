// Helpers shared by the test suites: run a command and capture its output, temporary directories,
// the public data folder (tests labelled `data` skip when it is absent).
#pragma once

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace arfit::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `command` through /bin/sh with stderr folded into stdout.
inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* p = ::popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

inline std::string arfit_bin() { return ARFIT_BIN; }
inline std::string source_dir() { return ARFIT_SOURCE_DIR; }

// The public measurements folder, or "" when absent.
inline std::string public_data_dir() {
  std::filesystem::path p = ARFIT_PUBLIC_DATA_DIR;
  if (const char* env = std::getenv("ARFIT_PUBLIC_DATA_DIR")) p = env;
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec)) return std::filesystem::canonical(p).string();
  return "";
}

// The measurement files (*.txt) under the public data folder, sorted; none when it is absent.
inline std::vector<std::string> public_data_files() {
  std::vector<std::string> files;
  const std::string dir = public_data_dir();
  if (dir.empty()) return files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".txt") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "arfit-test-XXXXXX").string();
    char* d = ::mkdtemp(tmpl.data());
    path_ = d ? d : tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  std::string write(const std::string& name, const std::string& content) const {
    std::ofstream(file(name), std::ios::binary) << content;
    return file(name);
  }

 private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Starts `command` through /bin/sh without waiting for it (exec'd, so the pid is the command's own), its stdout
// and stderr to `log`. Returns the pid (-1 when fork fails); finish with exit_code_of.
inline pid_t start_command(const std::string& command, const std::string& log) {
  const std::string line = "exec " + command + " >'" + log + "' 2>&1";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    std::_Exit(127);
  }
  return pid;
}

// Waits for process `pid` started by start_command and returns its exit code (128 + signal when killed).
inline int exit_code_of(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Waits until process `pid` is blocked in flock(2), waiting for a lock another process holds (a "->" waiter line
// of /proc/locks names it): true then; false when it ended first. An event, not a duration: it polls until one
// of the two happens.
inline bool wait_until_blocked_on_flock(pid_t pid) {
  const std::string me = " " + std::to_string(pid) + " ";
  for (;;) {
    std::ifstream locks("/proc/locks");
    for (std::string line; std::getline(locks, line);)
      if (line.find("-> FLOCK") != std::string::npos && line.find(me) != std::string::npos) return true;
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) != 0) return false;  // ended (and reaped) or not a child
    ::usleep(2000);
  }
}

}  // namespace arfit::testing
