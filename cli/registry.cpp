#include <algorithm>
#include <cstring>

#include "cli/commands.h"

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

}  // namespace arfit::cli
