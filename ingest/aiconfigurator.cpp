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

}  // namespace

IngestResult read_aiconfigurator(const std::string& text, const std::string& name, const Options& options) {
  IngestResult r;
  r.format = Format::Aiconfigurator;
  r.field_columns = {{"time_us", "latency"}, {"bytes", "message_size"}, {"nranks", "num_gpus"}};
  auto lines = split_lines(text);
  std::string note_system;
  std::size_t i = 0;
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
  if (i >= lines.size()) throw InputError(name, 0, "", "no CSV header line (expected framework,version,device,op_name,...)");
  const long header_line = static_cast<long>(i + 1);
  std::vector<std::string> header = split_csv_line(std::string(lines[i]));
  const std::map<std::string, std::size_t> col = csv_header_columns(header, false, name, header_line);
  std::string dtype_col;
  for (const char* d : {"nccl_dtype", "allreduce_dtype", "dtype"})
    if (col.count(d)) {
      dtype_col = d;
      break;
    }
  for (const char* req : {"op_name", "num_gpus", "message_size", "latency"})
    if (!col.count(req)) throw InputError(name, header_line, req, "required column missing");
  if (dtype_col.empty()) throw InputError(name, header_line, "nccl_dtype", "required column missing (nccl_dtype, allreduce_dtype or dtype)");
  static const std::set<std::string> known = {"framework", "version", "device",     "op_name",        "kernel_source",
                                              "nccl_dtype", "allreduce_dtype", "dtype", "num_gpus", "message_size",
                                              "latency",   "backend", "implementation"};
  const std::string system = system_from(name, note_system);
  const std::string source = basename_of(name);
  std::unordered_set<std::string> seen;  // group|size
  // Column positions, looked up once (this loop runs for every row of large tables).
  auto idx = [&](const char* c) -> long { auto it = col.find(c); return it == col.end() ? -1L : static_cast<long>(it->second); };
  const long c_op = idx("op_name"), c_n = idx("num_gpus"), c_msg = idx("message_size"), c_lat = idx("latency"),
             c_dt = idx(dtype_col.c_str()), c_ks = idx("kernel_source"), c_dev = idx("device"), c_fw = idx("framework"),
             c_ver = idx("version"), c_be = idx("backend"), c_impl = idx("implementation");
  std::vector<std::pair<std::string, std::size_t>> unknown_cols;
  for (const auto& [h, c] : col)
    if (!known.count(h)) unknown_cols.emplace_back(sanitize_key(h), c);
  std::vector<std::string> f;
  for (++i; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i + 1);
    std::string_view l = trim(lines[i]);
    if (l.empty() || l.front() == '#') continue;
    f = csv_row_fields(std::string(lines[i]), header.size(), header_line, name, ln);
    for (auto& v : f) v = std::string(trim(v));
    auto get = [&](long c) -> const std::string& { return f[static_cast<std::size_t>(c)]; };
    ++r.rows;
    Sample s;
    s.line = ln;
    auto coll = try_parse_collective(get(c_op));
    if (!coll) throw InputError(name, ln, "op_name", "unknown collective '" + get(c_op) + "'");
    s.collective = options.collective ? *options.collective : *coll;
    const std::string& dt = get(c_dt);
    int dsize = dtype_size(dt);
    if (dsize == 0) throw InputError(name, ln, dtype_col, "unknown dtype '" + dt + "' (need its size: message_size counts elements)");
    s.dtype = canonical_dtype(dt);
    auto n = parse_int(get(c_n));
    if (!n || *n < 1 || *n > 1000000) throw InputError(name, ln, "num_gpus", "'" + get(c_n) + "' is not a rank count");
    s.nranks = options.nranks ? *options.nranks : static_cast<int>(*n);
    auto elems = parse_grouped_uint(get(c_msg));
    if (!elems) throw InputError(name, ln, "message_size", "'" + get(c_msg) + "' is not an element count");
    if (*elems > (std::int64_t{1} << 60) / dsize) throw InputError(name, ln, "message_size", "message size out of range");
    s.bytes = *elems * dsize;
    auto lat = parse_double(get(c_lat));
    if (!lat) throw InputError(name, ln, "latency", "'" + get(c_lat) + "' is not a number");
    if (!std::isfinite(*lat)) throw InputError(name, ln, "latency", "non-finite latency '" + get(c_lat) + "'");
    if (*lat < 0) throw InputError(name, ln, "latency", "negative latency '" + get(c_lat) + "'");
    s.time_us = *lat * 1000.0;
    s.strategy = c_ks >= 0 && !get(c_ks).empty() ? get(c_ks) : std::string(strategy::kNccl);
    if (c_dev >= 0) s.device = get(c_dev);
    s.backend = "aiconfigurator";
    s.source = source;
    s.extra["system"] = system;
    if (c_fw >= 0) s.extra["framework"] = get(c_fw);
    if (c_ver >= 0) s.extra["version"] = get(c_ver);
    if (c_be >= 0) s.extra["aic_backend"] = get(c_be);
    if (c_impl >= 0) s.extra["implementation"] = get(c_impl);
    for (const auto& [k, c] : unknown_cols) s.extra[k] = f[c];
    if (s.bytes == 0 || !(std::isfinite(s.time_us) && s.time_us > 0)) {
      s.status = SampleStatus::Failed;
      s.time_us = 0;
      ++r.failed;
      add_warning(r, name + ":" + std::to_string(ln) + ": zero size or zero latency kept as failed");
    }
    std::string group = to_string(s.collective) + "|" + s.strategy + "|" + s.dtype + "|" + std::to_string(s.nranks) + "|" +
                        (c_be >= 0 ? get(c_be) : "") + "|" + (c_impl >= 0 ? get(c_impl) : "");
    if (!seen.insert(group + "|" + std::to_string(s.bytes)).second) {
      ++r.duplicates;
      add_warning(r, name + ":" + std::to_string(ln) + ": duplicated size " + std::to_string(s.bytes) + " B for " +
                         to_string(s.collective) + " " + s.strategy + " " + s.dtype + " x" + std::to_string(s.nranks) + " (kept)");
    }
    r.samples.push_back(std::move(s));
  }
  if (r.rows == 0) throw InputError(name, header_line, "", "no data rows");
  r.meta.emplace_back("system", system);
  return r;
}

}  // namespace arfit::ingest::detail
