// Input helpers shared by the subcommands. Option values that do not parse are usage errors (exit 2);
// bad file contents are InputErrors from the readers (exit 1).
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "ingest/ingest.h"
#include "model/atomic_file.h"
#include "model/model_set.h"

namespace arfit::cli {

// The value of a sample-format option (`option` names it in the message, e.g. "--format").
inline ingest::Format ingest_format_option(const std::string& value, const std::string& option = "--format") {
  try {
    return ingest::parse_format(value);
  } catch (const std::invalid_argument& e) {
    throw UsageError(option + ": " + e.what());
  }
}

// The samples of every file, read as `format` (auto: detected file by file).
inline std::vector<Sample> load_samples_option(const std::vector<std::string>& files, const std::string& format,
                                               const std::string& option = "--format") {
  ingest::Options o;
  o.format = ingest_format_option(format, option);
  return ingest::load_samples(files, o);
}

// The models file at `path` when it is one (a JSON object with "schema": "arfit-models"), else nullopt (the
// caller reads it as samples: nccl-tests -J output is JSON too).
inline std::optional<ModelSet> load_if_models_file(const std::string& path) {
  const std::string text = read_file(path);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return std::nullopt;
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || j.value("schema", std::string()) != "arfit-models") return std::nullopt;
  return ModelSet::load(path);
}

}  // namespace arfit::cli
