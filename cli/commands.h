// Each arfit subcommand lives in its own file cli/cmd_<name>.cpp and registers itself with
// ARFIT_REGISTER_COMMAND, so adding a command touches no shared file (as google/benchmark registers
// benchmarks). The cmd files are compiled straight into the executable, so the registrations are kept.
// Mains stay thin: parsing and printing here, the work in model/, ingest/, fit/, codegen/, plots/.
#pragma once

#include <vector>

#include <CLI/CLI.hpp>

#include "io/input_file.h"
#include "io/output_path_rule.h"

namespace arfit::cli {

using CommandAdder = void (*)(CLI::App& app);

struct CommandRegistration {
  const char* name;
  int order;  // position in --help: lower first
  CommandAdder add;
};

// Called from static initialisers; returns a dummy so it can initialise a namespace-scope constant.
int register_command(const char* name, int order, CommandAdder add);
// All registrations, sorted by order then name.
std::vector<CommandRegistration> registered_commands();

// Exit code for usage errors that a command finds after parsing (bad combinations of valid options).
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The check of an option naming an output folder (-o DIR): "-", standard output (io/output_path_rule.h), is one stream
// and holds no folder of outputs. A usage error naming the option.
inline CLI::Validator output_folder_validator() {
  return CLI::Validator(
      [](std::string& value) {
        return is_standard_output(value) ? std::string("'-' is standard output, one stream, not a folder of outputs: name a folder "
                                                       "(./- for a folder named '-')")
                                         : std::string();
      },
      "", "OUTPUT_FOLDER");
}

// The check of an option naming an input file (input_path_problem, io/input_file.h): a missing path, a folder
// or a device is a usage error naming the option, before any work; files, pipes and FIFOs pass. In place of
// CLI11's ExistingFile, which let a device through to be refused after the options (exit 1).
inline CLI::Validator input_file_validator() {
  return CLI::Validator([](std::string& path) { return input_path_problem(path); }, "FILE", "INPUT_FILE");
}

}  // namespace arfit::cli

#define ARFIT_REGISTER_COMMAND(name, order, adder) \
  static const int arfit_command_registration_##name = ::arfit::cli::register_command(#name, order, adder)
