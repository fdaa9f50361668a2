// nccl-tests JSON output (-J FILE, nccl-tests 2.17+):
//   {"version":1, "args":[argv...], "nccl_version":22703,
//    "config":{"nthreads":1,"ngpus":8,...,"iterations":20,"devices":[{"rank":0,"hostname":"h","device_info":"NVIDIA H100",...}]},
//    "results":[{"size":8,"count":2,"type":"float","redop":"sum","root":"    -1",
//                "out_of_place":{"time":12.9,"alg_bw":0.0,"bus_bw":0.0,"nwrong":0.0} | null,
//                "in_place":{...}, "out_of_place_per_iter":{"min_us":..,"max_us":..,"p99_us":..,"cv_pct":..,...} (-I 1),
//                ...}], ...}
// Same conventions as the text reader: both placements become samples; "nan"/null time or nwrong > 0 ->
// Failed; 0-byte rows -> Failed; the collective from args[0] (all_reduce_perf) or --collective; the rank count
// from --nranks, else the devices list (one entry per rank), else busbw/algbw.
#include <cmath>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "ingest/readers.h"
#include "ingest/text_util.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "model/text.h"

namespace arfit::ingest::detail {

namespace {

// Where a sample field beyond arfit's bounds (sample_bound_problem) comes from: its row's value, or the devices
// list the rank and node counts are taken from. `placement` is "/results/<i>/<out_of_place|in_place>".
std::string bound_pointer(const std::string& field, const std::string& placement) {
  if (field == "time_us") return placement + "/time";
  if (field == "bytes") return placement.substr(0, placement.rfind('/')) + "/size";
  if (field == "nranks" || field == "nnodes") return "/config/devices";
  return placement;
}

// The reason for a bound problem, with what the user can do about a node count: the devices list gives at most one
// host per rank, so more nodes than ranks means --nranks gave fewer ranks than the list's hostnames.
std::string bound_reason(const SampleBoundProblem& b, const Sample& s, const Options& options) {
  if (b.field != "nnodes" || !options.nranks) return b.reason;
  return std::to_string(s.nnodes) + " distinct hostnames (nodes), more than the " + std::to_string(s.nranks) +
         " rank(s) --nranks gives: give the run's rank count, or --nnodes for the node count";
}

// The reader proper; errors about one value are JsonErrors naming its pointer (the caller adds file:line).
[[noreturn]] void fail(const std::string& pointer, const std::string& what) { throw JsonError(pointer, what); }

// What the run's config says of the machine: timed iterations, the devices' count, the first device's name and the
// hostnames.
struct RunConfig {
  int iterations = 0;
  std::optional<int> devices;
  std::string device_name;
  std::set<std::string> hosts;
};

RunConfig read_config(const nlohmann::json& j) {
  RunConfig rc;
  if (!j.contains("config") || !j["config"].is_object()) return rc;
  const nlohmann::json& c = j["config"];
  if (c.contains("iterations") && c["iterations"].is_number_integer())
    rc.iterations = JsonView(c["iterations"], "/config/iterations").integer<int>(0);
  if (c.contains("devices") && c["devices"].is_array()) {
    rc.devices = static_cast<int>(c["devices"].size());
    for (const auto& d : c["devices"]) {
      if (!d.is_object()) continue;
      if (d.contains("hostname") && d["hostname"].is_string()) rc.hosts.insert(d["hostname"].get<std::string>());
      if (rc.device_name.empty() && d.contains("device_info") && d["device_info"].is_string())
        rc.device_name = d["device_info"].get<std::string>();
    }
    if (rc.devices == 0) rc.devices.reset();
  }
  return rc;
}

// nccl_version 22703 as "2.27.3" in the result's meta.
void add_nccl_version(const nlohmann::json& j, IngestResult& r) {
  if (!j.contains("nccl_version") || !j["nccl_version"].is_number_integer()) return;
  const long code = j["nccl_version"].get<long>();
  if (code >= 10000)
    r.meta.emplace_back("nccl_version", std::to_string(code / 10000) + "." + std::to_string((code / 100) % 100) + "." +
                                            std::to_string(code % 100));
}

// A number of results[row].placement.key: absent or null is none, "nan" is none and flagged, anything else must be a
// finite number.
std::optional<double> result_number(const nlohmann::json& o, const char* placement, const char* key, std::size_t row,
                                    bool* is_nan) {
  if (!o.contains(key) || o[key].is_null()) return std::nullopt;
  const nlohmann::json& v = o[key];
  if (v.is_string() && v.get<std::string>() == "nan") {
    if (is_nan) *is_nan = true;
    return std::nullopt;
  }
  const std::string where = json_pointer_append(json_pointer_append(json_pointer_append("/results", row), placement), key);
  if (!v.is_number()) fail(where, "not a number");
  const double d = v.get<double>();
  if (!std::isfinite(d)) fail(where, "non-finite value");
  return d;
}

// nccl-tests 2.19's per-iteration report (-I 1), "<placement>_per_iter": what the text table prints of it, so that
// the -J file and the log of one run give the same samples: min_us and max_us, extra p99_us and cv_pct.
void add_per_iteration_statistics(const nlohmann::json& row, const char* key, std::size_t i, Sample& s) {
  if (!row.contains(key) || !row[key].is_object()) return;
  const nlohmann::json& o = row[key];
  const auto statistic = [&](const char* name) {
    const auto v = result_number(o, key, name, i, nullptr);
    if (v && *v < 0) fail(json_pointer_append(json_pointer_append(json_pointer_append("/results", i), key), name), "negative value");
    return v;
  };
  if (const auto v = statistic("min_us")) s.min_us = *v;
  if (const auto v = statistic("max_us")) s.max_us = *v;
  if (const auto v = statistic("p99_us")) s.extra["p99_us"] = format_number(*v, "%.6g");
  if (const auto v = statistic("cv_pct")) s.extra["cv_pct"] = format_number(*v, "%.6g");
}

struct PlacedSample {
  Sample s;
  std::string where;  // "/results/<i>/<placement>"
};

// One placement (out_of_place or in_place) of results[i]; its bandwidths feed the rank inference.
PlacedSample read_placement(const nlohmann::json& row, std::size_t i, int set, std::int64_t size, const std::string& type,
                            RankInference& inf) {
  const char* key = set == 0 ? "out_of_place" : "in_place";
  const std::string where = json_pointer_append("/results", i);
  const nlohmann::json& o = row[key];
  if (!o.is_object()) fail(where + "/" + key, "not an object");
  PlacedSample p;
  p.where = where + "/" + key;
  p.s.bytes = size;
  p.s.in_place = set == 1;
  p.s.dtype = canonical_dtype(type);
  bool nan = false;
  auto t = result_number(o, key, o.contains("time") ? "time" : "cpu_time", i, &nan);
  auto a = result_number(o, key, "alg_bw", i, &nan);
  auto b = result_number(o, key, "bus_bw", i, &nan);
  auto w = result_number(o, key, "nwrong", i, nullptr);
  if (a && b) inf.add(*a, *b, 0.5e-6 * std::max(1.0, *a), 0.5e-6 * std::max(1.0, *b));
  if (w && *w > 0) p.s.wrong = saturated_count(*w);
  if (t && *t < 0) fail(where + "/" + key + "/time", "negative time");
  if (t && !nan && p.s.wrong == 0 && size > 0 && *t > 0) {
    p.s.time_us = *t;
    add_per_iteration_statistics(row, set == 0 ? "out_of_place_per_iter" : "in_place_per_iter", i, p.s);
  } else {
    p.s.status = SampleStatus::Failed;
  }
  return p;
}

// Every result row's placements, sizes increasing within the run (a repeated size is kept with a warning).
std::vector<PlacedSample> read_result_rows(const nlohmann::json& j, const std::string& name, IngestResult& r,
                                           RankInference& inf) {
  std::vector<PlacedSample> ps;
  std::optional<std::int64_t> last;
  for (std::size_t i = 0; i < j["results"].size(); ++i) {
    const nlohmann::json& row = j["results"][i];
    const std::string where = json_pointer_append("/results", i);
    if (!row.is_object()) fail(where, "not an object");
    if (!row.contains("size") || !row["size"].is_number_unsigned()) fail(where + "/size", "missing or negative size");
    // A size beyond int64 is an error, never wrapped.
    const std::int64_t size = JsonView(row["size"], where + "/size").integer<std::int64_t>(0);
    ++r.rows;
    if (last) {
      if (size < *last)
        fail(where + "/size", "size " + std::to_string(size) + " after " + std::to_string(*last) + ": sizes must increase within a run");
      if (size == *last) {
        ++r.duplicates;
        add_warning(r, name + ": results[" + std::to_string(i) + "]: duplicated size " + std::to_string(size) + " (kept)");
      }
    }
    last = size;
    const std::string type = row.contains("type") && row["type"].is_string() ? row["type"].get<std::string>() : "float";
    // A row that holds neither placement measured nothing: read silently, a file of such rows became an
    // empty sample file and exit 0.
    const auto has = [&](const char* key) { return row.contains(key) && !row[key].is_null(); };
    if (!has("out_of_place") && !has("in_place")) fail(where, "neither 'out_of_place' nor 'in_place' holds a measurement");
    for (int set = 0; set < 2; ++set)
      if (has(set == 0 ? "out_of_place" : "in_place")) ps.push_back(read_placement(row, i, set, size, type, inf));
  }
  return ps;
}

// The rank count: --nranks, else the devices list's length, else what busbw/algbw pins.
int rank_count(const Options& options, const RunConfig& rc, const RankInference& inf, const std::string& name) {
  if (options.nranks) return *options.nranks;
  if (rc.devices) return *rc.devices;
  if (auto ratio = inf.rank_count()) return *ratio;
  throw InputError(name, 0, "config", "cannot tell the rank count (no devices list; busbw/algbw does not pin it): pass --nranks");
}

// The run-wide fields every sample shares, then each sample's bounds, checked where its place in the document is known.
void complete_samples(std::vector<PlacedSample>& ps, Collective coll, int n, const RunConfig& rc, const std::string& name,
                      const Options& options, IngestResult& r) {
  for (auto& p : ps) {
    Sample& s = p.s;
    s.collective = coll;
    s.nranks = n;
    // The hostnames' count, unless --nnodes says it (ingest sets and checks that one for every format).
    s.nnodes = rc.hosts.empty() || options.nnodes ? 1 : static_cast<int>(rc.hosts.size());
    s.device = rc.device_name;
    s.iterations = rc.iterations;
    s.strategy = strategy::kNccl;
    s.backend = "nccl-tests";
    s.source = basename_of(name);
    s.extra["system"] = stem_of(name);
    if (!rc.hosts.empty()) s.extra["hosts"] = join(rc.hosts, " ");  // as the text log's (nccl_tests_text.cpp)
    if (!s.ok()) ++r.failed;
    // Bounds are checked here, where each value's place in the document is known (ingest checks them again for
    // every format, with the line a JSON sample does not carry).
    if (const auto b = sample_bound_problem(s)) fail(bound_pointer(b->field, p.where), bound_reason(*b, s, options));
    r.samples.push_back(std::move(s));
  }
}

IngestResult read_results(const nlohmann::json& j, const std::string& name, const Options& options) {
  IngestResult r;
  r.format = Format::NcclTestsJson;
  if (!j.is_object()) throw InputError(name, 1, "", "expected a JSON object (nccl-tests -J output)");
  if (!j.contains("results") || !j["results"].is_array()) throw InputError(name, 1, "results", "missing 'results' list");
  std::optional<Collective> coll = options.collective;
  if (!coll && j.contains("args") && j["args"].is_array() && !j["args"].empty() && j["args"][0].is_string())
    coll = collective_of_perf_binary(j["args"][0].get<std::string>());
  if (!coll) throw InputError(name, 1, "args", "cannot tell the collective (args[0] is not an X_perf program): pass --collective");
  const RunConfig rc = read_config(j);
  add_nccl_version(j, r);
  RankInference inf(*coll);
  std::vector<PlacedSample> ps = read_result_rows(j, name, r, inf);
  if (r.rows == 0) throw InputError(name, 0, "results", "no results");
  complete_samples(ps, *coll, rank_count(options, rc, inf, name), rc, name, options, r);
  return r;
}

}  // namespace

IngestResult read_nccl_tests_json(const std::string& text, const std::string& name, const Options& options) {
  const nlohmann::json j = parse_json(text, name);
  return read_json_document(text, name, [&] { return read_results(j, name, options); });
}

}  // namespace arfit::ingest::detail
