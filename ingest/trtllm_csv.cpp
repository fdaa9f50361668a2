// TensorRT-LLM all-reduce microbenchmark CSV (tests/microbenchmarks/all_reduce.py, benchmark.tp{N}.sm{V}.csv):
//   world_size, dtype, size, num_tokens, hidden_size, strategy, fusion, op, time (us)
// Variants tolerated: "time_ms" / "time (ms)" (milliseconds), "time_us", "fusion_op" for "fusion", missing "op".
// Bytes: num_tokens * hidden_size * dtype size. "size" must then be either that element count or that byte
// count (checked, so a file that means something else is an error, not a silent misreading). Without
// num_tokens/hidden_size, "size" is taken as the element count, as the benchmark defines it.
#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ingest/readers.h"
#include "ingest/text_util.h"
#include "model/errors.h"
#include "model/sample_csv.h"

namespace arfit::ingest::detail {

namespace {

// The header's columns: where each field is, which time column and unit, and whether sizes come as tokens x hidden.
struct TrtllmColumns {
  std::vector<std::string> header;
  std::map<std::string, std::size_t> col;
  long header_line = 0;
  std::string time_col;
  double time_mult = 1;
  bool has_tokens = false;
  std::string fusion_col;
  bool has(const char* c) const { return col.count(c) > 0; }
};

// The first line that is neither blank nor a comment, read as the header; `i` is left on it.
TrtllmColumns read_header(const std::vector<std::string_view>& lines, std::size_t& i, const std::string& name) {
  while (i < lines.size() && (trim(lines[i]).empty() || trim(lines[i]).front() == '#')) ++i;
  if (i >= lines.size()) throw InputError(name, 0, "", "no CSV header line (expected world_size,dtype,size,...)");
  TrtllmColumns c;
  c.header_line = static_cast<long>(i + 1);
  c.header = split_csv_line(std::string(lines[i]));
  c.col = csv_header_columns(c.header, true, name, c.header_line);
  for (auto [t, m] : {std::pair<const char*, double>{"time (us)", 1.0}, {"time_us", 1.0}, {"time(us)", 1.0},
                      {"time_ms", 1e3}, {"time (ms)", 1e3}, {"time(ms)", 1e3}})
    if (c.has(t)) {
      c.time_col = t;
      c.time_mult = m;
      break;
    }
  if (c.time_col.empty()) {
    for (const auto& [h, x] : c.col)
      if (starts_with(h, "time"))
        throw InputError(name, c.header_line, h, "unknown time column/unit (known: 'time (us)', time_us, time_ms)");
    throw InputError(name, c.header_line, "time (us)", "required column missing");
  }
  for (const char* req : {"world_size", "dtype", "strategy"})
    if (!c.has(req)) throw InputError(name, c.header_line, req, "required column missing");
  c.has_tokens = c.has("num_tokens") && c.has("hidden_size");
  if (!c.has_tokens && !c.has("size")) throw InputError(name, c.header_line, "size", "required column missing (or num_tokens + hidden_size)");
  c.fusion_col = c.has("fusion") ? "fusion" : (c.has("fusion_op") ? "fusion_op" : "");
  return c;
}

// The message size in bytes: tokens x hidden x dtype size when the table has both columns (a size column then must
// agree, in elements or bytes), else size x dtype size.
void read_message_size(const TrtllmColumns& c, const std::vector<std::string>& f, int dsize, const std::string& name, long ln,
                       Sample& s) {
  auto get = [&](const std::string& k) -> const std::string& { return f[c.col.at(k)]; };
  std::optional<std::int64_t> size;
  if (c.has("size")) {
    size = parse_grouped_uint(get("size"));
    if (!size) throw InputError(name, ln, "size", "'" + get("size") + "' is not a whole number");
  }
  if (!c.has_tokens) {
    if (*size > (std::int64_t{1} << 60) / dsize) throw InputError(name, ln, "size", "size out of range");
    s.bytes = *size * dsize;
    return;
  }
  auto t = parse_grouped_uint(get("num_tokens"));
  auto h = parse_grouped_uint(get("hidden_size"));
  if (!t) throw InputError(name, ln, "num_tokens", "'" + get("num_tokens") + "' is not a whole number");
  if (!h) throw InputError(name, ln, "hidden_size", "'" + get("hidden_size") + "' is not a whole number");
  if (*t > (std::int64_t{1} << 28) || *h > (std::int64_t{1} << 28)) throw InputError(name, ln, "num_tokens", "value out of range");
  s.tokens = *t;
  s.hidden = *h;
  const std::int64_t elems = *t * *h;
  s.bytes = elems * dsize;
  if (size && *size != elems && *size != s.bytes)
    throw InputError(name, ln, "size", "size " + std::to_string(*size) + " is neither num_tokens*hidden_size (" +
                                           std::to_string(elems) + " elements) nor that in bytes (" + std::to_string(s.bytes) + ")");
}

// The time column's value in microseconds: a finite, non-negative number.
double read_time_us(const TrtllmColumns& c, const std::string& value, const std::string& name, long ln) {
  auto t = parse_double(value);
  if (!t) throw InputError(name, ln, c.time_col, "'" + value + "' is not a number");
  if (!std::isfinite(*t)) throw InputError(name, ln, c.time_col, "non-finite time '" + value + "'");
  if (*t < 0) throw InputError(name, ln, c.time_col, "negative time '" + value + "'");
  return *t * c.time_mult;
}

// One data row as a sample. The SM is not in the table: the benchmark names its file benchmark.tp8.sm90.csv, and a
// name is not a measurement. The machine label (the stem) carries it where nothing else says the GPU
// (model/sm_targets.h, sm_from_label), and fit and predict say that it came from the file's name (docs/fit.md,
// "Machine identity").
Sample read_row(const TrtllmColumns& c, const std::vector<std::string>& f, const std::string& name, long ln,
                const Options& options) {
  static const std::set<std::string> known = {"world_size", "dtype", "size", "num_tokens", "hidden_size", "strategy",
                                              "fusion", "fusion_op", "op", "time (us)", "time_us", "time(us)",
                                              "time_ms", "time (ms)", "time(ms)"};
  auto get = [&](const std::string& k) -> const std::string& { return f[c.col.at(k)]; };
  Sample s;
  s.line = ln;
  s.collective = options.collective ? *options.collective : Collective::AllReduce;
  auto ws = parse_int(get("world_size"));
  if (!ws || *ws < 1 || *ws > 1000000) throw InputError(name, ln, "world_size", "'" + get("world_size") + "' is not a rank count");
  s.nranks = options.nranks ? *options.nranks : static_cast<int>(*ws);
  const std::string& dt = get("dtype");
  const int dsize = dtype_size(dt);
  if (dsize == 0) throw InputError(name, ln, "dtype", "unknown dtype '" + dt + "'");
  s.dtype = canonical_dtype(dt);
  read_message_size(c, f, dsize, name, ln, s);
  s.strategy = get("strategy");
  if (s.strategy.empty()) throw InputError(name, ln, "strategy", "empty value");
  s.strategy = upper(s.strategy);
  if (!c.fusion_col.empty()) {
    auto fu = try_parse_fusion(get(c.fusion_col));
    if (!fu) throw InputError(name, ln, c.fusion_col, "unknown fusion op '" + get(c.fusion_col) + "'");
    s.fusion = *fu;
  }
  if (c.has("op")) s.extra["op"] = get("op");
  s.time_us = read_time_us(c, get(c.time_col), name, ln);
  s.backend = "trtllm";
  s.source = basename_of(name);
  s.extra["system"] = stem_of(name);
  for (const auto& [h, x] : c.col)
    if (!known.count(h)) s.extra[sanitize_key(h)] = f[x];
  return s;
}

}  // namespace

IngestResult read_trtllm_csv(const std::string& text, const std::string& name, const Options& options) {
  IngestResult r;
  r.format = Format::TrtllmCsv;
  auto lines = split_lines(text);
  std::size_t i = 0;
  const TrtllmColumns c = read_header(lines, i, name);
  r.field_columns = {{"time_us", c.time_col}, {"nranks", "world_size"}};
  std::set<std::string> seen;
  for (++i; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i + 1);
    std::string_view l = trim(lines[i]);
    if (l.empty() || l.front() == '#') continue;
    std::vector<std::string> f = csv_row_fields(std::string(lines[i]), c.header.size(), c.header_line, name, ln);
    for (auto& v : f) v = std::string(trim(v));
    ++r.rows;
    Sample s = read_row(c, f, name, ln, options);
    if (s.bytes == 0 || !(std::isfinite(s.time_us) && s.time_us > 0)) {
      s.status = SampleStatus::Failed;
      s.time_us = 0;
      ++r.failed;
    }
    const std::string group = s.strategy + "|" + to_string(s.fusion) + "|" + s.dtype + "|" + std::to_string(s.nranks) + "|" +
                              std::to_string(s.hidden);
    if (!seen.insert(group + "|" + std::to_string(s.bytes)).second) {
      ++r.duplicates;
      add_warning(r, name + ":" + std::to_string(ln) + ": duplicated size " + std::to_string(s.bytes) + " B for " + s.strategy +
                         " " + to_string(s.fusion) + " (kept)");
    }
    r.samples.push_back(std::move(s));
  }
  if (r.rows == 0) throw InputError(name, c.header_line, "", "no data rows");
  return r;
}

}  // namespace arfit::ingest::detail
