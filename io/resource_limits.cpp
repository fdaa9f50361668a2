#include "io/resource_limits.h"

#include <cstring>
#include <exception>
#include <new>
#include <unistd.h>

#include "io/temp_file_cleanup.h"

namespace arfit {
namespace {

const char* g_program = "arfit";
std::terminate_handler g_previous_terminate = nullptr;

void write_to_stderr(const char* text) {
  for (std::size_t n = std::strlen(text); n > 0;) {
    const ssize_t w = ::write(STDERR_FILENO, text, n);
    if (w <= 0) return;
    text += w;
    n -= static_cast<std::size_t>(w);
  }
}

// std::terminate's handler: a std::bad_alloc ends the process as a failed run, anything else as before. Writes with
// write(2) and no allocation: memory is what ran out.
[[noreturn]] void exit_out_of_memory() {
  io_detail::remove_registered_temporaries();
  write_to_stderr(g_program);
  write_to_stderr(": error: ");
  write_to_stderr(kOutOfMemoryMessage);
  write_to_stderr("\n");
  ::_exit(1);
}

// A second exception thrown while a first unwinds (no exception handled, one or more in flight) comes, in this
// program, from nlohmann::json's destructor, the one destructor that allocates (its non-recursive teardown keeps a
// stack): a std::bad_alloc unwinding through a vector of models (fit's joint families) made another one there, and
// std::terminate then reports no active exception (ulimit -v, Robustness.OutOfMemoryIsAFailedRunNotAnAbort).
bool second_exception_while_unwinding() { return std::uncaught_exceptions() > 0; }

[[noreturn]] void terminate_on_out_of_memory() {
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      exit_out_of_memory();
    } catch (...) {
    }
  } else if (second_exception_while_unwinding()) {
    exit_out_of_memory();
  }
  if (g_previous_terminate) g_previous_terminate();
  std::abort();
}

}  // namespace

void fail_cleanly_at_resource_limits(const char* program) {
  io_detail::catch_file_size_limit();  // also for what goes to standard output, which no temporary file registers
  g_program = program;
  g_previous_terminate = std::set_terminate(terminate_on_out_of_memory);
}

}  // namespace arfit
