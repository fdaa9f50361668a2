// Profile loading shared by `arfit breakdown` and `arfit whatif`: the same reader options and phase selection,
// with an unknown phase name reported as a usage error.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "trace/breakdown.h"
#include "trace/load.h"

namespace arfit::cli {

inline trace::Profile load_profile_phases(const std::string& path, const std::string& format, const std::string& nvtx,
                                          const std::vector<std::string>& phases) {
  trace::LoadOptions lo;
  lo.format = format;
  lo.nvtx_path = nvtx;
  trace::Profile prof = trace::load_profile(path, lo);
  try {
    return trace::select_phases(prof, phases);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

}  // namespace arfit::cli
