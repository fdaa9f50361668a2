#include "model/json_input.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <memory>
#include <string_view>
#include <unordered_set>


#include "model/text.h"

namespace arfit {

// ---------------------------------------------------------------- parsing

namespace {

// What one scan over the text finds before nlohmann's parser builds anything (strings skipped): the offset
// where the nesting of arrays and objects first exceeds `max_depth`, and the first key that repeats a key of its
// own object (the offset of its opening quote and the key, unescaped); npos where there is none. The first
// matters for stack safety, so it is looked for in the whole text; the second counts only for text that parses.
//
// Hand-written beside nlohmann's parser: its callback parser took 26 s instead of 0.13 s on a 9.5 MB document,
// and neither its callback nor its SAX events carry a position, while the message names the line. nlohmann keeps
// the last of two equal keys, so `"sigma_in": 0.1, ..., "sigma_in": 9` in a models file, a second "cuda_time_us"
// in a profile or a second "bytes" in an arbench spec was read as the last, silently.
struct JsonScan {
  std::size_t too_deep_at = std::string::npos;
  std::size_t repeated_key_at = std::string::npos;
  std::string repeated_key;
};

JsonScan scan_json(const std::string& text, int max_depth) {
  // The keys of each open object: one stack of views (an object's from its first_key on), compared one by one
  // while they are few, as in most objects, and through a hash set once an object has many.
  constexpr std::size_t kFewKeys = 16;
  struct Level {
    bool object = false, expect_key = false;
    std::size_t first_key = 0;
    std::unique_ptr<std::unordered_set<std::string_view>> many;
  };
  std::vector<Level> levels;  // at most max_depth: the scan stops where the nesting exceeds it
  std::vector<std::string_view> keys;
  const auto is_new_key = [&keys](Level& level, std::string_view key) {
    if (level.many) return level.many->insert(key).second;
    const auto first = keys.begin() + static_cast<std::ptrdiff_t>(level.first_key);
    if (std::find(first, keys.end(), key) != keys.end()) return false;
    keys.push_back(key);
    if (keys.size() - level.first_key > kFewKeys) {
      level.many = std::make_unique<std::unordered_set<std::string_view>>(keys.begin() + static_cast<std::ptrdiff_t>(level.first_key), keys.end());
      keys.resize(level.first_key);
    }
    return true;
  };
  std::deque<std::string> unescaped;  // owns the keys that held escapes (stable addresses for the views)
  bool look_for_keys = true;  // until a repeat is found, or text that is no JSON makes keys meaningless
  JsonScan out;
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = text[i];
    if (c == '"') {
      const std::size_t open = i;
      bool escaped = false;
      for (++i; i < n && text[i] != '"'; ++i)
        if (text[i] == '\\') {
          escaped = true;
          ++i;
        }
      if (!look_for_keys || levels.empty() || !levels.back().expect_key) continue;
      if (i >= n) break;  // an unterminated string: not JSON, the parser says so
      levels.back().expect_key = false;
      std::string_view key(text.data() + open + 1, i - open - 1);
      if (escaped) {
        try {
          key = unescaped.emplace_back(nlohmann::json::parse(text.substr(open, i - open + 1)).get<std::string>());
        } catch (const nlohmann::json::exception&) {
          look_for_keys = false;  // a bad escape: not JSON, the parser says so
          continue;
        }
      }
      if (!is_new_key(levels.back(), key)) {
        out.repeated_key_at = open;
        out.repeated_key = std::string(key);
        look_for_keys = false;
      }
    } else if (c == '{' || c == '[') {
      if (levels.size() >= static_cast<std::size_t>(std::max(0, max_depth))) {
        out.too_deep_at = i;
        return out;
      }
      levels.push_back(Level{c == '{', c == '{', keys.size(), nullptr});
    } else if ((c == '}' || c == ']') && !levels.empty()) {
      keys.resize(levels.back().first_key);
      levels.pop_back();
    } else if (c == ',' && !levels.empty() && levels.back().object) {
      levels.back().expect_key = true;
    }
  }
  return out;
}

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1, column 2: " prefix
// (the caller names the position itself).
std::string parse_reason(const std::string& what) {
  std::string s = what;
  if (s.rfind("[json.exception.", 0) == 0) {
    const auto close = s.find("] ");
    if (close != std::string::npos) s = s.substr(close + 2);
  }
  for (const char* prefix : {"parse error at ", "parse error: "}) {
    if (s.rfind(prefix, 0) != 0) continue;
    const auto colon = s.find(": ", std::string(prefix).size() - 2);
    if (colon != std::string::npos) s = s.substr(colon + 2);
    break;
  }
  return s;
}

}  // namespace

