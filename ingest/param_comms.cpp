// PARAM comms benchmark (facebookresearch/param train/comms/pt/comms.py) output: the COMMS-RES table.
//   COMMS-RES   size (B)  nElementsPerRank  Latency(us):p50  p75  p95  Min  Max  AlgBW(GB/s)  BusBW(GB/s)
//   COMMS-RES-all_reduce   1024   256   12.3   12.9   13.4   11.8   14.0   0.083   0.145
// Older versions print "COMMS-RES" without the collective suffix on rows; the collective then comes from
// a "--collective X" in the log or --collective.
// All-to-allv file mode: a header column named "split" holds "B,T0-T1-...,D" per row (the split's total
// bytes, the per-rank latencies in us joined by '-', and the split description); those rows become
// alltoallv samples carrying Sample::splits verbatim. The rank count is then the number of T values
// unless --nranks or the log says otherwise.
// time_us = p50, min_us/max_us = Min/Max, p75/p95 kept in extra.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ingest/readers.h"
#include "ingest/text_util.h"
#include "model/errors.h"

namespace arfit::ingest::detail {
namespace {

enum class PK { Size, Elements, ElementsPair, P50, P75, P95, Min, Max, AlgBw, BusBw, TFlops, Split, Other };

std::optional<Collective> param_collective(std::string s) {
  if (ends_with(s, "_base")) s = s.substr(0, s.size() - 5);
  if (s == "all_to_allv" || s == "alltoallv") return Collective::AllToAllV;
  return try_parse_collective(s);
}

}  // namespace

IngestResult read_param_comms(const std::string& text, const std::string& name, const Options& options) {
  IngestResult r;
  r.format = Format::ParamComms;
  auto lines = split_lines(text);
  std::vector<PK> cols;
  std::vector<std::string> col_names;
  long header_line = 0;
  std::optional<Collective> log_coll;
  std::optional<int> log_world;
  std::map<std::string, std::int64_t> last;
  struct Row {
    Sample s;
    long line;
    std::string alg, bus;
    std::optional<int> split_ranks;
  };
  std::vector<Row> rows;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const long ln = static_cast<long>(i + 1);
    std::string_view l = trim(lines[i]);
    auto pos = l.find("COMMS-RES");
    if (pos == std::string_view::npos) {
      // Facts from the rest of the log: "--collective all_reduce", "world_size: 8" / "world_size=8".
      auto tk = tokens(l);
      for (std::size_t t = 0; t < tk.size(); ++t) {
        std::string lt = lower(tk[t]);
        if ((lt == "--collective" || lt == "--collectives") && t + 1 < tk.size()) {
          std::string v(tk[t + 1]);
          if (v.find(',') == std::string::npos)
            if (auto c = param_collective(v)) log_coll = c;
        } else if (starts_with(lt, "--collective=")) {
          if (auto c = param_collective(lt.substr(13))) log_coll = c;
        }
        if (starts_with(lt, "world_size")) {
          std::string rest = lt.substr(10);
          if (!rest.empty() && (rest.front() == '=' || rest.front() == ':')) rest.erase(0, 1);
          if (rest.empty() && t + 1 < tk.size()) rest = std::string(tk[t + 1]);
          while (!rest.empty() && !std::isdigit(static_cast<unsigned char>(rest.back()))) rest.pop_back();
          if (auto v = parse_int(rest); v && *v > 0 && *v < 1000000) log_world = static_cast<int>(*v);
        }
      }
      continue;
    }
    std::string_view body = l.substr(pos);
    auto tk = tokens(body);
    std::string_view tag = tk[0];
    if (starts_with(tag, "COMMS-RES-QUANT")) throw InputError(name, ln, "", "PARAM quantized-collective output is not supported");
    // A row whose size is a number but not a byte count (negative, or beyond int64): counted and named.
    if (!cols.empty() && tk.size() > 1 && !parse_grouped_uint(tk[1]) && parse_double(tk[1])) {
      ++r.dropped;
      add_warning(r, name + ":" + std::to_string(ln) + ": row dropped: size '" + std::string(tk[1]) +
                         "' is not a byte count (negative or beyond 2^63)");
      continue;
    }
    // Header: the token after the tag is not a number.
    if (tk.size() > 1 && !parse_grouped_uint(tk[1])) {
      cols.clear();
      col_names.clear();
      for (std::size_t t = 1; t < tk.size(); ++t) {
        std::string h = lower(tk[t]);
        if (h == "(b)") continue;  // "size (B)"
        PK k = PK::Other;
        if (h == "size" || h == "total-size") k = PK::Size;
        else if (h == "nelementsperrank") k = PK::Elements;
        else if (h == "nelementspairperrank") k = PK::ElementsPair;
        else if (starts_with(h, "latency(")) {
          if (!starts_with(h, "latency(us)")) throw InputError(name, ln, std::string(tk[t]), "unknown latency unit (expected Latency(us))");
          k = PK::P50;
        } else if (h == "p75") k = PK::P75;
        else if (h == "p95") k = PK::P95;
        else if (h == "min") k = PK::Min;
        else if (h == "max") k = PK::Max;
        else if (starts_with(h, "algbw")) {
          if (h != "algbw(gb/s)") throw InputError(name, ln, std::string(tk[t]), "unknown bandwidth unit (expected AlgBW(GB/s))");
          k = PK::AlgBw;
        } else if (starts_with(h, "busbw")) {
          if (h != "busbw(gb/s)") throw InputError(name, ln, std::string(tk[t]), "unknown bandwidth unit (expected BusBW(GB/s))");
          k = PK::BusBw;
        } else if (h == "tflops") k = PK::TFlops;
        else if (contains(h, "split")) k = PK::Split;
        else if (contains(h, "pinglatency")) throw InputError(name, ln, "", "PARAM pt2pt output is not supported");
        cols.push_back(k);
        col_names.emplace_back(tk[t]);
      }
      if (std::find(cols.begin(), cols.end(), PK::Size) == cols.end())
        throw InputError(name, ln, "", "COMMS-RES header without a 'size (B)' column");
      header_line = ln;
      last.clear();
      continue;
    }
    if (cols.empty()) throw InputError(name, ln, "", "COMMS-RES row before any COMMS-RES header line");
    const std::size_t nvals = tk.size() - 1;
    // The header prints "TFlops" only in compute modes; rows may omit it.
    std::size_t expect = cols.size();
    if (nvals + 1 == cols.size() && cols.back() == PK::TFlops) expect = nvals;
    if (nvals != expect)
      throw InputError(name, ln, "", "the COMMS-RES header (line " + std::to_string(header_line) + ") has " +
                                         std::to_string(cols.size()) + " columns but this row has " + std::to_string(nvals));
    ++r.rows;
    Row row;
    row.line = ln;
    Sample& s = row.s;
    std::optional<Collective> coll;
    if (tag.size() > 10 && tag[9] == '-') {
      coll = param_collective(std::string(tag.substr(10)));
      if (!coll) throw InputError(name, ln, "", "unsupported collective '" + std::string(tag.substr(10)) + "'");
    }
    bool split_row = false;
    for (std::size_t c = 0; c < expect; ++c) {
      const std::string v(tk[c + 1]);
      const std::string& cn = col_names[c];
      auto num = [&]() {
        auto d = parse_double(v);
        if (!d) throw InputError(name, ln, cn, "'" + v + "' is not a number");
        if (!std::isfinite(*d)) throw InputError(name, ln, cn, "non-finite value '" + v + "'");
        if (*d < 0) throw InputError(name, ln, cn, "negative value '" + v + "'");
        return *d;
      };
      switch (cols[c]) {
        case PK::Size: {
          auto b = parse_grouped_uint(v);
          if (!b) throw InputError(name, ln, cn, "'" + v + "' is not a byte count");
          s.bytes = *b;
          break;
        }
        case PK::P50: s.time_us = num(); break;
        case PK::P75: s.extra["p75_us"] = v, (void)num(); break;
        case PK::P95: s.extra["p95_us"] = v, (void)num(); break;
        case PK::Min: s.min_us = num(); break;
        case PK::Max: s.max_us = num(); break;
        case PK::AlgBw: (void)num(), row.alg = v; break;
        case PK::BusBw: (void)num(), row.bus = v; break;
        case PK::Split: {
          // B,T0-T1-...,D
          auto c1 = v.find(',');
          auto c2 = c1 == std::string::npos ? std::string::npos : v.find(',', c1 + 1);
          if (c2 == std::string::npos) throw InputError(name, ln, cn, "split '" + v + "' is not 'B,T0-T1-...,D'");
          auto b = parse_grouped_uint(std::string_view(v).substr(0, c1));
          if (!b) throw InputError(name, ln, cn, "split '" + v + "': '" + v.substr(0, c1) + "' is not a byte count");
          std::string_view lat = std::string_view(v).substr(c1 + 1, c2 - c1 - 1);
          std::vector<double> per_rank;
          std::size_t st = 0;
          for (std::size_t k = 0; k <= lat.size(); ++k)
            if (k == lat.size() || lat[k] == '-') {
              auto d = parse_double(lat.substr(st, k - st));
              if (!d || !std::isfinite(*d) || *d < 0)
                throw InputError(name, ln, cn, "split '" + v + "': per-rank latency '" + std::string(lat.substr(st, k - st)) + "' is not a finite number");
              per_rank.push_back(*d);
              st = k + 1;
            }
          s.splits = v;
          split_row = true;
          row.split_ranks = static_cast<int>(per_rank.size());
          if (s.bytes == 0) s.bytes = *b;
          std::vector<double> sorted = per_rank;
          std::sort(sorted.begin(), sorted.end());
          if (s.time_us == 0) s.time_us = sorted[sorted.size() / 2];
          if (s.min_us == 0) s.min_us = sorted.front();
          if (s.max_us == 0) s.max_us = sorted.back();
          break;
        }
        default: break;
      }
    }
    if (split_row) coll = Collective::AllToAllV;
    if (!coll) coll = log_coll;
    if (options.collective) coll = options.collective;
    if (!coll) throw InputError(name, ln, "", "cannot tell the collective (row tag has no '-<collective>' suffix and the log has no --collective): pass --collective");
    s.collective = *coll;
    const std::string key = to_string(s.collective);
    if (auto it = last.find(key); it != last.end()) {
      if (s.bytes < it->second)
        throw InputError(name, ln, "size", "size " + std::to_string(s.bytes) + " after " + std::to_string(it->second) +
                                               ": sizes must increase within a run (a new run starts with a COMMS-RES header)");
      if (s.bytes == it->second) {
        ++r.duplicates;
        add_warning(r, name + ":" + std::to_string(ln) + ": duplicated size " + std::to_string(s.bytes) + " (kept)");
      }
    }
    last[key] = s.bytes;
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw InputError(name, 0, "", "no COMMS-RES rows found");
  std::map<Collective, RankInference> inf;
  for (const auto& row : rows)
    if (!row.alg.empty() && !row.bus.empty())
      inf.emplace(row.s.collective, RankInference(row.s.collective)).first->second.add(row.alg, row.bus);
  for (auto& row : rows) {
    Sample& s = row.s;
    std::optional<int> ratio;
    if (auto it = inf.find(s.collective); it != inf.end()) ratio = it->second.rank_count();
    if (options.nranks) s.nranks = *options.nranks;
    else if (log_world) s.nranks = *log_world;
    else if (ratio) s.nranks = *ratio;
    else if (row.split_ranks) s.nranks = *row.split_ranks;
    else
      throw InputError(name, row.line, "", "cannot tell the rank count (no world_size in the log and AlgBW/BusBW does not pin it for " +
                                               to_string(s.collective) + "): pass --nranks");
    if (log_world && ratio && *ratio != *log_world)
      add_warning(r, name + ":" + std::to_string(row.line) + ": world_size " + std::to_string(*log_world) +
                         " but BusBW/AlgBW = bus factor of " + std::to_string(*ratio) + " ranks");
    s.strategy = strategy::kNccl;
    s.dtype = "unknown";
    s.backend = "param";
    s.source = basename_of(name);
    s.extra["system"] = stem_of(name);
    if (s.bytes == 0 || !(std::isfinite(s.time_us) && s.time_us > 0)) {
      s.status = SampleStatus::Failed;
      s.time_us = 0;
      ++r.failed;
    }
    r.samples.push_back(std::move(s));
  }
  return r;
}

}  // namespace arfit::ingest::detail
