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

IngestResult read_trtllm_csv(const std::string& text, const std::string& name, const Options& options) {
  IngestResult r;
  r.format = Format::TrtllmCsv;
  auto lines = split_lines(text);
  std::size_t i = 0;
  while (i < lines.size() && (trim(lines[i]).empty() || trim(lines[i]).front() == '#')) ++i;
  if (i >= lines.size()) throw InputError(name, 0, "", "no CSV header line (expected world_size,dtype,size,...)");
  const long header_line = static_cast<long>(i + 1);
  std::vector<std::string> header = split_csv_line(std::string(lines[i]));
  const std::map<std::string, std::size_t> col = csv_header_columns(header, true, name, header_line);
  auto has = [&](const char* c) { return col.count(c) > 0; };
  std::string time_col;
  double time_mult = 1;
  for (auto [c, m] : {std::pair<const char*, double>{"time (us)", 1.0}, {"time_us", 1.0}, {"time(us)", 1.0},
                      {"time_ms", 1e3}, {"time (ms)", 1e3}, {"time(ms)", 1e3}})
    if (has(c)) {
      time_col = c;
      time_mult = m;
      break;
    }
  if (time_col.empty()) {
    for (const auto& [h, c] : col)
      if (starts_with(h, "time"))
        throw InputError(name, header_line, h, "unknown time column/unit (known: 'time (us)', time_us, time_ms)");
    throw InputError(name, header_line, "time (us)", "required column missing");
  }
  r.field_columns = {{"time_us", time_col}, {"nranks", "world_size"}};
  for (const char* req : {"world_size", "dtype", "strategy"})
    if (!has(req)) throw InputError(name, header_line, req, "required column missing");
  const bool has_tokens = has("num_tokens") && has("hidden_size");
  if (!has_tokens && !has("size")) throw InputError(name, header_line, "size", "required column missing (or num_tokens + hidden_size)");
  std::string fusion_col = has("fusion") ? "fusion" : (has("fusion_op") ? "fusion_op" : "");
  // The SM is not in the table: the benchmark names its file benchmark.tp8.sm90.csv, and a name is not a measurement.
  // The machine label (the stem) carries it where nothing else says the GPU (model/sm_targets.h, sm_from_label), and
  // fit and predict say that it came from the file's name (docs/fit.md, "Machine identity").
  static const std::set<std::string> known = {"world_size", "dtype", "size", "num_tokens", "hidden_size", "strategy",
                                              "fusion", "fusion_op", "op", "time (us)", "time_us", "time(us)",
                                              "time_ms", "time (ms)", "time(ms)"};
  std::set<std::string> seen;
  for (++i; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i + 1);
    std::string_view l = trim(lines[i]);
    if (l.empty() || l.front() == '#') continue;
    std::vector<std::string> f = csv_row_fields(std::string(lines[i]), header.size(), header_line, name, ln);
    for (auto& v : f) v = std::string(trim(v));
    auto get = [&](const std::string& c) -> const std::string& { return f[col.at(c)]; };
    ++r.rows;
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
    std::optional<std::int64_t> size;
    if (has("size")) {
      size = parse_grouped_uint(get("size"));
      if (!size) throw InputError(name, ln, "size", "'" + get("size") + "' is not a whole number");
    }
    if (has_tokens) {
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
                                               std::to_string(elems) + " elements) nor that in bytes (" +
                                               std::to_string(s.bytes) + ")");
    } else {
      if (*size > (std::int64_t{1} << 60) / dsize) throw InputError(name, ln, "size", "size out of range");
      s.bytes = *size * dsize;
    }
    s.strategy = get("strategy");
    if (s.strategy.empty()) throw InputError(name, ln, "strategy", "empty value");
    s.strategy = upper(s.strategy);
    if (!fusion_col.empty()) {
      auto fu = try_parse_fusion(get(fusion_col));
      if (!fu) throw InputError(name, ln, fusion_col, "unknown fusion op '" + get(fusion_col) + "'");
      s.fusion = *fu;
    }
    if (has("op")) s.extra["op"] = get("op");
    auto t = parse_double(get(time_col));
    if (!t) throw InputError(name, ln, time_col, "'" + get(time_col) + "' is not a number");
    if (!std::isfinite(*t)) throw InputError(name, ln, time_col, "non-finite time '" + get(time_col) + "'");
    if (*t < 0) throw InputError(name, ln, time_col, "negative time '" + get(time_col) + "'");
    s.time_us = *t * time_mult;
    s.backend = "trtllm";
    s.source = basename_of(name);
    s.extra["system"] = stem_of(name);
    for (const auto& [h, c] : col)
      if (!known.count(h)) s.extra[sanitize_key(h)] = f[c];
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
  if (r.rows == 0) throw InputError(name, header_line, "", "no data rows");
  return r;
}

}  // namespace arfit::ingest::detail
