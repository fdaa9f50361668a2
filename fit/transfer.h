// Transfer: a curve of a new machine from a few of its own sizes (the anchors) and the matching curves of
// other machines (the sources: same collective, strategy, fusion, rank and node count, element size).
//
// Each source lends its shape through a size-and-time map fitted to the anchors,
//     ln t(s) = u + g(s·e^v) + r(s),
// g the source's ln t (what it measured, log-log between its sizes), a = e^u a time scale and b = e^v a size
// scale: for two α-β curves this is exact (a = α'/α, b = α·β'/(α'·β)) and it moves a protocol switch with
// the bandwidth, which is how NCCL's tuning places them. r interpolates the remaining residuals at the anchors
// linearly in ln s, so the result passes through every anchor.
//
// With two or more anchors every source is judged by how well it predicts each anchor from the others
// (leave one anchor out), the size scale held near 1 (fit_map), and the machine's own α-β line through the
// anchors is one more candidate (for a machine unlike every source). Each anchor's squared error is put on
// the scale of one anchor gap (an end anchor is extrapolated a gap, an inner one bridged between two), and
// at each size the candidate's variance is those anchors' errors weighted by a Gaussian of their distance in
// gaps (a source may follow the machine at small sizes and not at large ones): w ∝ 1/(var + σ_floor² +
// roughness²)², roughness the source's own point-to-point scatter (a jittery source lends its jitter); the
// weighted mean of ln t answers. With zero or one anchor nothing can be judged: the sources of the machines
// nearest in datasheet interconnect bandwidth are carried with the datasheet's bandwidth ratio, the latency
// as is (K = 0) or from the anchor (K = 1), and their median answers. The interval is the candidates' spread in
// quadrature with their leave-one-out errors (K >= 2; Student's t with K degrees of freedom) or with a term
// calibrated on the other machines of the prior, each predicted from the rest (K <= 1,
// transfer_calibration()). docs/fit.md has the figures.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "fit/fit.h"
#include "model/group_model.h"
#include "model/scale_out.h"

namespace arfit::fit {

// A fitted curve of another machine: its prediction tabulated against ln bytes (exact at its measured
// sizes), linear in ln s between table points and beyond the table's ends.
class TransferSource {
 public:
  // `system`: the machine that measured it (named in `how`). Its SM is the group's, else its device's, else
  // the system label's (sm_from_device).
  static TransferSource from_model(const GroupModel& model, const std::string& system);

  const GroupKey& key() const { return key_; }
  const std::string& system() const { return system_; }
  int sm() const { return sm_; }
  double min_bytes() const { return min_bytes_; }
  double max_bytes() const { return max_bytes_; }
  // ln t at ln bytes.
  double log_time(double ln_bytes) const;
  // The sizes it measured (its correction knots; spikes aside) and the median |second difference| of ln t
  // over them.
  const std::vector<double>& measured_ln_bytes() const { return measured_; }
  double roughness() const { return roughness_; }

 private:
  GroupKey key_;
  std::string system_;
  int sm_ = 0;
  double min_bytes_ = 0, max_bytes_ = 0, roughness_ = 0;
  std::vector<double> x_, y_;  // table: ln bytes ascending, ln t
  std::vector<double> measured_;
};

// |ln| of the ratio of two SMs' datasheet interconnect bandwidths (model/sm_targets.h); infinity when either
// is not in the table.
double datasheet_distance(int sm_a, int sm_b);

struct TransferTarget {
  GroupKey key;
  int sm = 0;                          // datasheet SM, 0 = unknown
  std::vector<double> bytes, time_us;  // anchors, ascending distinct sizes (may be empty)
  // Sizes the answer is wanted for (0, 0: the anchors' span). Only sources that measured some of them lend
  // their shape: elsewhere a source is an extrapolation itself.
  double lo_bytes = 0, hi_bytes = 0;
};

// The K <= 1 rule's own errors on machines of the prior (transfer_calibration()). Its interval is the
// sources' spread in quadrature with a term τ, the smallest for which 90 % of the other machines' points
// fall inside, by class: how near in datasheet interconnect bandwidth the nearest other machine was (a machine
// with a twin in the prior is predicted far better than one without), and whether the datasheet describes the
// link the collective uses at all.
struct TransferCalibration {
  // Classes: 0 the same interconnect bandwidth, 1 within a factor 2, 2 further, 3 unknown (not in the table,
  // or across nodes: the network decides), 4 a PCIe machine (no NVLink) on one node: its slot's figure says
  // little of what a collective gets (peer-to-peer or not, the switch topology, staging through the host), so
  // it is calibrated on PCIe machines only, and NVLink machines never on PCIe ones.
  static constexpr int kClasses = 5;
  static int calibration_class(double datasheet_distance, int nnodes, int target_sm);
  double tau[kClasses] = {-1, -1, -1, -1, -1};  // σ (log) per class; -1: too few points in the class
  double overall = -1;                          // all classes together; -1: fewer than two machines
  // The class's τ, else the overall one, else -1.
  double for_class(int calibration_class) const;
};

struct TransferOptions {
  // Interval of the K <= 1 rule (none: the datasheet's own ±30 %, kSmTransferLogSigma).
  const TransferCalibration* calibration = nullptr;
};

// One candidate's share of the answer, for `how` and the models file.
struct TransferShare {
  std::string system;  // source machine; "own" for the machine's own α-β line
  std::string id;      // source group id ("" for own)
  double weight = 0;
};

class Transfer {
 public:
  bool ok() const { return ok_; }
  const std::string& problem() const { return problem_; }
  int anchors() const { return static_cast<int>(anchor_x_.size()); }
  // Combined ln t and its σ (log) at `bytes`.
  double log_time(double bytes) const;
  double log_sigma(double bytes) const;
  Prediction predict(double bytes) const;
  const std::vector<TransferShare>& shares() const { return shares_; }
  // "transfer K=3: h100_sxm 62%, h200_sxm 31%, own 7%"; "zero-shot from ...";
  // "no comparable curve in the priors: own 3 sizes only".
  const std::string& how() const { return how_; }
  // Sizes the sources measured within [lo, hi], and the anchors: where the answer carries information.
  std::vector<double> grid(double lo, double hi) const;
  double min_bytes() const { return min_bytes_; }  // smallest / largest size any source or anchor measured
  double max_bytes() const { return max_bytes_; }

