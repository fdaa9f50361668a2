// Shared helpers of the trace tests: the hand-written inputs in tests/trace/data.
#pragma once

#include <filesystem>
#include <string>

#include "test_support.h"

inline std::string trace_data(const std::string& name) { return arfit::testing::source_dir() + "/tests/trace/data/" + name; }

// The arfit executable with these arguments, for arfit::testing::run_command.
inline std::string arfit_cmd(const std::string& args) { return arfit::testing::arfit_bin() + " " + args; }

// Files and folders under `dir` (0 when it does not exist): what a failed run must not have written.
inline std::size_t files_in(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return 0;
  std::size_t n = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); it != fs::recursive_directory_iterator(); ++it) ++n;
  return n;
}
