// Input errors that name where they happened: "file:line: column 'x': what is wrong".
#pragma once

#include <stdexcept>
#include <string>

namespace arfit {

class InputError : public std::runtime_error {
 public:
  InputError(std::string file, long line, std::string field, const std::string& what)
      : std::runtime_error(format(file, line, field, what)), file_(std::move(file)), line_(line), field_(std::move(field)) {}

  const std::string& file() const { return file_; }
  long line() const { return line_; }  // 1-based; 0 when the error concerns the whole file
  const std::string& field() const { return field_; }

  static std::string format(const std::string& file, long line, const std::string& field, const std::string& what) {
    std::string s = file;
    if (line > 0) s += ":" + std::to_string(line);
    s += ": ";
    if (!field.empty()) s += "column '" + field + "': ";
    return s + what;
  }

 private:
  std::string file_;
  long line_;
  std::string field_;
};

}  // namespace arfit
