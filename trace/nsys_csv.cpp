#include "trace/nsys_csv.h"
#include "trace/range_index.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "model/atomic_file.h"
#include "model/checked.h"
#include "model/errors.h"
#include "model/sample_csv.h"
#include "model/text.h"
#include "trace/kernel_name.h"

namespace arfit::trace {
namespace {

struct Table {
  std::vector<std::string> header;
  std::vector<double> column_unit_us;  // per column: what its name gives unit-less cells (header_unit_us), found once
  long header_line = 0;
  std::vector<std::pair<long, std::vector<std::string>>> rows;  // (1-based line, cells)
};

double header_unit_us(const std::string& header);

// Header: the first line that has a "Name" column and a time column. `header_only`: stop there (no rows).
Table read_table(const std::string& text, const std::string& name, const char* what, bool header_only = false) {
  Table t;
  std::istringstream in(text);
  std::string line;
  long lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (lineno == 1 && line.compare(0, 3, "\xef\xbb\xbf") == 0) line.erase(0, 3);  // UTF-8 byte-order mark (GUI export)
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    auto cells = split_csv_line(line);
    for (auto& c : cells) c = trim(c);
    if (t.header.empty()) {
      bool has_name = false, has_time = false;
      for (const auto& c : cells) {
        std::string l = lower(c);
        if (l == "name") has_name = true;
        if (l.find("time") != std::string::npos || l.find("duration") != std::string::npos || l.find("start") != std::string::npos) has_time = true;
      }
      if (has_name && has_time) {
        t.header = cells;
        t.header_line = lineno;
        for (const auto& c : t.header) t.column_unit_us.push_back(header_unit_us(c));
        if (header_only) break;
      }
      continue;
    }
    // Every row has the header's cells: fewer is a truncated row (a cut-off export: its range or kernel would vanish
    // or lose its end), more an unquoted comma in a name (the name cut short, the times shifted); the header again is
    // two reports concatenated (phantom rows, renumbered phases). Each is refused where it is.
    if (cells == t.header)
      throw InputError(name, lineno, "", "the header of line " + std::to_string(t.header_line) +
                                             " repeated: two reports concatenated? give each report on its own");
    if (cells.size() != t.header.size())
      throw InputError(name, lineno, "", "row has " + std::to_string(cells.size()) + " cells, the header (line " +
                                             std::to_string(t.header_line) + ") " + std::to_string(t.header.size()) +
                                             (cells.size() < t.header.size() ? ": a truncated row"
                                                                             : ": an unquoted comma in a name? (quote it)"));
    t.rows.emplace_back(lineno, std::move(cells));
  }
  if (t.header.empty())
    throw InputError(name, 0, "", std::string("no CSV header with a 'Name' and a time column found (expected ") + what + ")");
  return t;
}

// Column whose lower-cased name starts with `prefix` (units in parentheses follow); -1 if none.
int find_col(const Table& t, const std::vector<std::string>& prefixes) {
  for (const auto& p : prefixes)
    for (std::size_t i = 0; i < t.header.size(); ++i) {
      std::string h = lower(t.header[i]);
      if (h == p || h.rfind(p + " (", 0) == 0 || h.rfind(p + "(", 0) == 0) return static_cast<int>(i);
    }
  return -1;
}

// Microseconds per unit, for the units nsys writes (in a header "(ns)", or after each number in a GUI export
// "75.794 ms"): ns, us, µs (U+00B5 micro sign, also as a lone Latin-1 byte), μs (U+03BC Greek mu), ms, s.
std::optional<double> time_unit_us(const std::string& unit) {
  std::string u = lower(unit);
  if (u == "ns") return 1e-3;
  if (u == "us" || u == "\xc2\xb5s" || u == "\xce\xbcs" || u == "\xb5s") return 1.0;
  if (u == "ms") return 1e3;
  if (u == "s") return 1e6;
  return std::nullopt;
}

// The unit a header names in parentheses ("Total Time (ns)"); nanoseconds (nsys' default) when it names none,
// as in the GUI export, whose cells carry their own units.
double header_unit_us(const std::string& header) {
  auto open = header.rfind('(');
  auto close = header.rfind(')');
  if (open != std::string::npos && close != std::string::npos && close > open)
    if (auto u = time_unit_us(std::string(trim(std::string_view(header).substr(open + 1, close - open - 1))))) return *u;
  return 1e-3;
}

// Spaces the GUI may put between digit groups or before a unit: ASCII, no-break (U+00A0), narrow no-break (U+202F).
std::size_t space_at(const std::string& s, std::size_t i) {
  if (s[i] == ' ') return 1;
  if (s.compare(i, 2, "\xc2\xa0") == 0) return 2;
  if (s.compare(i, 3, "\xe2\x80\xaf") == 0) return 3;
  return 0;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A number as nsys writes it, thousands separators included ("1,345.678", "1 234", "2.5e+06"), followed by
// whatever text remains (the unit). Separators must sit between groups of exactly three digits, so "75,79"
// is not read as 7579. nullopt when the cell does not start with such a number.
std::optional<double> leading_number(const std::string& cell, std::string* rest) {
  std::string digits;
  std::size_t i = 0, n = cell.size();
  if (i < n && (cell[i] == '-' || cell[i] == '+')) digits += cell[i++];
  std::size_t group = 0, groups = 0;
  bool separated = false;
  while (i < n) {
    if (is_digit(cell[i])) {
      digits += cell[i++];
      ++group;
      continue;
    }
    std::size_t sep = cell[i] == ',' ? 1 : space_at(cell, i);
    if (sep == 0 || group == 0 || i + sep >= n || !is_digit(cell[i + sep])) break;
    std::size_t next = i + sep, run = 0;
    while (next + run < n && is_digit(cell[next + run])) ++run;
    if (run != 3 || (groups == 0 && group > 3) || (groups > 0 && group != 3)) return std::nullopt;
    separated = true;
    ++groups;
    group = 0;
    i = next;
  }
  if (group == 0 || (separated && group != 3)) return std::nullopt;
  if (i < n && cell[i] == '.') {
    digits += cell[i++];
    while (i < n && is_digit(cell[i])) digits += cell[i++];
  }
  if (i < n && (cell[i] == 'e' || cell[i] == 'E') && i + 1 < n &&
      (is_digit(cell[i + 1]) || ((cell[i + 1] == '-' || cell[i + 1] == '+') && i + 2 < n && is_digit(cell[i + 2])))) {
    digits += cell[i++];
    digits += cell[i++];
    while (i < n && is_digit(cell[i])) digits += cell[i++];
  }
  double v;
  try {
    v = std::stod(digits);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!std::isfinite(v)) return std::nullopt;
  while (i < n && space_at(cell, i)) i += space_at(cell, i);
  *rest = cell.substr(i);
  return v;
}

const std::string& cell_text(const Table& t, const std::pair<long, std::vector<std::string>>& row, int col, const std::string& name) {
  if (static_cast<std::size_t>(col) >= row.second.size())
    throw InputError(name, row.first, t.header[static_cast<std::size_t>(col)],
                     "missing cell (row has " + std::to_string(row.second.size()) + " columns)");
  return row.second[static_cast<std::size_t>(col)];
}

// A time cell in microseconds: a number in the header's unit, or a number with its own unit (GUI export).
double time_cell_us(const Table& t, const std::pair<long, std::vector<std::string>>& row, int col, const std::string& name) {
  const std::string& cell = cell_text(t, row, col, name);
  std::string unit;
  std::optional<double> us;
  if (auto v = leading_number(cell, &unit)) {
    if (unit.empty()) us = *v * t.column_unit_us[static_cast<std::size_t>(col)];
    else if (auto u = time_unit_us(unit)) us = *v * *u;
  }
  if (us && std::fabs(*us) > kMaxProfileTimeUs)
    throw InputError(name, row.first, t.header[static_cast<std::size_t>(col)],
                     "time '" + cell + "' is beyond 1e13 us (" + kMaxProfileTimeText + "): not a profile's time");
  if (us) return *us;
  throw InputError(name, row.first, t.header[static_cast<std::size_t>(col)],
                   "expected a time (a number, optionally with a unit ns, us, \xc2\xb5s, \xce\xbcs, ms or s, as in '75.794 ms'), got '" + cell + "'");
}

// A start time (of an NVTX range or a kernel, `what`): times on a report's clock start at 0, so a negative start
// is a damaged report; it would put a range before every kernel, or a kernel outside every range.
double start_cell_us(const Table& t, const std::pair<long, std::vector<std::string>>& row, int col, const std::string& name,
                     const std::string& what) {
  const double start = time_cell_us(t, row, col, name);
  if (start < 0)
    throw InputError(name, row.first, t.header[static_cast<std::size_t>(col)],
                     "negative " + what + " start '" + row.second[static_cast<std::size_t>(col)] + "'");
  return start;
}

// A count cell ("Instances"): a whole number, thousands separators allowed.
double count_cell(const Table& t, const std::pair<long, std::vector<std::string>>& row, int col, const std::string& name) {
  const std::string& cell = cell_text(t, row, col, name);
  std::string rest;
  auto v = leading_number(cell, &rest);
  if (!v || !rest.empty() || *v < 0 || *v != std::floor(*v) || *v > 9.0e15)
    throw InputError(name, row.first, t.header[static_cast<std::size_t>(col)], "expected a whole number of calls, got '" + cell + "'");
  return *v;
}

int require_col(const Table& t, const std::vector<std::string>& prefixes, const std::string& name) {
  int c = find_col(t, prefixes);
  if (c < 0) throw InputError(name, t.header_line, prefixes.front(), "column missing from the header");
  return c;
}

struct NvtxRange {
  double start_us, end_us;
  std::string name;
  PhaseKind kind;
};

std::vector<NvtxRange> read_nvtx(const std::string& text, const std::string& name) {
  Table t = read_table(text, name, "an NVTX range report: nvtx_gpu_proj_trace or nvtx_pushpop_trace");
  int c_name = require_col(t, {"name"}, name);
  int c_start = find_col(t, {"projected start", "start"});
  int c_dur = find_col(t, {"projected duration", "duration"});
  int c_end = find_col(t, {"end"});
  if (c_start < 0) throw InputError(name, t.header_line, "Start (ns)", "column missing from the header");
  if (c_end < 0 && c_dur < 0) throw InputError(name, t.header_line, "End (ns)", "column missing (need End or Duration)");
  std::vector<NvtxRange> out;
  for (const auto& row : t.rows) {
    if (static_cast<std::size_t>(c_name) >= row.second.size()) throw InputError(name, row.first, "Name", "missing cell");
    std::string nm = row.second[static_cast<std::size_t>(c_name)];
    std::string l = lower(nm);
    PhaseKind kind;
    if (l.find("prefill") != std::string::npos) kind = PhaseKind::Prefill;
    else if (l.find("decode") != std::string::npos) kind = PhaseKind::Decode;
    else continue;  // not a phase range (layers, NCCL calls, ...)
    const double start = start_cell_us(t, row, c_start, name, "range");
    double end = c_end >= 0 ? time_cell_us(t, row, c_end, name) : start + time_cell_us(t, row, c_dur, name);
    if (end < start) throw InputError(name, row.first, "End (ns)", "range ends before it starts");
    out.push_back({start, end, nm, kind});
  }
  std::sort(out.begin(), out.end(), [](const NvtxRange& a, const NvtxRange& b) { return a.start_us < b.start_us; });
  return out;
}

struct KernelAgg {
  double time_us = 0;
  std::int64_t instances = 0;
  long first_line = 0;
};

void add_phase_nodes(Phase& ph, const std::map<std::string, KernelAgg>& kernels, const std::string& name) {
  std::vector<std::pair<std::string, KernelAgg>> v(kernels.begin(), kernels.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.first_line < b.second.first_line; });
  for (auto& [k, agg] : v) {
    ProfileNode n;
    n.name = k;
    n.cuda_time_us = agg.time_us;
    n.invocations = agg.instances;
    n.where = name + ":" + std::to_string(agg.first_line);
    ph.roots.push_back(std::move(n));
  }
}

}  // namespace

