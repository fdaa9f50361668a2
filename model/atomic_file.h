// Writers never leave half-written outputs: write to "<path>.tmp.<pid>" in the same directory, then rename.
#pragma once

#include <functional>
#include <ostream>
#include <string>

namespace arfit {

// Calls write(stream); on success flushes, closes and renames over `path`. On any exception or stream
// failure the temporary file is removed and the exception (or a std::runtime_error naming `path`) propagates.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

// Same, for a complete string.
void write_string_atomically(const std::string& path, const std::string& content);

// Reads a whole file; throws std::runtime_error naming the path when it cannot be opened.
std::string read_file(const std::string& path);

}  // namespace arfit
