#include <algorithm>
#include <cstring>

#include "cli/commands.h"
#include "model/text.h"

namespace arfit::cli {
namespace {
std::vector<CommandRegistration>& registry() {
  static std::vector<CommandRegistration> r;  // function-local: safe from static-init order
  return r;
}
}  // namespace

int register_command(const char* name, int order, CommandAdder add) {
  registry().push_back({name, order, add});
  return static_cast<int>(registry().size());
}

std::vector<CommandRegistration> registered_commands() {
  auto r = registry();
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) {
    return a.order != b.order ? a.order < b.order : std::strcmp(a.name, b.name) < 0;
  });
  return r;
}

void check_integer_options(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    // The type name before the validators' descriptions ("INT:INT in [1 - 1048576]").
    const std::string type = option->get_type_name().substr(0, option->get_type_name().find(':'));
    if (type == "INT" || type == "UINT") option->check([](const std::string& text) { return integer_option_problem(text); });
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) check_integer_options(*sub);
}

}  // namespace arfit::cli
