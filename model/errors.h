// Input errors that name where they happened: "file:line: column 'x': what is wrong" (bad data: exit 1).
#pragma once

#include <stdexcept>
#include <string>

#include "model/text.h"

namespace arfit {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, long line, std::string field, const std::string& what)
      : std::runtime_error(format(file, line, field, what)), file_(std::move(file)), line_(line), field_(std::move(field)), reason_(what) {}

  const std::string& file() const { return file_; }
  long line() const { return line_; }  // 1-based; 0 when the error concerns the whole file
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }  // the message without file, line and column

  static std::string format(const std::string& file, long line, const std::string& field, const std::string& what) {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    s += ": ";
    if (!field.empty()) s += "column '" + field + "': ";
    return s + bounded(what);
  }

  // A message quoting input (a field, a line) is cut in the middle beyond kMaxMessage characters: a file
  // without the line ends a reader expects would otherwise be echoed whole. The start (where) and the end
  // (usually why) are kept.
  static constexpr std::size_t kMaxMessage = 800;
  // Control characters quoted from input are shown as escapes (model/text.h, visible_control_chars): a NUL
  // would end the message (what() is a C string) and an escape sequence would reach the terminal.
  static std::string bounded(const std::string& raw) {
    const std::string what = visible_control_chars(raw, /*keep_layout=*/true);
    if (what.size() <= kMaxMessage) return what;
    const std::size_t head = kMaxMessage * 2 / 3, tail = kMaxMessage - head;
    return what.substr(0, head) + " ... (" + std::to_string(what.size() - head - tail) + " characters cut) ... " +
           what.substr(what.size() - tail);
  }

 private:
  std::string file_;
  long line_;
  std::string field_;
  std::string reason_;
};

// An output path the output-path rule refuses (io/output_path_rule.h): the same file as an input, not a regular
// file, read-only. A usage error (exit 2): the path came from an option.
class OutputPathError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace arfit
