#include "planner/priors.h"

#include <stdexcept>

#include "fit/fit.h"
#include "fit/prior_check.h"
#include "fit/transfer.h"
#include "ingest/ingest.h"
#include "io/input_file.h"
#include "model/file_kind.h"
#include "model/text.h"

namespace arfit::planner {

std::shared_ptr<const fit::TransferLibrary> load_prior_library(const std::vector<std::string>& paths, const fit::OwnMeasurements& own) {
  std::vector<ModelSet> sets;
  std::vector<std::string> sample_files;
  for (const std::string& path : paths) {
    const std::string text = read_file(path);
    fit::refuse_own_file_as_prior({path, input_fingerprint(path)}, own);
    const std::optional<ArfitFile> kind = arfit_file_kind(text);
    if (kind && kind->kind == ArfitFileKind::Models) {
      sets.push_back(ModelSet::parse(text, path));
      fit::refuse_own_models_as_prior(path, sets.back(), own);
    } else {
      sample_files.push_back(path);
    }
  }
  // The sample files fitted together, as `arfit fit` fits its inputs (their machines' siblings pool as usual).
  if (!sample_files.empty()) {
    sets.push_back(fit::fit_model_set(ingest::load_samples(sample_files), fit::FitOptions{}, sample_files));
    fit::refuse_own_models_as_prior(join(sample_files, " "), sets.back(), own);
  }
  auto library = std::make_shared<const fit::TransferLibrary>(sets);
  if (library->sources().empty())
    throw std::runtime_error("--prior: no fitted curve in " + std::to_string(paths.size()) + " file(s)");
  return library;
}

}  // namespace arfit::planner
