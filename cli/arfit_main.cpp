// arfit: the command-line front end. Thin: it builds the CLI11 app from the registered subcommands, runs
// the chosen one and maps errors to exit codes, the rule every arfit program follows (README):
//   0 success; 1 bad input data (InputError, naming file:line) or a failed run (any other exception, or
//     standard output that could not be written);
//   2 usage: an unknown subcommand or option, a bad option value, an impossible request (UsageError, CLI11's
//     parse errors), an output path the output-path rule refuses (OutputPathError, io/output_path_rule.h).
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "cmdline/integer_options.h"
#include "io/resource_limits.h"
#include "model/errors.h"
#include "io/standard_output_check.h"

namespace {

// A usage error on standard error, as every arfit command says one: exit 2.
int usage_error(const std::string& what) {
  std::cerr << "arfit: usage error: " << what << "\nRun with --help for more information.\n";
  return 2;
}

int run(int argc, char** argv) {
  CLI::App app{"arfit: measure, model and choose GPU collective-communication strategies"};
  app.set_version_flag("--version", std::string("arfit ") + ARFIT_VERSION);
  app.require_subcommand(1, 1);
  for (const auto& reg : arfit::cli::registered_commands()) reg.add(app);
  arfit::cmdline::require_decimal_integer_options(app);  // 016 is 16 or a usage error, never octal 14
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    // No subcommand, or an unknown word where the subcommand goes: say which ones exist.
    if (app.get_subcommands().empty()) {
      std::string known;
      for (const auto& reg : arfit::cli::registered_commands()) known += std::string(known.empty() ? "" : ", ") + reg.name;
      const std::string given = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
      return usage_error((given.empty() ? std::string("a subcommand is required") : "unknown subcommand '" + given + "'") +
                         " (known: " + known + ")");
    }
    return usage_error(e.what());
  } catch (const CLI::ParseError& e) {
    // CLI11's own refusals (a missing positional, a file that does not exist, a bad value) in the words of
    // arfit's: they printed bare ("samples is required") where arfit's said "arfit: usage error: ...".
    return usage_error(e.what());
  } catch (const arfit::cli::UsageError& e) {
    return usage_error(e.what());
  } catch (const arfit::OutputPathError& e) {
    std::cerr << "arfit: usage error: " << e.what() << "\n";
    return 2;
  } catch (const arfit::InputError& e) {
    std::cerr << "arfit: error: " << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    // what() says only "std::bad_alloc": name the cause a user can act on.
    std::cerr << "arfit: error: " << arfit::kOutOfMemoryMessage << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "arfit: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace

// Every command's answer on standard output (tables, --json, help) counts as output: a failed write fails.
int main(int argc, char** argv) {
  arfit::fail_cleanly_at_resource_limits("arfit");
  return arfit::finish_standard_output("arfit", run(argc, argv));
}
