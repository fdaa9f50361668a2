#include "ingest/text_util.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace arfit::ingest::detail {
namespace {
// Doubles at or below this convert to int64 exactly enough and without overflow (INT64_MAX is about 9.22e18).
constexpr double kInt64AsDoubleBound = 9.2e18;
}  // namespace

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t nl = text.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl;
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.size() >= p.size() && s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}
bool contains(std::string_view s, std::string_view n) { return s.find(n) != std::string_view::npos; }
bool icontains(std::string_view s, std::string_view n) { return lower(s).find(lower(n)) != std::string::npos; }

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_space(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::optional<double> parse_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) return std::numeric_limits<double>::infinity();
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_int(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  if (s.front() == '+') s.remove_prefix(1);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::int64_t> parse_grouped_uint(std::string_view s) {
  s = trim(s);
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s.front())) ||
      !std::isdigit(static_cast<unsigned char>(s.back())))
    return std::nullopt;
  std::int64_t v = 0;
  for (char c : s) {
    if (c == '_' || c == ',') continue;
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    const int digit = c - '0';
    if (v > (std::numeric_limits<std::int64_t>::max() - digit) / 10) return std::nullopt;  // exact: 2^63 - 1 reads
    v = v * 10 + digit;
  }
  return v;
}

std::optional<std::int64_t> parse_size(std::string_view s, std::string* why) {
  s = trim(s);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '_' || s[i] == ',' || s[i] == '.'))
    ++i;
  std::string_view num = s.substr(0, i);
  std::string_view unit = trim(s.substr(i));
  if (num.empty()) {
    if (why) *why = "'" + std::string(s) + "' is not a size";
    return std::nullopt;
  }
  const std::optional<double> unit_multiplier = byte_unit_multiplier(unit, why);
  if (!unit_multiplier) return std::nullopt;
  const double mult = *unit_multiplier;
  double v;
  if (num.find('.') != std::string_view::npos) {
    auto d = parse_double(num);
    if (!d) {
      if (why) *why = "'" + std::string(s) + "' is not a size";
      return std::nullopt;
    }
    v = *d * mult;
  } else {
    auto n = parse_grouped_uint(num);
    if (!n) {
      if (why) *why = "'" + std::string(s) + "' is not a size";
      return std::nullopt;
    }
    v = static_cast<double>(*n) * mult;
  }
  if (!std::isfinite(v) || v < 0 || v > kInt64AsDoubleBound || v != std::floor(v)) {
    if (why) *why = "size '" + std::string(s) + "' is not a whole number of bytes in range";
    return std::nullopt;
  }
  return static_cast<std::int64_t>(v);
}

std::int64_t saturated_count(double v) {
  if (!(v > 0)) return 0;
  if (v >= kInt64AsDoubleBound) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(v);
}

std::optional<double> parse_bandwidth_gbps(std::string_view s, std::string_view default_unit, std::string* why) {
  s = trim(s);
  std::size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.' || s[i] == '-' ||
                          s[i] == '+' || s[i] == 'e' || s[i] == 'E')) {
    // 'e' only inside a number ("1e3"), not the start of a unit
    if ((s[i] == 'e' || s[i] == 'E') && (i + 1 >= s.size() || !(std::isdigit(static_cast<unsigned char>(s[i + 1])) ||
                                                                 s[i + 1] == '-' || s[i + 1] == '+')))
      break;
    ++i;
  }
  auto v = parse_double(s.substr(0, i));
  if (!v) {
    if (why) *why = "'" + std::string(s) + "' is not a bandwidth";
    return std::nullopt;
  }
  std::string_view unit = trim(s.substr(i));
  if (unit.empty()) unit = default_unit;
  double mult;
  if (unit == "GB/s" || unit == "GBps" || unit == "GB/sec") mult = 1;
  else if (unit == "MB/s" || unit == "MBps") mult = 1e-3;
  else if (unit == "GiB/s" || unit == "GiBps") mult = 1.073741824;
  else if (unit == "TB/s" || unit == "TBps") mult = 1e3;
  else {
    if (why)
      *why = unit.empty() ? "bandwidth '" + std::string(s) + "' has no unit and the column names none"
                          : "unknown bandwidth unit '" + std::string(unit) + "' (known: GB/s, GBps, MB/s, GiB/s, TB/s)";
    return std::nullopt;
  }
  return *v * mult;
}

std::optional<double> time_unit_to_us(std::string_view unit) {
  if (unit == "us" || unit == "usec" || unit == "µs") return 1.0;
  if (unit == "ms" || unit == "msec") return 1e3;
  if (unit == "s" || unit == "sec") return 1e6;
  if (unit == "ns" || unit == "nsec") return 1e-3;
  return std::nullopt;
}

std::string basename_of(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

std::string stem_of(const std::string& path) {
  std::string b = basename_of(path);
  auto dot = b.find_last_of('.');
  return (dot == std::string::npos || dot == 0) ? b : b.substr(0, dot);
}

std::string sanitize_key(std::string_view s) {
  std::string out;
  bool pending = false;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (std::isalnum(u)) {
      if (pending && !out.empty()) out.push_back('_');
      pending = false;
      out.push_back(static_cast<char>(std::tolower(u)));
    } else {
      pending = true;
    }
  }
  return out;
}

std::optional<Collective> collective_of_perf_binary(std::string_view tok) {
  auto slash = tok.find_last_of('/');
  if (slash != std::string_view::npos) tok = tok.substr(slash + 1);
  if (!ends_with(tok, "_perf")) return std::nullopt;
  const std::string_view base = tok.substr(0, tok.size() - 5);
  if (base == "all_reduce") return Collective::AllReduce;
  if (base == "all_gather") return Collective::AllGather;
  if (base == "reduce_scatter") return Collective::ReduceScatter;
  if (base == "alltoall") return Collective::AllToAll;
  if (base == "alltoallv") return Collective::AllToAllV;
  if (base == "broadcast") return Collective::Broadcast;
  if (base == "reduce") return Collective::Reduce;
  if (base == "sendrecv") return Collective::SendRecv;
  if (base == "gather") return Collective::Gather;
  if (base == "scatter") return Collective::Scatter;
  return std::nullopt;
}

}  // namespace arfit::ingest::detail
