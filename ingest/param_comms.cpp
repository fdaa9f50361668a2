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

struct Row {
  Sample s;                        // s.line: the row's line
  std::string alg, bus;            // AlgBW / BusBW as printed (the rank inference reads them)
  std::optional<int> split_ranks;  // all-to-allv file mode: the number of per-rank latencies
};

class ParamReader {
 public:
  ParamReader(const std::string& name, const Options& options) : name_(name), options_(options) {
    r_.format = Format::ParamComms;
  }

  IngestResult run(const std::string& text) {
    auto lines = split_lines(text);
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const long ln = static_cast<long>(i + 1);
      std::string_view l = trim(lines[i]);
      auto pos = l.find("COMMS-RES");
      if (pos == std::string_view::npos) {
        log_facts(l);
        continue;
      }
      auto tk = tokens(l.substr(pos));
      if (starts_with(tk[0], "COMMS-RES-QUANT")) throw InputError(name_, ln, "", "PARAM quantized-collective output is not supported");
      // A row whose size is a number but not a byte count (negative, or beyond int64): counted and named.
      if (!cols_.empty() && tk.size() > 1 && !parse_grouped_uint(tk[1]) && parse_double(tk[1])) {
        ++r_.dropped;
        add_warning(r_, name_ + ":" + std::to_string(ln) + ": row dropped: size '" + std::string(tk[1]) +
                            "' is not a byte count (negative or beyond 2^63)");
        continue;
      }
      // Header: the token after the tag is not a number.
      if (tk.size() > 1 && !parse_grouped_uint(tk[1])) header(tk, ln);
      else data_row(tk, ln);
    }
    // Rows there but every one dropped: read_samples' message names the count and the first (with its line).
    if (rows_.empty() && r_.dropped == 0) throw InputError(name_, 0, "", "no COMMS-RES rows found");
    emit_samples();
    return std::move(r_);
  }

 private:
  // Facts from the rest of the log: "--collective all_reduce", "world_size: 8" / "world_size=8".
  void log_facts(std::string_view l) {
    auto tk = tokens(l);
    for (std::size_t t = 0; t < tk.size(); ++t) {
      std::string lt = lower(tk[t]);
      if ((lt == "--collective" || lt == "--collectives") && t + 1 < tk.size()) {
        std::string v(tk[t + 1]);
        if (v.find(',') == std::string::npos)
          if (auto c = param_collective(v)) log_coll_ = c;
      } else if (starts_with(lt, "--collective=")) {
        if (auto c = param_collective(lt.substr(13))) log_coll_ = c;
      }
      if (starts_with(lt, "world_size")) {
        std::string rest = lt.substr(10);
        if (!rest.empty() && (rest.front() == '=' || rest.front() == ':')) rest.erase(0, 1);
        if (rest.empty() && t + 1 < tk.size()) rest = std::string(tk[t + 1]);
        while (!rest.empty() && !std::isdigit(static_cast<unsigned char>(rest.back()))) rest.pop_back();
        if (auto v = parse_int(rest); v && *v > 0 && *v < 1000000) log_world_ = static_cast<int>(*v);
      }
    }
  }

  void header(const std::vector<std::string_view>& tk, long ln) {
    cols_.clear();
    col_names_.clear();
    for (std::size_t t = 1; t < tk.size(); ++t) {
      std::string h = lower(tk[t]);
      if (h == "(b)") continue;  // "size (B)"
      PK k = PK::Other;
      if (h == "size" || h == "total-size") k = PK::Size;
      else if (h == "nelementsperrank") k = PK::Elements;
      else if (h == "nelementspairperrank") k = PK::ElementsPair;
      else if (starts_with(h, "latency(")) {
        if (!starts_with(h, "latency(us)")) throw InputError(name_, ln, std::string(tk[t]), "unknown latency unit (expected Latency(us))");
        k = PK::P50;
      } else if (h == "p75") k = PK::P75;
      else if (h == "p95") k = PK::P95;
      else if (h == "min") k = PK::Min;
      else if (h == "max") k = PK::Max;
      else if (starts_with(h, "algbw")) {
        if (h != "algbw(gb/s)") throw InputError(name_, ln, std::string(tk[t]), "unknown bandwidth unit (expected AlgBW(GB/s))");
        k = PK::AlgBw;
      } else if (starts_with(h, "busbw")) {
        if (h != "busbw(gb/s)") throw InputError(name_, ln, std::string(tk[t]), "unknown bandwidth unit (expected BusBW(GB/s))");
        k = PK::BusBw;
      } else if (h == "tflops") k = PK::TFlops;
      else if (contains(h, "split")) k = PK::Split;
      else if (contains(h, "pinglatency")) throw InputError(name_, ln, "", "PARAM pt2pt output is not supported");
      cols_.push_back(k);
      col_names_.emplace_back(tk[t]);
    }
    if (std::find(cols_.begin(), cols_.end(), PK::Size) == cols_.end())
      throw InputError(name_, ln, "", "COMMS-RES header without a 'size (B)' column");
    header_line_ = ln;
    last_.clear();
  }

  void data_row(const std::vector<std::string_view>& tk, long ln) {
    if (cols_.empty()) throw InputError(name_, ln, "", "COMMS-RES row before any COMMS-RES header line");
    const std::size_t nvals = tk.size() - 1;
    // The header prints "TFlops" only in compute modes; rows may omit it.
    std::size_t expect = cols_.size();
    if (nvals + 1 == cols_.size() && cols_.back() == PK::TFlops) expect = nvals;
    if (nvals != expect)
      throw InputError(name_, ln, "", "the COMMS-RES header (line " + std::to_string(header_line_) + ") has " +
                                          std::to_string(cols_.size()) + " columns but this row has " + std::to_string(nvals));
    ++r_.rows;
    Row row;
    row.s.line = ln;
    Sample& s = row.s;
    const std::string_view tag = tk[0];
    std::optional<Collective> coll;
    if (tag.size() > 10 && tag[9] == '-') {
      coll = param_collective(std::string(tag.substr(10)));
      if (!coll) throw InputError(name_, ln, "", "unsupported collective '" + std::string(tag.substr(10)) + "'");
    }
    bool split_row = false;
    for (std::size_t c = 0; c < expect; ++c) {
      const std::string v(tk[c + 1]);
      const std::string& cn = col_names_[c];
      auto num = [&]() {
        auto d = parse_double(v);
        if (!d) throw InputError(name_, ln, cn, "'" + v + "' is not a number");
        if (!std::isfinite(*d)) throw InputError(name_, ln, cn, "non-finite value '" + v + "'");
        if (*d < 0) throw InputError(name_, ln, cn, "negative value '" + v + "'");
        return *d;
      };
      switch (cols_[c]) {
        case PK::Size: {
          auto b = parse_grouped_uint(v);
          if (!b) throw InputError(name_, ln, cn, "'" + v + "' is not a byte count");
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
        case PK::Split:
          split_cell(v, cn, ln, row);
          split_row = true;
          break;
        default: break;
      }
    }
    if (split_row) coll = Collective::AllToAllV;
    if (!coll) coll = log_coll_;
    if (options_.collective) coll = options_.collective;
    if (!coll) throw InputError(name_, ln, "", "cannot tell the collective (row tag has no '-<collective>' suffix and the log has no --collective): pass --collective");
    s.collective = *coll;
    check_order(s.bytes, ln, to_string(s.collective));
    rows_.push_back(std::move(row));
  }

  // All-to-allv file mode: "B,T0-T1-...,D" (total bytes, per-rank latencies in us, the split's description).
  void split_cell(const std::string& v, const std::string& cn, long ln, Row& row) {
    Sample& s = row.s;
    auto c1 = v.find(',');
    auto c2 = c1 == std::string::npos ? std::string::npos : v.find(',', c1 + 1);
    if (c2 == std::string::npos) throw InputError(name_, ln, cn, "split '" + v + "' is not 'B,T0-T1-...,D'");
    auto b = parse_grouped_uint(std::string_view(v).substr(0, c1));
    if (!b) throw InputError(name_, ln, cn, "split '" + v + "': '" + v.substr(0, c1) + "' is not a byte count");
    std::string_view lat = std::string_view(v).substr(c1 + 1, c2 - c1 - 1);
    std::vector<double> per_rank;
    std::size_t st = 0;
    for (std::size_t k = 0; k <= lat.size(); ++k)
      if (k == lat.size() || lat[k] == '-') {
        auto d = parse_double(lat.substr(st, k - st));
        if (!d || !std::isfinite(*d) || *d < 0)
          throw InputError(name_, ln, cn, "split '" + v + "': per-rank latency '" + std::string(lat.substr(st, k - st)) + "' is not a finite number");
        per_rank.push_back(*d);
        st = k + 1;
      }
    s.splits = v;
    row.split_ranks = static_cast<int>(per_rank.size());
    if (s.bytes == 0) s.bytes = *b;
    std::vector<double> sorted = per_rank;
    std::sort(sorted.begin(), sorted.end());
    if (s.time_us == 0) s.time_us = sorted[sorted.size() / 2];
    if (s.min_us == 0) s.min_us = sorted.front();
    if (s.max_us == 0) s.max_us = sorted.back();
  }

  // Sizes increase within a run, per collective; a repeated size is kept with a warning.
  void check_order(std::int64_t bytes, long ln, const std::string& key) {
    if (auto it = last_.find(key); it != last_.end()) {
      if (bytes < it->second)
        throw InputError(name_, ln, "size", "size " + std::to_string(bytes) + " after " + std::to_string(it->second) +
                                                ": sizes must increase within a run (a new run starts with a COMMS-RES header)");
      if (bytes == it->second) {
        ++r_.duplicates;
        add_warning(r_, name_ + ":" + std::to_string(ln) + ": duplicated size " + std::to_string(bytes) + " (kept)");
      }
    }
    last_[key] = bytes;
  }

  // Rank counts (--nranks, else the log's world_size, else AlgBW/BusBW, else the split's per-rank count) and
  // the samples.
  void emit_samples() {
    std::map<Collective, RankInference> inf;
    for (const auto& row : rows_)
      if (!row.alg.empty() && !row.bus.empty())
        inf.emplace(row.s.collective, RankInference(row.s.collective)).first->second.add(row.alg, row.bus);
    for (auto& row : rows_) {
      Sample& s = row.s;
      std::optional<int> ratio;
      if (auto it = inf.find(s.collective); it != inf.end()) ratio = it->second.rank_count();
      if (options_.nranks) s.nranks = *options_.nranks;
      else if (log_world_) s.nranks = *log_world_;
      else if (ratio) s.nranks = *ratio;
      else if (row.split_ranks) s.nranks = *row.split_ranks;
      else
        throw InputError(name_, row.s.line, "", "cannot tell the rank count (no world_size in the log and AlgBW/BusBW does not pin it for " +
                                                  to_string(s.collective) + "): pass --nranks");
      if (log_world_ && ratio && *ratio != *log_world_)
        add_warning(r_, name_ + ":" + std::to_string(row.s.line) + ": world_size " + std::to_string(*log_world_) +
                            " but BusBW/AlgBW = bus factor of " + std::to_string(*ratio) + " ranks");
      s.strategy = strategy::kNccl;
      s.dtype = "unknown";
      s.backend = "param";
      s.source = basename_of(name_);
      s.extra["system"] = stem_of(name_);
      if (s.bytes == 0 || !(std::isfinite(s.time_us) && s.time_us > 0)) {
        s.status = SampleStatus::Failed;
        s.time_us = 0;
        ++r_.failed;
      }
      r_.samples.push_back(std::move(s));
    }
  }

  const std::string& name_;
  const Options& options_;
  IngestResult r_;
  std::vector<PK> cols_;
  std::vector<std::string> col_names_;
  long header_line_ = 0;
  std::optional<Collective> log_coll_;
  std::optional<int> log_world_;
  std::map<std::string, std::int64_t> last_;  // last size per collective in this run
  std::vector<Row> rows_;
};

}  // namespace

IngestResult read_param_comms(const std::string& text, const std::string& name, const Options& options) {
  return ParamReader(name, options).run(text);
}

}  // namespace arfit::ingest::detail
