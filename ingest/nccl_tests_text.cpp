// nccl-tests text output (all_reduce_perf & co, versions 2.x), as people paste it: with mpirun/srun
// prefixes, shell prompts, markdown fences, NCCL INFO lines, footers, several runs per file, the old
// layout (no root column, an "error" column), condensed tables (size time algbw busbw) and markdown pipe
// tables of bandwidths (payload | busbw | algbw; their syntax and cells: ingest/pipe_table.h). See
// docs/ingest.md for the rules; the short version:
//  - every table data row is one "row"; it gives an out-of-place sample and, when the table has the
//    in-place columns, an in-place one (pipe tables: one sample per bandwidth column);
//  - N/A in a timing column or #wrong > 0 -> status Failed, no timing; #wrong N/A = not validated (ok);
//  - rows of 0 bytes are kept as Failed samples (nothing was timed that a model can use), with a warning;
//  - the collective comes from --collective, else the log (Collective test starting / X_perf in a
//    command line / a "COLLECTIVE:" note), else the file name; the rank count from --nranks, else the
//    busbw/algbw ratio when it pins one integer, else the Using devices lines, else the command line.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ingest/pipe_table.h"
#include "ingest/readers.h"
#include "ingest/text_util.h"
#include "model/stated_network.h"
#include "model/bus_factor.h"
#include "model/errors.h"
#include "model/sample_csv.h"
#include "model/text.h"

