// arfit: the command-line front end. Thin: it builds the CLI11 app from the registered subcommands, runs
// the chosen one and maps errors to exit codes: 0 ok, 1 bad input or failed work, 2 usage error.
#include <iostream>
#include <stdexcept>

#include "cli/commands.h"
#include "model/errors.h"

int main(int argc, char** argv) {
  CLI::App app{"arfit: measure, model and choose GPU collective-communication strategies"};
  app.set_version_flag("--version", std::string("arfit ") + ARFIT_VERSION);
  app.require_subcommand(1, 1);
  for (const auto& reg : arfit::cli::registered_commands()) reg.add(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and the usage hint
    return 2;
  } catch (const arfit::cli::UsageError& e) {
    std::cerr << "arfit: usage error: " << e.what() << "\nRun with --help for more information.\n";
    return 2;
  } catch (const arfit::InputError& e) {
    std::cerr << "arfit: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "arfit: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
