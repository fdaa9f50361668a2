// Resource limits (ulimit -f, ulimit -v) end a run as a failed run with a message, not as a kill or an abort that
// leaves temporary files behind.
#pragma once

namespace arfit {

// What a program says when memory runs out (std::bad_alloc's own what() says only "std::bad_alloc").
inline constexpr const char* kOutOfMemoryMessage =
    "out of memory (a memory limit such as ulimit -v, or inputs too large for this machine)";

// For a program's main, first thing: the limits of ulimit end the run as a failed run (exit 1 and a message), not as a
// kill or an abort that leaves temporary files behind.
//   - ulimit -f: SIGXFSZ is caught (when at its default), so a write past the limit fails with EFBIG, also on
//     standard output ("writing standard output failed: File too large"); exec gives children the default back.
//   - ulimit -v: a std::bad_alloc that reaches std::terminate (one thrown where no exception may pass: a library's
//     destructor that allocates while an earlier std::bad_alloc unwinds the stack, as nlohmann::json's does) removes
//     the temporary files of writes in flight (as the signal handler does), prints "<program>: error: " +
//     kOutOfMemoryMessage and exits with 1. Any other reason for std::terminate keeps the previous handler (abort).
// `program` must outlive the process.
void fail_cleanly_at_resource_limits(const char* program);

}  // namespace arfit