namespace arfit::ingest::detail {
namespace {

// Strips the prefixes launchers add: OpenMPI "[1,0]<stdout>:", srun -l "0: ".
std::string_view strip_prefixes(std::string_view s) {
  for (;;) {
    std::string_view t = s;
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    if (!t.empty() && t.front() == '[') {
      auto close = t.find("]<");
      auto colon = t.find(">:");
      if (close != std::string_view::npos && colon != std::string_view::npos && close < colon && colon < 40) {
        s = t.substr(colon + 2);
        continue;
      }
    }
    // "0: " / "12: " (srun --label): digits, colon, space.
    std::size_t i = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    if (i > 0 && i < 6 && i + 1 < t.size() && t[i] == ':' && (t[i + 1] == ' ' || t[i + 1] == '\t')) {
      s = t.substr(i + 2);
      continue;
    }
    return s;
  }
}

// The collective a file name names ("..._allreduce...", "all_gather_perf.log"); nullopt when it names none or
// several.
std::optional<Collective> collective_in_file_name(const std::string& path) {
  const std::string stem = lower(stem_of(path));
  const std::pair<const char*, Collective> names[] = {
      {"allreduce", Collective::AllReduce},    {"all_reduce", Collective::AllReduce},
      {"allgather", Collective::AllGather},    {"all_gather", Collective::AllGather},
      {"reducescatter", Collective::ReduceScatter}, {"reduce_scatter", Collective::ReduceScatter},
      {"alltoallv", Collective::AllToAllV},    {"alltoall", Collective::AllToAll},
      {"all_to_all", Collective::AllToAll},    {"broadcast", Collective::Broadcast},
      {"sendrecv", Collective::SendRecv}};
  std::set<Collective> found;
  for (auto& [n, c] : names)
    if (stem.find(n) != std::string::npos) found.insert(c);
  if (found.count(Collective::AllToAllV)) found.erase(Collective::AllToAll);
  if (found.size() != 1) return std::nullopt;
  return *found.begin();
}

struct CommandFacts {
  std::optional<int> ranks;  // processes x GPUs per process x threads
  std::optional<int> nodes;
  std::string dtype;         // -d
};

// Reads a launcher + nccl-tests command line. nccl-tests' own -n is an iteration count, not a rank count:
// only -n/-np before the binary (mpirun, srun) count processes.
CommandFacts parse_command(std::string_view line) {
  CommandFacts f;
  auto tok = tokens(line);
  std::size_t bin = tok.size();
  for (std::size_t i = 0; i < tok.size(); ++i)
    if (collective_of_perf_binary(tok[i]) || ends_with(tok[i], "_perf")) {
      bin = i;
      break;
    }
  bool launcher = false;
  std::optional<long> np, nodes, per_node;
  auto value = [&](std::size_t& i, std::string_view flag) -> std::optional<long> {
    std::string_view t = tok[i];
    if (t == flag) {
      if (i + 1 < tok.size()) {
        auto v = parse_int(tok[i + 1]);
        if (v) ++i;
        return v ? std::optional<long>(*v) : std::nullopt;
      }
      return std::nullopt;
    }
    if (starts_with(t, flag)) {
      std::string_view rest = t.substr(flag.size());
      if (!rest.empty() && rest.front() == '=') rest.remove_prefix(1);
      if (flag.size() == 2 || t[flag.size()] == '=') {
        auto v = parse_int(rest);
        if (v) return *v;
      }
    }
    return std::nullopt;
  };
  const std::size_t end_launch = bin == tok.size() ? tok.size() : bin;
  for (std::size_t i = 0; i < end_launch; ++i) {
    std::string_view t = tok[i];
    std::string_view b = t.substr(t.find_last_of('/') == std::string_view::npos ? 0 : t.find_last_of('/') + 1);
    if (b == "mpirun" || b == "mpiexec" || b == "srun" || b == "torchrun" || b == "oshrun" ||
        b == "torch.distributed.run" || b == "prun" || b == "aprun")
      launcher = true;
    if (auto v = value(i, "-np")) np = *v;
    else if (auto v2 = value(i, "--np")) np = *v2;
    else if (auto v3 = value(i, "--ntasks-per-node")) per_node = *v3;
    else if (auto v4 = value(i, "--ntasks")) np = *v4;
    else if (auto v5 = value(i, "-npernode")) per_node = *v5;
    else if (auto v6 = value(i, "--npernode")) per_node = *v6;
    else if (auto v7 = value(i, "--nproc_per_node")) per_node = *v7;
    else if (auto v8 = value(i, "--nproc-per-node")) per_node = *v8;
    else if (auto v9 = value(i, "--nnodes")) nodes = *v9;
    else if (auto v10 = value(i, "--nodes")) nodes = *v10;
    else if (auto v11 = value(i, "-N")) nodes = *v11;
    else if (auto v12 = value(i, "-n")) np = *v12;
  }
  long g = 1, t = 1;
  bool per_process_given = false;
  for (std::size_t i = bin + 1; i < tok.size(); ++i) {
    if (auto v = value(i, "-g")) g = *v, per_process_given = true;
    else if (auto v2 = value(i, "--ngpus")) g = *v2, per_process_given = true;
    else if (auto v3 = value(i, "-t")) t = *v3, per_process_given = true;
    else if (auto v4 = value(i, "--nthreads")) t = *v4, per_process_given = true;
    else if (tok[i] == "-d" && i + 1 < tok.size()) f.dtype = std::string(tok[++i]);
  }
  std::optional<long> procs;
  if (np) procs = np;
  else if (nodes && per_node) {
    // Bounded first: a product of nonsense values could overflow (and then gives no rank count, as before).
    if (*nodes > 0 && *nodes < 1000000 && *per_node > 0 && *per_node < 1000000) procs = *nodes * *per_node;
  }
  // A bare "X_perf -g 4" is one process; a bare "X_perf -b 8 -e 1G" (often a note about what a script ran)
  // says nothing about processes, so it gives no rank count.
  else if (!launcher && bin < tok.size() && per_process_given) procs = 1;
  // Each factor is bounded before multiplying, so nonsense values cannot overflow.
  if (procs && *procs > 0 && *procs < 1000000 && g > 0 && g < 1000000 && t > 0 && t < 1000000 && *procs * g * t < 1000000)
    f.ranks = static_cast<int>(*procs * g * t);
  if (nodes && *nodes > 0 && *nodes < 100000) f.nodes = static_cast<int>(*nodes);
  return f;
}

struct Facts {
  std::optional<Collective> collective;
  std::string collective_from;
  int device_lines = 0;
  std::set<std::string> hosts;
  std::vector<std::string> device_names;
  std::optional<int> cmd_ranks;
  std::optional<int> cmd_nodes;
  std::string cmd_text, cmd_dtype;
  int iters = 0;
  bool busbw_only = false;                  // a note says the unnamed bandwidth columns are busbw
  std::string unmodelled_program;           // 'Collective test starting: X_perf' of no collective arfit models
  std::map<std::string, int> column_ranks;  // note: column "1 node" = 8 GPUs
};

// PerIteration: nccl-tests 2.19's per-iteration statistics (-I 1: i_min, i_max, i_p99 in a time unit, i_cv% in %),
// each placement's after its #wrong; any i_ column is one, so that a statistic added later reads too.
enum class Kind { Size, Count, Type, Redop, Root, Time, AlgBw, BusBw, Wrong, Error, Timestamp, PerIteration, Other };

struct Column {
  Kind kind = Kind::Other;
  int set = 0;  // 0 out-of-place, 1 in-place
  std::string name;
  // PerIteration: a percentage (the unit "%", or a name ending in '%' without a units line), else a time whose
  // unit converts to µs by `to_us`.
  bool percent = false;
  double to_us = 1.0;
};

struct Pending {
  Sample s;                             // s.line: the row's line
  std::optional<int> nranks;            // explicit (GPUs column, annotated column, heading)
  std::optional<Collective> collective;  // explicit (collective column)
  std::optional<double> time_us;
  std::string algbw_text, busbw_text;   // as printed
  bool bw_is_bus = false;               // pipe tables: the value we have is busbw only
  bool failed = false;
  std::vector<std::string> timing_extras;  // the per-iteration times kept in s.extra, dropped if it fails
};

class NcclTextReader {
 public:
  NcclTextReader(const std::string& text, const std::string& name, const Options& options)
      : text_(text), name_(name), options_(options) {
    result_.format = Format::NcclTests;
    result_.field_columns = {{"time_us", "time"}, {"bytes", "size"}};
  }

  IngestResult run() {
    auto lines = split_lines(text_);
    for (std::size_t i = 0; i < lines.size(); ++i) handle(lines[i], static_cast<long>(i + 1));
    end_pipe_table();
    finish_run();
    if (runs_ == 0) throw InputError(name_, 0, "", "no nccl-tests table found (expected a '#  size  count  type ...' header)");
    return std::move(result_);
  }

 private:
  [[noreturn]] void fail(long line, const std::string& what, const std::string& field = "") const {
    throw InputError(name_, line, field, what);
  }

  void set_collective(Collective c, const std::string& from) {
    facts_.collective = c;
    facts_.collective_from = from;
    facts_.unmodelled_program.clear();
  }

