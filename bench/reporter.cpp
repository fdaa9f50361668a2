#include "bench/reporter.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "model/sample_csv.h"
#include "model/text.h"

namespace arfit::bench {

// ---------------------------------------------------------------- console

static std::string hms(double s) {
  long t = static_cast<long>(std::lround(std::max(0.0, s)));
  std::ostringstream os;
  if (t >= 3600) os << t / 3600 << "h" << std::setw(2) << std::setfill('0') << (t % 3600) / 60 << "m";
  else if (t >= 60) os << t / 60 << "m" << std::setw(2) << std::setfill('0') << t % 60 << "s";
  else os << t << "s";
  return os.str();
}

void ConsoleReporter::start(const RunHeader& header, std::size_t planned, std::size_t already_done) {
  planned_ = planned;
  done_ = already_done;
  if (quiet_) return;
  for (const auto& [k, v] : header)
    if (k == "backend" || k == "device" || k == "plan" || k == "hostnames" || k == "world_size")
      out_ << "# " << k << ": " << v << "\n";
  out_ << "# " << planned << " planned cases";
  if (already_done) out_ << ", " << already_done << " already in the output (--resume)";
  out_ << "\n" << std::flush;
}

void ConsoleReporter::report(const Record& r) {
  ++done_;
  ++this_session_;
  session_s_ += r.wall_s;
  const std::size_t width = std::to_string(planned_).size();
  std::ostringstream line;
  line << "[" << std::setw(static_cast<int>(width)) << done_ << "/" << planned_ << "] " << r.c.describe();
  if (r.sample.ok()) {
    line << std::fixed << std::setprecision(2) << "  " << r.sample.time_us << " us (p10 " << r.sample.p10_us << ", p90 "
         << r.sample.p90_us << ")  busbw " << std::setprecision(3) << r.bus_bw_gbps << " GB/s";
  } else {
    line << "  FAILED: " << r.note;
  }
  const double eta = session_s_ / static_cast<double>(this_session_) * static_cast<double>(planned_ - std::min(planned_, done_));
  line << "  ETA " << hms(eta);
  if (!r.sample.ok()) err_ << line.str() << "\n" << std::flush;
  else if (!quiet_) out_ << line.str() << "\n" << std::flush;
}

void ConsoleReporter::finish(const RunSummary& s, OutputSet&) {
  if (quiet_ && s.failed == 0 && !s.stopped_early) return;
  std::ostream& o = s.failed ? err_ : out_;
  o << "# " << s.measured << " cases measured in " << hms(s.wall_s);
  if (s.resumed) o << ", " << s.resumed << " resumed";
  if (s.failed) o << ", " << s.failed << " FAILED (" << s.timed_out << " timed out)";
  if (s.stopped_early) o << "; stopped early (--on-timeout stop)";
  o << "\n" << std::flush;
}

namespace {

std::string percent(double fraction) { return format_number(100.0 * fraction, "%.3g") + " %"; }

std::string of_budget(double spent_s, double budget_s) {
  return format_duration(spent_s) + (std::isfinite(budget_s) ? " of " + format_duration(budget_s) + " budget" : "");
}

// Round 0's seed (planner/loop.h seed_cases), as the round line and the stop report name it.
constexpr const char* kSeedWords = "the smallest size and the one three quarters up of every curve";

// What the seed took and what the loop chose; when the budget left no choice, that the table is the seed's.
std::string seed_share_words(const StopReport& r) {
  std::ostringstream s;
  s << "# the seed (" << kSeedWords
    << (r.seed_tops ? ", then the tops of its second stage" : "") << ") took " << r.seed_cases << " of the measured cases in "
    << format_duration(r.seed_s) << "; the loop chose " << r.chosen_cases << " by their value\n";
  if (!r.budget_ended() || r.chosen_cases > 0) return s.str();
  if (r.seed_cases < r.seed_anchors)
    s << "# the budget ended inside the seed (" << r.seed_cases << " of its " << r.seed_anchors
      << " anchors measured): some curves have one size or none, and the table leans on guesses there; the whole seed "
         "needs more than these "
      << format_duration(r.seed_s) << ", and the loop measures where the models are unsure only after it\n";
  else
    s << "# the budget ended before the loop could choose a case: the table is the seed's, what a fixed plan of two "
         "sizes per curve gives; the loop measures where the models are unsure only with a budget well beyond the "
         "seed's "
      << format_duration(r.seed_s) << "\n";
  return s.str();
}

}  // namespace

void ConsoleRoundReporter::round(const RoundProgress& p) {
  if (quiet_) return;
  std::ostringstream line;
  line << "# round " << p.round << ": " << p.batch << " cases to measure (" << p.measured << " of " << p.planned
       << " measured so far, " << of_budget(p.spent_s, p.budget_s) << ")";
  if (p.assessed)
    line << "; " << p.uncertain_cells << " of " << p.cells << " cells uncertain, expected regret " << percent(p.expected_regret)
         << " (below " << percent(p.regret_bound) << " with 90 % probability)";
  if (p.seed_tops) line << "; the seed's second stage: the largest size of every curve whose cells make it worth an anchor";
  else if (!p.assessed)
    line << "; the seed: " << kSeedWords;
  out_ << line.str() << "\n" << std::flush;
}

void ConsoleRoundReporter::stop(const StopReport& r) {
  std::ostringstream s;
  s << "# adaptive plan stopped after " << r.rounds << " round" << (r.rounds == 1 ? "" : "s") << ": " << r.why << "\n";
  s << "# measured " << r.measured << " of " << r.planned << " cases (" << percent(r.planned ? double(r.measured) / r.planned : 0)
    << ") in " << format_duration(r.spent_s) << " of measuring; the exhaustive grid would take about "
    << format_duration(r.exhaustive_s) << " (estimated: measured cases as they took, the rest as predicted; "
    << percent(r.exhaustive_s > 0 ? r.spent_s / r.exhaustive_s : 0) << " of it spent)\n";
  s << "# table: " << r.cells << " cells, " << r.uncertain_cells << " uncertain; expected geometric-mean regret "
    << percent(r.expected_regret) << ", below " << percent(r.regret_bound) << " with 90 % probability";
  if (!r.worst_cell.empty()) s << "; most uncertain cell " << r.worst_cell << " (expected regret " << percent(r.worst_regret) << ")";
  s << "\n" << seed_share_words(r);
  out_ << s.str() << std::flush;
}

// ---------------------------------------------------------------- CSV

const std::vector<std::string>& CsvReporter::extra_columns() {
  static const std::vector<std::string> v = {"note"};
  return v;
}

const std::vector<std::string>& CsvReporter::adaptive_columns() {
  static const std::vector<std::string> v = {"note", "round", "wall_s"};
  return v;
}

std::string journal_path(const std::string& output) { return output + ".partial"; }

namespace {

// An empty file holds no rows (a run killed before its header): as good as none.
bool has_content(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec) && std::filesystem::file_size(path, ec) > 0 && !ec;
}

// The rows --resume continues: each a case of this run, once, from this backend (inspect_output).
// Each row's line is the one parse_samples_csv recorded (Sample::line).
void check_resumed_rows(const SampleFile& f, const std::string& source, const std::set<std::string>* planned,
                        const std::string& backend) {
  std::map<std::string, long> seen;
  for (const Sample& s : f.samples) {
    const long line = s.line;
    const std::string key = sample_key(s), row = "--resume: the row '" + case_of_sample(s).describe() + "'";
    if (!backend.empty() && s.backend != backend)
      throw InputError(source, line, "backend", "--resume: a row of '" + s.backend + "' in a run of '" + backend +
                                                     "' (an edited or foreign row); use another -o or --overwrite");
    if (planned && !planned->count(key))
      throw InputError(source, line, "", row + " is not a case of this run's plan (an edited row, or a run started with "
                                               "another world size or on a node with other memory); use another -o or --overwrite");
    if (const auto [it, fresh] = seen.emplace(key, line); !fresh)
      throw InputError(source, line, "", row + " repeats line " + std::to_string(it->second) +
                                             " (an edited file); use another -o or --overwrite");
  }
}

// The value of `key` in a header (a sample file's meta or a run's header), "" when absent.
std::string meta_value(const std::vector<std::pair<std::string, std::string>>& header, const std::string& key) {
  for (const auto& [k, v] : header)
    if (k == key) return v;
  return "";
}

// True when another process holds the lock of the journal `journal` (CsvReporter::start takes it for the whole
// run): an arbench run still measuring into it.
bool journal_in_use(const std::string& journal) {
  const int fd = ::open(journal.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool busy = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the lock when it was taken
  return busy;
}

GridError journal_in_use_error(const std::string& journal, const std::string& output) {
  return GridError("-o/--output", "'" + journal + "' is the journal of an arbench run still measuring into '" + output +
                                      "'; wait for it to end, or give another -o");
}

// The file --resume continues, read whole: its bytes, how many of them are whole rows (a kill in the middle of a row
// leaves a partial last row, measured again), and the sample file those rows are.
struct ResumedFile {
  std::string bytes;
  std::size_t keep = 0;
  SampleFile file;
};

ResumedFile read_resumed_file(const std::string& source) {
  ResumedFile r;
  r.bytes = read_file_bytes(source);
  r.keep = r.bytes.size();
  if (!r.bytes.empty() && r.bytes.back() != '\n') {
    const auto nl = r.bytes.rfind('\n');
    r.keep = nl == std::string::npos ? 0 : nl + 1;
  }
  try {
    r.file = parse_samples_csv(normalize_text(r.bytes.substr(0, r.keep)), source);
  } catch (const InputError& e) {
    throw InputError(source, e.line(), e.field(), "--resume: the existing output is not a readable sample file: " + e.reason());
  }
  return r;
}

// The header of the file --resume continues against this run's: the same world size, grid and plan, CUDA-graph
// mode, device, timing and columns; each difference a usage error naming the option that differs.
void check_resumed_header(const std::vector<std::pair<std::string, std::string>>& meta,
                          const std::vector<std::string>& extra_columns, const std::string& source,
                          const std::string& grid_json, const std::string& cuda_graph, const std::string& device,
                          const RunHeader* run_header, const std::vector<std::string>& columns) {
  std::string old_grid, old_cuda_graph = "off", old_device;
  for (const auto& [k, v] : meta) {
    if (k == "grid") old_grid = v;
    if (k == "cuda_graph") old_cuda_graph = v;
    if (k == "device") old_device = v;
  }
  // Before the grid: another world size changes the default TP list, and the grid message would not say why. With
  // an explicit --tp the grid is the same on 2 and 3 ranks, and the kept header's world_size would misdescribe the rows.
  const std::string old_world = meta_value(meta, "world_size"), world = run_header ? meta_value(*run_header, "world_size") : "";
  if (!old_world.empty() && !world.empty() && old_world != world)
    throw GridError("--resume", "'" + source + "' was measured by " + old_world + " ranks, this run has " + world +
                                    "; resume with as many ranks (mpirun -np " + old_world + "), or use another -o or --overwrite");
  if (old_grid != grid_json)
    throw GridError("--resume", "'" + source + "' was written for a different grid or plan (" +
                                    (old_grid.empty() ? std::string("no grid recorded") : old_grid) +
                                    "); use another -o or --overwrite");
  // Graph replays and eager launches time different things (launch overhead amortised or not): one file, one mode.
  if (old_cuda_graph != cuda_graph)
    throw GridError("-G/--cuda-graph", "'" + source + "' was measured with cuda_graph: " + old_cuda_graph +
                                           ", this run with cuda_graph: " + cuda_graph +
                                           "; resume with the same -G/--cuda-graph, or use another -o or --overwrite");
  if (!device.empty() && old_device != device)
    throw GridError("--resume", "'" + source + "' was measured on " + (old_device.empty() ? std::string("an unrecorded device") : "'" + old_device + "'") +
                                    ", this run is on '" + device + "': one file holds one machine's run; use another -o");
  // The header is the first session's and stays: a session with other -w/-n/--buffers would add rows it misdescribes
  // (-n 5 rows under 'warmup 5, 20 timed iterations').
  const std::string old_timing = meta_value(meta, "timing"), timing = run_header ? meta_value(*run_header, "timing") : "";
  if (!old_timing.empty() && !timing.empty() && old_timing != timing)
    throw GridError("-w/-n/--buffers", "'" + source + "' was measured with timing '" + old_timing + "', this run with '" +
                                           timing + "'; resume with the same -w, -n and --buffers, or use another -o or --overwrite");
  if (extra_columns != columns)
    throw GridError("--resume", "'" + source + "' has different columns than this run writes (" + join(columns, ", ") +
                                    "; --plan adaptive adds round and wall_s)");
}

}  // namespace

OutputState inspect_output(const std::string& path, const std::string& grid_json, bool resume, bool overwrite,
                           const std::string& cuda_graph, const std::string& device, const std::set<std::string>* planned,
                           const std::string& backend, const RunHeader* run_header,
                           const std::vector<std::string>& columns) {
  OutputState st;
  if (is_standard_output(path))
    throw GridError("-o/--output", "'-' (standard output): the sample CSV is streamed into a journal FILE.partial that "
                                   "--resume continues and moved over FILE at the end; name a file (./- for a file named '-')");
  // Both become the output (the journal by its final move): not an input, a regular file (or a link to
  // one), writable; refused now, not after the run. The journal lies next to the file the output names (a
  // symbolic link's target), so that its final rename never crosses file systems.
  st.journal = journal_path(output_target(path));
  check_output_path(st.journal);
  const bool output_exists = has_content(path), journal_exists = has_content(st.journal);
  // A second run into the same -o while the first still measures: --overwrite removed the first's journal (its rows
  // lost, and it failed at the end with 'cannot set the permissions of FILE.partial'), --resume appended to it.
  if (journal_exists && journal_in_use(st.journal)) throw journal_in_use_error(st.journal, path);
  if (overwrite) return st;  // a fresh journal; the output is replaced only when the run ends
  if (!resume) {
    if (output_exists)
      throw GridError("-o/--output", "'" + path + "' exists; pass --resume to continue it or --overwrite to replace it");
    if (journal_exists)
      throw GridError("-o/--output", "'" + st.journal + "' exists (the rows of an interrupted run into '" + path +
                                         "'); pass --resume to continue it or --overwrite to discard it");
    return st;
  }
  if (!output_exists && !journal_exists) return st;  // nothing to resume: a fresh run
  // The journal, when there is one, is the newer state: the output is only replaced when a run ends.
  const std::string& source = journal_exists ? st.journal : path;
  // The journal is renamed over the output at the end: a symbolic link would be moved itself, not its file.
  std::error_code ec;
  if (journal_exists && std::filesystem::is_symlink(st.journal, ec))
    throw GridError("--resume", "'" + st.journal + "' is a symbolic link; the journal of -o/--output must be a regular file");
  // Everything is checked on a copy in memory; the journal is touched (its partial last row cut) only once it
  // is known to be continued, and the output never.
  ResumedFile r = read_resumed_file(source);
  SampleFile& f = r.file;
  check_resumed_header(f.meta, f.extra_columns, source, grid_json, cuda_graph, device, run_header, columns);
  check_resumed_rows(f, source, planned, backend);
  if (journal_exists) {
    if (r.keep != r.bytes.size()) {
      std::filesystem::resize_file(st.journal, r.keep, ec);
      if (ec) throw GridError("--resume", "cannot cut the partial last line of '" + st.journal + "': " + ec.message());
    }
    st.start = JournalStart::Continue;
  } else {
    st.start = JournalStart::CopyOfOutput;
    st.copied_output = r.bytes.substr(0, r.keep);
  }
  for (const auto& s : f.samples) st.finished.insert(sample_key(s));
  if (!f.samples.empty()) st.source = f.samples.front().source;
  st.rows = std::move(f.samples);
  return st;
}

CsvReporter::CsvReporter(std::string path, OutputState state, std::vector<std::string> columns)
    : path_(std::move(path)), state_(std::move(state)), columns_(std::move(columns)) {}

CsvReporter::~CsvReporter() {
  if (f_) std::fclose(f_);
}

void CsvReporter::open_journal() {
  if (f_) return;
  // The output's folder is created (e.g. out/ of the main job).
  std::error_code ec;
  const auto parent = std::filesystem::path(path_).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  const std::string& journal = state_.journal;
  if (state_.start == JournalStart::Continue) {
    f_ = std::fopen(journal.c_str(), "ab");
  } else {
    // A journal left by an earlier run (--overwrite discards it) is removed, not written through: if it is a
    // symbolic link, the file it names is not ours to truncate.
    std::filesystem::remove(journal, ec);
    f_ = std::fopen(journal.c_str(), "wb");
  }
  if (!f_) throw GridError("-o/--output", "cannot open '" + journal + "' for writing: " + std::strerror(errno));
  // Held until the process ends: another run's inspect_output sees the journal in use (journal_in_use).
  // Only another holder refuses the run: a file system without flock (ENOLCK on NFS without a lock daemon) measures
  // unlocked, as before the lock existed.
  if (::flock(fileno(f_), LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK) throw journal_in_use_error(journal, path_);
}

void CsvReporter::start(const RunHeader& header, std::size_t, std::size_t) {
  open_journal();
  const std::string& journal = state_.journal;
  if (state_.start != JournalStart::Continue) {
    const std::string start = state_.start == JournalStart::CopyOfOutput
                                  ? state_.copied_output
                                  : samples_csv_preamble(header, columns_);
    if (std::fwrite(start.data(), 1, start.size(), f_) != start.size() || std::fflush(f_) != 0)
      throw std::runtime_error("writing '" + journal + "' failed: " + std::strerror(errno));
    state_.copied_output.clear();
  }
}

void CsvReporter::report(const Record& r) {
  Sample s = r.sample;
  if (!r.note.empty()) s.extra["note"] = r.note;
  for (const std::string& c : columns_) {
    if (c == "round") s.extra["round"] = std::to_string(r.round);
    // Whole microseconds, as the runner rounds them, so the value read back is the one the loop decided with.
    if (c == "wall_s") s.extra["wall_s"] = format_number(r.wall_s, "%.6f");
  }
  const std::string row = samples_csv_row(s, columns_);
  // One write and a flush per case: a crash loses at most the case in flight (--resume reruns it).
  if (std::fwrite(row.data(), 1, row.size(), f_) != row.size() || std::fflush(f_) != 0)
    throw std::runtime_error("writing '" + state_.journal + "' failed: " + std::strerror(errno));
}

void CsvReporter::finish(const RunSummary&, OutputSet& outputs) {
  // The run ended (failed cases included): the journal becomes the output in one rename with the run's other
  // outputs, so the output is at every moment either the old file or the complete new one.
  std::FILE* f = f_;
  if (!f) return;  // never started
  f_ = nullptr;
  if (std::fclose(f) != 0) throw std::runtime_error("writing '" + state_.journal + "' failed: " + std::strerror(errno));
  outputs.add_written(path_, state_.journal);
}

// ---------------------------------------------------------------- JSON

namespace {

// A budget of infinity (none) is null: JSON has no infinity.
nlohmann::json seconds_or_null(double s) { return std::isfinite(s) ? nlohmann::json(s) : nlohmann::json(nullptr); }

nlohmann::json round_json(const RoundProgress& p) {
  nlohmann::json j = {{"round", p.round},       {"cases", p.batch},         {"measured_before", p.measured},
                      {"planned", p.planned},   {"spent_s", p.spent_s},     {"budget_s", seconds_or_null(p.budget_s)},
                      {"assessed", p.assessed}, {"seed_tops", p.seed_tops}};
  if (p.assessed) {
    j["cells"] = p.cells;
    j["uncertain_cells"] = p.uncertain_cells;
    j["expected_regret"] = p.expected_regret;
    j["regret_bound"] = p.regret_bound;
  }
  return j;
}

nlohmann::json stop_json(const StopReport& r) {
  nlohmann::json j = {{"rounds", r.rounds},
                      {"reason", r.reason},
                      {"why", r.why},
                      {"budget_ended", r.budget_ended()},
                      {"measured", r.measured},
                      {"planned", r.planned},
                      {"spent_s", r.spent_s},
                      {"exhaustive_s", r.exhaustive_s},
                      {"cells", r.cells},
                      {"uncertain_cells", r.uncertain_cells},
                      {"expected_regret", r.expected_regret},
                      {"regret_bound", r.regret_bound},
                      {"seed", {{"anchors", r.seed_anchors}, {"cases", r.seed_cases}, {"seconds", r.seed_s},
                                {"second_stage", r.seed_tops}}},
                      {"chosen_by_value", r.chosen_cases}};
  if (!r.worst_cell.empty()) j["worst_cell"] = {{"cell", r.worst_cell}, {"expected_regret", r.worst_regret}};
  return j;
}

nlohmann::json adaptive_json(const std::vector<RoundProgress>& rounds, const std::optional<StopReport>& stop) {
  nlohmann::json j;
  j["rounds"] = nlohmann::json::array();
  for (const RoundProgress& p : rounds) j["rounds"].push_back(round_json(p));
  if (stop) j["stop"] = stop_json(*stop);
  return j;
}

}  // namespace

void JsonReporter::start(const RunHeader& header, std::size_t, std::size_t) { header_ = header; }

void JsonReporter::report(const Record& r) { records_.push_back(r); }

void JsonReporter::finish(const RunSummary& s, OutputSet& outputs) {
  nlohmann::json j;
  for (const auto& [k, v] : header_) j["header"][k] = v;
  j["summary"] = {{"planned", s.planned},   {"resumed", s.resumed},     {"measured", s.measured},
                  {"failed", s.failed},     {"timed_out", s.timed_out}, {"stopped_early", s.stopped_early},
                  {"wall_s", s.wall_s}};
  j["cases"] = nlohmann::json::array();
  for (const auto& r : records_) {
    const Sample& x = r.sample;
    nlohmann::json c = {{"index", r.c.index},        {"collective", to_string(x.collective)},
                        {"strategy", x.strategy},    {"fusion", to_string(x.fusion)},
                        {"dtype", x.dtype},          {"nranks", x.nranks},
                        {"tokens", x.tokens},        {"hidden", x.hidden},
                        {"bytes", x.bytes},          {"status", x.ok() ? "ok" : "failed"},
                        {"wrong", x.wrong},          {"note", r.note},
                        {"wall_s", r.wall_s}};
    if (r.round >= 0) c["round"] = r.round;
    // all-to-allv: the pattern asked for and the split recorded (the CSV's `splits`), which tell apart the
    // cases that share one size.
    if (!x.splits.empty()) {
      c["split"] = r.c.split;
      c["splits"] = x.splits;
    }
    if (x.ok()) {
      c["time_us"] = x.time_us;
      c["p10_us"] = x.p10_us;
      c["p90_us"] = x.p90_us;
      c["min_us"] = x.min_us;
      c["max_us"] = x.max_us;
      c["iterations"] = x.iterations;
      c["alg_bw_gbps"] = r.alg_bw_gbps;
      c["bus_bw_gbps"] = r.bus_bw_gbps;
    }
    j["cases"].push_back(c);
  }
  if (!rounds_.empty() || stop_) j["adaptive"] = adaptive_json(rounds_, stop_);
  outputs.add(path_, json_document_text(j));
}

void JsonReporter::round(const RoundProgress& progress) { rounds_.push_back(progress); }

void JsonReporter::stop(const StopReport& report) { stop_ = report; }

}  // namespace arfit::bench
