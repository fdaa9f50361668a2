#include "model/alltoallv.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace arfit {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  return out;
}

double number(const std::string& s, const std::string& text) {
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (s.empty() || pos != s.size() || !std::isfinite(v) || v < 0)
    throw std::invalid_argument("all-to-allv split '" + text + "': '" + s + "' is not a non-negative number");
  return v;
}

}  // namespace

std::string to_string(EffectiveMode m) {
  switch (m) {
    case EffectiveMode::Sum: return "sum";
    case EffectiveMode::MaxOfMax: return "max_of_max";
    case EffectiveMode::MaxOfSum: return "max_of_sum";
  }
  return "?";
}

EffectiveMode parse_effective_mode(const std::string& s) {
  for (EffectiveMode m : all_effective_modes())
    if (s == to_string(m)) return m;
  throw std::invalid_argument("unknown all-to-allv effective mode '" + s + "' (known: sum, max_of_max, max_of_sum)");
}

const std::vector<EffectiveMode>& all_effective_modes() {
  static const std::vector<EffectiveMode> v = {EffectiveMode::Sum, EffectiveMode::MaxOfMax, EffectiveMode::MaxOfSum};
  return v;
}

double AllToAllvSplit::sent(int r) const {
  double s = 0;
  for (double v : matrix[r]) s += v;
  return s;
}

double AllToAllvSplit::received(int r) const {
  double s = 0;
  for (const auto& row : matrix) s += row[r];
  return s;
}

AllToAllvSplit parse_alltoallv_split(const std::string& text, double element_bytes) {
  const std::vector<std::string> parts = split(text, ',');
  AllToAllvSplit out;
  if (parts.size() == 3) {
    const double batch = number(parts[0], text), dim = number(parts[2], text);
    std::vector<double> tables;
    for (const auto& t : split(parts[1], '-')) tables.push_back(number(t, text));
    const size_t n = tables.size();
    if (n < 1) throw std::invalid_argument("all-to-allv split '" + text + "': no ranks");
    out.matrix.assign(n, std::vector<double>(n, 0.0));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) out.matrix[i][j] = batch / static_cast<double>(n) * tables[i] * dim * element_bytes;
  } else if (parts.size() == 1) {
    std::vector<double> sent;
    for (const auto& t : split(parts[0], '-')) sent.push_back(number(t, text));
    const size_t n = sent.size();
    if (n < 1) throw std::invalid_argument("all-to-allv split '" + text + "': no ranks");
    out.matrix.assign(n, std::vector<double>(n, 0.0));
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < n; ++j) out.matrix[i][j] = sent[i] / static_cast<double>(n);
  } else {
    throw std::invalid_argument("all-to-allv split '" + text +
                                "': expected \"B,T0-T1-...,D\" (batch, tables per rank, dimension) or \"S0-S1-...\" (bytes sent per rank)");
  }
  return out;
}

double effective_alltoall_bytes(const AllToAllvSplit& split, EffectiveMode mode) {
  const int n = split.nranks();
  if (n == 0) return 0;
  double total = 0, mm = 0, ms = 0;
  for (int r = 0; r < n; ++r) {
    const double s = split.sent(r), v = split.received(r);
    total += s;
    mm = std::max(mm, std::max(s, v));
    ms = std::max(ms, (s + v) / 2);
  }
  switch (mode) {
    case EffectiveMode::Sum: return total / n;
    case EffectiveMode::MaxOfMax: return mm;
    case EffectiveMode::MaxOfSum: return ms;
  }
  return 0;
}

}  // namespace arfit