  void note_command(std::string_view content, long line) {
    CommandFacts cf = parse_command(content);
    bool names_binary = false;
    for (auto t : tokens(content))
      if (collective_of_perf_binary(t)) names_binary = true;
    if (names_binary || cf.ranks) finish_run();
    for (auto t : tokens(content))
      if (auto c = collective_of_perf_binary(t)) {
        set_collective(*c, "command line (line " + std::to_string(line) + ")");
        break;
      }
    if (cf.ranks) {
      facts_.cmd_ranks = cf.ranks;
      facts_.cmd_text = std::string(trim(content));
    }
    if (cf.nodes) facts_.cmd_nodes = cf.nodes;
    if (!cf.dtype.empty()) facts_.cmd_dtype = cf.dtype;
  }

  // Header facts in comment (or un-commented, as some pastes drop the '#') lines. Returns true if used.
  bool header_fact(std::string_view c, std::string_view raw, long line) {
    auto tok = tokens(c);
    if (tok.empty()) return false;
    if (tok[0] == "nThread" && tok.size() >= 4 && tok[2] == "nGpus") {
      finish_run();
      for (std::size_t i = 0; i + 1 < tok.size(); ++i)
        if (tok[i] == "iters:" && (i == 0 || tok[i - 1] != "agg")) {
          if (auto v = parse_int(tok[i + 1]); v && *v >= 0 && *v < 1000000000) facts_.iters = static_cast<int>(*v);
        }
      return true;
    }
    if (tok.size() >= 2 && tok[0] == "Using" && tok[1] == "devices") {
      finish_run();
      facts_.device_lines = 0;
      facts_.hosts.clear();
      facts_.device_names.clear();
      return true;
    }
    if (tok[0] == "Rank" && tok.size() >= 8) {
      // "Rank  0 Group  0 Pid 31745 on HOST device  0 [0000:b4:00] NAME" (old: no Group)
      std::size_t on = 0, dev = 0;
      for (std::size_t i = 1; i < tok.size(); ++i) {
        if (tok[i] == "on" && !on) on = i;
        if (tok[i] == "device" && on && !dev) dev = i;
      }
      if (on && dev && on + 1 < dev && parse_int(tok[1])) {
        ++facts_.device_lines;
        facts_.hosts.insert(std::string(tok[on + 1]));
        auto close = c.find(']');
        std::string devname = close == std::string_view::npos ? "" : std::string(trim(c.substr(close + 1)));
        if (!devname.empty() &&
            std::find(facts_.device_names.begin(), facts_.device_names.end(), devname) == facts_.device_names.end())
          facts_.device_names.push_back(devname);
        return true;
      }
      return false;
    }
    if (starts_with(c, "Collective test starting:")) {
      finish_run();
      for (auto t : tokens(c.substr(25))) {
        if (auto col = collective_of_perf_binary(t)) {
          set_collective(*col, "'Collective test starting' (line " + std::to_string(line) + ")");
        } else if (ends_with(t, "_perf")) {
          // Not an earlier run's collective: this run measures another program's.
          facts_.collective.reset();
          facts_.unmodelled_program = std::string(t) + " (line " + std::to_string(line) + ")";
        }
      }
      return true;
    }
    if (starts_with(c, "Collective test concluded")) return true;
    if (starts_with(c, "nccl-tests version")) {
      finish_run();
      result_.meta.emplace_back("nccl_tests_version", std::string(tok.size() > 2 ? tok[2] : ""));
      for (auto t : tok)
        if (starts_with(t, "nccl-library=")) {
          if (auto v = parse_int(t.substr(13)); v && *v >= 10000) {
            long code = *v;  // 21605 -> 2.16.5
            result_.meta.emplace_back("nccl_version", std::to_string(code / 10000) + "." +
                                                          std::to_string((code / 100) % 100) + "." + std::to_string(code % 100));
          }
        }
      return true;
    }
    if (starts_with(c, "Out of bounds values")) {
      if (icontains(c, "FAILED")) add_warning(result_, name_ + ":" + std::to_string(line) + ": nccl-tests reports out-of-bounds values: " + std::string(trim(c)));
      close_table();
      finish_run();
      return true;
    }
    if (starts_with(c, "Avg bus bandwidth")) {
      close_table();
      finish_run();
      return true;
    }
    (void)raw;
    return false;
  }

  // Curation notes and free comments: "COLLECTIVE: all_gather", "COMMAND: ...", "busbw only",
  // 'column "1 node" = 8 GPUs'.
  void note_comment(std::string_view c, long line) {
    if (starts_with(c, "COLLECTIVE:")) {
      auto tok = tokens(c.substr(11));
      if (!tok.empty()) {
        std::string first(tok[0]);
        while (!first.empty() && !std::isalnum(static_cast<unsigned char>(first.back()))) first.pop_back();
        if (auto col = try_parse_collective(first)) {
          finish_run();
          set_collective(*col, "COLLECTIVE note (line " + std::to_string(line) + ")");
        }
      }
    }
    if (icontains(c, "busbw only")) facts_.busbw_only = true;
    // column "NAME" = N GPUs
    std::string lc = lower(c);
    std::size_t pos = 0;
    while ((pos = lc.find("column \"", pos)) != std::string::npos) {
      std::size_t q1 = pos + 8;
      std::size_t q2 = lc.find('"', q1);
      if (q2 == std::string::npos) break;
      std::string colname = lc.substr(q1, q2 - q1);
      std::string_view rest = std::string_view(lc).substr(q2 + 1);
      rest = trim(rest);
      if (!rest.empty() && rest.front() == '=') {
        auto tk = tokens(rest.substr(1));
        if (tk.size() >= 2 && (starts_with(tk[1], "gpus") || starts_with(tk[1], "gpu") || starts_with(tk[1], "ranks"))) {
          if (auto n = parse_int(tk[0]); n && *n > 0 && *n < 1000000) facts_.column_ranks[colname] = static_cast<int>(*n);
        }
      }
      pos = q2;
    }
  }

