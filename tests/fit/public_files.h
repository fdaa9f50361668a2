// The public measurement files as the fit data tests read them (../shared/data/public; none when it is absent),
// by machine, a machine's samples cut to the sizes a calibration run measures, and such a run fitted with the
// other machines as priors.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fit/fit.h"
#include "fit/transfer.h"
#include "ingest/ingest.h"
#include "model/anchors.h"
#include "model/model_set.h"
#include "test_support.h"

namespace arfit::testing {

struct PublicFileSamples {
  std::string path;
  std::vector<Sample> samples;
};

// Every public file ingest reads, in path order, with its samples: `arfit fit FILE` fits one. Files the readers do
// not take (busbw-only tables) hold no curve to fit and are passed over. Read once per test program.
inline const std::vector<PublicFileSamples>& readable_public_files() {
  static const std::vector<PublicFileSamples> files = [] {
    std::vector<PublicFileSamples> out;
    for (const std::string& f : public_data_files()) {
      try {
        out.push_back({f, ingest::ingest_file(f).samples});
      } catch (const std::exception&) {
      }
    }
    return out;
  }();
  return files;
}

// The samples of the public files whose path contains `folder` ("": every file) by machine (the label fit groups
// by).
inline std::map<std::string, std::vector<Sample>> public_samples_by_system(const std::string& folder = "") {
  std::map<std::string, std::vector<Sample>> out;
  for (const PublicFileSamples& f : readable_public_files())
    if (f.path.find(folder) != std::string::npos)
      for (const Sample& s : f.samples) out[sample_system(s)].push_back(s);
  return out;
}

// A calibration run of `system` fitted as `arfit fit anchors.csv --prior ...` with every other machine of `fitted`
// (fitted sets by machine) as priors.
inline ModelSet fit_with_other_machines_as_priors(const std::vector<Sample>& anchors, const std::string& system,
                                                  const std::map<std::string, ModelSet>& fitted, fit::FitOptions options) {
  std::vector<ModelSet> others;
  for (const auto& [other, set] : fitted)
    if (other != system) others.push_back(set);
  options.prior = std::make_shared<fit::TransferLibrary>(others);
  return fit::fit_model_set(anchors, options, {}, {"priors.json"});
}

// `samples` cut to what `arbench --plan anchors:K` measures (and crosshw:K keeps): per curve, the sizes at
// anchor_indices of its sorted distinct sizes.
inline std::vector<Sample> samples_at_anchors(const std::vector<Sample>& samples, int K) {
  std::map<GroupKey, std::set<double>> keep;
  for (const fit::Curve& c : fit::build_curves(samples))
    for (std::size_t i : anchor_indices(c.bytes.size(), K)) keep[c.key].insert(c.bytes[i]);
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    const auto it = keep.find(sample_group_key(s));
    if (it != keep.end() && it->second.count(static_cast<double>(s.bytes))) out.push_back(s);
  }
  return out;
}

}  // namespace arfit::testing
