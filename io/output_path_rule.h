// The one output-path rule of every writer. Before anything is created the output path must pass it
// (check_output_path):
//   - an output that is the same file as an input of this process is refused: read_file records the
//     device and inode of every file it reads, so hard links, symbolic links and relative paths to an input
//     are caught, not only the same spelling;
//   - an existing output that is not a regular file (a device node, FIFO, socket or directory) is refused;
//   - a symbolic link is followed: the regular file it names is replaced and the link is kept (the user named
//     the link to mean its target, as cp and editors do); a dangling link, or one to anything else, is refused;
//   - an existing output without write permission (a read-only file) is refused, also for root.
// The path "-" is standard output, for an output written as one stream (write_file_atomically): it is written there
// (no temporary file), and from the first check or write of "-" on, what the process prints on standard output (a
// command's report) goes to standard error, so the data stays alone in the stream. Outputs that are folders or
// assembled as files (check_output_directory, StagingFolder, TemporaryOutput, move_into_place) refuse "-".
// Refusals throw OutputPathError (a usage error: the path came from an option). The writers themselves are in
// io/atomic_output.h and io/staging_folder.h.
#pragma once

#include <string>
#include <sys/types.h>

namespace arfit {

// True for "-", the name of standard output as an output path (the rule above).
bool is_standard_output(const std::string& path);
// True once an output "-" has been checked or written: the process's standard output (std::cout, stdout) then
// writes to standard error, so what is printed there is a report, no longer an output (io/standard_output_check.h).
bool standard_output_taken();

// The file an output path replaces: `path`, or the regular file its symbolic link names (the rule above, which it
// checks). A file that becomes the output by a rename (a journal) belongs in this file's folder: a rename never
// crosses file systems.
std::string output_target(const std::string& path);

// Throws OutputPathError when `path` may not be written (the rule above). Every write checks it; commands also
// call it right after reading their inputs, to refuse before long work rather than after.
void check_output_path(const std::string& path);

// Throws OutputPathError unless `path`'s folder exists and this user may create files in it. For commands
// that write several outputs and create no folders: all are checked before the first is written, so a bad
// second path leaves the first output as it was.
void check_output_folder(const std::string& path);

// check_output_path, then check_output_folder: for an output file that write_file_atomically writes into its folder
// as it is (it creates no folder), so that a missing or unwritable folder is refused (a usage error naming the path)
// before the command works, not found by the write after it (a failed run).
void check_output_file(const std::string& path);

// Throws OutputPathError unless `dir` can hold a command's outputs: an existing folder this user may create
// files in, or a missing one whose nearest existing ancestor is such a folder (it is created then).
void check_output_directory(const std::string& dir);

// Moves a file written elsewhere (a staging folder of the same file system) over `path`, which must pass the
// rule; the mode of a replaced file is kept. For outputs assembled in a folder before they all appear.
void move_into_place(const std::string& staged, const std::string& path);

// True when both paths name the same file: the same device and inode when they exist, else the same path
// once symbolic links and "." / ".." are resolved. Two outputs of one command must not be the same file.
bool same_path(const std::string& a, const std::string& b);

}  // namespace arfit

// For io/'s writers (io/atomic_output.h, io/staging_folder.h): not part of the interface.
namespace arfit::io_detail {

// ---------------------------------------------------------------- the output-path rule

struct ResolvedOutput {
  std::string target;  // the path to replace: `path`, or the file its symbolic link names
  bool exists = false;
  mode_t mode = 0;     // permissions of the existing file, kept by the replacement
};

// The rule checked for `path` (not "-", which is refused: an output assembled as a file cannot be standard output).
ResolvedOutput resolve_output(const std::string& path);
// The descriptor of standard output for an output named "-", taken once: the process's fd 1 is duplicated for the
// writer and then points at standard error, so a command's report never mixes into the data.
int standard_output_fd();

}  // namespace arfit::io_detail