  static std::optional<Kind> column_kind(std::string_view t) {
    if (t == "size") return Kind::Size;
    if (t == "count") return Kind::Count;
    if (t == "type") return Kind::Type;
    if (t == "redop") return Kind::Redop;
    if (t == "root") return Kind::Root;
    if (t == "time" || t == "cputime") return Kind::Time;
    if (t == "algbw") return Kind::AlgBw;
    if (t == "busbw") return Kind::BusBw;
    if (t == "#wrong" || t == "wrong") return Kind::Wrong;
    if (t == "error") return Kind::Error;
    if (t == "timestamp") return Kind::Timestamp;
    if (t.size() > 2 && t.substr(0, 2) == "i_") return Kind::PerIteration;
    return std::nullopt;
  }

  bool is_table_header(const std::vector<std::string_view>& tok) const {
    if (tok.size() < 2 || tok[0] != "size") return false;
    int known = 0;
    bool timing = false;
    for (auto t : tok) {
      auto k = column_kind(t);
      if (!k) return false;
      ++known;
      if (*k == Kind::Time || *k == Kind::AlgBw || *k == Kind::BusBw) timing = true;
    }
    return timing && known >= 2;
  }

  void start_table(const std::vector<std::string_view>& tok, long line) {
    end_pipe_table();
    finish_run();
    table_open_ = false;
    cols_.clear();
    std::map<Kind, int> seen;
    std::map<std::string, int> seen_statistic;
    for (auto t : tok) {
      Column col;
      col.kind = *column_kind(t);
      col.name = std::string(t);
      col.percent = col.kind == Kind::PerIteration && col.name.back() == '%';
      // A name met again is the in-place half (PerIteration columns by name: i_min and i_max are one kind).
      int& n = col.kind == Kind::PerIteration ? seen_statistic[col.name] : seen[col.kind];
      col.set = n > 0 ? 1 : 0;
      ++n;
      cols_.push_back(col);
    }
    has_in_place_ = std::any_of(cols_.begin(), cols_.end(), [](const Column& c) { return c.set == 1 && c.kind == Kind::Time; }) ||
                    std::any_of(cols_.begin(), cols_.end(), [](const Column& c) { return c.set == 1 && (c.kind == Kind::AlgBw); });
    table_open_ = true;
    table_line_ = line;
    units_seen_ = false;
    time_mult_ = 1.0;
    last_size_.reset();
    ++runs_;
  }

  void close_table() { table_open_ = false; }

  // "(B) (elements) (us) (GB/s) (GB/s) (us) (GB/s) (GB/s)"
  // With a timestamp column (-Z) the line ends with its strftime format ("%Y-%m-%d %H:%M:%S"), not in parentheses.
  bool units_line(const std::vector<std::string_view>& tok, long line) {
    if (tok.empty() || tok[0].empty() || tok[0].front() != '(') return false;
    const bool timestamp_column = table_open_ && !cols_.empty() && cols_.back().kind == Kind::Timestamp;
    std::size_t units = 0;  // the leading parenthesised tokens: the units
    while (units < tok.size() && tok[units].front() == '(' && tok[units].back() == ')') ++units;
    for (std::size_t i = units; i < tok.size(); ++i)
      if (!timestamp_column || tok[i].find('%') == std::string_view::npos) return false;
    if (!table_open_) return true;
    std::size_t u = 0;
    for (auto& col : cols_) {
      if (col.kind != Kind::Size && col.kind != Kind::Count && col.kind != Kind::Time && col.kind != Kind::AlgBw &&
          col.kind != Kind::BusBw && col.kind != Kind::PerIteration)
        continue;
      if (u >= units) break;
      std::string unit(tok[u].substr(1, tok[u].size() - 2));
      ++u;
      switch (col.kind) {
        case Kind::Size:
          if (unit != "B") fail(line, "unknown unit '(" + unit + ")' for column size (expected (B))");
          break;
        case Kind::Count:
          if (unit != "elements") fail(line, "unknown unit '(" + unit + ")' for column count (expected (elements))");
          break;
        case Kind::Time: {
          auto m = time_unit_to_us(unit);
          if (!m) fail(line, "unknown time unit '(" + unit + ")' (known: ns, us, ms, s)");
          time_mult_ = *m;
          break;
        }
        case Kind::PerIteration: {
          col.percent = unit == "%";
          if (col.percent) break;
          auto m = time_unit_to_us(unit);
          if (!m) fail(line, "unknown unit '(" + unit + ")' for column " + col.name + " (known: ns, us, ms, s, %)");
          col.to_us = *m;
          break;
        }
        default:
          if (unit != "GB/s") fail(line, "unknown bandwidth unit '(" + unit + ")' (expected (GB/s))");
      }
    }
    units_seen_ = true;
    return true;
  }

