// Reading inputs, and remembering them: every input file read through read_file is recorded (device and inode,
// and the fingerprint of the bytes read), so that the output-path rule (io/output_path_rule.h) refuses an output that
// is an input of this run, and a models file records the fingerprint of the bytes it was fitted from.
#pragma once

#include <cstddef>
#include <string>
#include <sys/types.h>

namespace arfit {

// Largest file the readers take: 1 GiB, some hundred times the largest measurement log or models file.
inline constexpr std::size_t kMaxInputBytes = std::size_t{1} << 30;

// Reads a whole text file as every reader sees it: a leading UTF-8 byte-order mark is dropped and lone
// carriage returns (classic Mac line ends) become line feeds, so line numbers in messages are the lines an
// editor shows; CRLF is kept. Records the file as an input of this process. Throws std::runtime_error naming
// the path and the system's reason, for a character or block device (/dev/zero, a disk, a terminal: refused before
// reading; FIFOs and pipes are read), and past `max_bytes` (a FIFO fed forever stops there instead of filling the
// memory).
std::string read_file(const std::string& path, std::size_t max_bytes = kMaxInputBytes);
// Why `path`, named as an input on a command line, holds no bytes to read, or "" when it does (a regular file, a
// FIFO, a pipe such as /dev/stdin or a process substitution; links followed): "PATH: no such file", "PATH: is a
// directory, not a file", "PATH: is a character device, not a file; give a file, a pipe or a FIFO" (the words
// read_file refuses a device with). The one check of input paths: every arfit command refuses these as usage
// errors (exit 2) before any work, where a device was exit 1 after the options and plot took a FIFO for no file.
std::string input_path_problem(const std::string& path);
// read_file for a command's input: a file that cannot be read is bad input (InputError naming the path, exit 1).
std::string read_input_file(const std::string& path);
// The bytes as they are, of the output a writer continues (arbench --resume measures and appends to it): not
// recorded as an input, since it is this run's output.
std::string read_file_bytes(const std::string& path);
// The fingerprint a models file records next to an input's path (`inputs` / `priors`; codegen's banner): FNV-1a
// 64 of the file's bytes (fnv1a64_hex, model/text.h) as this process read them with read_file, or as they are
// now when it has not read them; "" when the file cannot be read.
std::string input_fingerprint(const std::string& path);
// The text normalisation read_file applies.
std::string normalize_text(std::string text);

}  // namespace arfit

// For io/'s own files (the output-path rule, the writers): not part of the interface.
namespace arfit::io_detail {

// The input path recorded for the file with this device and inode, or "" when it is not an input of this process.
std::string input_named(dev_t dev, ino_t ino);
// "a directory", "a character device", "a FIFO", ...: what a file of this mode is, for messages.
std::string file_type_words(mode_t mode);

}  // namespace arfit::io_detail
