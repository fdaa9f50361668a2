// Input helpers shared by the subcommands. Option values that do not parse are usage errors (exit 2);
// bad file contents are InputErrors from the readers (exit 1).
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "fit/fit.h"
#include "fit/prior_check.h"
#include "ingest/ingest.h"
#include "model/atomic_file.h"
#include "model/json_input.h"
#include "model/model_set.h"
#include "model/sm_targets.h"
#include "model/text.h"

namespace arfit::cli {

// The value of a sample-format option (`option` names it in the message, e.g. "--format").
inline ingest::Format ingest_format_option(const std::string& value, const std::string& option = "--format") {
  try {
    return ingest::parse_format(value);
  } catch (const std::invalid_argument& e) {
    throw UsageError(option + ": " + e.what());
  }
}

// The samples of one file's ingest appended to `all`, once `distinct` has checked the file apart from the others
// (ingest/ingest.h). Rows the reader dropped (sizes that are not byte counts) are reported on stderr: `arfit
// ingest` lists every warning, the commands that only consume samples say at least that rows were left out.
inline void append_ingested(ingest::IngestResult r, const std::string& path, ingest::DistinctInputs& distinct,
                            std::vector<Sample>& all) {
  distinct.add(path, r);
  if (r.dropped) {
    std::cerr << "arfit: warning: " << path << ": " << r.dropped << " row(s) dropped (sizes that are not byte counts; "
              << "`arfit ingest " << path << "` lists them)\n";
  }
  // A sample with no message size (bytes 0 and no tokens x hidden: a zero-byte nccl-tests row, a hand-written one)
  // has no place on a curve (fit::curve_bytes), so fit, eval and plot leave it out: said here with its lines, so
  // that rows do not vanish unannounced (a file of only such rows was "no group could be fitted (0 groups)").
  std::size_t sizeless = 0;
  std::string lines;
  for (const Sample& s : r.samples) {
    if (!s.ok() || fit::curve_bytes(s) > 0) continue;
    if (++sizeless <= 5 && s.line > 0) lines += (lines.empty() ? " (line " : ", line ") + std::to_string(s.line);
  }
  if (sizeless > 0)
    std::cerr << "arfit: warning: " << path << ": " << sizeless << " sample(s) without a message size (bytes 0 and no "
              << "tokens x hidden) are left out" << lines << (lines.empty() ? "" : sizeless > 5 ? ", ...)" : ")") << "\n";
  for (auto& s : r.samples) all.push_back(std::move(s));
}

// A file's path and its text, read once (read_file) by a command that looked at the text before knowing what the
// file is.
struct InputText {
  std::string path, text;
};

// One input's samples: a path is read here, when its turn comes (one file in memory at a time); a text already
// read is ingested as it is.
inline ingest::IngestResult ingest_input(const std::string& path, const ingest::Options& o) { return ingest::ingest_file(path, o); }
inline ingest::IngestResult ingest_input(const InputText& f, const ingest::Options& o) { return ingest::ingest_text(f.text, f.path, o); }
inline const std::string& input_path(const std::string& path) { return path; }
inline const std::string& input_path(const InputText& f) { return f.path; }

// The samples of every input (paths, or InputTexts already read), read as `format` (auto: detected file by file),
// dropped rows reported file by file.
template <class Input>
std::vector<Sample> load_samples_option(const std::vector<Input>& files, const std::string& format,
                                        const std::string& option = "--format") {
  ingest::Options o;
  o.format = ingest_format_option(format, option);
  std::vector<Sample> all;
  ingest::DistinctInputs distinct(o);
  for (const Input& f : files) append_ingested(ingest_input(f, o), input_path(f), distinct, all);
  return all;
}

// --sm values: the SM targets arfit has bandwidth figures for (model/sm_targets.h).
inline CLI::Validator known_sm_validator() {
  std::vector<int> sms;
  for (const auto& t : sm_targets()) sms.push_back(t.sm);
  return CLI::IsMember(sms);
}

inline bool is_models_document(const nlohmann::json& j) { return j.value("schema", std::string()) == "arfit-models"; }

// The models file `text` (read from `path`) holds when it is one (a JSON object with "schema": "arfit-models"),
// else nullopt (the caller reads it as samples).
inline std::optional<ModelSet> models_file_of(const std::string& text, const std::string& path) {
  const std::optional<nlohmann::json> j = json_object_of(text, path);
  if (!j || !is_models_document(*j)) return std::nullopt;
  return ModelSet::from_document(*j, text, path);
}

// The files given with --prior (`arfit fit`, `arfit predict`: other machines), each read once: the models files
// parsed, the others kept to be read as samples (fit_priors).
struct PriorFiles {
  std::vector<std::pair<std::string, ModelSet>> models;  // (path, its models)
  std::vector<InputText> samples;                        // the files that are not models files
};

// Each prior counts once: a file given twice (by any name), or the measurements of one file reached twice (two
// models files fitted from it, or the file and a models file fitted from it: their `inputs` record its fingerprint),
// would weigh that machine twice among the curves a transfer borrows from. A usage error naming --prior.
inline PriorFiles read_prior_files(const std::vector<std::string>& paths) {
  PriorFiles out;
  std::map<std::string, std::string> holder;  // fingerprint of a measurement file -> the --prior holding it
  auto count_once = [&](const std::string& fingerprint, const std::string& prior, const std::string& measured) {
    if (fingerprint.empty()) return;
    const auto [it, fresh] = holder.emplace(fingerprint, prior);
    if (!fresh)
      throw UsageError("--prior " + prior + " holds the measurements of " + measured + ", as --prior " + it->second +
                       " does; give each machine once");
  };
  for (std::size_t i = 0; i < paths.size(); ++i) {
    const std::string& p = paths[i];
    for (std::size_t j = 0; j < i; ++j)
      if (same_path(paths[j], p))
        throw UsageError("--prior " + p + " is given twice" + (paths[j] == p ? std::string() : " (the same file as " + paths[j] + ")") +
                         "; give each machine once");
    std::string text = read_file(p);
    if (auto m = models_file_of(text, p)) {
      for (const auto& in : m->raw().value("inputs", nlohmann::json::array()))
        if (in.is_object()) count_once(in.value("fnv1a64", std::string()), p, in.value("path", std::string("an input")));
      out.models.emplace_back(p, std::move(*m));
    } else {
      count_once(input_fingerprint(p), p, p);
      out.samples.push_back({p, std::move(text)});
    }
  }
  return out;
}

// The priors' models: a models file as is, sample files fitted like `arfit fit` would (one set for all sample
// files given, so their machines' siblings pool as usual).
inline std::vector<ModelSet> fit_priors(PriorFiles priors, const std::string& format, int threads) {
  std::vector<ModelSet> sets;
  for (auto& [path, set] : priors.models) sets.push_back(std::move(set));
  if (!priors.samples.empty()) {
    fit::FitOptions fo;
    fo.threads = threads;
    std::vector<std::string> paths;
    for (const InputText& f : priors.samples) paths.push_back(f.path);
    sets.push_back(fit::fit_model_set(load_samples_option(priors.samples, format), fo, paths));
  }
  return sets;
}

// The priors' models, each refused (a usage error naming --prior) when it holds `own`'s measurements
// (fit/prior_check.h: a file of this command line, a renamed copy of one, a models file fitted from one, and, once
// sample priors are fitted, a group measured at the same points under the same label); else as fit_priors reads them.
inline std::vector<ModelSet> load_priors(PriorFiles read, const std::string& format, int threads, const fit::OwnMeasurements& own) {
  try {
    for (const auto& [p, m] : read.models) {
      fit::refuse_own_file_as_prior({p, input_fingerprint(p)}, own);
      fit::refuse_own_models_as_prior(p, m, own);
    }
    std::vector<std::string> sample_paths;
    for (const InputText& f : read.samples) {
      fit::refuse_own_file_as_prior({f.path, input_fingerprint(f.path)}, own);
      sample_paths.push_back(f.path);
    }
    std::vector<ModelSet> sets = fit_priors(std::move(read), format, threads);
    if (!sample_paths.empty()) fit::refuse_own_models_as_prior(join(sample_paths, " "), sets.back(), own);
    return sets;
  } catch (const fit::PriorOfOwnMeasurements& e) {
    throw UsageError(std::string("--prior ") + e.what());
  }
}

// The fingerprints of `paths` as this process read them (input_fingerprint), for fit::own_measurements_of_fit.
inline std::vector<fit::MeasurementFile> measurement_files(const std::vector<std::string>& paths) {
  std::vector<fit::MeasurementFile> out;
  for (const std::string& p : paths) out.push_back({p, input_fingerprint(p)});
  return out;
}

// model/model_set.h's requested_system and require_held_strategy as usage errors (exit 2), for whatif.
inline std::string system_option(const ModelSet& models, const std::string& requested) {
  try {
    return requested_system(models, requested);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

inline void strategy_option(const std::string& requested, const std::vector<std::string>& held,
                            const std::string& of_what) {
  try {
    require_held_strategy(requested, held, of_what);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// --nnodes against the GPU count option (`ranks_option`) as a usage error, before any input is read.
inline void nodes_option(int nnodes, int nranks, const std::string& ranks_option) {
  try {
    require_nodes_within_ranks(nnodes, nranks, ranks_option);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace arfit::cli