  void data_row(const std::vector<std::string_view>& tok, long line) {
    const bool has_timestamp = !cols_.empty() && cols_.back().kind == Kind::Timestamp;
    if (tok.size() != cols_.size() && !(has_timestamp && tok.size() + 1 >= cols_.size())) {
      fail(line, "the table header (line " + std::to_string(table_line_) + ") has " + std::to_string(cols_.size()) +
                     " columns but this row has " + std::to_string(tok.size()) +
                     " (a column count that changes mid-table: truncated or merged lines?)");
    }
    if (!units_seen_ && !warned_units_) {
      add_warning(result_, name_ + ":" + std::to_string(table_line_) +
                               ": no units line under the table header; using nccl-tests' units (B, us, GB/s)");
      warned_units_ = true;
    }
    ++result_.rows;
    std::int64_t size = -1;
    std::string dtype;
    for (std::size_t i = 0; i < cols_.size() && i < tok.size(); ++i) {
      if (cols_[i].kind == Kind::Size) {
        auto v = parse_grouped_uint(tok[i]);
        if (!v) fail(line, "'" + std::string(tok[i]) + "' is not a byte count", "size");
        size = *v;
      } else if (cols_[i].kind == Kind::Type) {
        dtype = std::string(tok[i]);
      }
    }
    if (size < 0) fail(line, "row without a size column");
    check_order(size, line, "");
    for (int set = 0; set < (has_in_place_ ? 2 : 1); ++set) {
      Pending p;
      p.s.line = line;
      p.s.bytes = size;
      p.s.in_place = set == 1;
      p.s.dtype = canonical_dtype(!dtype.empty() ? dtype : (!facts_.cmd_dtype.empty() ? facts_.cmd_dtype : "float"));
      bool na = false;
      for (std::size_t i = 0; i < cols_.size() && i < tok.size(); ++i) {
        const Column& col = cols_[i];
        if (col.set != set) continue;
        const std::string v(tok[i]);
        switch (col.kind) {
          case Kind::Time: {
            if (v == "N/A") { na = true; break; }
            auto d = parse_double(v);
            if (!d) fail(line, "'" + v + "' is not a number", col.name);
            if (!std::isfinite(*d)) fail(line, "non-finite time '" + v + "'", col.name);
            if (*d < 0) fail(line, "negative time '" + v + "'", col.name);
            p.time_us = *d * time_mult_;
            break;
          }
          case Kind::AlgBw:
          case Kind::BusBw: {
            if (v == "N/A") { na = true; break; }
            auto d = parse_double(v);
            if (!d) fail(line, "'" + v + "' is not a number", col.name);
            if (!std::isfinite(*d)) fail(line, "non-finite bandwidth '" + v + "'", col.name);
            (col.kind == Kind::AlgBw ? p.algbw_text : p.busbw_text) = v;
            break;
          }
          case Kind::Wrong: {
            if (v == "N/A") break;  // validation disabled (-c 0): not a failure
            auto d = parse_double(v);
            if (!d || !std::isfinite(*d) || *d < 0) fail(line, "'" + v + "' is not a wrong-element count", col.name);
            p.s.wrong = saturated_count(*d);
            break;
          }
          case Kind::PerIteration:
            per_iteration_statistic(col, v, line, &p);
            break;
          case Kind::Error: {
            auto d = parse_double(v);
            if (!d && v != "N/A") fail(line, "'" + v + "' is not a number", col.name);
            if (d && !std::isfinite(*d)) fail(line, "non-finite error '" + v + "'", col.name);
            break;
          }
          default: break;
        }
      }
      if (na || p.s.wrong > 0) p.failed = true;
      if (size == 0) p.failed = true;
      if (!p.time_us && !na && p.algbw_text.empty()) fail(line, "row has neither a time nor an algbw value");
      pending_.push_back(std::move(p));
    }
  }

  // One per-iteration statistic of a placement: i_min, i_max (and i_p10, i_p90) are the sample's min_us, max_us
  // (p10_us, p90_us); any other is kept as extra "<name>_us" (i_p99 -> p99_us) or, a percentage, "<name>_pct"
  // (i_cv% -> cv_pct). N/A (nothing timed) leaves it unrecorded.
  void per_iteration_statistic(const Column& col, const std::string& v, long line, Pending* p) {
    Sample* s = &p->s;
    if (v == "N/A") return;
    auto d = parse_double(v);
    if (!d) fail(line, "'" + v + "' is not a number", col.name);
    if (!std::isfinite(*d) || *d < 0) fail(line, "'" + v + "' is not a per-iteration statistic (finite, >= 0)", col.name);
    std::string stat = col.name.substr(2);
    if (!stat.empty() && stat.back() == '%') stat.pop_back();
    if (col.percent) {
      s->extra[stat + "_pct"] = v;
      return;
    }
    const double us = *d * col.to_us;
    if (stat == "min") s->min_us = us;
    else if (stat == "max") s->max_us = us;
    else if (stat == "p10") s->p10_us = us;
    else if (stat == "p90") s->p90_us = us;
    else {
      // Never a sample column's name (an i_time would be a second time_us column): those keep their i_.
      std::string key = stat + "_us";
      const auto& columns = sample_columns();
      if (std::find(columns.begin(), columns.end(), key) != columns.end()) key = "i_" + key;
      s->extra[key] = col.to_us == 1.0 ? v : format_number(us, "%.6g");
      p->timing_extras.push_back(key);
    }
  }

  void check_order(std::int64_t size, long line, const std::string& key) {
    auto it = last_size_by_key_.find(key);
    if (it != last_size_by_key_.end()) {
      if (size < it->second)
        fail(line, "size " + std::to_string(size) + " after " + std::to_string(it->second) +
                       ": sizes must increase within a run (a new run starts with a new table header)", "size");
      if (size == it->second) {
        ++result_.duplicates;
        add_warning(result_, name_ + ":" + std::to_string(line) + ": duplicated size " + std::to_string(size) + " (kept)");
      }
    }
    last_size_by_key_[key] = size;
    last_size_ = size;
  }

