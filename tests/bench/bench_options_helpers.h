// Command-line helpers shared by the bench unit tests: parse an arbench command line, and name the option a
// bad one is refused for.
#pragma once

#include <string>
#include <vector>

#include "bench/options.h"
#include "bench/plan.h"

namespace arfit::bench::testing {

inline Options parse(std::vector<std::string> args) {
  args.insert(args.begin(), "arbench");
  std::vector<const char*> argv;
  for (auto& a : args) argv.push_back(a.c_str());
  return parse_options(static_cast<int>(argv.size()), argv.data());
}

// The option named by the GridError a command line raises ("" when it parses and plans fine).
inline std::string offending_option(std::vector<std::string> args, int world = 2) {
  try {
    Options o = parse(std::move(args));
    PlanOptions po;
    po.limits.world = world;
    po.limits.workspace = o.workspace;
    po.limits.virtual_ranks = o.runner.virtual_ranks;
    plan_cases(o.spec, po, nullptr);
  } catch (const GridError& e) {
    return e.option();
  }
  return "";
}

}  // namespace arfit::bench::testing
