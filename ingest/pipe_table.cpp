#include "ingest/pipe_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "ingest/text_util.h"
#include "model/errors.h"

namespace arfit::ingest::detail {
namespace {

// "time (us)" -> "us"; "" without parentheses.
std::string paren_unit(const std::string& h) {
  auto o = h.find('(');
  auto c = h.find(')', o == std::string::npos ? 0 : o);
  if (o == std::string::npos || c == std::string::npos) return "";
  return h.substr(o + 1, c - o - 1);
}

}  // namespace

std::vector<std::string> pipe_cells(std::string_view s) {
  std::vector<std::string> out;
  s = trim(s);
  if (!s.empty() && s.front() == '|') s.remove_prefix(1);
  if (!s.empty() && s.back() == '|') s.remove_suffix(1);
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == '|') {
      out.emplace_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  return out;
}

bool is_pipe_separator(const std::vector<std::string>& cells) {
  return std::all_of(cells.begin(), cells.end(), [](const std::string& x) {
    return !x.empty() && x.find_first_not_of("-: ") == std::string::npos;
  });
}

PipeHeading parse_pipe_heading(std::string_view h) {
  PipeHeading out;
  out.text = std::string(h);
  auto tok = tokens(h);
  for (std::size_t i = 0; i < tok.size(); ++i) {
    std::string t(tok[i]);
    while (!t.empty() && (t.back() == ',' || t.back() == ';')) t.pop_back();
    std::string next = i + 1 < tok.size() ? lower(tok[i + 1]) : "";
    while (!next.empty() && (next.back() == ',' || next.back() == ';')) next.pop_back();
    if (next == "payload") {
      std::string why;
      if (auto s = parse_size(t, &why)) out.size = s;
    }
    if (next == "gpus" || next == "gpu" || next == "ranks") {
      if (auto n = parse_int(t); n && *n > 0 && *n < 10000000) out.ranks = static_cast<int>(*n);
    }
  }
  return out;
}

std::vector<PipeColumn> pipe_columns(const std::vector<std::string>& header,
                                     const std::map<std::string, int>& column_ranks, const std::string& file,
                                     long line) {
  std::vector<PipeColumn> out;
  bool primary_bus = false, primary_alg = false;
  for (const auto& h : header) {
    PipeColumn pc;
    pc.header = h;
    pc.key = sanitize_key(h);
    std::string lh = lower(h);
    std::string first = tokens(lh).empty() ? "" : std::string(tokens(lh)[0]);
    while (!first.empty() && !std::isalnum(static_cast<unsigned char>(first.back()))) first.pop_back();
    if (first == "size" || first == "payload" || first == "bytes" || starts_with(lh, "message size") || starts_with(lh, "msg size")) {
      pc.kind = PipeColumnKind::Size;
    } else if (first == "gpus" || first == "ranks" || first == "nranks" || lh == "world size") {
      pc.kind = PipeColumnKind::Gpus;
    } else if (first == "collective" || first == "op") {
      pc.kind = PipeColumnKind::Collective;
    } else if (first == "time" || first == "latency") {
      pc.kind = PipeColumnKind::Time;
      pc.unit = paren_unit(h);
      if (pc.unit.empty()) throw InputError(file, line, h, "column '" + h + "' names no time unit (write e.g. 'time (us)')");
      if (!time_unit_to_us(pc.unit)) throw InputError(file, line, h, "unknown time unit '" + pc.unit + "'");
    } else if (contains(lh, "busbw")) {
      pc.kind = PipeColumnKind::BusBw;
      pc.unit = paren_unit(h);
      if (primary_bus) pc.variant = std::string(trim(std::string_view(h).substr(lh.find("busbw") + 5)));
      while (!pc.variant.empty() && (pc.variant.front() == ',' || pc.variant.front() == ' ')) pc.variant.erase(0, 1);
      primary_bus = true;
    } else if (contains(lh, "algbw")) {
      pc.kind = PipeColumnKind::AlgBw;
      pc.unit = paren_unit(h);
      if (primary_alg) pc.variant = h;
      primary_alg = true;
    } else if (column_ranks.count(lh)) {
      pc.kind = PipeColumnKind::UnnamedBw;
      pc.ranks = column_ranks.at(lh);
      pc.variant = h;
      auto tk = tokens(lh);
      if (tk.size() == 2 && starts_with(tk[1], "node"))
        if (auto n = parse_int(tk[0]); n && *n > 0 && *n < 100000) pc.nodes = static_cast<int>(*n);
    }
    out.push_back(pc);
  }
  return out;
}

PipeRow parse_pipe_row(const std::vector<PipeColumn>& columns, const std::vector<std::string>& c,
                       const PipeHeading& heading, const std::string& file, long line) {
  PipeRow row;
  row.size = heading.size;
  row.ranks = heading.ranks;
  std::string why;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const PipeColumn& pc = columns[i];
    const std::string& v = c[i];
    switch (pc.kind) {
      case PipeColumnKind::Size: {
        auto s = parse_size(v, &why);
        if (!s) throw InputError(file, line, pc.header, why);
        row.size = s;
        break;
      }
      case PipeColumnKind::Gpus: {
        auto n = parse_int(v);
        if (!n || *n < 1 || *n > 10000000) throw InputError(file, line, pc.header, "'" + v + "' is not a rank count");
        row.ranks = static_cast<int>(*n);
        break;
      }
      case PipeColumnKind::Collective: {
        std::string head = v.substr(0, v.find_first_of(",`("));
        std::string rest = v.size() > head.size() ? v.substr(head.size()) : "";
        auto col = try_parse_collective(std::string(trim(head)));
        if (!col) throw InputError(file, line, pc.header, "unknown collective '" + v + "'");
        row.collective = col;
        rest.erase(std::remove(rest.begin(), rest.end(), '`'), rest.end());
        std::string_view r = trim(rest);
        while (!r.empty() && (r.front() == ',' || r.front() == ' ')) r.remove_prefix(1);
        row.variant = std::string(r);
        break;
      }
      case PipeColumnKind::Time: {
        if (v == "N/A") break;
        auto d = parse_double(v);
        if (!d || !std::isfinite(*d) || *d < 0) throw InputError(file, line, pc.header, "'" + v + "' is not a finite time");
        row.time_us = *d * *time_unit_to_us(pc.unit);
        break;
      }
      case PipeColumnKind::AlgBw:
      case PipeColumnKind::BusBw:
      case PipeColumnKind::UnnamedBw: {
        std::string text;
        if (v != "N/A") {
          auto g = parse_bandwidth_gbps(v, pc.unit, &why);
          if (!g) throw InputError(file, line, pc.header, why);
          if (!std::isfinite(*g) || *g < 0) throw InputError(file, line, pc.header, "non-finite bandwidth '" + v + "'");
          // keep the printed digits for the ratio inference, in GB/s
          std::string num = v.substr(0, v.find_first_not_of("0123456789.+-eE"));
          text = num.empty() ? std::to_string(*g) : num;
        } else {
          text = "N/A";
        }
        if (pc.kind == PipeColumnKind::AlgBw && pc.variant.empty()) row.algbw_text = text;
        else if (pc.kind == PipeColumnKind::BusBw && pc.variant.empty()) row.busbw_text = text;
        else if (pc.kind == PipeColumnKind::UnnamedBw) row.unnamed_bw.emplace_back(&pc, text);
        else row.further_bw.emplace_back(&pc, text);
        break;
      }
      case PipeColumnKind::Other:
        if (!pc.key.empty()) row.other[pc.key] = v;
        break;
    }
  }
  return row;
}

}  // namespace arfit::ingest::detail
