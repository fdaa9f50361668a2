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
[[noreturn]] void terminate_on_out_of_memory() {
  if (const std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      io_detail::remove_registered_temporaries();
      write_to_stderr(g_program);
      write_to_stderr(": error: ");
      write_to_stderr(kOutOfMemoryMessage);
      write_to_stderr("\n");
      ::_exit(1);
    } catch (...) {
    }
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