bool looks_like_nsys_csv(const std::string& text) {
  // The CLI export names units in the header ("Total Time (ns)", "Duration (ns)"); the GUI export does not.
  std::string head = lower(text.substr(0, 4096));
  return head.find("name") != std::string::npos &&
         (head.find("total time") != std::string::npos || head.find("duration") != std::string::npos);
}

namespace {
const char* const kNsysReports = "nsys stats --report cuda_gpu_kern_sum or cuda_gpu_trace, --format csv";
}  // namespace

bool is_nsys_kernel_summary(const std::string& text, const std::string& name) {
  return find_col(read_table(text, name, kNsysReports, /*header_only=*/true), {"total time"}) >= 0;
}

Profile parse_nsys_csv(const std::string& text, const std::string& name, const NsysOptions& opt) {
  Table t = read_table(text, name, kNsysReports);
  Profile prof;
  prof.source = name;
  int c_name = require_col(t, {"name"}, name);
  int c_total = find_col(t, {"total time"});
  if (c_total >= 0) {
    // cuda_gpu_kern_sum: one row per kernel name.
    if (!opt.nvtx_text.empty())
      throw InputError(opt.nvtx_name, 0, "", "NVTX ranges need the per-kernel trace (cuda_gpu_trace); " + name +
                                                 " is a kernel summary (cuda_gpu_kern_sum) that cannot be split by phase");
    prof.format = "nsys-kern-sum";
    int c_inst = require_col(t, {"instances", "calls", "count"}, name);
    std::map<std::string, KernelAgg> kernels;
    for (const auto& row : t.rows) {
      if (static_cast<std::size_t>(c_name) >= row.second.size()) throw InputError(name, row.first, "Name", "missing cell");
      const std::string& k = row.second[static_cast<std::size_t>(c_name)];
      double total = time_cell_us(t, row, c_total, name);
      double inst = count_cell(t, row, c_inst, name);
      if (total < 0) throw InputError(name, row.first, t.header[static_cast<std::size_t>(c_total)], "negative time");
      auto& a = kernels[k];
      if (a.first_line == 0) a.first_line = row.first;
      a.time_us += total;
      // A count beyond int64 (or a sum that would be) is an error naming the cell, never converted by wrapping.
      const auto n = checked_narrow<std::int64_t>(inst);
      if (!n || *n < 0 || a.instances > std::numeric_limits<std::int64_t>::max() - *n)
        throw InputError(name, row.first, t.header[static_cast<std::size_t>(c_inst)],
                         "instance count " + row.second[static_cast<std::size_t>(c_inst)] + " is not a whole number of launches within int64");
      a.instances += *n;
    }
    Phase ph;
    ph.name = "all";
    add_phase_nodes(ph, kernels, name);
    prof.phases.push_back(std::move(ph));
    return prof;
  }

  // cuda_gpu_trace: one row per launch.
  prof.format = "nsys-gpu-trace";
  int c_start = require_col(t, {"start"}, name);
  int c_dur = require_col(t, {"duration"}, name);
  std::vector<NvtxRange> ranges;
  if (!opt.nvtx_text.empty()) {
    ranges = read_nvtx(opt.nvtx_text, opt.nvtx_name);
    if (ranges.empty())
      throw InputError(opt.nvtx_name, 0, "", "no NVTX range whose name contains 'prefill' or 'decode': cannot tell phases apart");
  }
  // Phase names in time order: prefill, prefill_2, ...; decode_1, decode_2, ...
  std::vector<std::string> range_phase(ranges.size());
  std::vector<int> range_step(ranges.size(), 0);
  int nprefill = 0, ndecode = 0;
  for (std::size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].kind == PhaseKind::Prefill) {
      ++nprefill;
      range_phase[i] = nprefill == 1 ? "prefill" : "prefill_" + std::to_string(nprefill);
    } else {
      ++ndecode;
      range_step[i] = ndecode;
      range_phase[i] = "decode_" + std::to_string(ndecode);
    }
  }
  std::vector<double> range_starts, range_ends;
  for (const NvtxRange& r : ranges) range_starts.push_back(r.start_us), range_ends.push_back(r.end_us);
  const RangeIndex range_index(std::move(range_starts), std::move(range_ends));
  static const std::string kAllPhase = "all", kOutsidePhase = "outside_nvtx";
  std::map<std::string, std::map<std::string, KernelAgg>> per_phase;
  for (const auto& row : t.rows) {
    if (static_cast<std::size_t>(c_name) >= row.second.size()) throw InputError(name, row.first, "Name", "missing cell");
    const std::string& k = row.second[static_cast<std::size_t>(c_name)];
    const double start = start_cell_us(t, row, c_start, name, "kernel");
    double dur = time_cell_us(t, row, c_dur, name);
    if (dur < 0) throw InputError(name, row.first, t.header[static_cast<std::size_t>(c_dur)], "negative duration");
    // Innermost phase range holding the start: the latest-starting one that contains it (trace/range_index.h).
    const long holder = ranges.empty() ? -1 : range_index.innermost(start);
    const std::string& phase = ranges.empty() ? kAllPhase : holder < 0 ? kOutsidePhase : range_phase[static_cast<std::size_t>(holder)];
    auto& a = per_phase[phase][k];
    if (a.first_line == 0) a.first_line = row.first;
    a.time_us += dur;
    a.instances += 1;
  }
  auto make = [&](const std::string& ph_name, PhaseKind kind, int step) {
    Phase ph;
    ph.name = ph_name;
    ph.kind = kind;
    ph.step = step;
    auto it = per_phase.find(ph_name);
    if (it != per_phase.end()) add_phase_nodes(ph, it->second, name);
    prof.phases.push_back(std::move(ph));
  };
  if (ranges.empty()) {
    make("all", PhaseKind::Other, 0);
    return prof;
  }
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].kind == PhaseKind::Prefill) make(range_phase[i], PhaseKind::Prefill, 0);
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].kind == PhaseKind::Decode) make(range_phase[i], PhaseKind::Decode, range_step[i]);
  if (per_phase.count("outside_nvtx")) make("outside_nvtx", PhaseKind::Other, 0);
  return prof;
}

Profile read_nsys_csv(const std::string& path, const NsysOptions& opt) { return parse_nsys_csv(read_file(path), path, opt); }

}  // namespace arfit::trace
