#include "codegen/safe_text.h"

#include <set>

#include "model/text.h"

namespace arfit::codegen {

namespace {

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 when the bytes there are not one
// (overlong forms, surrogates and code points above U+10FFFF included).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n = 0;
  unsigned lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c >= 0xe0 && c <= 0xef) n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
  else if (c >= 0xf0 && c <= 0xf4) n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
  else return 0;
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xbf) return 0;
  return n;
}

}  // namespace

std::string comment_text(std::string_view text, CommentSyntax syntax) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_length(text, i);
    if (n == 0 || find_control_char(text.substr(i, 1)) == 0) {
      out += '?';
      ++i;
      continue;
    }
    const char c = text[i];
    if (syntax == CommentSyntax::Cpp && c == '\\') out += '/';
    else if (syntax == CommentSyntax::Cpp && c == '/' && !out.empty() && out.back() == '*') out += " /";
    else if (syntax == CommentSyntax::Cpp && c == '*' && !out.empty() && out.back() == '/') out += " *";
    else out.append(text.substr(i, n));
    i += n;
  }
  return out;
}

std::string cpp_identifier(std::string_view name) {
  static const std::set<std::string, std::less<>> reserved{
      // C++20 keywords and alternative tokens
      "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
      "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
      "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for",
      "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq",
      "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast",
      "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct",
      "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename",
      "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq",
      // macros of the C and C++ standard library headers a consumer may include first
      "NULL", "EOF", "errno", "assert", "offsetof", "stdin", "stdout", "stderr", "BUFSIZ", "FILENAME_MAX",
      "FOPEN_MAX", "L_tmpnam", "TMP_MAX", "SEEK_SET", "SEEK_CUR", "SEEK_END", "EXIT_SUCCESS", "EXIT_FAILURE",
      "RAND_MAX", "MB_CUR_MAX", "CHAR_BIT", "CHAR_MIN", "CHAR_MAX", "INT_MIN", "INT_MAX", "UINT_MAX", "LONG_MIN",
      "LONG_MAX", "SIZE_MAX", "INFINITY", "NAN", "HUGE_VAL", "EDOM", "ERANGE", "EILSEQ", "CLOCKS_PER_SEC",
      "SIG_DFL", "SIG_ERR", "SIG_IGN", "SIGINT", "SIGTERM", "SIGABRT", "SIGSEGV", "SIGFPE", "SIGILL"};
  std::string id;
  for (char c : name) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum) id += c;
    else if (id.empty() || id.back() != '_') id += '_';
  }
  if (id.empty() || id[0] == '_' || (id[0] >= '0' && id[0] <= '9') || reserved.count(id))
    id = (id.empty() || id[0] != '_') ? "S_" + id : "S" + id;
  return id;
}

}  // namespace arfit::codegen
