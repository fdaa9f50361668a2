// What the models say about every case of a target table, and how sure the table's choices are.
//
// estimate_cases fits the measured cases with the fit library exactly as `arfit fit` does (fit_model_set: family by
// cross-validation, residual correction, sibling knots; with priors, a curve of few sizes is transferred from other
// machines' curves as `arfit fit --prior` does) and predicts every case with its 90 % interval. A measured case is
// its measurement (no uncertainty: it is not measured twice). A curve the fit cannot model yet (fewer than four
// sizes and no prior) is read through its measured sizes by the α-β line within the physical bounds (FallbackRule).
// A measured size that stands above both its measured neighbours (fit/fit.h's spike rule, the one the fit's
// residual correction already sets aside) is set aside from the curve's model too: a single-size excursion says
// nothing of the sizes around it, and fitted through, it bends the whole family (a 1 MiB spike of one A100 curve
// once moved the predictions of the sizes far below it by up to a factor 4, with a σ of 0.34). Its own case stays its
// measurement; the risk that unmeasured sizes hide such spikes is SpikeRisk's, in the assessment.
//
// assess scores the table those estimates make: each cell chooses its fastest candidate (codegen's decision rule),
// and its expected regret is E[ln t(choice) − ln t(best)] under the predictive distributions, the codegen table's
// expected_shortfall summed over the other candidates (with two candidates exactly the table's
// Cell::expected_regret; with more the sum bounds the expectation from above, so a stop rule on it errs toward
// measuring).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "planner/table.h"

namespace arfit::fit {
class TransferLibrary;
}

namespace arfit::planner {


struct CaseEstimate {
  double log_us = 0;   // ln of the predicted (or measured) time
  double sigma = 0;    // σ of ln t; 0 when measured
  bool measured = false;
  bool failed = false;  // measured and failed: no candidate
  bool fitted = false;  // from a fitted or transferred model (else the fallback rule, or measured)
  bool spike = false;   // measured, and set aside by its curve's model as a spike
};
// A curve the fit cannot model yet (fewer than four sizes, no prior). Its mean is the α-β line (t = α + s/β, the
// physical model of a collective: a latency and a bandwidth) through its measured sizes, least squares in relative
// error, passing through each measured size (the log residuals interpolated linearly in ln size between them, held
// beyond them); with one size, slope 1/2 in log-log. Its 90 % interval is what physics alone allows (model/
// group_model.h's bounds): a collective's time does not fall as the message grows and does not grow faster than the
// message, so between measured sizes (s_l, t_l) and (s_r, t_r) it lies in [max(t_l, t_r·s/s_r), min(t_r, t_l·s/s_l)],
// above the largest in [t_max, t_max·s/s_max], below the smallest in [t_min·s/s_min, t_min]. No constant is tuned:
// the interval is as wide as ignorance is, and the loop measures where that matters.
struct FallbackRule {
  double floor = 0.01;  // σ floor: the repeatability of one measurement (fit_group.cpp's kSigmaInFloor)
};

// A curve's estimate at ln bytes `at` from its measured sizes alone (ln_bytes ascending and distinct, ln_us the
// times there): the FallbackRule's mean and physical interval.
CaseEstimate fallback_estimate(const std::vector<double>& ln_bytes, const std::vector<double>& ln_us, double at,
                               const FallbackRule& rule);

struct EstimateOptions {
  std::shared_ptr<const fit::TransferLibrary> prior;  // other machines' curves (`arfit fit --prior`); null: none
  FallbackRule fallback;
  int threads = 1;
};

std::vector<CaseEstimate> estimate_cases(const TargetTable& table, const Measurements& measured,
                                         const EstimateOptions& options = {});

struct CellAssessment {
  int choice = -1;             // the case chosen (fastest estimate); -1 when every candidate failed
  double expected_regret = 0;  // in ln time (0.01 ≈ 1 %)
  double regret_variance = 0;  // of the regret, ln time squared (the pairs' variances summed)
  bool uncertain = false;      // the choice's and the runner-up's 90 % intervals overlap (codegen's rule)
};

struct Assessment {
  std::vector<CellAssessment> cells;
  double mean_expected_regret = 0;  // mean over cells, ln time: ln of the expected geomean regret's factor
  double mean_regret_sd = 0;        // its standard deviation (cells of the same competing curves err together)
  int uncertain_cells = 0;
  // The table's expected geometric-mean regret as a fraction (0.01 = 1 %): exp(mean) − 1.
  double expected_geomean_regret() const;
  // The geometric-mean regret the table stays below with 90 % probability (normal approximation of the mean of
  // the cells' log regrets): the quantity --until-regret promises.
  double geomean_regret_bound() const;
  int worst_cell() const;  // index of the cell with the highest expected regret; -1 when there are none
};

// Single-size excursions the table's measurements show: of the measured sizes whose grid neighbours on both sides
// are measured too (and the smallest size, with the next two: the warm-up rule), the share that stands more than
// fit::kSpikeRise above both (the fit's spike rule), and by how much (ln of its time over the higher neighbour's).
// Neighbours on the grid, not merely the nearest measured sizes: across a gap a rising curve hides any spike.
struct SpikeRisk {
  int tested = 0, spikes = 0;
  double rate = 0;            // (spikes + 1) / (tested + 2): the chance an unmeasured size is one; 0 without rises
  std::vector<double> rises;  // the spikes' rises, ln time, ascending (at most kMaxRises quantiles of them)
  static constexpr std::size_t kMaxRises = 32;
};
SpikeRisk spike_risk(const TargetTable& table, const Measurements& measured);

// With `risk`, a cell whose choice is not measured also pays for the chance that its time there is a spike the
// models cannot see (set aside from them, above): the cell's regret is the mixture of its shortfall without a spike
// (1 − rate) and with the choice raised by each measured rise (rate, the rises equally likely). Measured choices
// carry no such risk (their time is known, spike or not), and an alternative's spike only helps the choice.
Assessment assess(const TargetTable& table, const std::vector<CaseEstimate>& estimates, const SpikeRisk& risk = {});

}  // namespace arfit::planner
