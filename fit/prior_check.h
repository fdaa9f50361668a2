// A prior is another machine (docs/fit.md, "Priors are other machines"): the one check of every entry point that
// takes priors (`arfit fit --prior`, `arfit predict --prior`, `arbench --plan adaptive --prior`, the Python package's
// fit(priors=...) and Models.predict(priors=...)). It lives here, beside what it reads: fit_model_set records each
// input's fingerprint (`inputs`) and each group's measured points (`measured_points`), and this checks a prior
// against them.
//
// A prior holding the measurements the answer already rests on would lend the machine its own measurements as
// another's (a transfer, a scale-out step), and the answer would report itself far better than it is: a renamed
// byte-identical copy of the log a predict target was fitted from moved its 1 GiB answer by +41 %, and a prior fitted
// from the target's own sizes under its machine label made the intervals cover 62 %.
#pragma once

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "model/model_set.h"
#include "model/sample.h"

namespace arfit::fit {

// A prior refused as the command's own measurements: a usage error (the caller chose the file), exit 2.
class PriorOfOwnMeasurements : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// A file as a command holds it: the name it was given by, and the fingerprint of the bytes read (fnv1a64_hex;
// input_fingerprint for a path, of the text for a text read otherwise; "" when unknown).
struct MeasurementFile {
  std::string name, fingerprint;
};

// What an answer already rests on: the measurements of `fit`'s inputs (or of an arbench run's output), or of the files
// the models file `predict` answers from was fitted from.
struct OwnMeasurements {
  std::string whose;                                       // "this fit", "this run", or the models file's name
  std::vector<std::pair<std::string, std::string>> named;  // (a path the command was given, what it is)
  std::map<std::string, std::string> files;                // a measurement file's fingerprint -> how to name it
  std::map<std::string, std::set<std::string>> points;     // group id -> its measured points' fingerprints
};

// The own measurements of samples read from `files` (their fingerprints), each file named "NAME, `role`" ("an input of
// this fit", "the output of this run"), `whose` naming them all ("this fit"), and the points of the samples' curves,
// grouped as fit_model_set groups them.
OwnMeasurements own_measurements_of_samples(const std::string& whose, const std::string& role, const std::vector<MeasurementFile>& files,
                                            const std::vector<Sample>& samples);
// A fit's own measurements: its inputs ("an input of this fit") and their samples.
OwnMeasurements own_measurements_of_fit(const std::vector<MeasurementFile>& inputs, const std::vector<Sample>& samples);

// A models file's own measurements: the file itself, the inputs it records ("inputs": fnv1a64) and its groups'
// "measured_points" (a file fitted before those were recorded has none: only its inputs are checked).
OwnMeasurements own_measurements_of_models(const MeasurementFile& models_file, const ModelSet& set);

// Throws PriorOfOwnMeasurements when the prior file `prior` is one of `own`'s files: the same path (same_path: a
// link, another spelling) or the same fingerprint (a renamed copy). Messages start with the prior's name.
void refuse_own_file_as_prior(const MeasurementFile& prior, const OwnMeasurements& own);

// Throws PriorOfOwnMeasurements when the prior models `prior` (a models file given, or sample files fitted; `name`
// names it in the message) were fitted from one of `own`'s files (their `inputs` record its fingerprint), or hold a
// group with the id of one of `own`'s (the same machine label, collective, strategy, fusion, dtype, GPU and node
// count) and a measured point of it (the same size and time). A label alone is not the rule: two logs named
// allreduce.txt of two clusters share a label and no point, and arbench labels its rows by their device name, which
// every machine of that GPU shares (a new H100 box calibrated from another H100 box's run).
void refuse_own_models_as_prior(const std::string& name, const ModelSet& prior, const OwnMeasurements& own);

}  // namespace arfit::fit
