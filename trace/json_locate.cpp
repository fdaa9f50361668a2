#include "trace/json_locate.h"

#include <algorithm>

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

long line_of_offset(const std::string& text, std::size_t offset) {
  offset = std::min(offset, text.size());
  return 1 + static_cast<long>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n'));
}

namespace {

// A minimal scanner over already-valid JSON (the text parsed before we get here).
struct Scanner {
  const std::string& t;
  std::size_t p = 0;
  bool ok = true;

  void ws() {
    while (p < t.size() && (t[p] == ' ' || t[p] == '\n' || t[p] == '\r' || t[p] == '\t')) ++p;
  }
  // Reads a string starting at '"'; returns its content with the common escapes undone.
  std::string str() {
    std::string out;
    if (p >= t.size() || t[p] != '"') { ok = false; return out; }
    ++p;
    while (p < t.size() && t[p] != '"') {
      if (t[p] == '\\' && p + 1 < t.size()) {
        char c = t[p + 1];
        out += (c == 'n' ? '\n' : c == 't' ? '\t' : c);
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
    if (p >= t.size()) { ok = false; return; }
    char c = t[p];
    if (c == '"') { str(); return; }
    if (c == '{' || c == '[') {
      int depth = 0;
      while (p < t.size()) {
        char d = t[p];
        if (d == '"') { str(); continue; }
        if (d == '{' || d == '[') ++depth;
        if (d == '}' || d == ']') {
          --depth;
          if (depth == 0) { ++p; return; }
        }
        ++p;
      }
      ok = false;
      return;
    }
    while (p < t.size() && t[p] != ',' && t[p] != '}' && t[p] != ']' && t[p] != ' ' && t[p] != '\n' && t[p] != '\r' && t[p] != '\t') ++p;
  }
  // At an object: moves to the value of `key`; false when absent (position back at the object).
  bool to_key(const std::string& key) {
    std::size_t start = p;
    ws();
    if (p >= t.size() || t[p] != '{') { p = start; return false; }
    ++p;
    while (true) {
      ws();
      if (p >= t.size() || t[p] == '}') break;
      std::string k = str();
      ws();
      if (p < t.size() && t[p] == ':') ++p;
      ws();
      if (!ok) break;
      if (k == key) return true;
      skip();
      ws();
      if (p < t.size() && t[p] == ',') ++p;
      if (!ok) break;
    }
    p = start;
    ok = true;
    return false;
  }
  bool to_index(std::size_t index) {
    std::size_t start = p;
    ws();
    if (p >= t.size() || t[p] != '[') { p = start; return false; }
    ++p;
    for (std::size_t i = 0;; ++i) {
      ws();
      if (p >= t.size() || t[p] == ']') break;
      if (i == index) return true;
      skip();
      ws();
      if (p < t.size() && t[p] == ',') ++p;
      if (!ok) break;
    }
    p = start;
    ok = true;
    return false;
  }
};

}  // namespace

long json_line_of(const std::string& text, const JsonPath& path) {
  Scanner s{text};
  s.ws();
  for (const auto& step : path) {
    bool found = std::holds_alternative<std::string>(step) ? s.to_key(std::get<std::string>(step))
                                                           : s.to_index(std::get<std::size_t>(step));
    if (!found) break;
    s.ws();
  }
  if (s.p >= text.size()) return 0;
  return line_of_offset(text, s.p);
}

}  // namespace arfit::trace