  // ---- markdown pipe tables (ingest/pipe_table.h reads them; here they become samples) ----
  void pipe_line(std::string_view s, long line) {
    auto c = pipe_cells(s);
    if (!pipe_open_) {
      end_pipe_table();
      finish_run();
      pipe_header_ = c;
      pipe_header_line_ = line;
      pipe_open_ = true;
      pipe_sep_ = false;
      return;
    }
    if (!pipe_sep_) {
      if (!is_pipe_separator(c)) fail(line, "markdown table header (line " + std::to_string(pipe_header_line_) + ") is not followed by a '|---|' line");
      pipe_sep_ = true;
      pcols_ = pipe_columns(pipe_header_, facts_.column_ranks, name_, line);
      ++runs_;
      last_size_by_key_.clear();
      has_pipe_size_ = std::any_of(pcols_.begin(), pcols_.end(), [](const PipeColumn& p) { return p.kind == PipeColumnKind::Size; });
      return;
    }
    pipe_row(c, line);
  }

  void pipe_row(const std::vector<std::string>& c, long line) {
    if (c.size() != pcols_.size())
      fail(line, "the markdown table header (line " + std::to_string(pipe_header_line_) + ") has " +
                     std::to_string(pcols_.size()) + " columns but this row has " + std::to_string(c.size()));
    ++result_.rows;
    const PipeRow row = parse_pipe_row(pcols_, c, heading_, name_, line);
    if (!row.size) fail(line, "the table has no size/payload column and no heading above it names the payload (e.g. '## ... 8GiB payload')");
    const std::int64_t size = *row.size;
    {
      std::string key = std::to_string(row.ranks.value_or(0)) + "|" + (row.collective ? to_string(*row.collective) : "") + "|" + row.variant;
      if (has_pipe_size_) check_order(size, line, key);
      else {
        auto [it, fresh] = pipe_keys_.insert(key + "|" + std::to_string(size));
        (void)it;
        if (!fresh) {
          ++result_.duplicates;
          add_warning(result_, name_ + ":" + std::to_string(line) + ": duplicated row for size " + std::to_string(size) + " (kept)");
        }
      }
    }
    auto make = [&](const std::string& variant) {
      Pending p;
      p.s.line = line;
      p.s.bytes = size;
      p.s.dtype = "unknown";
      p.nranks = row.ranks;
      p.collective = row.collective;
      for (const auto& [k, v] : row.other) p.s.extra[k] = v;
      // The heading above the table tells tables of different machines or setups apart.
      if (!heading_.text.empty()) p.s.extra["section"] = heading_.text;
      std::string var = row.variant;
      if (!variant.empty()) var = var.empty() ? variant : var + "; " + variant;
      if (!var.empty()) p.s.extra["variant"] = var;
      return p;
    };
    const std::string& alg_text = row.algbw_text;
    const std::string& bus_text = row.busbw_text;
    const bool have_main = row.time_us || !alg_text.empty() || !bus_text.empty();
    if (have_main) {
      Pending p = make("");
      p.time_us = row.time_us;
      p.algbw_text = alg_text == "N/A" ? "" : alg_text;
      p.busbw_text = bus_text == "N/A" ? "" : bus_text;
      p.failed = alg_text == "N/A" || (alg_text.empty() && bus_text == "N/A");
      pending_.push_back(std::move(p));
    }
    // The first sample of a row is its primary one; samples from further bandwidth columns name their column.
    bool primary_taken = have_main;
    for (auto& [pc, text] : row.further_bw) {
      Pending p = make(pc->variant);
      if (primary_taken) p.s.extra["bw_column"] = pc->header;
      primary_taken = true;
      if (pc->kind == PipeColumnKind::AlgBw) p.algbw_text = text == "N/A" ? "" : text;
      else p.busbw_text = text == "N/A" ? "" : text;
      p.failed = text == "N/A";
      pending_.push_back(std::move(p));
    }
    for (auto& [pc, text] : row.unnamed_bw) {
      if (!facts_.busbw_only)
        fail(line, "column '" + pc->header + "' holds bandwidths but neither it nor a note says whether they are busbw or algbw", pc->header);
      Pending p = make(pc->variant);
      if (primary_taken) p.s.extra["bw_column"] = pc->header;
      primary_taken = true;
      p.nranks = pc->ranks;
      if (pc->nodes) p.s.nnodes = *pc->nodes;
      p.busbw_text = text == "N/A" ? "" : text;
      p.failed = text == "N/A";
      pending_.push_back(std::move(p));
    }
    if (!have_main && row.further_bw.empty() && row.unnamed_bw.empty())
      fail(line, "row has no time or bandwidth column arfit can read");
  }

  void end_pipe_table() {
    pipe_open_ = false;
    pipe_sep_ = false;
  }

