// Format detection, dispatch to the readers and the file-level entry points.
#include "ingest/ingest.h"

#include <stdexcept>

#include "ingest/readers.h"
#include "ingest/text_util.h"
#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "model/errors.h"
#include "model/file_kind.h"
#include "model/sample_csv.h"

namespace arfit::ingest {

std::string to_string(Format f) {
  switch (f) {
    case Format::Auto: return "auto";
    case Format::ArfitCsv: return "arfit";
    case Format::NcclTests: return "nccl-tests";
    case Format::NcclTestsJson: return "nccl-tests-json";
    case Format::ParamComms: return "param";
    case Format::TrtllmCsv: return "trtllm";
    case Format::Aiconfigurator: return "aiconfigurator";
  }
  return "?";
}

Format parse_format(const std::string& s) {
  for (Format f : {Format::Auto, Format::ArfitCsv, Format::NcclTests, Format::NcclTestsJson, Format::ParamComms,
                   Format::TrtllmCsv, Format::Aiconfigurator})
    if (s == to_string(f)) return f;
  throw std::invalid_argument("unknown format '" + s +
                              "' (known: auto, arfit, nccl-tests, nccl-tests-json, param, trtllm, aiconfigurator)");
}

namespace detail {

IngestResult read_arfit_csv(const std::string& text, const std::string& name, const Options& options) {
  SampleFile f = parse_samples_csv(text, name);
  IngestResult r;
  r.format = Format::ArfitCsv;
  r.meta = f.meta;
  r.rows = f.samples.size();
  r.samples = std::move(f.samples);
  for (auto& s : r.samples) {
    if (options.collective) s.collective = *options.collective;
    if (options.nranks) s.nranks = *options.nranks;
    if (!s.ok()) ++r.failed;
  }
  return r;
}

}  // namespace detail

Format detect_format(const std::string& text, const std::string& name) {
  using namespace detail;
  // Look at the first meaningful line and a bounded prefix (detection must stay cheap on big files).
  const std::string_view head = std::string_view(text).substr(0, 1 << 16);
  if (looks_like_samples_csv(text)) return Format::ArfitCsv;
  std::string_view first_content;
  std::string_view first_csv;  // first line that is not a '#' comment
  for (auto line : split_lines(head)) {
    auto t = trim(line);
    if (t.empty()) continue;
    if (first_content.empty()) first_content = t;
    if (t.front() != '#') {
      first_csv = t;
      break;
    }
  }
  if (!first_content.empty() && first_content.front() == '{') return Format::NcclTestsJson;
  if (contains(head, "COMMS-RES")) return Format::ParamComms;
  if (!first_csv.empty() && contains(first_csv, ",")) {
    const std::string l = lower(first_csv);
    if (contains(l, "message_size") && contains(l, "latency") && (contains(l, "op_name") || contains(l, "kernel_source")))
      return Format::Aiconfigurator;
    if (contains(l, "world_size") && contains(l, "strategy") && contains(l, "time")) return Format::TrtllmCsv;
  }
  if (contains(head, "algbw") || contains(head, "busbw") || contains(head, "_perf") || contains(head, "out-of-place"))
    return Format::NcclTests;
  throw InputError(name, 0, "",
                   "cannot tell the format (not arfit CSV, nccl-tests text/JSON, PARAM COMMS-RES, TensorRT-LLM or "
                   "aiconfigurator CSV): pass --format");
}

namespace {

// --nnodes, --system and --network: facts the user knows and the file does not say, the same for every format.
void apply_overrides(IngestResult& r, const std::string& name, const Options& options) {
  for (Sample& s : r.samples) {
    if (options.nnodes) {
      if (*options.nnodes > s.nranks)
        throw InputError(name, s.line, "", "--nnodes " + std::to_string(*options.nnodes) + " is more than the " +
                                          std::to_string(s.nranks) + " rank(s) of a sample at " + std::to_string(s.bytes) + " bytes");
      s.nnodes = *options.nnodes;
    }
    if (options.system) s.extra["system"] = *options.system;
    if (options.network) s.extra["network"] = *options.network;
    if (options.dtype) {
      // Fill only: a stated element type decided how the reader turned element counts into bytes.
      const std::string want = canonical_dtype(*options.dtype);
      if (dtype_size(s.dtype) > 0 && canonical_dtype(s.dtype) != want)
        throw InputError(name, s.line, "dtype", "the file states " + s.dtype + " (a sample at " + std::to_string(s.bytes) +
                                               " bytes); --dtype " + *options.dtype + " only fills an element type a file does not state");
      s.dtype = want;
    }
  }
}

// Every sample within the bounds arfit models (sample_bound_problem), whatever the format; the names it carries
// into models files, generated tables and figures (machine, strategy, element type, device) hold no control
// characters, whatever the file or the file name they came from (sample_name_problem).
void check_samples(const IngestResult& r, const std::string& name) {
  auto column = [&r](const std::string& field) {
    const auto it = r.field_columns.find(field);
    return it == r.field_columns.end() ? field : it->second;
  };
  for (const Sample& s : r.samples) {
    if (const auto b = sample_name_problem(s))
      throw InputError(name, s.line, column(b->field),
                       b->reason + (b->field == "system" ? " (the machine label: --system, the file's, or its name)" : ""));
    if (const auto b = sample_bound_problem(s))
      throw InputError(name, s.line, column(b->field), b->reason + " (a sample at " + std::to_string(s.bytes) + " bytes)");
  }
}

IngestResult read_as(Format format, const std::string& text, const std::string& name, const Options& options) {
  using namespace detail;
  switch (format) {
    case Format::ArfitCsv: return read_arfit_csv(text, name, options);
    case Format::NcclTests: return read_nccl_tests_text(text, name, options);
    case Format::NcclTestsJson: return read_nccl_tests_json(text, name, options);
    case Format::ParamComms: return read_param_comms(text, name, options);
    case Format::TrtllmCsv: return read_trtllm_csv(text, name, options);
    case Format::Aiconfigurator: return read_aiconfigurator(text, name, options);
    case Format::Auto: break;
  }
  return {};
}

}  // namespace

IngestResult ingest_as(Format format, const std::string& text, const std::string& name, const Options& options) {
  IngestResult r;
  try {
    if (format == Format::Auto) format = detect_format(text, name);
    r = read_as(format, text, name, options);
    r.format = format;
    apply_overrides(r, name, options);
    check_samples(r, name);
    // Every reader counts its data rows; none may give an empty result as if it had read measurements.
    if (r.rows == 0) {
      std::string first_dropped;
      for (const auto& w : r.warnings)
        if (first_dropped.empty() && w.find(": row dropped: ") != std::string::npos) first_dropped = w;
      throw InputError(name, 0, "", r.dropped ? std::to_string(r.dropped) + " data row(s), every one dropped; the first: " + first_dropped
                                              : "no data rows (a table without measurements)");
    }
  } catch (const InputError&) {
    // Another file arfit writes is refused for what it is: a models file (or arbench's JSON records) read as an
    // nccl-tests JSON log said "column 'results': missing 'results' list".
    const auto k = arfit_file_kind(text);
    if (k && k->kind != ArfitFileKind::Samples)
      throw InputError(name, 0, "", k->what + ", not measurements" + instead_of_samples(k->kind));
    throw;
  }
  detail::finish_warnings(r, name);
  return r;
}

IngestResult ingest_text(const std::string& text, const std::string& name, const Options& options) {
  return ingest_as(options.format, text, name, options);
}

IngestResult ingest_file(const std::string& path, const Options& options) {
  return ingest_text(read_input_file(path), path, options);
}

void DistinctInputs::add(const std::string& path, const IngestResult& result) {
  for (const auto& earlier : paths_)
    if (same_path(earlier, path))
      throw InputError(path, 0, "", "the same file as the input " + earlier + ": given twice, every point would count twice");
  paths_.push_back(path);
  if (system_given_) return;
  // Only labels made from this file's name: an arfit sample CSV carries its samples' own (arbench runs started
  // within one second share a source, and are meant as one machine).
  const std::string file_name = detail::basename_of(path);
  for (const Sample& s : result.samples) {
    if (s.source != file_name) continue;
    const auto sys = s.extra.find("system");
    const auto [it, fresh] = owner_.emplace(std::make_pair(sys == s.extra.end() ? std::string() : sys->second, s.source), path);
    if (!fresh && it->second != path)
      throw InputError(path, 0, "",
                       "its samples carry the machine label '" + it->first.first + "' and source '" + it->first.second +
                           "' as the input " + it->second + "'s do (two files of one name): read together they are one "
                           "machine's points; rename one file, or ingest them with --system when they are one machine");
  }
}

std::vector<Sample> load_samples(const std::vector<std::string>& paths, const Options& options) {
  std::vector<Sample> all;
  DistinctInputs distinct(options);
  for (const auto& p : paths) {
    IngestResult r = ingest_file(p, options);
    distinct.add(p, r);
    if (all.empty()) {
      all = std::move(r.samples);
    } else {
      all.reserve(all.size() + r.samples.size());
      for (auto& s : r.samples) all.push_back(std::move(s));
    }
  }
  return all;
}

}  // namespace arfit::ingest
