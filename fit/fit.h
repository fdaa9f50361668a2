// fit/: turning measured samples into fitted models (Ceres least squares), and the evaluation protocols.
//
// Public API used by cli/ (fit, predict, eval), codegen/ (select evaluation) and plots/.
//   build_curves   samples -> one Curve per group (sizes ascending, duplicates collapsed to the median)
//   fit_curve      one Curve -> GroupFit (family chosen by CV unless forced, residual knots, covariance)
//   fit_group      samples of one group -> GroupFit
//   fit_model_set  samples of any number of groups -> ModelSet (the models.json contents), joint-n fits included
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/model_set.h"
#include "model/sample.h"

namespace arfit::fit {

class TransferLibrary;  // fit/transfer.h

// How samples are grouped into curves.
enum class GroupBy {
  System,  // GroupKey::system = Sample::extra["system"], else the device name, else the source file stem
  Source,  // GroupKey::system = Sample::source, "source · system" where a source holds several machines (the
           // eval protocols: a curve never mixes files, nor machines)
};

struct CurveOptions {
  GroupBy group_by = GroupBy::System;
  bool out_of_place_only = false;  // drop in_place samples (the reference evaluation uses out-of-place times)
  int min_sizes = 1;               // drop curves with fewer distinct sizes
};

// One group's measured curve: distinct sizes ascending, time = median of duplicates (v[len/2] of the sorted
// values, as the reference evaluation does). Failed samples and sizes/times <= 0 are skipped.
struct Curve {
  GroupKey key;
  std::vector<double> bytes;    // ascending, distinct, > 0
  std::vector<double> time_us;  // > 0
  std::vector<std::string> sources;   // distinct Sample::source values that fed the curve
  std::vector<std::int64_t> hidden;   // distinct hidden sizes (shape samples), empty for plain byte sizes
  // Shape samples (tokens x hidden), kept point by point: several hidden sizes may share one byte size.
  struct ShapePoint {
    std::int64_t tokens, hidden;
    double bytes, time_us;
  };
  std::vector<ShapePoint> shape_points;
  int sm = 0;                          // SM version of the samples (0 = unknown / mixed)
  std::string device;
  // The inter-node network its samples state (Sample::extra["network"], model/stated_network.h); empty when none.
  std::string network;
  // The machine that measured the curve (Sample::extra["system"], else the device name, else the file stem;
  // see sample_system()); equals key.system when curves are grouped by system. Sibling pooling
  // (fit/siblings.h) pools curves of one machine.
  std::string hardware;
  // The machine for "leave one machine out" (crosshw's targets and sources, ceiling-otherhw): `hardware`,
  // except that labels whose samples name the same device on the same hosts (Sample::extra["hosts"], from an
  // nccl-tests log's 'Using devices' lines) are one machine, named by the first of those labels in name order.
  // Two logs of one cluster with another setting or another size range are not two machines; hosts no two
  // labels share change nothing, and a wrong match (two clusters with the same host names) only withholds a
  // source.
  std::string machine;
};

std::vector<Curve> build_curves(const std::vector<Sample>& samples, const CurveOptions& options = {});

// One fingerprint per measured point of `c` (fnv1a64_hex of its size and time, both to 17 significant digits),
// in the curve's size order: what a models file records of each group ("measured_points") so that a prior can be
// recognised as the machine's own measurements after its file was reordered, cut or re-exported (fit/prior_check.h,
// refuse_own_models_as_prior). A fingerprint, not the times: a models file does not carry the measurements.
std::vector<std::string> measured_point_fingerprints(const Curve& c);

// The message size a curve places a sample at: its bytes, else tokens x hidden x the dtype's size; 0 when neither is
// known (build_curves leaves such a sample out; fit, eval and plot say how many and where: cli/cli_inputs.h).
double curve_bytes(const Sample& s);

struct FitOptions {
  // "auto" (model selection by cross-validation), or one of "seed", "alphabeta", "sigmoid", "regimes"
  // (K = 1..4 chosen by CV), "regimes1".."regimes4", "satbw".
  std::string family = "auto";
  bool residual_correction = true;  // in-range spline of log-residuals (model x correction)
  bool tail = true;                 // above the range: the tail α-β line of the top sizes (else the family)
  int min_points = 4;               // fewer distinct sizes: the group is reported as unfittable
  bool joint_n = true;              // fit_model_set: add joint fits across GPU counts
  bool pool_siblings = true;        // fit_model_set: sibling knots from other dtypes of a group (fit/siblings.h)
  int threads = 1;                  // fit_model_set: groups fitted in parallel (results identical)
  // fit_model_set: other machines' fitted groups (`arfit fit --prior`). A curve with fewer than
  // kTransferBelowSizes sizes and matching priors is transferred from them (fit/transfer.h) instead of
  // fitted alone; null: every curve is fitted alone.
  std::shared_ptr<const TransferLibrary> prior;
};

// Result of fitting one curve. `model` is the group's entry of models.json (see docs/fit.md) and is what
// ModelSet evaluates; ok == false means the group could not be fitted and `problem` says why
// (too few points, zeros, non-finite values...). Then model holds only key + diagnostics.
struct GroupFit {
  GroupKey key;
  bool ok = false;
  std::string problem;
  std::string family;  // chosen family
  double cv_gmae = 0;  // fraction
  nlohmann::json model;
};

// A measured size whose time stands more than kSpikeRise above both measured neighbours is a spike: latency
// does not rise and fall again between neighbouring sizes except through interference (another job, a clock
// change), so the residual correction and sibling pooling set its knot aside and interpolate across it; the
// model fit keeps it (its robust loss already discounts it). Dips are kept: a faster size between two slower
// ones is how a protocol or algorithm switch shows. 2 % is about twice the repeatability of one measurement;
// the public curves' figures hardly move between 0.5 % and 5 % (docs/fit.md).
inline constexpr double kSpikeRise = 0.02;
// The smallest size is a spike too when its time stands more than kSpikeRise above both of the next two: the
// first size of a sweep pays the warm-up (a third of the custom all-reduce tables and a tenth of the NCCL ones
// on the public data); the correction then holds the next knot's residual down to it. The largest size is never
// a spike (nothing brackets it).
// Indices of the spikes of a curve's times (sizes ascending).
std::vector<size_t> spike_indices(const std::vector<double>& time_us);

GroupFit fit_curve(const Curve& curve, const FitOptions& options = {});
// All samples must belong to one group (else the first group found is fitted and the rest ignored).
GroupFit fit_group(const std::vector<Sample>& samples, const FitOptions& options = {});

// Fits every group of `samples` and assembles the models file: schema version, arfit version, inputs
// (paths + FNV-1a hashes of their contents when the paths can be read), groups, joint-n families. With
// FitOptions::prior, curves with few sizes are transferred (fit/transfer.h) and `prior_paths` are recorded
// as "priors" the same way as the inputs. Every group and joint family is read back by the models file's reader
// before it goes in: one the reader would refuse is written not fitted (ok false, `problem` its reason) or, a
// joint family, left out, so the file written always loads.
ModelSet fit_model_set(const std::vector<Sample>& samples, const FitOptions& options = {},
                       const std::vector<std::string>& input_paths = {},
                       const std::vector<std::string>& prior_paths = {});

// Convenience for consumers: evaluate a single fitted group (GroupFit::model) at a size, in microseconds.
// Same code path as ModelSet::predict.
Prediction predict_group(const nlohmann::json& group_model, double bytes);

}  // namespace arfit::fit