  // ---- a run ends: decide collective and rank count, compute timings, emit samples ----
  void finish_run() {
    if (pending_.empty()) {
      last_size_by_key_.clear();
      pipe_keys_.clear();
      return;
    }
    const long first_line = pending_.front().s.line;
    std::optional<Collective> run_coll = facts_.collective;
    std::string coll_from = facts_.collective_from;
    // The file name only where the log names no program: a run it says is of another program is not the name's.
    if (!run_coll && facts_.unmodelled_program.empty() && (run_coll = collective_in_file_name(name_))) coll_from = "file name";
    for (auto& p : pending_) {
      std::optional<Collective> c = options_.collective ? options_.collective : (p.collective ? p.collective : run_coll);
      if (!c && !facts_.unmodelled_program.empty())
        fail(first_line, "the log is of " + facts_.unmodelled_program + ", which measures no collective arfit models (" +
                             known_collectives() + "); pass --collective where it is one of them");
      if (!c)
        fail(first_line, "cannot tell which collective this table measures (no 'Collective test starting', no X_perf "
                         "command, no collective in the file name): pass --collective");
      p.s.collective = *c;
    }
    assign_rank_counts(first_line);
    std::string device_name;
    for (const auto& d : facts_.device_names) device_name += (device_name.empty() ? "" : " / ") + d;
    std::size_t zero = 0;
    for (auto& p : pending_) {
      if (p.s.bytes == 0) ++zero;
      result_.samples.push_back(complete_sample(std::move(p), device_name));
    }
    if (zero)
      add_warning(result_, name_ + ":" + std::to_string(first_line) + ": " + std::to_string(zero) +
                               " samples of 0 bytes kept as failed (nothing a model can use was timed)");
    if (!device_name.empty()) result_.meta.emplace_back("device", device_name);
    if (run_coll) result_.meta.emplace_back("collective", to_string(*run_coll) + " (from " + coll_from + ")");
    if (!facts_.cmd_text.empty()) result_.meta.emplace_back("command", facts_.cmd_text);
    pending_.clear();
    last_size_by_key_.clear();
    pipe_keys_.clear();
  }

  // Rank count of each pending sample: --nranks, else the table's, else the busbw/algbw ratio (per collective,
  // over the rows that give both), else the 'Using devices' lines, else the command line. Disagreements warn.
  void assign_rank_counts(long first_line) {
    std::map<Collective, RankInference> inference;
    for (const auto& p : pending_) {
      if (p.nranks || p.algbw_text.empty() || p.busbw_text.empty()) continue;
      inference.emplace(p.s.collective, RankInference(p.s.collective)).first->second.add(p.algbw_text, p.busbw_text);
    }
    const int devices = facts_.device_lines;  // 0: no device list
    std::set<std::string> warned;
    for (auto& p : pending_) {
      std::optional<int> ratio;
      if (auto it = inference.find(p.s.collective); it != inference.end()) ratio = it->second.rank_count();
      int n = 0;
      std::string from;
      if (options_.nranks) {
        n = *options_.nranks;
        from = "--nranks";
        if (ratio && *ratio != n && warned.insert("opt").second)
          add_warning(result_, name_ + ":" + std::to_string(first_line) + ": --nranks " + std::to_string(n) +
                                   " but busbw/algbw says " + std::to_string(*ratio) + " ranks; using --nranks");
      } else if (p.nranks) {
        n = *p.nranks;
        from = "table";
      } else if (ratio) {
        n = *ratio;
        from = "busbw/algbw ratio";
        if (devices > 0 && devices != n && warned.insert("dev").second)
          add_warning(result_, name_ + ":" + std::to_string(first_line) + ": " + std::to_string(devices) +
                                   " 'Using devices' lines but busbw/algbw = bus factor of " + std::to_string(n) +
                                   " ranks; using " + std::to_string(n));
        if (facts_.cmd_ranks && *facts_.cmd_ranks != n && warned.insert("cmd").second)
          add_warning(result_, name_ + ":" + std::to_string(first_line) + ": the command line gives " +
                                   std::to_string(*facts_.cmd_ranks) + " ranks but busbw/algbw = bus factor of " +
                                   std::to_string(n) + " ranks; using " + std::to_string(n));
      } else if (devices > 0) {
        n = devices;
        from = "'Using devices' lines";
      } else if (facts_.cmd_ranks) {
        n = *facts_.cmd_ranks;
        from = "command line";
      } else {
        fail(p.s.line, "cannot tell the rank count (no 'Using devices' lines, no -g/-n/-np in a command line, and "
                     "busbw/algbw does not pin it for " + to_string(p.s.collective) + "): pass --nranks");
      }
      if (n < 1) fail(p.s.line, "rank count " + std::to_string(n) + " is not positive");
      p.s.nranks = n;
      if (warned.insert("from:" + from).second) result_.meta.emplace_back("nranks_from", from + " (" + std::to_string(n) + ")");
    }
  }