std::string json_document_text(const nlohmann::json& j) {
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

nlohmann::json parse_json(const std::string& text, const std::string& name, int max_depth) {
  // Reported in this order: too deep (before nlohmann builds anything), not JSON, a repeated key.
  const JsonScan scan = scan_json(text, max_depth);
  if (scan.too_deep_at != std::string::npos)
    throw InputError(name, line_of_offset(text, scan.too_deep_at), "",
                     "JSON nested deeper than " + std::to_string(max_depth) + " levels of arrays and objects");
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (scan.repeated_key_at != std::string::npos)
      throw InputError(name, line_of_offset(text, scan.repeated_key_at), "",
                       "key '" + scan.repeated_key + "' appears twice in one object (which value is meant?): keep one");
    return j;
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: 1-based index of the last character read (one past the end at a premature end of input).
    const std::size_t at = std::min(text.size(), e.byte > 0 ? static_cast<std::size_t>(e.byte - 1) : std::size_t{0});
    const std::size_t line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t column = line_start == std::string::npos || at == 0 ? at + 1 : at - line_start;
    throw InputError(name, line_of_offset(text, at), "",
                     "invalid JSON at column " + std::to_string(column) + ": " + parse_reason(e.what()));
  } catch (const nlohmann::json::exception& e) {  // e.g. out_of_range.406: a number beyond double
    throw InputError(name, 0, "", "invalid JSON: " + parse_reason(e.what()));
  }
}

// ---------------------------------------------------------------- errors and pointers

JsonError::JsonError(std::string pointer, std::string reason)
    : std::invalid_argument((pointer.empty() ? std::string("(top level)") : pointer) + ": " + reason),
      pointer_(std::move(pointer)),
      reason_(std::move(reason)) {}

InputError json_input_error(const JsonError& e, const std::string& text, const std::string& name) {
  return InputError(name, json_line_of(text, e.pointer()), "", e.what());
}

std::string json_pointer_append(const std::string& pointer, const std::string& key) {
  std::string out = pointer + "/";
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string json_pointer_append(const std::string& pointer, std::size_t index) {
  return pointer + "/" + std::to_string(index);
}

long line_of_offset(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<long>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

namespace {

// The reference tokens of a JSON pointer, unescaped.
std::vector<std::string> pointer_tokens(const std::string& pointer) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < pointer.size() && pointer[i] == '/') {
    std::string tok;
    for (++i; i < pointer.size() && pointer[i] != '/'; ++i) {
      if (pointer[i] == '~' && i + 1 < pointer.size() && (pointer[i + 1] == '0' || pointer[i + 1] == '1')) {
        tok += pointer[i + 1] == '0' ? '~' : '/';
        ++i;
      } else {
        tok += pointer[i];
      }
    }
    out.push_back(std::move(tok));
  }
  return out;
}

// A scanner over JSON text that has already parsed: it walks to a value without building anything.
// Iterative (the nesting of skipped values is counted, not recursed into).
struct Scanner {
  const std::string& t;
  std::size_t p = 0;
  bool ok = true;

  void ws() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) ++p;
  }
  // A string at '"'; its content with the simple escapes undone (enough to compare keys).
  std::string str() {
    std::string out;
    if (p >= t.size() || t[p] != '"') {
      ok = false;
      return out;
    }
    ++p;
    while (p < t.size() && t[p] != '"') {
      if (t[p] == '\\' && p + 1 < t.size()) {
        const char c = t[p + 1];
        out += (c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c);
        p += 2;
      } else {
        out += t[p++];
      }
    }
    ++p;
    return out;
  }
  void skip() {
    ws();
    if (p >= t.size()) {
      ok = false;
      return;
    }
    const char c = t[p];
    if (c == '"') {
      str();
      return;
    }
    if (c == '{' || c == '[') {
      long depth = 0;
      while (p < t.size()) {
        const char d = t[p];
        if (d == '"') {
          str();
          continue;
        }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') {
          if (--depth == 0) {
            ++p;
            return;
          }
        }
        ++p;
      }
      ok = false;
      return;
    }
    while (p < t.size() && t[p] != ',' && t[p] != '}' && t[p] != ']' && t[p] != ' ' && t[p] != '\n' && t[p] != '\r' &&
           t[p] != '\t')
      ++p;
  }
  // At an object (`key` given) or an array (`index`): moves to that member's value; false (position
  // unchanged) when it is absent.
  bool to_child(const std::string* key, std::size_t index) {
    const std::size_t start = p;
    ++p;  // '{' or '['
    for (std::size_t i = 0; ok; ++i) {
      ws();
      if (p >= t.size() || t[p] == '}' || t[p] == ']') break;
      if (key) {
        const std::string k = str();
        ws();
        if (p < t.size() && t[p] == ':') ++p;
        ws();
        if (!ok) break;
        if (k == *key) return true;
      } else if (i == index) {
        return true;
      }
      skip();
      ws();
      if (p < t.size() && t[p] == ',') ++p;
    }
    p = start;
    ok = true;
    return false;
  }
};

}  // namespace

