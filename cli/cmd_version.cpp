#include <iostream>

#include "cli/commands.h"

namespace arfit::cli {
namespace {

void add_version(CLI::App& app) {
  auto* cmd = app.add_subcommand("version", "Print the arfit version");
  cmd->callback([] { std::cout << "arfit " << ARFIT_VERSION << "\n"; });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(version, 1000, arfit::cli::add_version);
