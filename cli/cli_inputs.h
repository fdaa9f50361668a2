// What the subcommands share about their inputs: from a command-line argument to a loaded input (samples of any
// format, models files, --prior files), and option values checked as usage errors (exit 2); bad file contents are
// InputErrors from the readers (exit 1). Reading goes one way: a path is read once (io/input_file.h: read_file, which
// records it as an input and its fingerprint), its text is told apart (a models file or samples) and handed to the
// parser (ModelSet, ingest/ingest.h). Definitions: cli/cli_inputs.cpp.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "fit/fit.h"
#include "fit/prior_check.h"
#include "ingest/ingest.h"
#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "model/json_input.h"
#include "model/model_set.h"
#include "model/sm_targets.h"
#include "model/text.h"

namespace arfit::cli {

// The value of a sample-format option (`option` names it in the message, e.g. "--format").
ingest::Format ingest_format_option(const std::string& value, const std::string& option = "--format");

// A file's path and its text, read once (read_file) by a command that looked at the text before knowing what the
// file is.
struct InputText {
  std::string path, text;
};

// The samples of every input (paths, or InputTexts already read), read as `format` (auto: detected file by file),
// dropped rows reported file by file.
std::vector<Sample> load_samples_option(const std::vector<std::string>& files, const std::string& format,
                                        const std::string& option = "--format");
std::vector<Sample> load_samples_option(const std::vector<InputText>& files, const std::string& format,
                                        const std::string& option = "--format");

// --sm values: the SM targets arfit has bandwidth figures for (model/sm_targets.h).
CLI::Validator known_sm_validator();

// True for a JSON document that names arfit's models schema ("schema": "arfit-models").
bool is_models_document(const nlohmann::json& j);

// The files given with --prior (`arfit fit`, `arfit predict`: other machines), each read once: the models files
// parsed, the others kept to be read as samples (fit_priors).
struct PriorFiles {
  std::vector<std::pair<std::string, ModelSet>> models;  // (path, its models)
  std::vector<InputText> samples;                        // the files that are not models files
};

// Each prior counts once: a file given twice (by any name), or the measurements of one file reached twice (two
// models files fitted from it, or the file and a models file fitted from it: their `inputs` record its fingerprint),
// would weigh that machine twice among the curves a transfer borrows from. A usage error naming --prior.
PriorFiles read_prior_files(const std::vector<std::string>& paths);

// The priors' models, each refused (a usage error naming --prior) when it holds `own`'s measurements
// (fit/prior_check.h: a file of this command line, a renamed copy of one, a models file fitted from one, and, once
// sample priors are fitted, a group measured at the same points under the same label); else as fit_priors reads them.
std::vector<ModelSet> load_priors(PriorFiles read, const std::string& format, int threads, const fit::OwnMeasurements& own);

// The fingerprints of `paths` as this process read them (input_fingerprint), for fit::own_measurements_of_fit.
std::vector<fit::MeasurementFile> measurement_files(const std::vector<std::string>& paths);

// model/model_set.h's requested_system and require_held_strategy as usage errors (exit 2), for whatif.
std::string system_option(const ModelSet& models, const std::string& requested);

void strategy_option(const std::string& requested, const std::vector<std::string>& held, const std::string& of_what);

// --nnodes against the GPU count option (`ranks_option`) as a usage error, before any input is read.
void nodes_option(int nnodes, int nranks, const std::string& ranks_option);

}  // namespace arfit::cli