long json_line_of(const std::string& text, const std::string& pointer) {
  Scanner s{text};
  s.ws();
  // A byte-order mark before the document.
  if (text.compare(s.p, 3, "\xEF\xBB\xBF") == 0) {
    s.p += 3;
    s.ws();
  }
  for (const std::string& tok : pointer_tokens(pointer)) {
    if (s.p >= text.size()) break;
    bool found = false;
    if (text[s.p] == '{') {
      found = s.to_child(&tok, 0);
    } else if (text[s.p] == '[') {
      const bool is_index = !tok.empty() && tok.size() <= 18 && tok.find_first_not_of("0123456789") == std::string::npos;
      found = is_index && s.to_child(nullptr, std::stoull(tok));
    }
    if (!found) break;
    s.ws();
  }
  if (s.p >= text.size()) return 0;
  return line_of_offset(text, s.p);
}

// ---------------------------------------------------------------- views

std::string JsonView::describe() const {
  const nlohmann::json& j = *j_;
  if (j.is_array()) return "an array of " + std::to_string(j.size());
  if (j.is_object()) return "an object";
  if (j.is_null()) return "null";
  std::string d = j.dump();
  if (d.size() > 60) d = d.substr(0, 57) + "...";
  return std::string(j.is_string() ? "string " : j.is_boolean() ? "boolean " : "number ") + d;
}

void JsonView::expect_object() const {
  if (!j_->is_object()) fail("expected an object, got " + describe());
}

void JsonView::expect_array() const {
  if (!j_->is_array()) fail("expected an array, got " + describe());
}

JsonView JsonView::at(const std::string& key) const {
  expect_object();
  auto it = j_->find(key);
  if (it == j_->end()) fail("missing key '" + key + "'");
  return JsonView(*it, json_pointer_append(pointer_, key));
}

std::optional<JsonView> JsonView::find(const std::string& key) const {
  expect_object();
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return std::nullopt;
  return JsonView(*it, json_pointer_append(pointer_, key));
}

std::size_t JsonView::size() const {
  expect_array();
  return j_->size();
}

JsonView JsonView::at(std::size_t index) const {
  expect_array();
  if (index >= j_->size()) fail("has " + std::to_string(j_->size()) + " elements, element " + std::to_string(index) + " is missing");
  return JsonView((*j_)[index], json_pointer_append(pointer_, index));
}

std::string JsonView::string() const {
  if (!j_->is_string()) fail("expected a string, got " + describe());
  return j_->get<std::string>();
}

std::string JsonView::name() const {
  std::string s = string();
  if (const std::string why = name_problem(s); !why.empty()) fail(why);
  return s;
}

bool JsonView::boolean() const {
  if (!j_->is_boolean()) fail("expected true or false, got " + describe());
  return j_->get<bool>();
}

double JsonView::number() const {
  if (!j_->is_number()) fail("expected a number, got " + describe());
  const double v = j_->get<double>();
  if (!std::isfinite(v)) fail("expected a finite number, got " + j_->dump());
  return v;
}

double JsonView::number(double lo, double hi) const {
  const double v = number();
  if (!(v >= lo && v <= hi)) {
    nlohmann::json l = lo, h = hi;
    fail("expected a number in " + l.dump() + ".." + h.dump() + ", got " + j_->dump());
  }
  return v;
}

std::vector<double> JsonView::numbers() const {
  const std::size_t n = size();
  std::vector<double> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(at(i).number());
  return out;
}

std::string JsonView::string_or(const std::string& key, const std::string& dflt) const {
  const auto v = find(key);
  return v ? v->string() : dflt;
}

std::optional<nlohmann::json> json_object_of(const std::string& text, const std::string& name) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return std::nullopt;
  try {
    nlohmann::json j = parse_json(text, name);
    if (j.is_object()) return j;
  } catch (const InputError&) {
  }
  return std::nullopt;
}

}  // namespace arfit
