// Command-line integer options of arfit and arbench read as plain decimal.
//
// CLI11 reads an integer option with strtoll(..., 0): --nranks 016 is octal 14 and 0x8, +8 and ' 8' are 8,
// each answered with exit 0. Both commands put model/text.h's integer_option_problem in front of every
// integer option's own checks. In front, not after: CLI11's Range converts the text itself, so "08" (not
// valid octal) met "Value 08 not in range" before the leading-zero message that says what to write.
//
// Header-only, and in its own folder, because both tools need it and neither may depend on the other: model/
// holds no CLI11, cli/ is arfit's and bench/ is arbench's.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "model/text.h"

namespace arfit::cmdline {

// Adds the decimal check in front of every INT/UINT option of `app` and, recursively, of its subcommands.
// Call after every option is added. The check has no description, so --help is unchanged.
inline void require_decimal_integer_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    // The type name before the validators' descriptions ("INT:INT in [1 - 1048576]").
    const std::string type = option->get_type_name().substr(0, option->get_type_name().find(':'));
    if (type != "INT" && type != "UINT") continue;
    // transform() inserts in front of the validators added so far; the text itself is left as written.
    option->transform(CLI::Validator([](std::string& text) { return integer_option_problem(text); }, ""));
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) require_decimal_integer_options(*sub);
}

}  // namespace arfit::cmdline
