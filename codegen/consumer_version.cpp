#include "codegen/consumer_version.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include "model/text.h"

namespace arfit::codegen {

ReleaseVersion parse_release_version(const std::string& text, const std::string& option) {
  ReleaseVersion v;
  v.text = text;
  std::size_t i = (!text.empty() && (text[0] == 'v' || text[0] == 'V')) ? 1 : 0;
  // Release parts: digits separated by '.', at most 6 of them, each at most 9 digits (no overflow).
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && v.parts.size() < 6) {
    std::size_t j = i;
    while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])) && j - i < 9) ++j;
    v.parts.push_back(std::stol(text.substr(i, j - i)));
    if (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j])))
      throw std::invalid_argument(option + ": '" + text + "': a version part has more than 9 digits");
    i = j;
    if (i + 1 < text.size() && text[i] == '.' && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
    else break;
  }
  if (v.parts.empty())
    throw std::invalid_argument(option + ": '" + text + "' is not a version (a release number such as 0.33.0)");
  return v;
}

int compare_versions(const ReleaseVersion& a, const ReleaseVersion& b) {
  const std::size_t n = std::max(a.parts.size(), b.parts.size());
  for (std::size_t i = 0; i < n; ++i) {
    const long x = i < a.parts.size() ? a.parts[i] : 0, y = i < b.parts.size() ? b.parts[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

bool VersionRange::contains(const ReleaseVersion& v) const {
  return compare_versions(v, parse_release_version(first, "range")) >= 0 &&
         compare_versions(v, parse_release_version(last, "range")) <= 0;
}

std::string VersionRange::text() const { return first == last ? first : first + " to " + last; }

std::string check_consumer_version(const std::string& given, const std::string& consumer, const VersionRange& range,
                                   const std::string& why_older, const std::string& why_newer) {
  if (given.empty()) return range.last;
  const ReleaseVersion v = parse_release_version(given, "--consumer-version");
  if (range.contains(v)) return given;
  const bool older = compare_versions(v, parse_release_version(range.first, "range")) < 0;
  throw std::invalid_argument("--consumer-version " + visible_control_chars(given) + ": arfit knows the rules of " +
                              consumer + " " + range.text() + " (read from its code at those versions); " +
                              (older ? why_older : why_newer));
}

namespace {

bool all_hex(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
}

// `given` names `known` exactly, or is a prefix (7 or more hex digits) of a commit inside it ("s1-0fbab45d").
bool names_snapshot(const std::string& given, const std::string& known) {
  if (lower(given) == lower(known)) return true;
  if (given.size() < 7 || !all_hex(given)) return false;
  // Either may be the longer: "005b299bd3" names the commit read as "005b299b", and "005b299" does too.
  const std::string g = lower(given);
  for (const std::string& part : split_items(lower(known), '-')) {
    const std::size_t n = std::min(part.size(), g.size());
    if (part.size() >= 7 && all_hex(part) && part.compare(0, n, g, 0, n) == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<std::string> check_consumer_snapshot(const std::string& given, const std::string& consumer,
                                                 const std::vector<std::string>& known, const std::string& why_unknown) {
  if (given.empty()) return known;
  for (const std::string& k : known)
    if (names_snapshot(given, k)) return {k};
  throw std::invalid_argument("--consumer-version " + visible_control_chars(given) + ": arfit knows the rules of " +
                              consumer + " at " + join(known, ", ") + " (read from its code there); " + why_unknown);
}

}  // namespace arfit::codegen
