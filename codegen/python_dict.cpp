#include "codegen/python_dict.h"

#include <cctype>
#include <cmath>
#include <regex>
#include <vector>

#include "model/errors.h"
#include "model/text.h"

namespace arfit::codegen {

namespace {

struct Token {
  enum Kind { Number, Name, String, Op, End } kind = End;
  std::string text;
  long line = 0;
};

// Python tokens from `offset` on, until the brace opened at the first token closes (or the line ends when the
// first token is not a brace): enough for a dict literal or a one-line constant.
std::vector<Token> tokenize(const std::string& t, std::size_t offset, long line) {
  std::vector<Token> out;
  int depth = 0;
  std::size_t i = offset;
  while (i < t.size()) {
    const char c = t[i];
    if (c == '\n') {
      if (depth == 0) break;
      ++line, ++i;
    } else if (c == '#') {
      while (i < t.size() && t[i] != '\n') ++i;
    } else if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      ++i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < t.size() && std::isdigit(static_cast<unsigned char>(t[i + 1])))) {
      std::size_t j = i;
      while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '.' || t[j] == '_' ||
                              ((t[j] == '+' || t[j] == '-') && (t[j - 1] == 'e' || t[j - 1] == 'E'))))
        ++j;
      out.push_back({Token::Number, t.substr(i, j - i), line});
      i = j;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      std::size_t j = i;
      while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_')) ++j;
      out.push_back({Token::Name, t.substr(i, j - i), line});
      i = j;
    } else if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < t.size() && t[j] != c && t[j] != '\n') j += t[j] == '\\' ? 2 : 1;
      out.push_back({Token::String, t.substr(i + 1, std::min(j, t.size()) - i - 1), line});
      i = j + 1;
    } else {
      std::string op(1, c);
      if (c == '/' && i + 1 < t.size() && t[i + 1] == '/') op = "//";
      if (c == '*' && i + 1 < t.size() && t[i + 1] == '*') op = "**";
      out.push_back({Token::Op, op, line});
      i += op.size();
      if (c == '{' || c == '(' || c == '[') ++depth;
      if (c == '}' || c == ')' || c == ']') {
        if (--depth == 0 && out.front().text == "{") break;
      }
    }
  }
  out.push_back({Token::End, "", line});
  return out;
}

long line_at(const std::string& t, std::size_t offset) {
  long n = 1;
  for (std::size_t i = 0; i < offset && i < t.size(); ++i) n += t[i] == '\n';
  return n;
}

class Reader {
 public:
  Reader(const std::string& text, const std::string& path, std::string name, int depth = 0)
      : text_(text), path_(path), name_(std::move(name)), depth_(depth) {}

  // The offset just after `name =` (or `name: T =`) at the start of a line, or npos.
  std::size_t assignment(const std::string& name) const {
    const std::regex a("(^|\\n)" + name + "[ \\t]*(:[^=\\n]*)?=(?!=)");
    std::smatch m;
    if (!std::regex_search(text_, m, a)) return std::string::npos;
    return static_cast<std::size_t>(m.position(0) + m.length(0));
  }

  PyDict dict_at(std::size_t offset) {
    tokens_ = tokenize(text_, offset, line_at(text_, offset));
    pos_ = 0;
    if (peek().text != "{") fail(peek(), "is not assigned a dict literal ({...})");
    PyDict d = dict();
    return d;
  }

  double constant_at(std::size_t offset) {
    tokens_ = tokenize(text_, offset, line_at(text_, offset));
    pos_ = 0;
    const double v = expr();
    if (peek().kind != Token::End) fail(peek(), "'" + peek().text + "' is not part of a number");
    return v;
  }

 private:
  const Token& peek() const { return tokens_[pos_]; }
  const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool accept(const std::string& op) {
    if (peek().kind == Token::Op && peek().text == op) return ++pos_, true;
    return false;
  }
  [[noreturn]] void fail(const Token& at, const std::string& what) const {
    throw InputError(path_, at.line, name_, what + " (arfit reads dicts of numbers written as arithmetic of literals and "
                                                   "module-level constants)");
  }

  PyDict dict() {
    PyDict d;
    d.line = peek().line;
    accept("{");
    while (!accept("}")) {
      const Token key = next();
      if (key.kind != Token::Number && key.kind != Token::String) fail(key, "expected a key (a number or a string)");
      if (key.kind == Token::Number && key.text.find_first_not_of("0123456789") != std::string::npos)
        fail(key, "key '" + key.text + "' is not an integer");
      if (d.numbers.count(key.text) || d.dicts.count(key.text)) fail(key, "key '" + key.text + "' is given twice");
      if (!accept(":")) fail(peek(), "expected ':' after key '" + key.text + "'");
      if (peek().text == "{") d.dicts[key.text] = dict();
      else d.numbers[key.text] = expr();
      if (accept(",")) continue;
      if (peek().kind == Token::Op && peek().text == "}") continue;
      fail(peek(), "expected ',' or '}' after the value of key '" + key.text + "'");
    }
    return d;
  }

  double expr() {
    double v = term();
    for (;;) {
      if (accept("+")) v += term();
      else if (accept("-")) v -= term();
      else return v;
    }
  }
  double term() {
    double v = factor();
    for (;;) {
      if (accept("*")) v *= factor();
      else if (accept("//")) v = std::floor(v / divisor());
      else if (accept("/")) v /= divisor();
      else return v;
    }
  }
  double divisor() {
    const Token& at = peek();
    const double d = factor();
    if (d == 0) fail(at, "division by zero");
    return d;
  }
  double factor() {
    if (accept("-")) return -factor();
    if (accept("+")) return factor();
    if (accept("(")) {
      const double v = expr();
      if (!accept(")")) fail(peek(), "expected ')'");
      return v;
    }
    const Token t = next();
    if (t.kind == Token::Number) return number(t);
    if (t.kind == Token::Name) return constant(t);
    fail(t, t.kind == Token::End ? std::string("a value is missing") : "'" + t.text + "' is not a number");
  }
  double number(const Token& t) const {
    std::string digits;
    for (char c : t.text)
      if (c != '_') digits += c;
    try {
      std::size_t used = 0;
      const double v = std::stod(digits, &used);
      if (used == digits.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    fail(t, "'" + t.text + "' is not a number");
  }
  // A module-level constant (MiB = 1024 * 1024), read where the file assigns it.
  double constant(const Token& t) const {
    if (depth_ >= 8) fail(t, "constant '" + t.text + "' is defined through too many others");
    Reader inner(text_, path_, name_, depth_ + 1);
    const std::size_t at = inner.assignment(t.text);
    if (at == std::string::npos) fail(t, "'" + t.text + "' is not a module-level constant of the file");
    return inner.constant_at(at);
  }

  const std::string& text_;
  const std::string& path_;
  std::string name_;
  int depth_ = 0;
  std::vector<Token> tokens_;
  std::size_t pos_ = 0;
};

}  // namespace

PyDict read_python_dict(const std::string& text, const std::string& path, const std::string& name) {
  Reader r(text, path, name);
  const std::size_t at = r.assignment(name);
  if (at == std::string::npos) throw InputError(path, 0, name, "no module-level assignment of " + name);
  return r.dict_at(at);
}

}  // namespace arfit::codegen
