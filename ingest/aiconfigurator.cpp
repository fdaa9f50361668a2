// aiconfigurator comm tables (ai-dynamo/aiconfigurator systems/data/<system>/comm/<framework>/<version>/*.parquet
// converted to CSV): framework,version,device,op_name,kernel_source,{nccl_dtype|allreduce_dtype},num_gpus,
// message_size,latency[,backend|implementation], in any column order.
//   message_size is an ELEMENT count: bytes = message_size * dtype size (half 2, bfloat16 2, int8 1);
//   latency is in milliseconds -> time_us = latency * 1000;
//   strategy = kernel_source ("NCCL", "vLLM_custom_graph", "TRTLLM", ...).
// The tables hold several sweeps of the same group; a size smaller than the group's previous one starts a
// new sweep; a (group, size) seen before is a duplicate (kept, counted).
#include <cmath>
#include <map>
#include <set>
#include <unordered_set>
#include <string>
#include <vector>

#include "ingest/readers.h"
#include "ingest/text_util.h"
#include "model/errors.h"
#include "model/sample_csv.h"

namespace arfit::ingest::detail {
namespace {

// The machine label: the table's "system=" note, what the file says; else cut from an aiconfigurator name
// ("aic_h100_sxm_nccl_2.27.3_nccl_perf" -> "h100_sxm"); else the stem. The name never overrides the note: the same
// bytes under another name are the same machine (docs/fit.md, "Machine identity").
std::string system_from(const std::string& name, const std::string& note_system) {
  if (!note_system.empty()) return note_system;
  std::string stem = stem_of(name);
  static const char* frameworks[] = {"_nccl_", "_sglang_", "_trtllm_", "_vllm_", "_oneccl_"};
  std::string s = starts_with(stem, "aic_") ? stem.substr(4) : stem;
  std::size_t best = std::string::npos;
  for (const char* f : frameworks) {
    auto pos = s.find(f);
    if (pos != std::string::npos && pos < best) best = pos;
  }
  if (best != std::string::npos && best > 0 && starts_with(stem, "aic_")) return s.substr(0, best);
  return stem;
}

// The leading comment lines, skipped (`i` is left on the first other line); a "system=NAME" note among them is returned.
std::string read_leading_notes(const std::vector<std::string_view>& lines, std::size_t& i) {
  std::string note_system;
  for (; i < lines.size(); ++i) {
    std::string_view l = trim(lines[i]);
    if (l.empty()) continue;
    if (l.front() != '#') break;
    auto pos = l.find("system=");
    if (pos != std::string_view::npos) {
      auto tk = tokens(l.substr(pos + 7));
      if (!tk.empty()) {
        std::string v(tk[0]);
        while (!v.empty() && !std::isalnum(static_cast<unsigned char>(v.back()))) v.pop_back();
        note_system = v;
      }
    }
  }
  return note_system;
}

// Column positions, looked up once (the row loop runs for every row of large tables); -1 where a column is absent.
struct AicColumns {
  std::size_t count = 0;  // the header's fields
  long header_line = 0;
  std::string dtype_col;
  long op = -1, n = -1, msg = -1, lat = -1, dt = -1, ks = -1, dev = -1, fw = -1, ver = -1, be = -1, impl = -1;
  std::vector<std::pair<std::string, std::size_t>> unknown;  // columns kept as extras, by sanitised name
};

AicColumns read_header(std::string_view line, long header_line, const std::string& name) {
  static const std::set<std::string> known = {"framework", "version", "device",     "op_name",        "kernel_source",
                                              "nccl_dtype", "allreduce_dtype", "dtype", "num_gpus", "message_size",
                                              "latency",   "backend", "implementation"};
  const std::vector<std::string> header = split_csv_line(std::string(line));
  const std::map<std::string, std::size_t> col = csv_header_columns(header, false, name, header_line);
  AicColumns c;
  c.count = header.size();
  c.header_line = header_line;
  for (const char* d : {"nccl_dtype", "allreduce_dtype", "dtype"})
    if (col.count(d)) {
      c.dtype_col = d;
      break;
    }
  for (const char* req : {"op_name", "num_gpus", "message_size", "latency"})
    if (!col.count(req)) throw InputError(name, header_line, req, "required column missing");
  if (c.dtype_col.empty()) throw InputError(name, header_line, "nccl_dtype", "required column missing (nccl_dtype, allreduce_dtype or dtype)");
  auto idx = [&](const std::string& k) -> long { auto it = col.find(k); return it == col.end() ? -1L : static_cast<long>(it->second); };
  c.op = idx("op_name"), c.n = idx("num_gpus"), c.msg = idx("message_size"), c.lat = idx("latency"), c.dt = idx(c.dtype_col),
  c.ks = idx("kernel_source"), c.dev = idx("device"), c.fw = idx("framework"), c.ver = idx("version"), c.be = idx("backend"),
  c.impl = idx("implementation");
  for (const auto& [h, x] : col)
    if (!known.count(h)) c.unknown.emplace_back(sanitize_key(h), x);
  return c;
}

// One data row as a sample (latency in milliseconds, message_size in elements).
Sample read_row(const AicColumns& c, const std::vector<std::string>& f, const std::string& name, long ln,
                const Options& options, const std::string& source, const std::string& system) {
  auto get = [&](long k) -> const std::string& { return f[static_cast<std::size_t>(k)]; };
  Sample s;
  s.line = ln;
  auto coll = try_parse_collective(get(c.op));
  if (!coll) throw InputError(name, ln, "op_name", "unknown collective '" + get(c.op) + "'");
  s.collective = options.collective ? *options.collective : *coll;
  const std::string& dt = get(c.dt);
  int dsize = dtype_size(dt);
  if (dsize == 0) throw InputError(name, ln, c.dtype_col, "unknown dtype '" + dt + "' (need its size: message_size counts elements)");
  s.dtype = canonical_dtype(dt);
  auto n = parse_int(get(c.n));
  if (!n || *n < 1 || *n > 1000000) throw InputError(name, ln, "num_gpus", "'" + get(c.n) + "' is not a rank count");
  s.nranks = options.nranks ? *options.nranks : static_cast<int>(*n);
  auto elems = parse_grouped_uint(get(c.msg));
  if (!elems) throw InputError(name, ln, "message_size", "'" + get(c.msg) + "' is not an element count");
  if (*elems > (std::int64_t{1} << 60) / dsize) throw InputError(name, ln, "message_size", "message size out of range");
  s.bytes = *elems * dsize;
  auto lat = parse_double(get(c.lat));
  if (!lat) throw InputError(name, ln, "latency", "'" + get(c.lat) + "' is not a number");
  if (!std::isfinite(*lat)) throw InputError(name, ln, "latency", "non-finite latency '" + get(c.lat) + "'");
  if (*lat < 0) throw InputError(name, ln, "latency", "negative latency '" + get(c.lat) + "'");
  s.time_us = *lat * 1000.0;
  s.strategy = c.ks >= 0 && !get(c.ks).empty() ? get(c.ks) : std::string(strategy::kNccl);
  if (c.dev >= 0) s.device = get(c.dev);
  s.backend = "aiconfigurator";
  s.source = source;
  s.extra["system"] = system;  // before the unknown columns: one named "system" wins, as it always did
  if (c.fw >= 0) s.extra["framework"] = get(c.fw);
  if (c.ver >= 0) s.extra["version"] = get(c.ver);
  if (c.be >= 0) s.extra["aic_backend"] = get(c.be);
  if (c.impl >= 0) s.extra["implementation"] = get(c.impl);
  for (const auto& [k, x] : c.unknown) s.extra[k] = f[x];
  return s;
}

}  // namespace

IngestResult read_aiconfigurator(const std::string& text, const std::string& name, const Options& options) {
  IngestResult r;
  r.format = Format::Aiconfigurator;
  r.field_columns = {{"time_us", "latency"}, {"bytes", "message_size"}, {"nranks", "num_gpus"}};
  auto lines = split_lines(text);
  std::size_t i = 0;
  const std::string note_system = read_leading_notes(lines, i);
  if (i >= lines.size()) throw InputError(name, 0, "", "no CSV header line (expected framework,version,device,op_name,...)");
  const AicColumns c = read_header(lines[i], static_cast<long>(i + 1), name);
  const std::string system = system_from(name, note_system);
  const std::string source = basename_of(name);
  std::unordered_set<std::string> seen;  // group|size
  std::vector<std::string> f;
  for (++i; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i + 1);
    std::string_view l = trim(lines[i]);
    if (l.empty() || l.front() == '#') continue;
    f = csv_row_fields(std::string(lines[i]), c.count, c.header_line, name, ln);
    for (auto& v : f) v = std::string(trim(v));
    ++r.rows;
    Sample s = read_row(c, f, name, ln, options, source, system);
    if (s.bytes == 0 || !(std::isfinite(s.time_us) && s.time_us > 0)) {
      s.status = SampleStatus::Failed;
      s.time_us = 0;
      ++r.failed;
      add_warning(r, name + ":" + std::to_string(ln) + ": zero size or zero latency kept as failed");
    }
    std::string group = to_string(s.collective) + "|" + s.strategy + "|" + s.dtype + "|" + std::to_string(s.nranks) + "|" +
                        (c.be >= 0 ? f[static_cast<std::size_t>(c.be)] : "") + "|" +
                        (c.impl >= 0 ? f[static_cast<std::size_t>(c.impl)] : "");
    if (!seen.insert(group + "|" + std::to_string(s.bytes)).second) {
      ++r.duplicates;
      add_warning(r, name + ":" + std::to_string(ln) + ": duplicated size " + std::to_string(s.bytes) + " B for " +
                         to_string(s.collective) + " " + s.strategy + " " + s.dtype + " x" + std::to_string(s.nranks) + " (kept)");
    }
    r.samples.push_back(std::move(s));
  }
  if (r.rows == 0) throw InputError(name, c.header_line, "", "no data rows");
  r.meta.emplace_back("system", system);
  return r;
}

}  // namespace arfit::ingest::detail