  // The sample of a pending row with its collective and rank count set: the run's facts, and the time (the time
  // column, else bytes / algbw, else bytes / (busbw / bus factor)); failed, with no time, when there is none.
  Sample complete_sample(Pending p, const std::string& device_name) {
    Sample& s = p.s;
    s.strategy = strategy::kNccl;
    s.backend = "nccl-tests";
    s.source = basename_of(name_);
    s.device = device_name;
    s.extra["system"] = stem_of(name_);
    // Where the ranks ran ('Using devices'): the same device on the same hosts is one machine whatever the file,
    // which is how crosshw tells two logs of one cluster (another setting, another size range) from two machines.
    if (!facts_.hosts.empty()) s.extra["hosts"] = join(facts_.hosts, " ");
    if (network_) s.extra["network"] = to_string(*network_);
    if (s.nnodes <= 1) s.nnodes = !facts_.hosts.empty() ? static_cast<int>(facts_.hosts.size()) : facts_.cmd_nodes.value_or(1);
    s.iterations = facts_.iters;
    bool failed = p.failed;
    if (!failed) {
      if (p.time_us) {
        s.time_us = *p.time_us;
      } else if (!p.algbw_text.empty()) {
        double a = *parse_double(p.algbw_text);
        if (a > 0) {
          s.time_us = static_cast<double>(s.bytes) / (a * 1e3);
          s.extra["time_from"] = "algbw";
        } else {
          failed = true;
        }
      } else if (!p.busbw_text.empty()) {
        double b = *parse_double(p.busbw_text);
        double f = bus_factor(s.collective, s.nranks);
        if (b > 0 && f > 0) {
          s.time_us = static_cast<double>(s.bytes) / (b / f * 1e3);
          s.extra["time_from"] = "busbw";
        } else {
          failed = true;
        }
      } else {
        failed = true;
      }
      if (!failed && !(std::isfinite(s.time_us) && s.time_us > 0)) failed = true;
    }
    if (failed) {
      s.status = SampleStatus::Failed;
      s.time_us = 0;
      // A failed sample carries no timing: nor the per-iteration ones (min_us, max_us, p10_us, p90_us, "<stat>_us").
      s.min_us = s.max_us = s.p10_us = s.p90_us = 0;
      for (const std::string& key : p.timing_extras) s.extra.erase(key);
      ++result_.failed;
    }
    return std::move(s);
  }

  void handle(std::string_view raw, long line) {
    std::string_view s = trim(strip_prefixes(raw));
    if (s.empty()) {
      if (pipe_open_) end_pipe_table();
      return;
    }
    if (starts_with(s, "```") || starts_with(s, "~~~")) return;  // markdown fences
    if (s.front() == '|') {
      pipe_line(s, line);
      return;
    }
    if (pipe_open_) end_pipe_table();
    bool comment = false;
    std::string_view c = s;
    if (c.front() == '#') {
      comment = true;
      if (starts_with(c, "##")) {
        const auto body = c.find_first_not_of('#');
        heading_ = parse_pipe_heading(body == std::string_view::npos ? std::string_view() : trim(c.substr(body)));
        return;
      }
      c = trim(c.substr(1));
    }
    if (c.empty()) return;
    auto tok = tokens(c);
    if (is_table_header(tok)) {
      start_table(tok, line);
      return;
    }
    if (tok.size() >= 1 && (tok[0] == "out-of-place" || tok[0] == "in-place")) return;
    if (units_line(tok, line)) return;
    if (!comment && table_open_ && parse_grouped_uint(tok[0])) {
      data_row(tok, line);
      return;
    }
    // A row shaped like the table's data rows whose size is not a byte count (negative, or beyond int64):
    // not read, but counted and named, never dropped silently.
    if (!comment && table_open_ && tok.size() >= 4 && parse_double(tok[0])) {
      ++result_.dropped;
      add_warning(result_, name_ + ":" + std::to_string(line) + ": row dropped: size '" + std::string(tok[0]) +
                               "' is not a byte count (negative or beyond 2^63)");
      return;
    }
    if (!comment && !table_open_ && !cols_.empty() && tok.size() == cols_.size() && parse_grouped_uint(tok[0]) &&
        tok.size() >= 4 && parse_double(tok[tok.size() - 2]))
      fail(line, "a data row outside a table (after the footer of the run that starts at line " +
                     std::to_string(table_line_) + "): start a new run with a table header");
    if (header_fact(c, s, line)) return;
    // A header that states the inter-node network (a curated log's "# HARDWARE: ... 8x 50GBps EFA v4 inter-node"):
    // the file's first statement holds for all its samples (model/stated_network.h; --network states it otherwise).
    if (comment && !network_) {
      if (auto n = find_stated_network(c)) {
        network_ = n;
        result_.meta.emplace_back("network", to_string(*n) + " (line " + std::to_string(line) + ")");
      }
    }
    // Command lines (prompts, COMMAND notes, launcher lines) and free notes.
    if (contains(c, "_perf") || starts_with(c, "COMMAND") || contains(c, "mpirun") || contains(c, "srun ")) note_command(c, line);
    if (comment || starts_with(c, "COLLECTIVE:")) note_comment(c, line);
    if (contains(c, "NCCL version ")) {
      auto pos = c.find("NCCL version ");
      auto v = tokens(c.substr(pos + 13));
      if (!v.empty()) result_.meta.emplace_back("nccl_version", std::string(v[0]));
    }
  }

  const std::string& text_;
  const std::string& name_;
  const Options& options_;
  IngestResult result_;
  Facts facts_;
  std::vector<Column> cols_;
  bool has_in_place_ = false;
  bool table_open_ = false;
  long table_line_ = 0;
  bool units_seen_ = false;
  bool warned_units_ = false;
  double time_mult_ = 1.0;
  std::optional<std::int64_t> last_size_;
  std::optional<StatedNetwork> network_;  // the network a comment line states (find_stated_network)
  std::map<std::string, std::int64_t> last_size_by_key_;
  std::set<std::string> pipe_keys_;
  std::vector<Pending> pending_;
  int runs_ = 0;
  // pipe tables
  bool pipe_open_ = false, pipe_sep_ = false, has_pipe_size_ = false;
  long pipe_header_line_ = 0;
  std::vector<std::string> pipe_header_;
  std::vector<PipeColumn> pcols_;
  PipeHeading heading_;  // the last markdown heading
};

}  // namespace

IngestResult read_nccl_tests_text(const std::string& text, const std::string& name, const Options& options) {
  return NcclTextReader(text, name, options).run();
}

}  // namespace arfit::ingest::detail
