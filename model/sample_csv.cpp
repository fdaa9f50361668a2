#include "model/sample_csv.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "model/alltoallv.h"
#include "model/checked.h"
#include "model/errors.h"
#include "model/text.h"

namespace arfit {
namespace {

const std::vector<std::string> kColumns = {
    "collective", "strategy", "fusion", "dtype",      "nranks",  "nnodes", "device", "sm",
    "tokens",     "hidden",   "bytes",  "time_us",    "p10_us",  "p90_us", "min_us", "max_us",
    "iterations", "in_place", "status", "wrong",      "backend", "source", "splits"};

const std::set<std::string> kRequired = {"collective", "strategy", "nranks", "bytes", "time_us"};


// %.17g would print 12.5 as 12.5 but 0.1 as 0.10000000000000001; shortest round-trip is what we want.
std::string format_double(double v) {
  char buf[64];
  for (int prec = 6; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

struct RowParser {
  const std::string& file;
  long line;

  [[noreturn]] void fail(const std::string& col, const std::string& what) const { throw InputError(file, line, col, what); }

  std::int64_t to_int(const std::string& col, const std::string& v, std::int64_t lo) const {
    std::int64_t x = 0;
    const char* b = v.data();
    const char* e = v.data() + v.size();
    auto r = std::from_chars(b, e, x);
    if (r.ec == std::errc::result_out_of_range && r.ptr == e) fail(col, narrow_failure<std::int64_t>(v));
    if (v.empty() || r.ec != std::errc() || r.ptr != e) fail(col, "'" + v + "' is not an integer");
    if (x < lo) fail(col, "value " + v + " is below the minimum " + std::to_string(lo));
    return x;
  }

  // A count stored as int (ranks, nodes, SM, iterations): beyond int it is an error, never wrapped.
  int to_int32(const std::string& col, const std::string& v, std::int64_t lo) const {
    const auto n = checked_narrow<int>(to_int(col, v, lo));
    if (!n) fail(col, narrow_failure<int>(v));
    return *n;
  }

  double to_double(const std::string& col, const std::string& v) const {
    if (v.empty()) fail(col, "empty value");
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (end != v.c_str() + v.size()) fail(col, "'" + v + "' is not a number");
    if (!std::isfinite(x)) fail(col, "'" + v + "' is not finite");
    if (x < 0) fail(col, "negative value " + v);
    return x;
  }
};

}  // namespace

const std::vector<std::string>& sample_columns() { return kColumns; }

std::vector<std::string> split_csv_line(const std::string& line, bool* unterminated_quote) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"') {
        if (i + 1 < line.size() && line[i + 1] == '"') {
          cur.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cur.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.push_back(cur);
      cur.clear();
    } else if (c != '\r') {
      cur.push_back(c);
    }
  }
  out.push_back(cur);
  if (unterminated_quote) *unterminated_quote = quoted;
  return out;
}

std::string csv_escape(const std::string& field) {
  if (field.find_first_of(",\"\n\r") == std::string::npos) return field;
  // The reader takes one row per line: a line break inside a field (a multi-line error in arbench's `note`)
  // is written as a space, so that every file arfit writes reads back.
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out.push_back('"');
    out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  }
  return out + "\"";
}

bool looks_like_samples_csv(const std::string& text) { return text.rfind("#arfit-samples", 0) == 0; }

namespace {

// The text's lines without their line ends ("a\nb" and "a\nb\n" both give two).
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(pos));
      pos = text.size();
    } else {
      lines.push_back(text.substr(pos, nl - pos));
      pos = nl + 1;
    }
  }
  return lines;
}

// The first line must be the schema line of this version.
void check_schema_line(const std::vector<std::string>& lines, const std::string& name) {
  if (lines.empty()) throw InputError(name, 0, "", "empty file (expected '" + std::string(kSampleSchemaLine) + "')");
  const std::string first(trim(lines[0]));
  if (first.rfind("#arfit-samples", 0) != 0)
    throw InputError(name, 1, "", "missing schema line '" + std::string(kSampleSchemaLine) + "'");
  if (first != kSampleSchemaLine)
    throw InputError(name, 1, "", "unsupported schema '" + first + "' (this arfit reads '" + kSampleSchemaLine + "')");
}

// The run-header comments ("# key: value") after the schema line into `meta`; returns the index of the first line
// that is neither blank nor a comment (the column header), or lines.size().
size_t read_run_header(const std::vector<std::string>& lines, std::vector<std::pair<std::string, std::string>>& meta) {
  size_t i = 1;
  for (; i < lines.size(); ++i) {
    const std::string l(trim(lines[i]));
    if (l.empty()) continue;
    if (l[0] != '#') break;
    std::string body(trim(std::string_view(l).substr(1)));
    size_t colon = body.find(':');
    if (colon == std::string::npos)
      meta.emplace_back(body, "");
    else
      meta.emplace_back(trim(std::string_view(body).substr(0, colon)), trim(std::string_view(body).substr(colon + 1)));
  }
  return i;
}

// The column header: each column's position by name, the unknown columns into `extra_columns` in file order.
struct ColumnHeader {
  std::vector<std::string> names;
  std::map<std::string, size_t> position;
};

