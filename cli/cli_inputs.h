// Input helpers shared by the subcommands. Option values that do not parse are usage errors (exit 2);
// bad file contents are InputErrors from the readers (exit 1).
#pragma once

#include <optional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "fit/fit.h"
#include "ingest/ingest.h"
#include "model/atomic_file.h"
#include "model/json_input.h"
#include "model/model_set.h"
#include "model/sm_targets.h"

namespace arfit::cli {

// The value of a sample-format option (`option` names it in the message, e.g. "--format").
inline ingest::Format ingest_format_option(const std::string& value, const std::string& option = "--format") {
  try {
    return ingest::parse_format(value);
  } catch (const std::invalid_argument& e) {
    throw UsageError(option + ": " + e.what());
  }
}

// The samples of every file, read as `format` (auto: detected file by file). Rows a reader dropped (sizes that
// are not byte counts) are reported on stderr, file by file: `arfit ingest` lists every warning, the commands
// that only consume samples say at least that rows were left out.
inline std::vector<Sample> load_samples_option(const std::vector<std::string>& files, const std::string& format,
                                               const std::string& option = "--format") {
  ingest::Options o;
  o.format = ingest_format_option(format, option);
  std::vector<Sample> all;
  ingest::DistinctInputs distinct(o);
  for (const auto& f : files) {
    ingest::IngestResult r = ingest::ingest_file(f, o);
    distinct.add(f, r);
    if (r.dropped) {
      std::cerr << "arfit: warning: " << f << ": " << r.dropped << " row(s) dropped (sizes that are not byte counts; "
                << "`arfit ingest " << f << "` lists them)\n";
    }
    for (auto& s : r.samples) all.push_back(std::move(s));
  }
  return all;
}

// --sm values: the SM targets arfit has bandwidth figures for (model/sm_targets.h).
inline CLI::Validator known_sm_validator() {
  std::vector<int> sms;
  for (const auto& t : sm_targets()) sms.push_back(t.sm);
  return CLI::IsMember(sms);
}

// `text` (read from `path`) parsed when it is a JSON object arfit can read (model/json_input.h: bounded
// nesting), else nullopt: nccl-tests -J output is JSON too, and reading the file as samples reports its errors.
inline std::optional<nlohmann::json> json_object_of(const std::string& text, const std::string& path) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return std::nullopt;
  try {
    nlohmann::json j = parse_json(text, path);
    if (j.is_object()) return j;
  } catch (const InputError&) {
  }
  return std::nullopt;
}

inline bool is_models_document(const nlohmann::json& j) { return j.value("schema", std::string()) == "arfit-models"; }

// The models file at `path` when it is one (a JSON object with "schema": "arfit-models"), else nullopt (the
// caller reads it as samples). The file is read once.
inline std::optional<ModelSet> load_if_models_file(const std::string& path) {
  const std::string text = read_file(path);
  const std::optional<nlohmann::json> j = json_object_of(text, path);
  if (!j || !is_models_document(*j)) return std::nullopt;
  return ModelSet::from_document(*j, text, path);
}

// Other machines given with --prior (`arfit fit`, `arfit predict`): a models file as is, sample files fitted
// like `arfit fit` would (one set for all sample files given, so their machines' siblings pool as usual).
inline std::vector<ModelSet> load_priors(const std::vector<std::string>& paths, const std::string& format, int threads) {
  std::vector<ModelSet> sets;
  std::vector<std::string> sample_paths;
  for (const std::string& p : paths) {
    if (auto m = load_if_models_file(p))
      sets.push_back(std::move(*m));
    else
      sample_paths.push_back(p);
  }
  if (!sample_paths.empty()) {
    fit::FitOptions fo;
    fo.threads = threads;
    sets.push_back(fit::fit_model_set(load_samples_option(sample_paths, format), fo, sample_paths));
  }
  return sets;
}

}  // namespace arfit::cli