 private:
  friend Transfer transfer_curve(const TransferTarget&, const std::vector<const TransferSource*>&, const TransferOptions&);
  struct Candidate {
    const TransferSource* source = nullptr;  // null: the machine's own α-β line
    double u = 0, v = 0;                     // ln time scale, ln size scale (own: ln α, ln crossover size)
    std::vector<double> resid;               // residuals at the anchors
    double weight = 0;  // over the whole curve (shares, `how`); the answer weighs per gap (weights_at)
    // Leave-one-anchor-out errors as variances per mean anchor gap: each anchor's squared error over the share
    // of a gap it was predicted across (anchor_gap_factors).
    std::vector<double> gap_var;
    // The variance per gap near ln bytes x: the anchors' gap_var weighted by a Gaussian of their distance
    // to x in mean anchor gaps (a source may follow the machine in one regime and not in another).
    double local_var(double x, const std::vector<double>& anchor_x) const;
    // Its weight, before normalising, at variance `var` (K >= 2): at a size (weights_at) and over the curve.
    double raw_weight(double var) const;
    double base(double ln_bytes) const;
    double log_time(double ln_bytes, const std::vector<double>& anchor_x) const;
    // Whether its source measured the size it is read at for ln bytes (its shape there is not an extrapolation).
    bool measured_at(double ln_bytes) const;
  };
  // K <= 1: ln t at ln bytes x of the candidates the median takes: those whose source measured that size, when
  // any, else all.
  std::vector<double> median_log_times(double x) const;
  // K <= 1: the sources of the machines nearest in datasheet interconnect bandwidth, their median.
  void carry_nearest(const TransferTarget& target, const std::vector<const TransferSource*>& sources,
                     const TransferOptions& options);
  // K >= 2: every source and the machine's own line, weighted by leave-one-anchor-out.
  void judge(const std::vector<const TransferSource*>& sources);
  // Shares per machine, the sizes the sources span, and `how`.
  void describe(bool any_source);
  // Share of the leave-one-out variance at ln bytes x (K >= 2), if the error drifts like a random walk in
  // ln s: an anchor left out is predicted one gap away (variance ∝ gap), a size between two anchors is
  // pinned at both ends (a Brownian bridge: ∝ t(1 − t)·gap, t its place in the gap, 1/4 at most), and
  // beyond the outermost anchors it grows by one per gap.
  double bridge(double x) const;
  // K >= 2: the candidates' weights at ln bytes x (raw_weight of local_var, normalised) and the weighted
  // local variance there.
  std::vector<double> weights_at(double x, double* local_variance) const;
  bool ok_ = false;
  std::string problem_, how_;
  std::vector<double> anchor_x_, anchor_y_;  // ln bytes, ln t of the anchors
  std::vector<Candidate> cands_;
  bool median_ = false;           // K <= 1: median of the candidates; else their weighted mean
  double tau_ = 0;                // K <= 1: calibrated σ added to the spread
  double min_bytes_ = 0, max_bytes_ = 0;
  std::vector<TransferShare> shares_;
};

// `sources`: curves of other machines matching the target (comparable_curves); they must outlive the result.
// Fails (ok() false, problem() says why) when there is no source and fewer than two anchors.
Transfer transfer_curve(const TransferTarget& target, const std::vector<const TransferSource*>& sources,
                        const TransferOptions& options = {});

// Calibration of the K <= 1 rule (K = 0 or 1): every curve of `library` whose system is not
// `exclude_system` is predicted by the same rule from the curves of the other systems (also not
// `exclude_system`), at its measured sizes; τ per calibration class (TransferCalibration) of the sources it used.
TransferCalibration transfer_calibration(const std::vector<TransferSource>& library, int K,
                                         const std::string& exclude_system = "");

// The priors of `arfit fit --prior`: every fitted group of the given models files (their system labels name
// the machines), and the K <= 1 rule's calibration on them (computed on first use).
class TransferLibrary {
 public:
  explicit TransferLibrary(const std::vector<ModelSet>& priors);
  const std::vector<TransferSource>& sources() const { return sources_; }
  std::vector<const TransferSource*> matching(const GroupKey& target) const;
  // Calibration of the K <= 1 rule over the library's machines (leave one machine out); thread-safe.
  const TransferCalibration& calibration(int K) const;

 private:
  std::vector<TransferSource> sources_;
  mutable std::mutex mutex_;
  mutable std::map<int, TransferCalibration> calibration_;
};

// A curve of a new machine with fewer sizes than this is transferred when priors are given (fit_model_set);
// from here on it is measured like any curve of the protocols (>= 12 sizes) and fitted on its own.
inline constexpr int kTransferBelowSizes = 12;

// A transferred curve as a models.json group: the usual entry fitted to the transfer's answer on grid()
// (so predict, codegen, suggest and plot read it unchanged), its interval replaced by the transfer's σ at
// those sizes (`transfer.log_bytes` / `transfer.log_sigma`), and `transfer` naming the sources and weights.
GroupFit transferred_group(const TransferTarget& target, const Transfer& transfer, double lo_bytes, double hi_bytes);

}  // namespace arfit::fit