ColumnHeader read_column_header(const std::string& line, long header_line, const std::string& name,
                                std::vector<std::string>& extra_columns) {
  ColumnHeader h;
  h.names = split_csv_line(line);
  for (auto& c : h.names) c = trim(c);
  for (size_t c = 0; c < h.names.size(); ++c) {
    if (h.names[c].empty()) throw InputError(name, header_line, "", "empty column name at position " + std::to_string(c + 1));
    if (h.position.count(h.names[c])) throw InputError(name, header_line, h.names[c], "duplicated column");
    h.position[h.names[c]] = c;
    if (std::find(kColumns.begin(), kColumns.end(), h.names[c]) == kColumns.end()) extra_columns.push_back(h.names[c]);
  }
  for (const auto& r : kColumns)
    if (kRequired.count(r) && !h.position.count(r)) throw InputError(name, header_line, r, "required column missing");
  return h;
}

// A row's fields, trimmed, once it has as many as the header (a truncated last line and an open quote said as such).
std::vector<std::string> row_fields(const std::string& raw, size_t columns, bool truncated_last_line, const std::string& name,
                                    long lineno) {
  bool open_quote = false;
  std::vector<std::string> f = split_csv_line(raw, &open_quote);
  if (f.size() != columns || open_quote) {
    if (truncated_last_line && f.size() < columns)
      throw InputError(name, lineno, "", "truncated last line: " + std::to_string(f.size()) + " of " +
                                             std::to_string(columns) + " fields and no line end");
    if (open_quote) throw InputError(name, lineno, "", "unterminated quoted field");
    throw InputError(name, lineno, "", "expected " + std::to_string(columns) + " fields, found " + std::to_string(f.size()));
  }
  for (auto& v : f) v = trim(v);
  return f;
}

// The columns that say what was measured: collective, strategy, fusion, dtype, ranks, nodes, device, SM, size.
template <class Get>
void read_what_was_measured(Sample& s, RowParser& p, const Get& get) {
  try {
    s.collective = parse_collective(*get("collective"));
  } catch (const std::invalid_argument& e) {
    p.fail("collective", e.what());
  }
  s.strategy = *get("strategy");
  if (s.strategy.empty()) p.fail("strategy", "empty value");
  if (auto v = get("fusion"); v && !v->empty()) {
    auto fu = try_parse_fusion(*v);
    if (!fu) p.fail("fusion", "unknown fusion op '" + *v + "'");
    s.fusion = *fu;
  }
  if (auto v = get("dtype"); v && !v->empty()) s.dtype = *v;
  s.nranks = p.to_int32("nranks", *get("nranks"), 1);
  if (auto v = get("nnodes"); v && !v->empty()) s.nnodes = p.to_int32("nnodes", *v, 1);
  if (auto v = get("device")) s.device = *v;
  if (auto v = get("sm"); v && !v->empty()) s.sm = p.to_int32("sm", *v, 0);
  if (auto v = get("tokens"); v && !v->empty()) s.tokens = p.to_int("tokens", *v, 0);
  if (auto v = get("hidden"); v && !v->empty()) s.hidden = p.to_int("hidden", *v, 0);
  s.bytes = p.to_int("bytes", *get("bytes"), 0);
}

// The columns of the measurement itself: status, times, iterations, in-place, wrong results, where it came from.
template <class Get>
void read_measurement(Sample& s, RowParser& p, const Get& get) {
  if (auto v = get("status"); v && !v->empty()) {
    if (*v == "ok")
      s.status = SampleStatus::Ok;
    else if (*v == "failed")
      s.status = SampleStatus::Failed;
    else
      p.fail("status", "expected 'ok' or 'failed', found '" + *v + "'");
  }
  {
    const std::string& t = *get("time_us");
    if (s.ok() || !t.empty()) s.time_us = p.to_double("time_us", t);
    if (s.ok() && s.time_us <= 0) p.fail("time_us", "time must be positive for a sample with status ok");
  }
  for (auto [c, dst] : {std::pair<const char*, double*>{"p10_us", &s.p10_us}, {"p90_us", &s.p90_us},
                        {"min_us", &s.min_us}, {"max_us", &s.max_us}})
    if (auto v = get(c); v && !v->empty()) *dst = p.to_double(c, *v);
  if (auto v = get("iterations"); v && !v->empty()) s.iterations = p.to_int32("iterations", *v, 0);
  if (auto v = get("in_place"); v && !v->empty()) {
    if (*v == "1" || *v == "true")
      s.in_place = true;
    else if (*v == "0" || *v == "false")
      s.in_place = false;
    else
      p.fail("in_place", "expected 0 or 1, found '" + *v + "'");
  }
  if (auto v = get("wrong"); v && !v->empty()) s.wrong = p.to_int("wrong", *v, 0);
  if (auto v = get("backend")) s.backend = *v;
  if (auto v = get("source")) s.source = *v;
  if (auto v = get("splits")) s.splits = *v;
}

