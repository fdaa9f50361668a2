#include "trace/nsys_csv.h"
#include "trace/range_index.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <optional>

#include "io/input_file.h"
#include "model/checked.h"
#include "model/errors.h"
#include "model/sample_csv.h"
#include "model/text.h"
#include "trace/kernel_name.h"

namespace arfit::trace {
namespace {

// A report's header; its rows are read one at a time by for_each_row, never held all at once: a 10^6-row
// cuda_gpu_trace of 21 columns held as cells took 1.7 GB (1.6 KB a row), streamed it takes little beyond its text.
struct Table {
  std::vector<std::string> header;
  std::vector<double> column_unit_us;  // per column: what its name gives unit-less cells (header_unit_us), found once
  long header_line = 0;
  std::size_t rows_offset = 0;  // where the line after the header starts in the text
};

// One data row: its 1-based line and its trimmed cells, as many as the header has.
struct Row {
  long line = 0;
  std::vector<std::string> cells;
};

double header_unit_us(const std::string& header);

// Calls on_line(line number, line) for each non-blank line of `text` from `offset` on (starting at line number
// `first_line`): CRLF line ends and a UTF-8 byte-order mark on the first line (GUI exports) removed. Stops, returning
// the offset after the current line, when on_line returns false; returns text.size() at the end.
template <typename OnLine>
std::size_t for_each_line(const std::string& text, std::size_t offset, long first_line, OnLine on_line) {
  long lineno = first_line - 1;
  std::string line;
  while (offset < text.size()) {
    const std::size_t eol = std::min(text.find('\n', offset), text.size());
    line.assign(text, offset, eol - offset);
    offset = eol + 1;
    ++lineno;
    if (lineno == 1 && line.compare(0, 3, "\xef\xbb\xbf") == 0) line.erase(0, 3);  // UTF-8 byte-order mark (GUI export)
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (trim(line).empty()) continue;
    if (!on_line(lineno, line)) return std::min(offset, text.size());
  }
  return text.size();
}

std::vector<std::string> trimmed_cells(const std::string& line, bool* unterminated_quote = nullptr) {
  auto cells = split_csv_line(line, unterminated_quote);
  for (auto& c : cells) c = trim(c);
  return cells;
}

// Header: the first line that has a "Name" column and a time column (lines before it, nsys' "Processing ..." banner,
// are skipped). Reads no row.
Table read_table(const std::string& text, const std::string& name, const char* what) {
  Table t;
  t.rows_offset = for_each_line(text, 0, 1, [&](long lineno, const std::string& line) {
    auto cells = trimmed_cells(line);
    bool has_name = false, has_time = false;
    for (const auto& c : cells) {
      std::string l = lower(c);
      if (l == "name") has_name = true;
      if (l.find("time") != std::string::npos || l.find("duration") != std::string::npos || l.find("start") != std::string::npos) has_time = true;
    }
    if (!(has_name && has_time)) return true;
    t.header = std::move(cells);
    t.header_line = lineno;
    for (const auto& c : t.header) t.column_unit_us.push_back(header_unit_us(c));
    return false;
  });
  if (t.header.empty())
    throw InputError(name, 0, "", std::string("no CSV header with a 'Name' and a time column found (expected ") + what + ")");
  return t;
}

// Calls on_row(row) for every row after the header. Every row of every nsys report (kernel trace, kernel summary,
// NVTX ranges) has the header's cells, checked here once for all of them: fewer is a truncated row (a cut-off export:
// its range or kernel would vanish or lose its end), more an unquoted comma in a name (the name cut short, the times
// shifted), an open quote a row cut inside a quoted name; the header again is two reports concatenated (phantom
// rows, renumbered phases). Each is refused where it is.
template <typename OnRow>
void for_each_row(const Table& t, const std::string& text, const std::string& name, OnRow on_row) {
  Row row;
  for_each_line(text, t.rows_offset, t.header_line + 1, [&](long lineno, const std::string& line) {
    bool open_quote = false;
    row.line = lineno;
    row.cells = trimmed_cells(line, &open_quote);
    if (row.cells == t.header)
      throw InputError(name, lineno, "", "the header of line " + std::to_string(t.header_line) +
                                             " repeated: two reports concatenated? give each report on its own");
    const std::size_t have = row.cells.size(), want = t.header.size();
    if (open_quote)
      throw InputError(name, lineno, t.header[std::min(have, want) - 1], "a quote opened and never closed: a truncated row");
    if (have < want)
      throw InputError(name, lineno, t.header[have], "row has " + std::to_string(have) + " cells, the header (line " +
                                                         std::to_string(t.header_line) + ") " + std::to_string(want) +
                                                         ": a truncated row (this column and those after it are missing)");
    if (have > want)
      throw InputError(name, lineno, "", "row has " + std::to_string(have) + " cells, the header (line " +
                                             std::to_string(t.header_line) + ") " + std::to_string(want) +
                                             ": an unquoted comma in a name? (quote it)");
    on_row(static_cast<const Row&>(row));
    return true;
  });
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

// The cell of `col`: for_each_row gives every row the header's cells.
const std::string& cell_text(const Row& row, int col) { return row.cells[static_cast<std::size_t>(col)]; }

// A time cell in microseconds: a number in the header's unit, or a number with its own unit (GUI export).
double time_cell_us(const Table& t, const Row& row, int col, const std::string& name) {
  const std::string& cell = cell_text(row, col);
  std::string unit;
  std::optional<double> us;
  if (auto v = leading_number(cell, &unit)) {
    if (unit.empty()) us = *v * t.column_unit_us[static_cast<std::size_t>(col)];
    else if (auto u = time_unit_us(unit)) us = *v * *u;
  }
  if (us && std::fabs(*us) > kMaxProfileTimeUs)
    throw InputError(name, row.line, t.header[static_cast<std::size_t>(col)],
                     "time '" + cell + "' is beyond 1e13 us (" + kMaxProfileTimeText + "): not a profile's time");
  if (us) return *us;
  throw InputError(name, row.line, t.header[static_cast<std::size_t>(col)],
                   "expected a time (a number, optionally with a unit ns, us, \xc2\xb5s, \xce\xbcs, ms or s, as in '75.794 ms'), got '" + cell + "'");
}

// A start time (of an NVTX range or a kernel, `what`): times on a report's clock start at 0, so a negative start
// is a damaged report; it would put a range before every kernel, or a kernel outside every range.
double start_cell_us(const Table& t, const Row& row, int col, const std::string& name,
                     const std::string& what) {
  const double start = time_cell_us(t, row, col, name);
  if (start < 0)
    throw InputError(name, row.line, t.header[static_cast<std::size_t>(col)],
                     "negative " + what + " start '" + row.cells[static_cast<std::size_t>(col)] + "'");
  return start;
}

// A count cell ("Instances"): a whole number, thousands separators allowed.
double count_cell(const Table& t, const Row& row, int col, const std::string& name) {
  const std::string& cell = cell_text(row, col);
  std::string rest;
  auto v = leading_number(cell, &rest);
  if (!v || !rest.empty() || *v < 0 || *v != std::floor(*v) || *v > 9.0e15)
    throw InputError(name, row.line, t.header[static_cast<std::size_t>(col)], "expected a whole number of calls, got '" + cell + "'");
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

// The phase ranges of an NVTX report, in the order phase assignment and numbering need: by start, and among ranges
// starting together (a projected range starts at its first kernel, so nested ranges often share a start) the longer
// first, so that the one inside wins as the innermost; ranges alike in both keep the report's order.
std::vector<NvtxRange> read_nvtx(const std::string& text, const std::string& name) {
  Table t = read_table(text, name, "an NVTX range report: nvtx_gpu_proj_trace or nvtx_pushpop_trace");
  int c_name = require_col(t, {"name"}, name);
  int c_start = find_col(t, {"projected start", "start"});
  int c_dur = find_col(t, {"projected duration", "duration"});
  int c_end = find_col(t, {"end"});
  if (c_start < 0) throw InputError(name, t.header_line, "Start (ns)", "column missing from the header");
  if (c_end < 0 && c_dur < 0) throw InputError(name, t.header_line, "End (ns)", "column missing (need End or Duration)");
  std::vector<NvtxRange> out;
  for_each_row(t, text, name, [&](const Row& row) {
    const std::string& nm = cell_text(row, c_name);
    std::string l = lower(nm);
    PhaseKind kind;
    if (l.find("prefill") != std::string::npos) kind = PhaseKind::Prefill;
    else if (l.find("decode") != std::string::npos) kind = PhaseKind::Decode;
    else return;  // not a phase range (layers, NCCL calls, ...)
    const double start = start_cell_us(t, row, c_start, name, "range");
    double end = c_end >= 0 ? time_cell_us(t, row, c_end, name) : start + time_cell_us(t, row, c_dur, name);
    if (end < start) throw InputError(name, row.line, "End (ns)", "range ends before it starts");
    out.push_back({start, end, nm, kind});
  });
  std::stable_sort(out.begin(), out.end(), [](const NvtxRange& a, const NvtxRange& b) {
    return a.start_us != b.start_us ? a.start_us < b.start_us : a.end_us > b.end_us;
  });
  return out;
}

struct KernelAgg {
  double time_us = 0;
  std::int64_t instances = 0;
  long first_line = 0;
};

// Kernel name -> its time in one phase.
using KernelTimes = std::unordered_map<std::string, KernelAgg>;

// The kernels of a phase as its root nodes, in the order of their first row in the report.
void add_phase_nodes(Phase& ph, const KernelTimes& kernels, const std::string& name) {
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
  return find_col(read_table(text, name, kNsysReports), {"total time"}) >= 0;
}

namespace {

// cuda_gpu_kern_sum: one row per kernel name, one phase "all".
void read_kernel_summary(const Table& t, const std::string& text, const std::string& name, int c_name, int c_total,
                         Profile& prof) {
  prof.format = "nsys-kern-sum";
  const int c_inst = require_col(t, {"instances", "calls", "count"}, name);
  KernelTimes kernels;
  for_each_row(t, text, name, [&](const Row& row) {
    const std::string& k = cell_text(row, c_name);
    const double total = time_cell_us(t, row, c_total, name);
    const double inst = count_cell(t, row, c_inst, name);
    if (total < 0) throw InputError(name, row.line, t.header[static_cast<std::size_t>(c_total)], "negative time");
    auto& a = kernels[k];
    if (a.first_line == 0) a.first_line = row.line;
    a.time_us += total;
    // A count beyond int64 (or a sum that would be) is an error naming the cell, never converted by wrapping.
    const auto n = checked_narrow<std::int64_t>(inst);
    if (!n || *n < 0 || a.instances > std::numeric_limits<std::int64_t>::max() - *n)
      throw InputError(name, row.line, t.header[static_cast<std::size_t>(c_inst)],
                       "instance count " + cell_text(row, c_inst) + " is not a whole number of launches within int64");
    a.instances += *n;
  });
  Phase ph;
  ph.name = "all";
  add_phase_nodes(ph, kernels, name);
  prof.phases.push_back(std::move(ph));
}

// The phases NVTX ranges make, in the order of read_nvtx: prefill, prefill_2, ...; decode_1, decode_2, ...
struct NvtxPhases {
  std::vector<std::string> name;
  std::vector<int> step;  // decode step number, 0 for prefill
};

NvtxPhases name_phases(const std::vector<NvtxRange>& ranges) {
  NvtxPhases p;
  int nprefill = 0, ndecode = 0;
  for (const NvtxRange& r : ranges) {
    if (r.kind == PhaseKind::Prefill) {
      ++nprefill;
      p.name.push_back(nprefill == 1 ? "prefill" : "prefill_" + std::to_string(nprefill));
      p.step.push_back(0);
    } else {
      ++ndecode;
      p.name.push_back("decode_" + std::to_string(ndecode));
      p.step.push_back(ndecode);
    }
  }
  return p;
}

// cuda_gpu_trace: one row per launch; one phase "all", or with NVTX ranges each kernel in the innermost phase range
// holding its start (the latest-starting one that contains it: trace/range_index.h), "outside_nvtx" when none does.
void read_kernel_trace(const Table& t, const std::string& text, const std::string& name, int c_name,
                       const NsysOptions& opt, Profile& prof) {
  prof.format = "nsys-gpu-trace";
  const int c_start = require_col(t, {"start"}, name);
  const int c_dur = require_col(t, {"duration"}, name);
  std::vector<NvtxRange> ranges;
  if (!opt.nvtx_text.empty()) {
    ranges = read_nvtx(opt.nvtx_text, opt.nvtx_name);
    if (ranges.empty())
      throw InputError(opt.nvtx_name, 0, "", "no NVTX range whose name contains 'prefill' or 'decode': cannot tell phases apart");
  }
  std::vector<double> range_starts, range_ends;
  for (const NvtxRange& r : ranges) range_starts.push_back(r.start_us), range_ends.push_back(r.end_us);
  const RangeIndex range_index(std::move(range_starts), std::move(range_ends));
  // Kernels of range i at [i + 1]; [0] holds those outside every range (or all of them, without NVTX).
  std::vector<KernelTimes> per_range(ranges.size() + 1);
  for_each_row(t, text, name, [&](const Row& row) {
    const std::string& k = cell_text(row, c_name);
    const double start = start_cell_us(t, row, c_start, name, "kernel");
    const double dur = time_cell_us(t, row, c_dur, name);
    if (dur < 0) throw InputError(name, row.line, t.header[static_cast<std::size_t>(c_dur)], "negative duration");
    const long holder = ranges.empty() ? -1 : range_index.innermost(start);
    auto& a = per_range[static_cast<std::size_t>(holder + 1)][k];
    if (a.first_line == 0) a.first_line = row.line;
    a.time_us += dur;
    a.instances += 1;
  });
  auto make = [&](const std::string& ph_name, PhaseKind kind, int step, const KernelTimes& kernels) {
    Phase ph;
    ph.name = ph_name;
    ph.kind = kind;
    ph.step = step;
    add_phase_nodes(ph, kernels, name);
    prof.phases.push_back(std::move(ph));
  };
  if (ranges.empty()) {
    make("all", PhaseKind::Other, 0, per_range[0]);
    return;
  }
  const NvtxPhases phases = name_phases(ranges);
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].kind == PhaseKind::Prefill) make(phases.name[i], PhaseKind::Prefill, 0, per_range[i + 1]);
  for (std::size_t i = 0; i < ranges.size(); ++i)
    if (ranges[i].kind == PhaseKind::Decode) make(phases.name[i], PhaseKind::Decode, phases.step[i], per_range[i + 1]);
  if (!per_range[0].empty()) make("outside_nvtx", PhaseKind::Other, 0, per_range[0]);
}

}  // namespace

Profile parse_nsys_csv(const std::string& text, const std::string& name, const NsysOptions& opt) {
  const Table t = read_table(text, name, kNsysReports);
  Profile prof;
  prof.source = name;
  const int c_name = require_col(t, {"name"}, name);
  const int c_total = find_col(t, {"total time"});
  if (c_total < 0) {
    read_kernel_trace(t, text, name, c_name, opt, prof);
    return prof;
  }
  if (!opt.nvtx_text.empty())
    throw InputError(opt.nvtx_name, 0, "", "NVTX ranges need the per-kernel trace (cuda_gpu_trace); " + name +
                                               " is a kernel summary (cuda_gpu_kern_sum) that cannot be split by phase");
  read_kernel_summary(t, text, name, c_name, c_total, prof);
  return prof;
}

Profile read_nsys_csv(const std::string& path, const NsysOptions& opt) { return parse_nsys_csv(read_file(path), path, opt); }

}  // namespace arfit::trace
