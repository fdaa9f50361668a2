#include "model/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace arfit {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_items(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = s.find(sep, start);
    out.emplace_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  return out;
}

std::string format_number(double v, const char* printf_format) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, v);
  return buf;
}

std::string fnv1a64_hex(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

// The ASCII control characters (0x00–0x1f, 0x7f): what find_control_char looks for and visible_control_chars shows.
bool is_control_char(char ch) {
  const auto c = static_cast<unsigned char>(ch);
  return c < 0x20 || c == 0x7f;
}

}  // namespace

std::size_t find_control_char(std::string_view s) {
  for (std::size_t i = 0; i < s.size(); ++i)
    if (is_control_char(s[i])) return i;
  return std::string_view::npos;
}

std::size_t find_invalid_utf8(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = byte(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // The sequence length and the range of its second byte (RFC 3629, table 3-7 of the Unicode standard): the
    // narrowed ranges exclude overlong forms (E0, F0), surrogates (ED) and code points above U+10FFFF (F4).
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return i;
    if (i + len > s.size()) return i;
    if (byte(i + 1) < lo || byte(i + 1) > hi) return i;
    for (std::size_t k = 2; k < len; ++k)
      if (byte(i + k) < 0x80 || byte(i + k) > 0xBF) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string visible_control_chars(std::string_view s, bool keep_layout) {
  static const char* const kEscapes[] = {"", "", "", "", "", "", "", "\\a", "\\b", "\\t", "\\n", "\\v", "\\f", "\\r"};
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (!is_control_char(ch) || (keep_layout && (ch == '\n' || ch == '\t'))) {
      out += ch;
    } else if (c < 14 && *kEscapes[c]) {
      out += kEscapes[c];
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

std::string name_problem(std::string_view s) {
  if (const std::size_t at = find_control_char(s); at != std::string_view::npos)
    return "control character " + visible_control_chars(s.substr(at, 1)) + " at offset " + std::to_string(at) +
           " (names hold printable text only)";
  if (const std::size_t at = find_invalid_utf8(s); at != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", static_cast<unsigned>(static_cast<unsigned char>(s[at])));
    return std::string("byte ") + hex + " at offset " + std::to_string(at) + " is not UTF-8 (names are UTF-8 text)";
  }
  return "";
}

std::string aligned_columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right_aligned,
                            std::string_view indent, std::size_t gap) {
  std::vector<std::size_t> width;
  for (const auto& row : rows) {
    if (row.size() > width.size()) width.resize(row.size(), 0);
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line(indent);
    for (std::size_t c = 0; c < row.size(); ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line.append(gap, ' ');
      const bool right = c < right_aligned.size() && right_aligned[c];
      line += right ? pad + row[c] : row[c] + pad;
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out += line + "\n";
  }
  return out;
}

std::optional<double> byte_unit_multiplier(std::string_view unit, std::string* why) {
  static const struct {
    const char* names[3];
    double multiplier;
  } kUnits[] = {{{"", "B", "B"}, 1.0},
                {{"K", "k", "KiB"}, 1024.0},
                {{"M", "m", "MiB"}, 1024.0 * 1024},
                {{"G", "g", "GiB"}, 1024.0 * 1024 * 1024},
                {{"T", "t", "TiB"}, 1024.0 * 1024 * 1024 * 1024}};
  for (const auto& u : kUnits)
    for (const char* name : u.names)
      if (unit == name) return u.multiplier;
  if (why) {
    if (unit == "KB" || unit == "kB" || unit == "MB" || unit == "GB" || unit == "TB")
      *why = "size unit '" + std::string(unit) + "' is ambiguous (decimal or binary?): write KiB/MiB/GiB/TiB (or K/M/G/T) or plain bytes";
    else
      *why = "unknown size unit '" + std::string(unit) + "' (known: B, K/KiB, M/MiB, G/GiB, T/TiB, powers of 1024)";
  }
  return std::nullopt;
}

std::optional<double> parse_size_text(std::string_view text, std::string* why) {
  const std::string t(text);
  const auto fail = [&](const std::string& reason) -> std::optional<double> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string not_a_size = "'" + t + "' is not a size (examples: 8, 1K, 64M, 8G)";
  if (t.empty()) return fail("empty size");
  // strtod would skip leading blanks and read a sign, "inf" or "nan": a size starts with a digit or a point.
  if (!std::isdigit(static_cast<unsigned char>(t.front())) && t.front() != '.') return fail(not_a_size);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end == t.c_str()) return fail(not_a_size);
  std::string unit_why;
  const std::optional<double> unit = byte_unit_multiplier(std::string_view(t).substr(static_cast<std::size_t>(end - t.c_str())), &unit_why);
  if (!unit) return fail("'" + t + "': " + unit_why);
  const double bytes = v * *unit;
  if (!std::isfinite(bytes)) return fail("'" + t + "' is not a finite size");
  return bytes;
}

std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t min, std::uint64_t max,
                                                std::string* why) {
  const std::string range = std::to_string(min) + ".." + std::to_string(max);
  const auto fail = [&](const std::string& reason) -> std::optional<std::uint64_t> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string shown = "'" + visible_control_chars(text) + "'";
  if (text.empty()) return fail("no number given; expected a whole number in " + range);
  std::uint64_t v = 0;
  bool beyond = false;  // more digits than a 64-bit value holds: outside any range
  for (const char c : text) {
    if (c < '0' || c > '9')
      return fail(shown + " is not a whole number (decimal digits only: no sign, blank, point or exponent); expected " + range);
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) beyond = true;
    else v = v * 10 + digit;
  }
  // A leading zero is refused as in integer options (integer_option_problem): C's rules would read 010 as 8.
  if (text.size() > 1 && text.front() == '0') return fail(integer_option_problem(text) + "; expected " + range);
  if (beyond || v < min || v > max) return fail(shown + " is outside " + range);
  return v;
}

std::optional<double> parse_decimal(std::string_view text, double min, double max, std::string* why) {
  const auto fail = [&](const std::string& reason) -> std::optional<double> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string range = format_number(min, "%g") + ".." + format_number(max, "%g");
  const std::string shown = "'" + visible_control_chars(text) + "'";
  if (text.empty()) return fail("no number given; expected a decimal number in " + range);
  std::size_t digits = 0, points = 0;
  for (const char c : text) {
    if (c >= '0' && c <= '9') ++digits;
    else if (c == '.') ++points;
    else digits = 0, points = 2;  // anything else: refused below
    if (points > 1) break;
  }
  if (points > 1 || digits == 0)
    return fail(shown + " is not a decimal number (digits and one point only: no sign, blank or exponent); expected " + range);
  // Digits and one point only: strtod reads exactly that, and nothing it could read otherwise (a sign, "inf") is left.
  const double v = std::strtod(std::string(text).c_str(), nullptr);
  if (!(v >= min && v <= max)) return fail(shown + " is outside " + range);
  return v;
}

std::optional<double> parse_duration(std::string_view text, std::string* why) {
  const auto fail = [&](const std::string& reason) -> std::optional<double> {
    if (why) *why = reason;
    return std::nullopt;
  };
  const std::string shown = "'" + visible_control_chars(text) + "'";
  const std::size_t unit_at = text.find_first_not_of("0123456789.");
  const std::string_view number = text.substr(0, unit_at);
  const std::string_view unit = unit_at == std::string_view::npos ? std::string_view() : text.substr(unit_at);
  static const std::pair<const char*, double> kUnits[] = {{"ms", 1e-3}, {"s", 1}, {"min", 60}, {"h", 3600}};
  const std::string units = "(units: ms, s, min, h; e.g. 90s, 1.5h, 250ms)";
  if (number.empty()) return fail(shown + " is not a duration: a decimal number and a unit " + units);
  if (unit.empty())
    return fail(shown + " has no unit; write " + std::string(number) + "s, " + std::string(number) + "min, ... " + units);
  double scale = 0;
  for (const auto& [name, seconds] : kUnits)
    if (unit == name) scale = seconds;
  if (scale == 0) return fail(shown + ": unknown unit '" + visible_control_chars(unit) + "' " + units);
  constexpr double kMaxSeconds = 1e7;
  std::string number_why;
  const std::optional<double> v = parse_decimal(number, 0, kMaxSeconds / scale, &number_why);
  if (!v) return fail(shown + ": " + number_why + " " + std::string(unit) + " (at most 10^7 s)");
  return *v * scale;
}

std::string format_duration(double seconds) {
  if (!(seconds > 0)) return "0 s";
  if (seconds < 1) return format_number(seconds * 1e3, "%.3g") + " ms";
  if (seconds < 60) return format_number(seconds, "%.3g") + " s";
  const long total = std::lround(seconds);
  if (total < 3600) return std::to_string(total / 60) + " min " + std::to_string(total % 60) + " s";
  return std::to_string(total / 3600) + " h " + format_number(static_cast<double>(total % 3600 / 60), "%02.0f") + " min";
}

std::string integer_option_problem(std::string_view text) {
  const std::string_view digits = !text.empty() && text.front() == '-' ? text.substr(1) : text;
  const bool decimal = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::string shown = "'" + visible_control_chars(text) + "'";
  if (!decimal) return shown + " is not a decimal integer (digits, an optional '-': no '+', blank, point, exponent or 0x)";
  if (digits.size() > 1 && digits.front() == '0') {
    const std::size_t first = digits.find_first_not_of('0');
    return shown + " has a leading zero, read as octal by C's rules; write " + std::string(text.front() == '-' ? "-" : "") +
           std::string(first == std::string_view::npos ? "0" : digits.substr(first));
  }
  return "";
}

std::string human_bytes(double bytes, int significant) {
  static const char* const kUnit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  constexpr int kLast = 6;
  const std::string format = "%." + std::to_string(std::max(1, significant)) + "g";
  int i = 0;
  while (bytes >= 1024 && i < kLast) {
    bytes /= 1024;
    ++i;
  }
  std::string digits = format_number(bytes, format.c_str());
  // Rounding can reach the next unit: 2^30 - 1 bytes is 1023.999999 MiB, "1024" at 6 digits, so "1 GiB".
  if (std::strtod(digits.c_str(), nullptr) >= 1024 && i < kLast) {
    bytes /= 1024;
    ++i;
    digits = format_number(bytes, format.c_str());
  }
  // %g writes 1000 at fewer than 4 digits as "1e+03": the rounded value written out.
  if (digits.find('e') != std::string::npos) digits = format_number(std::strtod(digits.c_str(), nullptr), "%.0f");
  return digits + " " + kUnit[i];
}

}  // namespace arfit
