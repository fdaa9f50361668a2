#include "model/stated_network.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "model/text.h"

namespace arfit {

namespace {

// The number at the start of `s` (digits, one optional '.' and digits), advancing `s`; nullopt when none.
std::optional<double> leading_number(std::string_view& s) {
  std::size_t i = 0;
  bool dot = false;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || (s[i] == '.' && !dot))) {
    dot = dot || s[i] == '.';
    ++i;
  }
  if (i == 0 || (i == 1 && s[0] == '.')) return std::nullopt;
  const std::string digits(s.substr(0, i));
  s.remove_prefix(i);
  return std::strtod(digits.c_str(), nullptr);
}

void skip_spaces(std::string_view& s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
}

// Bytes per second per unit of the bandwidth's unit at the start of `s` (1 for GB/s, 1/8 for Gb/s), advancing
// `s` past it; nullopt when no known unit starts there. Longest spellings first.
std::optional<double> leading_unit(std::string_view& s) {
  static const struct {
    const char* text;
    double gbytes;
  } units[] = {{"gbit", 0.125}, {"gb/s", 0}, {"gbps", 0}, {"gb", 0}, {"g", 0.125}};
  for (const auto& u : units) {
    const std::size_t n = std::char_traits<char>::length(u.text);
    if (s.size() < n) continue;
    bool same = true;
    for (std::size_t i = 0; i < n && same; ++i) same = std::tolower(static_cast<unsigned char>(s[i])) == u.text[i];
    if (!same) continue;
    if (u.gbytes > 0) {
      s.remove_prefix(n);
      return u.gbytes;
    }
    // "GB" (bytes) against "Gb" (bits): the case of the B says which.
    const bool bytes = s[1] == 'B';
    s.remove_prefix(n);
    return bytes ? 1.0 : 0.125;
  }
  return std::nullopt;
}

// RAILSxBANDWIDTH[UNIT] at the start of `s`, advancing `s` past it. `need_unit`: a statement found in free text
// must say its unit (a bare "8x4" is not a network).
std::optional<StatedNetwork> leading_statement(std::string_view& s, bool need_unit) {
  std::string_view r = s;
  const auto rails = leading_number(r);
  if (!rails || *rails != std::floor(*rails)) return std::nullopt;
  skip_spaces(r);
  if (r.empty() || (r.front() != 'x' && r.front() != 'X')) return std::nullopt;
  r.remove_prefix(1);
  skip_spaces(r);
  const auto bandwidth = leading_number(r);
  if (!bandwidth) return std::nullopt;
  std::string_view after_number = r;
  skip_spaces(r);
  auto unit = leading_unit(r);
  if (!unit) {
    if (need_unit) return std::nullopt;
    r = after_number;
    unit = 0.125;  // NICs are sold in bits per second
  }
  // A unit is a whole word: "8x4GPUs" is no unit.
  if (!r.empty() && std::isalpha(static_cast<unsigned char>(r.front()))) return std::nullopt;
  StatedNetwork n{static_cast<int>(std::min(*rails, 1e9)), *bandwidth * *unit};
  if (n.rails < 1 || n.rails > kMaxStatedRails || !(n.rail_gbps > 0) || n.rail_gbps > kMaxStatedRailGBps) return std::nullopt;
  s = r;
  return n;
}

bool has_word(const std::string& text, const char* word) {
  const std::string w(word);
  for (std::size_t at = text.find(w); at != std::string::npos; at = text.find(w, at + 1)) {
    const bool start = at == 0 || !std::isalnum(static_cast<unsigned char>(text[at - 1]));
    const std::size_t end = at + w.size();
    // "ib" must stand alone ("HDR IB"), the others may run on ("InfiniBand", "TCPXO", "NICs").
    const bool stop = w != "ib" || end == text.size() || !std::isalnum(static_cast<unsigned char>(text[end]));
    if (start && stop) return true;
  }
  return false;
}

bool names_a_network(const std::string& clause) {
  for (const char* w : {"efa", "infiniband", "ib", "roce", "nic", "hca", "slingshot", "tcpx", "ethernet", "inter-node",
                        "internode", "network"})
    if (has_word(clause, w)) return true;
  return false;
}

bool names_an_intra_node_link(const std::string& clause) {
  for (const char* w : {"nvlink", "nvswitch", "pcie", "intra-node"})
    if (has_word(clause, w)) return true;
  return false;
}

}  // namespace

std::optional<StatedNetwork> parse_stated_network(std::string_view text) {
  std::string_view s = trim(text);
  auto n = leading_statement(s, false);
  if (!n || !trim(s).empty()) return std::nullopt;
  return n;
}

std::optional<StatedNetwork> find_stated_network(std::string_view text) {
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find_first_of(",;()", start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view clause = text.substr(start, end - start);
    const std::string low = lower(clause);
    if (names_a_network(low) && !names_an_intra_node_link(low)) {
      for (std::size_t i = 0; i < clause.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(clause[i])) || (i > 0 && std::isalnum(static_cast<unsigned char>(clause[i - 1]))))
          continue;
        std::string_view rest = clause.substr(i);
        if (auto n = leading_statement(rest, true)) return n;
      }
    }
    start = end + 1;
  }
  return std::nullopt;
}

std::string to_string(const StatedNetwork& n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%dx%gGB/s", n.rails, n.rail_gbps);
  return buf;
}

}  // namespace arfit
