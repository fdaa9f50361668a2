// Input helpers shared by the subcommands. Option values that do not parse are usage errors (exit 2);
// bad file contents are InputErrors from the readers (exit 1).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "ingest/ingest.h"

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

}  // namespace arfit::cli
