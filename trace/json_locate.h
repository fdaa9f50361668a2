// Finds the line of a value inside JSON text, given its path, so that errors found after parsing (wrong
// type, missing field) can still name "file:line". nlohmann::json keeps no positions, so this re-scans the
// text along the path; it skips values without building them.
#pragma once

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

namespace arfit::trace {

// One step of a path: an object key or an array index.
using JsonPathStep = std::variant<std::string, std::size_t>;
using JsonPath = std::vector<JsonPathStep>;

// "prefill.summary_stats[0].children[2].entry.cuda_time_us"
std::string format_json_path(const JsonPath& path);

// 1-based line where the value at `path` starts; when only a prefix of the path exists, the line of the
// deepest value found (a missing key is reported at its parent object). 0 when the text is not scannable.
long json_line_of(const std::string& text, const JsonPath& path);

}  // namespace arfit::trace
