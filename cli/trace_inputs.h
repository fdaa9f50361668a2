// Profile loading shared by `arfit breakdown` and `arfit whatif`: the same reader options and phase selection,
// with an unknown phase name reported as a usage error.
#pragma once

#include <iostream>
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
  trace::Profile prof;
  try {
    prof = trace::load_profile(path, lo);
  } catch (const trace::OptionNotForProfile& e) {  // as plot and codegen refuse an option their input does not read
    throw UsageError("--nvtx " + nvtx + ": " + e.what());
  }
  try {
    return trace::select_phases(prof, phases);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

// A --fold name that matches no node of the profile folds nothing: most likely a typo, said on standard error so
// that the command's answer is not read as folded (`command`: breakdown or whatif, for the message).
inline void warn_folds_matching_nothing(const trace::Profile& prof, const std::vector<std::string>& folds, const std::string& command) {
  for (const auto& f : folds)
    if (!trace::profile_has_node(prof, f))
      std::cerr << "arfit " << command << ": warning: --fold '" << f << "' matches no node of " << prof.source << "\n";
}

}  // namespace arfit::cli
