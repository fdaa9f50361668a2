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

namespace {

std::vector<double> numbers(const std::string& list, const std::string& text) {
  std::vector<double> v;
  for (const auto& t : split(list, '-')) v.push_back(number(t, text));
  return v;
}

AllToAllvSplit from_matrix_rows(const std::vector<std::string>& rows, const std::string& text) {
  const std::size_t n = rows.size();
  AllToAllvSplit out;
  out.received_bytes.assign(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<double> row = numbers(rows[i], text);
    if (row.size() != n)
      throw std::invalid_argument("all-to-allv split '" + text + "': a matrix of " + std::to_string(n) + " rows needs " +
                                  std::to_string(n) + " entries per row, found " + std::to_string(row.size()));
    double sent = 0;
    for (std::size_t j = 0; j < n; ++j) {
      sent += row[j];
      out.received_bytes[j] += row[j];
    }
    out.sent_bytes.push_back(sent);
    out.self_bytes.push_back(row[i]);
  }
  return out;
}

// Rank r sends `to_each[r]` bytes to every rank, itself included.
AllToAllvSplit from_rows_of_one_value(const std::vector<double>& to_each) {
  const double n = static_cast<double>(to_each.size());
  double column = 0;  // every rank receives one value from every sender
  for (double v : to_each) column += v;
  AllToAllvSplit out;
  for (double v : to_each) {
    out.sent_bytes.push_back(v * n);
    out.received_bytes.push_back(column);
    out.self_bytes.push_back(v);
  }
  return out;
}

}  // namespace

AllToAllvSplit parse_alltoallv_split(const std::string& text, double element_bytes) {
  const std::vector<std::string> parts = split(text, ',');
  AllToAllvSplit out;
  if (parts.size() == 3) {
    const double batch = number(parts[0], text), dim = number(parts[2], text);
    const std::vector<double> tables = numbers(parts[1], text);
    const size_t n = tables.size();
    // floor(B/n) samples per rank, as PARAM and the DLRM paper's code split the batch.
    const double local_batch = std::floor(batch / static_cast<double>(n));
    std::vector<double> to_each;
    for (double t : tables) to_each.push_back(local_batch * t * dim * element_bytes);
    out = from_rows_of_one_value(to_each);
  } else if (parts.size() == 1 && text.find('/') != std::string::npos) {
    out = from_matrix_rows(split(parts[0], '/'), text);
  } else if (parts.size() == 1) {
    std::vector<double> to_each = numbers(parts[0], text);  // bytes sent per rank, spread evenly
    for (double& v : to_each) v /= static_cast<double>(to_each.size());
    out = from_rows_of_one_value(to_each);
  } else {
    throw std::invalid_argument("all-to-allv split '" + text +
                                "': expected \"B,T0-T1-...,D\" (batch, tables per rank, dimension), \"S0-S1-...\" "
                                "(bytes sent per rank) or \"M00-M01-.../M10-M11-...\" (bytes rank i sends to rank j)");
  }
  return out;
}

std::string format_alltoallv_matrix(const std::vector<std::vector<std::int64_t>>& bytes) {
  std::string s;
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i) s += '/';
    for (std::size_t j = 0; j < bytes[i].size(); ++j) s += (j ? "-" : "") + std::to_string(bytes[i][j]);
  }
  return s;
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

double paper_effective_bytes(const AllToAllvSplit& split, EffectiveMode mode) {
  if (mode == EffectiveMode::Sum) return effective_alltoall_bytes(split, mode);
  double out = 0;
  for (int r = 0; r < split.nranks(); ++r) {
    const double self = split.self(r);
    const double s = split.sent(r) - self, v = split.received(r) - self;
    out = std::max(out, mode == EffectiveMode::MaxOfMax ? std::max(s, v) : s + v);
  }
  return out;
}

}  // namespace arfit
