// fit/prior_check.h: the one check that a prior is another machine, as fit, predict and the Python package apply
// it. Models sets are fitted here from synthetic samples (no files): what a fit records of its inputs and points is
// what the check reads.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fit/fit.h"
#include "fit/prior_check.h"

using namespace arfit;
using arfit::fit::MeasurementFile;
using arfit::fit::OwnMeasurements;
using arfit::fit::PriorOfOwnMeasurements;

namespace {

// An all-reduce curve of `system` at 8 GPUs, 1 KiB to 64 MiB: α-β with `alpha_us` and `scale` on the bandwidth term.
std::vector<Sample> curve_of(const std::string& system, double alpha_us, double scale = 1) {
  std::vector<Sample> out;
  for (int e = 10; e <= 26; ++e) {
    Sample s;
    s.nranks = 8;
    s.dtype = "fp16";
    s.bytes = std::int64_t{1} << e;
    s.time_us = alpha_us + scale * std::ldexp(1.0, e) / 2e5;
    s.source = system + ".csv";
    s.extra["system"] = system;
    out.push_back(s);
  }
  return out;
}

ModelSet fitted(const std::vector<Sample>& samples, const std::vector<std::string>& inputs = {}) {
  return fit::fit_model_set(samples, fit::FitOptions{}, inputs);
}

// The message PriorOfOwnMeasurements carries, or "" when `f` accepts the prior.
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const PriorOfOwnMeasurements& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// A renamed byte-identical copy is the same file by its fingerprint, whatever its name; another file is not.
TEST(PriorCheck, AFileWithAnOwnFingerprintIsRefusedUnderAnyName) {
  const OwnMeasurements own = fit::own_measurements_of_fit({{"m1.csv", "00aa"}}, curve_of("m1", 10));
  EXPECT_EQ(refusal([&] { fit::refuse_own_file_as_prior({"renamed.csv", "00aa"}, own); }),
            "renamed.csv is the same file as m1.csv, an input of this fit; a prior is another machine's file");
  EXPECT_EQ(refusal([&] { fit::refuse_own_file_as_prior({"other.csv", "00bb"}, own); }), "");
  // A fingerprint that could not be taken matches nothing (an unreadable prior is not "the same file").
  const OwnMeasurements unknown = fit::own_measurements_of_fit({{"m1.csv", ""}}, curve_of("m1", 10));
  EXPECT_EQ(refusal([&] { fit::refuse_own_file_as_prior({"x.csv", ""}, unknown); }), "");
}

// A models file fitted from a copy of an own input names the input and the copy.
TEST(PriorCheck, AModelsFileFittedFromAnOwnInputIsRefused) {
  const ModelSet target = fitted(curve_of("m1", 10));
  const OwnMeasurements own = fit::own_measurements_of_models({"m1.json", "1111"}, target);
  nlohmann::json doc = fitted(curve_of("m2", 30, 2)).to_json();
  doc["inputs"] = {{{"path", "copy.csv"}, {"fnv1a64", "2222"}}};
  const OwnMeasurements with_input = [&] {
    OwnMeasurements o = own;
    o.files.emplace("2222", "m1.csv, an input of m1.json");
    return o;
  }();
  const ModelSet prior = ModelSet::from_document(doc, doc.dump(), "copy.json");
  EXPECT_EQ(refusal([&] { fit::refuse_own_models_as_prior("copy.json", prior, with_input); }),
            "copy.json was fitted from copy.csv, the same file as m1.csv, an input of m1.json; a prior is another machine's file");
  EXPECT_EQ(refusal([&] { fit::refuse_own_models_as_prior("copy.json", prior, own); }), "");
}

// The target's own sizes under its label, in another file (some rows cut: another fingerprint), share measured points
// with the target: refused. Another machine's curve under another label, and the same label with other times (two
// clusters whose logs share a name), are taken.
TEST(PriorCheck, OwnPointsUnderTheSameLabelAreRefusedAndOnlyThey) {
  const std::vector<Sample> target = curve_of("m1", 10);
  const OwnMeasurements own = fit::own_measurements_of_fit({{"m1.csv", "aaaa"}}, target);
  std::vector<Sample> part(target.begin(), target.end() - 3);
  const std::string why = refusal([&] { fit::refuse_own_models_as_prior("part.csv", fitted(part), own); });
  EXPECT_NE(why.find("part.csv holds 14 measurement(s) of m1/allreduce/NCCL/NONE/fp16/n8/N1"), std::string::npos) << why;
  EXPECT_NE(why.find("that this fit holds under the same machine label"), std::string::npos) << why;
  EXPECT_EQ(refusal([&] { fit::refuse_own_models_as_prior("m2.csv", fitted(curve_of("m2", 10)), own); }), "");
  EXPECT_EQ(refusal([&] { fit::refuse_own_models_as_prior("other_m1.csv", fitted(curve_of("m1", 12, 1.5)), own); }), "");
}

// predict's own measurements are those a models file records: the same check answers alike from the file.
TEST(PriorCheck, AModelsFileRecordsWhatItsPriorsAreCheckedAgainst) {
  const std::vector<Sample> target = curve_of("m1", 10);
  const OwnMeasurements from_models = fit::own_measurements_of_models({"m1.json", "1234"}, fitted(target));
  const OwnMeasurements from_fit = fit::own_measurements_of_fit({}, target);
  EXPECT_EQ(from_models.points, from_fit.points);
  EXPECT_EQ(from_models.whose, "m1.json");
  EXPECT_EQ(refusal([&] { fit::refuse_own_file_as_prior({"again.json", "1234"}, from_models); }),
            "again.json is the same file as m1.json, the models file; a prior is another machine's file");
  std::vector<Sample> part(target.begin() + 5, target.end());
  EXPECT_NE(refusal([&] { fit::refuse_own_models_as_prior("part.json", fitted(part), from_models); }).find("that m1.json holds"),
            std::string::npos);
}