// A split is read where it is written, so its errors name this line (the all-to-allv protocol reads it again much
// later).
void check_split(const Sample& s, RowParser& p) {
  if (s.splits.empty()) return;
  AllToAllvSplit split;
  try {
    split = parse_alltoallv_split(s.splits, dlrm_element_bytes(s.dtype));
  } catch (const std::invalid_argument& e) {
    p.fail("splits", e.what());
  }
  if (split.nranks() != s.nranks)
    p.fail("splits", "the split has " + std::to_string(split.nranks()) + " ranks, the sample " + std::to_string(s.nranks));
}

// One data row (its fields trimmed, as many as the header) as a Sample, every value checked.
Sample parse_sample_row(const std::vector<std::string>& f, const ColumnHeader& header,
                        const std::vector<std::string>& extra_columns, const std::string& name, long lineno) {
  RowParser p{name, lineno};
  auto get = [&](const std::string& c) -> const std::string* {
    auto it = header.position.find(c);
    return it == header.position.end() ? nullptr : &f[it->second];
  };
  Sample s;
  s.line = lineno;
  read_what_was_measured(s, p, get);
  read_measurement(s, p, get);
  for (const auto& e : extra_columns) s.extra[e] = f[header.position.at(e)];
  // Names travel into models files, generated tables and figure scripts: no control characters there.
  if (const auto b = sample_name_problem(s)) p.fail(b->field, b->reason);
  if (const auto b = sample_bound_problem(s)) p.fail(b->field, b->reason);
  check_split(s, p);
  return s;
}

}  // namespace

SampleFile parse_samples_csv(const std::string& text, const std::string& name) {
  SampleFile result;
  const std::vector<std::string> lines = split_lines(text);
  const bool last_line_unterminated = !text.empty() && text.back() != '\n';
  check_schema_line(lines, name);
  size_t i = read_run_header(lines, result.meta);
  if (i >= lines.size()) throw InputError(name, static_cast<long>(lines.size()), "", "missing column header line");
  const ColumnHeader header = read_column_header(lines[i], static_cast<long>(i + 1), name, result.extra_columns);
  for (++i; i < lines.size(); ++i) {
    const long lineno = static_cast<long>(i + 1);
    const std::string& raw = lines[i];
    if (trim(raw).empty() || trim(raw)[0] == '#') continue;
    const bool truncated_last_line = i + 1 == lines.size() && last_line_unterminated;
    const std::vector<std::string> f = row_fields(raw, header.names.size(), truncated_last_line, name, lineno);
    result.samples.push_back(parse_sample_row(f, header, result.extra_columns, name, lineno));
  }
  return result;
}

std::string samples_csv_preamble(const std::vector<std::pair<std::string, std::string>>& meta,
                                 const std::vector<std::string>& extra_columns) {
  std::ostringstream os;
  os << kSampleSchemaLine << "\n";
  for (const auto& [k, v] : meta) {
    std::string val = v;
    std::replace(val.begin(), val.end(), '\n', ' ');
    os << "# " << k << ": " << val << "\n";
  }
  for (size_t c = 0; c < kColumns.size(); ++c) os << (c ? "," : "") << kColumns[c];
  for (const auto& e : extra_columns) os << "," << csv_escape(e);
  os << "\n";
  return os.str();
}

std::string samples_csv_row(const Sample& s, const std::vector<std::string>& extra_columns) {
  auto opt = [](double v) { return v > 0 ? format_double(v) : std::string(); };
  std::vector<std::string> f = {to_string(s.collective),
                                csv_escape(s.strategy),
                                to_string(s.fusion),
                                csv_escape(s.dtype),
                                std::to_string(s.nranks),
                                std::to_string(s.nnodes),
                                csv_escape(s.device),
                                s.sm ? std::to_string(s.sm) : std::string(),
                                s.tokens ? std::to_string(s.tokens) : std::string(),
                                s.hidden ? std::to_string(s.hidden) : std::string(),
                                std::to_string(s.bytes),
                                s.ok() || s.time_us > 0 ? format_double(s.time_us) : std::string(),
                                opt(s.p10_us),
                                opt(s.p90_us),
                                opt(s.min_us),
                                opt(s.max_us),
                                s.iterations ? std::to_string(s.iterations) : std::string(),
                                s.in_place ? "1" : "0",
                                s.ok() ? "ok" : "failed",
                                std::to_string(s.wrong),
                                csv_escape(s.backend),
                                csv_escape(s.source),
                                csv_escape(s.splits)};
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) out += (i ? "," : "") + f[i];
  for (const auto& e : extra_columns) {
    auto it = s.extra.find(e);
    out += "," + (it == s.extra.end() ? std::string() : csv_escape(it->second));
  }
  return out + "\n";
}

std::string format_samples_csv(const SampleFile& file) {
  std::vector<std::string> extra = file.extra_columns;
  for (const auto& s : file.samples)
    for (const auto& [k, v] : s.extra)
      if (std::find(extra.begin(), extra.end(), k) == extra.end()) extra.push_back(k);
  std::string out = samples_csv_preamble(file.meta, extra);
  for (const auto& s : file.samples) out += samples_csv_row(s, extra);
  return out;
}

}  // namespace arfit
