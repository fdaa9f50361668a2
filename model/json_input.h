// The one loading path of every JSON input (models files, vLLM profiles, rule files, arbench specs,
// nccl-tests -J logs, plot inputs): parse_json bounds the nesting and turns nlohmann's exceptions into
// InputErrors naming file:line, and JsonView reads the parsed document checking every type and range,
// so a wrong value is reported as "m.json:57: /groups/3/params/1: expected a number, got string \"x\"".
//
// Why a depth bound: nlohmann parses iteratively, but copying, comparing and dumping a document recurse once
// per nesting level, so an input of 160,000 nested arrays (400 KB) overflowed the stack when a models file
// was copied into its ModelSet. No input arfit reads nests deeper than a few hundred levels (a vLLM profile
// nests two levels per module, at most trace::kMaxProfileDepth modules).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/checked.h"
#include "model/errors.h"

namespace arfit {

inline constexpr int kMaxJsonDepth = 512;

// Parses JSON text read from `name`. Throws InputError(name, line, "", ...) when the text is not JSON (the
// position as line and column, nlohmann's reason without its "[json.exception...]" prefix), nests arrays
// and objects deeper than `max_depth`, or repeats a key within one object. A UTF-8 byte-order mark is skipped.
nlohmann::json parse_json(const std::string& text, const std::string& name, int max_depth = kMaxJsonDepth);
// `text` (read from `name`) parsed when it is a JSON object parse_json accepts, else nullopt: for readers that tell
// a JSON input from another format by its content (nccl-tests -J output is JSON too; a file that is not a readable
// object is left to the other readers, which report its errors).
std::optional<nlohmann::json> json_object_of(const std::string& text, const std::string& name);

// The text of a JSON document arfit writes (models files, codegen and eval JSON, suggest, predict --json, arbench
// --json): indented by one space, ending in a line break. File paths recorded in it (a models file's `inputs`, the
// models file of a generated table, a sample's source file) may hold bytes that are not UTF-8 (a file name on Linux
// is any bytes); they are written as U+FFFD instead of failing the write after the work with nlohmann's "invalid
// UTF-8 byte". Names, which identify groups, are refused as they are read instead (name_problem, model/text.h).
std::string json_document_text(const nlohmann::json& j);

// An error at one place of a JSON document. pointer() is an RFC 6901 JSON pointer ("/groups/3/params/1",
// "" for the whole document); what() reads "/groups/3/params/1: expected a number, got string \"x\"".
// Derives from std::invalid_argument: a bad document is bad content, as the model parsers always reported it.
class JsonError : public std::invalid_argument {
 public:
  JsonError(std::string pointer, std::string reason);
  const std::string& pointer() const { return pointer_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string pointer_, reason_;
};

// The JsonError as an InputError naming `name` and the line of the pointer's value in `text`.
InputError json_input_error(const JsonError& e, const std::string& text, const std::string& name);

// read(), a reader of a document parsed from `text`, with its JsonErrors turned into InputErrors naming `name` and
// the line (json_input_error): the one way every reader of a parsed document reports a bad value as file:line.
template <class Read>
auto read_json_document(const std::string& text, const std::string& name, Read&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const JsonError& e) {
    throw json_input_error(e, text, name);
  }
}

// 1-based line where the value at `pointer` starts in `text` (already parsed as valid JSON); when only a
// prefix of the pointer exists, the line of the deepest value found. 0 when the text cannot be scanned.
long json_line_of(const std::string& text, const std::string& pointer);
// 1-based line of a byte offset.
long line_of_offset(const std::string& text, std::size_t offset);
// "/a/b~1c" from keys and indices: appends one escaped reference token.
std::string json_pointer_append(const std::string& pointer, const std::string& key);
std::string json_pointer_append(const std::string& pointer, std::size_t index);

// A value of a parsed document that knows where it is. Accessors check the type (and range) and throw
// JsonError naming the pointer. Views refer to the document: it must outlive them.
class JsonView {
 public:
  explicit JsonView(const nlohmann::json& j, std::string pointer = "") : j_(&j), pointer_(std::move(pointer)) {}

  const nlohmann::json& json() const { return *j_; }
  const std::string& pointer() const { return pointer_; }

  // Members of an object: `at` requires the key (and the object); `find` gives nullopt when the key is
  // absent or null.
  JsonView at(const std::string& key) const;
  std::optional<JsonView> find(const std::string& key) const;
  // Elements of an array.
  std::size_t size() const;
  JsonView at(std::size_t index) const;

  void expect_object() const;
  void expect_array() const;
  std::string string() const;
  // A string that is a name (a machine, strategy, device, element type): no control characters (name_problem).
  std::string name() const;
  bool boolean() const;
  // A finite number, optionally within [lo, hi].
  double number() const;
  double number(double lo, double hi) const;
  // A whole number that fits Int and lies within [lo, hi] (checked_narrow: never wrapped).
  template <class Int>
  Int integer(Int lo = std::numeric_limits<Int>::min(), Int hi = std::numeric_limits<Int>::max()) const;
  // An array of finite numbers.
  std::vector<double> numbers() const;

  // Optional members with a default (absent or null).
  std::string string_or(const std::string& key, const std::string& dflt) const;

  [[noreturn]] void fail(const std::string& reason) const { throw JsonError(pointer_, reason); }
  // "string \"abc\"", "array of 3", "number 1e+300": what was found, for messages (bounded length).
  std::string describe() const;

 private:
  const nlohmann::json* j_;
  std::string pointer_;
};

template <class Int>
Int JsonView::integer(Int lo, Int hi) const {
  std::optional<Int> v;
  if (j_->is_number_integer()) {
    v = j_->is_number_unsigned() ? checked_narrow<Int>(j_->get<std::uint64_t>()) : checked_narrow<Int>(j_->get<std::int64_t>());
  } else if (j_->is_number_float()) {
    v = checked_narrow<Int>(j_->get<double>());
  } else {
    fail("expected a whole number, got " + describe());
  }
  if (!v || *v < lo || *v > hi)
    fail("expected a whole number in " + std::to_string(lo) + ".." + std::to_string(hi) + ", got " + j_->dump());
  return *v;
}

}  // namespace arfit
