// Other machines' curves for the adaptive loop (`arbench --plan adaptive --prior FILES`), read as `arfit fit --prior`
// reads them: a models file as it is, any other file as samples in a format `arfit ingest` reads, fitted.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace arfit::fit {
class TransferLibrary;
struct OwnMeasurements;  // fit/prior_check.h
}

namespace arfit::planner {

// Throws InputError (model/errors.h) for a file that is neither, std::runtime_error when no file holds a fitted curve,
// and fit::PriorOfOwnMeasurements for a prior holding `own` (fit/prior_check.h: the run's output or its journal, a
// copy of one, a models file fitted from one): a prior is another machine.
std::shared_ptr<const fit::TransferLibrary> load_prior_library(const std::vector<std::string>& paths, const fit::OwnMeasurements& own);

}  // namespace arfit::planner
