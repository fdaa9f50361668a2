// A program's answer on standard output is one of its outputs: `arfit predict --json > answer.json` on a full
// disk, or `arbench --dry-run > plan.txt`, must not end in success with the answer cut short. The C++ streams
// only record a failed write in their state (and stdio keeps the last block buffered until exit), so the
// program's last step flushes both and turns a failure into exit status 1 with the system's reason.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "io/output_path_rule.h"

namespace arfit {

// Flushes std::cout and stdout. Returns `status` when everything written reached its destination; else says
// why on stderr (`PROGRAM: error: writing standard output failed: No space left on device`) and returns 1 —
// or `status` when that already reports a failure. After an output "-" took standard output (io/output_path_rule.h)
// std::cout and stdout write to standard error: the report, whose failure fails nothing (as for std::cerr),
// while the output's own writes on the real descriptor were checked as it was written.
inline int finish_standard_output(const std::string& program, int status) {
  errno = 0;
  std::cout.flush();
  if (standard_output_taken()) {
    std::fflush(stdout);
    return status;
  }
  int err = errno;
  const bool stream_failed = !std::cout.good();
  if (std::fflush(stdout) != 0 && err == 0) err = errno;
  if (!stream_failed && !std::ferror(stdout)) return status;
  std::cerr << program << ": error: writing standard output failed" << (err != 0 ? std::string(": ") + std::strerror(err) : "")
            << "\n";
  return status != 0 ? status : 1;
}

}  // namespace arfit
