#include "trace/json_locate.h"

#include "model/json_input.h"

namespace arfit::trace {

std::string format_json_path(const JsonPath& path) {
  std::string s;
  for (const auto& step : path) {
    if (const auto* key = std::get_if<std::string>(&step)) {
      if (!s.empty()) s += ".";
      s += *key;
    } else {
      s += "[" + std::to_string(std::get<std::size_t>(step)) + "]";
    }
  }
  return s.empty() ? "(top level)" : s;
}

// The scanner lives with the shared JSON loading path (model/json_input.h), which addresses values by JSON
// pointer; a path is one.
long json_line_of(const std::string& text, const JsonPath& path) {
  std::string pointer;
  for (const auto& step : path) {
    if (const auto* key = std::get_if<std::string>(&step)) pointer = json_pointer_append(pointer, *key);
    else pointer = json_pointer_append(pointer, std::get<std::size_t>(step));
  }
  return arfit::json_line_of(text, pointer);
}

}  // namespace arfit::trace
