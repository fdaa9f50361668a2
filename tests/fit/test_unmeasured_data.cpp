// Predictions where nothing was measured, in the regions test_between_counts_data.cpp does not sweep, stay physical
// (../shared/data/public; skipped when absent). Every public file is fitted as `arfit fit FILE` fits it (auto,
// joint-n) and asked what `arfit predict` answers there, through ModelSet::predict, the call predict makes:
//   * BelowTheMeasuredCounts: counts below the smallest measured one on one node (`--nranks 2` of a 4, 8 family,
//     `--nranks 2, 3` of a 4, 8 one; counts below 2 are no collective), at the sizes both smallest counts measured;
//   * BetweenCountsBetweenSizes: a count between two measured ones at sizes neither measured (a quarter, half and
//     three quarters of each gap between sizes both measured, in log bytes);
//   * TwoToSixteenNodes: the largest measured count's GPUs per node on 2, 3, 4, 5, 6, 8, 12 and 16 nodes
//     (`--nranks 32 --nnodes 4` of an 8-GPU node), more than twice the measured nodes, with every other public
//     file as a lender (`--prior`);
//   * TransferredFromKAnchors/K: a file's curves reduced to the K sizes `arbench --plan anchors:K` measures and
//     transferred from the other machines' models (`arfit fit anchors.csv --prior others...`), K = 1, 2, 4, 6
//     (the counts test does K = 3); K = 0, which no `arfit fit` input can hold (a curve needs a size), is the
//     same transfer with no anchor over the curve's measured sizes, as `arfit eval --protocol crosshw:0` asks it.
// The envelopes and their reasons are at each constant below. No subsampling: the whole program runs in ~35 s on
// one core (fitting the public files ~5 s, each K's transfers ~5 s).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/sm_targets.h"
#include "public_fits.h"

using namespace arfit;
using namespace arfit::testing;

namespace {

// Below the smallest measured count c (d the next measured count, n < c; k = log2(c / n) doublings down, and
// r = (t_c / t_d)^(k / log2(d / c)) the measured trend per doubling carried k doublings down):
//   t_c · min(1, P, B, r) / F  <=  t_n  <=  t_c · max(1, r) · F,
//   P = (n − 1) / (c − 1) the fall of a ring's peers (a latency-bound collective: steps ∝ n − 1),
//   B = f(n) / f(c) the fall of the bus factor (a bandwidth-bound one: bytes each GPU moves ∝ f(n)).
// Why: the mirror of OneDoublingBeyondTheMeasuredCounts. Taking GPUs off a node does not slow a fixed-size
// collective down — each GPU moves a smaller share of the message through fewer peers over its own link — unless
// the measured counts already showed time falling with more GPUs (an algorithm only the larger count runs, NVLS),
// and then by no more than that trend carried down; nor does it speed it up by more than the latency's law
// (a + b·(n − 1) with a, b >= 0 falls at most to (n − 1)/(c − 1)), the bandwidth's (the bytes per GPU, f(n)/f(c)),
// or the measured trend. F the sizes test's 25 % (ten times a measurement's repeatability).
constexpr double kBelowCounts = 1.25;

// Families whose violations below the measured counts are left, with the reason (group id).
//   * aiconfigurator's L40S NCCL table (PCIe only, 32 GB/s, no NVLink), fitted without its 2 GPUs: the time per
//     doubling of GPUs changes with the topology each count spans (one PCIe switch, several, both sockets) and
//     with the size — 4 -> 8 GPUs is 2.9x at 64 MiB and 3.4x at 16 MiB on the all-reduce — and the joint-n rule
//     carries the trend's median over two octaves either side (kJointSmoothOctaves: one switch between
//     neighbouring sizes must not set it), the envelope the trend at the size. The rule's answers lie 3-20 %
//     under the envelope's floor at 7 of the table's 160 (count, size) pairs, and where 2 GPUs were measured
//     those measurements are themselves under it at 2 of the 6 (all-reduce at 64 MiB: rule 4,988 us, floor
//     5,253, measured 3,359; all-gather at 256 MiB: 9,188, 11,390, 6,931): the PCIe machine's 2 -> 4 step is
//     steeper than its 4 -> 8, which no rule reading 4 and 8 can know.
const std::vector<std::string> kBelowLeft = {"l40s/allreduce/NCCL/NONE/fp16/n0/N1", "l40s/allreduce/NCCL/NONE/int8/n0/N1",
                                             "l40s/allgather/NCCL/NONE/fp16/n0/N1", "l40s/allgather/NCCL/NONE/int8/n0/N1",
                                             "l40s/alltoall/NCCL/NONE/int8/n0/N1"};

// Between two measured counts c1 < n < c2 at a size s neither measured, between measured sizes s_i < s < s_i+1:
//   m / F²  <=  t_n(s)  <=  M · F²,  m, M the least and the most of t_c1 and t_c2 at s_i and s_i+1.
// Why: the two envelopes composed. At c1 and c2 the time at s lies between their times at s_i and s_i+1 up to
// F (test_between_sizes_data.cpp: time grows with the message but for a switch the gap hides), and at n between
// the times at c1 and c2 up to F (BetweenMeasuredCounts: every term is monotone in the count but for a topology
// only n has); the two unmeasured effects are independent, so their margins multiply. (On the public set of
// 2026-11-25 every answer lies within F as well.)
constexpr double kBetweenCountsAndSizes = 1.25 * 1.25;

// The largest measured count's GPUs per node (g) on more nodes N = 2..16 beyond the measured N0 (1 or 2):
// t(g·N on N) >= t(g·N' on N') for N > N' >= N0 (on N0 the count's own answer), each answer finite, its interval
// around it, and marked extrapolated. Why: the same GPUs per node on more nodes is a longer ring over the same
// links (the node's own and one NIC per GPU) and a deeper tree: each GPU moves at least the share f(n) it moved on
// fewer nodes (f grows with n) through more hops, so no collective gets faster by adding nodes. No margin: beyond
// twice the measured nodes both answers come from the rule (predict holds each at least at one node fewer); from the
// measured nodes to twice them the rule carries other machines' measured steps, which may fall below 0 (the
// counts test allows 1.25x there), but on the public set none does once the joint-n answer across nodes is held
// at the measured count's time. Before those two holds (model/model_set.cpp, model/scale_out.cpp) 438 of the
// 15,970 answers fell: 364 by up to 3.5x where four nodes borrowed another lender's network than two (an A100
// node lent a B200 cluster's measured 32-on-four step, after H100 clusters' 16-on-two), 74 by up to 2.4 % where
// the one-node joint-n trend (faster at 8 GPUs than at 4) was carried across nodes. With those holds along the
// halving chain (N -> N/2) only, 570 of 46,371 answers on this ladder still fell, by up to 25 %: 8 nodes below 6,
// 4 below 3 and 16 below 12 (the A100 table, the RTX 4090 and A100 PCIe logs, the B200/B300 tables), each node
// count off the chain borrowing another lender's network; predict now holds each at one node fewer.
constexpr int kNodeLadder[] = {2, 3, 4, 5, 6, 8, 12, 16};

// ------------------------------------------------------------------------------------------- GPU counts

// A file's samples without the smallest GPU count of each family measured at three counts or more on one node
// count (2 of a 2, 4, 8 table): no public family's smallest count is above 2, so the counts below a family's
// smallest are made by leaving it out, and the left-out measurement says how near the envelope's physics is.
std::vector<Sample> without_smallest_counts(const std::vector<Sample>& samples) {
  std::map<GroupKey, std::set<int>> counts;  // by family: the key without its count
  const auto family_of = [](const Sample& s) {
    GroupKey k = sample_group_key(s);
    k.nranks = 0;
    return k;
  };
  for (const Sample& s : samples) counts[family_of(s)].insert(s.nranks);
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    const std::set<int>& c = counts.at(family_of(s));
    if (c.size() < 3 || s.nranks != *c.begin()) out.push_back(s);
  }
  return out;
}

TEST(PublicDataUnmeasuredCounts, BelowTheMeasuredCounts) {
  if (public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  int families = 0, checked = 0, left_out = 0, left_out_inside = 0;
  std::vector<Violation> v;
  fit::FitOptions o;
  o.threads = 2;
  for (const PublicFile& f : fitted_files()) {
    const std::vector<Sample> cut = without_smallest_counts(f.samples);
    if (cut.size() == f.samples.size()) continue;
    const ModelSet models = fit::fit_model_set(cut, o);
    if (!models.raw().contains("joint")) continue;
    for (const auto& j : models.raw().at("joint")) {
      const JointModel jm = JointModel::from_json(j);
      const GroupModel& c = jm.members[0];
      const GroupModel& d = jm.members[1];
      const int nc = c.key.nranks, nd = d.key.nranks;
      if (nc <= 2) continue;
      ++families;
      for (int n = 2; n < nc; ++n) {
        const double k = std::log2(static_cast<double>(nc) / n);
        const double peers = (n - 1.0) / (nc - 1.0);
        const double fc = bus_factor(c.key.collective, nc), fn = bus_factor(c.key.collective, n);
        const double bus = fc > 0 && fn > 0 ? fn / fc : 1.0;
        GroupKey at_n = c.key;
        at_n.nranks = n;
        const auto measured_n = f.curves.find(at_n);
        for (double s : f.curves.at(c.key).bytes) {
          const double tc = measured_at(f, c, s), td = measured_at(f, d, s);
          if (tc <= 0 || td <= 0) continue;
          const double r = std::pow(tc / td, k / std::log2(static_cast<double>(nd) / nc));
          const std::optional<Prediction> p = models.predict(query_of(c.key, n, c.key.nnodes, s));
          ++checked;
          const double lo = tc * std::min({1.0, peers, bus, r}) / kBelowCounts, hi = tc * std::max(1.0, r) * kBelowCounts;
          // The count left out, where it was measured at this size: how near the envelope is to the data.
          double t_left_out = 0;
          if (measured_n != f.curves.end()) {
            const fit::Curve& m = measured_n->second;
            const auto at = std::lower_bound(m.bytes.begin(), m.bytes.end(), s);
            if (at != m.bytes.end() && *at == s) {
              t_left_out = m.time_us[at - m.bytes.begin()];
              ++left_out;
              left_out_inside += t_left_out >= lo && t_left_out <= hi;
            }
          }
          if (!p || !sane(*p) || !p->extrapolated || p->time_us < lo || p->time_us > hi)
            v.push_back({jm.key.id() + " --nranks " + std::to_string(n) + " --bytes " + fmt(s) + ": " + (p ? answer(*p) : "none") +
                         ", measured " + fmt(tc) + " us at " + std::to_string(nc) + ", " + fmt(td) + " us at " + std::to_string(nd) +
                         (t_left_out > 0 ? ", " + fmt(t_left_out) + " us at " + std::to_string(n) + " (left out)" : std::string()) +
                         ", bounds [" + fmt(lo) + ", " + fmt(hi) + "] (" + f.path + " without its smallest counts)"});
        }
      }
    }
  }
  std::cout << families << " joint-n families fitted without their smallest count, " << checked
            << " (count, size) below the measured counts, " << v.size() << " outside the bounds; the left-out measurements inside them: "
            << left_out_inside << " of " << left_out << "\n"
            << describe(v);
  if (const size_t n = remove_left(v, kBelowLeft)) std::cout << n << " of them in families left alone (kBelowLeft)\n";
  EXPECT_GT(families, 100) << "the aiconfigurator tables measure 2, 4 and 8 GPUs";
  EXPECT_GT(checked, 3000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

TEST(PublicDataUnmeasuredCounts, BetweenCountsBetweenSizes) {
  if (public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const auto families = joint_families();
  int checked = 0;
  std::vector<Violation> v;
  for_each_adjacent_counts(families, [&](const PublicFile& f, const JointModel& jm, const GroupModel& a, const GroupModel& b) {
    if (b.key.nranks - a.key.nranks < 2) return;
    // The sizes both counts measured (spikes aside), and whether a size lies strictly between two of them in
    // either curve (then the gap is not unmeasured).
    const std::vector<double>& sa = f.curves.at(a.key).bytes;
    const std::vector<double>& sb = f.curves.at(b.key).bytes;
    std::vector<double> both;
    for (double s : sa)
      if (measured_at(f, a, s) > 0 && measured_at(f, b, s) > 0) both.push_back(s);
    const auto measured_inside = [&](double lo, double hi) {
      const auto inside = [&](const std::vector<double>& s) {
        return std::upper_bound(s.begin(), s.end(), lo) != std::lower_bound(s.begin(), s.end(), hi);
      };
      return inside(sa) || inside(sb);
    };
    for (size_t j = 0; j + 1 < both.size(); ++j) {
      const double s0 = both[j], s1 = both[j + 1];
      if (measured_inside(s0, s1)) continue;
      const double t[] = {measured_at(f, a, s0), measured_at(f, a, s1), measured_at(f, b, s0), measured_at(f, b, s1)};
      const double lo = *std::min_element(std::begin(t), std::end(t)) / kBetweenCountsAndSizes;
      const double hi = *std::max_element(std::begin(t), std::end(t)) * kBetweenCountsAndSizes;
      for (double frac : {0.25, 0.5, 0.75}) {
        const double s = s0 * std::pow(s1 / s0, frac);
        for (int n = a.key.nranks + 1; n < b.key.nranks; ++n) {
          const std::optional<Prediction> p = f.models.predict(query_of(a.key, n, a.key.nnodes, s));
          ++checked;
          if (!p || !sane(*p) || p->time_us < lo || p->time_us > hi)
            v.push_back({jm.key.id() + " --nranks " + std::to_string(n) + " --bytes " + fmt(s) + ": " + (p ? answer(*p) : "none") +
                         ", measured " + fmt(t[0]) + ", " + fmt(t[1]) + " us at " + std::to_string(a.key.nranks) + ", " + fmt(t[2]) +
                         ", " + fmt(t[3]) + " us at " + std::to_string(b.key.nranks) + " (" + fmt(s0) + ", " + fmt(s1) + " B; " +
                         f.path + ")"});
        }
      }
    }
  });
  std::cout << families.size() << " joint-n families, " << checked << " (count, size) between measured counts and sizes, "
            << v.size() << " outside [min / " << kBetweenCountsAndSizes << ", max x " << kBetweenCountsAndSizes << "]\n"
            << describe(v);
  EXPECT_GT(checked, 20000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

// ------------------------------------------------------------------------------------------- more nodes

TEST(PublicDataMoreNodes, TwoToSixteenNodes) {
  if (public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const std::vector<PublicFile>& files = fitted_files();
  int ladders = 0, checked = 0, refused = 0;
  std::vector<Violation> v;
  for (const PublicFile& f : files) {
    const std::vector<ModelSet> lenders = other_files_models(f);
    const std::vector<GroupModel> groups = groups_of(f.models);
    for (const GroupModel& g : groups) {
      if (!largest_of_its_kind(g, groups) || g.key.nranks % g.key.nnodes != 0) continue;
      const int per_node = g.key.nranks / g.key.nnodes;
      for (double s : f.curves.at(g.key).bytes) {
        if (measured_at(f, g, s) <= 0) continue;
        std::optional<Prediction> prev = f.models.predict(query_of(g.key, g.key.nranks, g.key.nnodes, s), lenders);
        int prev_nodes = g.key.nnodes;
        for (const int nodes : kNodeLadder) {
          if (nodes <= g.key.nnodes) continue;
          const PredictQuery q = query_of(g.key, per_node * nodes, nodes, s);
          const std::optional<Prediction> p = f.models.predict(q, lenders);
          if (!p && !f.models.across_nodes_refusal(q, lenders).empty()) {
            ++refused;  // a strategy never measured across nodes (BeyondTheMeasuredNodes checks the refusal)
            break;
          }
          ++checked;
          if (!p || !sane(*p) || !p->extrapolated || !prev || p->time_us < prev->time_us)
            v.push_back({g.key.id() + " --nranks " + std::to_string(per_node * nodes) + " --nnodes " + std::to_string(nodes) +
                         " --bytes " + fmt(s) + ": " + (p ? answer(*p) : "none") + " after " + (prev ? answer(*prev) : "none") +
                         " on " + std::to_string(prev_nodes) + " node(s) (" + f.path + ")"});
          prev = p;
          prev_nodes = nodes;
        }
      }
      ++ladders;
    }
  }
  std::cout << ladders << " largest counts carried to " << kNodeLadder[0] << ".." << std::end(kNodeLadder)[-1] << " nodes, " << checked
            << " (nodes, size) answered, " << refused << " sizes refused (strategy never measured across nodes), " << v.size()
            << " violations\n"
            << describe(v);
  EXPECT_GT(ladders, 300);
  EXPECT_GT(checked, 10000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

// ------------------------------------------------------------------------------------------- a new machine

// The transferred groups of a file's curves from its K anchors (`arfit fit anchors.csv --prior others...`), or for
// K = 0 from none over each curve's measured sizes.
std::vector<GroupModel> transferred_groups(const PublicFile& f, int K, TransferLibraries& libraries, int* unloadable) {
  const std::shared_ptr<const fit::TransferLibrary> lib = libraries.of(f);
  std::vector<GroupModel> out;
  if (K > 0) {
    fit::FitOptions o;
    o.threads = 2;
    o.prior = lib;
    for (GroupModel& g : groups_of(fit::fit_model_set(samples_at_anchors(f.samples, K), o)))
      if (g.ok && !g.transfer_how.empty()) out.push_back(std::move(g));
    return out;
  }
  for (const auto& [key, c] : f.curves) {
    fit::TransferTarget t;
    t.key = key;
    t.sm = datasheet_sm(c.sm, c.device, c.hardware);
    t.lo_bytes = c.bytes.front();
    t.hi_bytes = c.bytes.back();
    fit::TransferOptions to;
    to.calibration = &lib->calibration(0);
    const fit::Transfer tr = fit::transfer_curve(t, lib->matching(key), to);
    if (!tr.ok()) continue;
    const fit::GroupFit g = fit::transferred_group(t, tr, tr.min_bytes(), tr.max_bytes());
    if (!g.ok) continue;
    try {
      out.push_back(GroupModel::from_json(g.model));
    } catch (const JsonError&) {
      ++*unloadable;  // `arfit fit` writes such a group not fitted (its reader's reason)
    }
  }
  return out;
}

class TransferredFromKAnchors : public ::testing::TestWithParam<int> {};

TEST_P(TransferredFromKAnchors, StayPhysical) {
  if (public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const int K = GetParam();
  std::string where;
  const double drop = largest_measured_drop(&where) * kTransferDropMargin;
  int targets = 0, checked = 0, unloadable = 0;
  std::vector<Violation> v;
  TransferLibraries libraries;
  for (const PublicFile& f : fitted_files())
    for (const GroupModel& g : transferred_groups(f, K, libraries, &unloadable)) {
      ++targets;
      check_transferred_curve(g, f.curves.at(g.key).bytes, g.key.id() + " (anchors:" + std::to_string(K) + " of " + f.path + ")",
                              drop, checked, v);
    }
  std::cout << "K = " << K << ": " << targets << " transferred curves, " << checked << " sizes, " << v.size()
            << " violations (allowed fall " << drop << ", " << where << "); " << unloadable << " groups the reader refuses\n"
            << describe(v);
  if (const size_t n = remove_left(v, kTransferLeft)) std::cout << n << " of them in curves left alone (kTransferLeft)\n";
  EXPECT_GT(targets, 700) << "most public curves have a comparable curve on another machine";
  EXPECT_GT(checked, 30000);
  EXPECT_EQ(unloadable, 0);
  EXPECT_TRUE(v.empty()) << describe(v);
}

INSTANTIATE_TEST_SUITE_P(PublicData, TransferredFromKAnchors, ::testing::Values(0, 1, 2, 4, 6),
                         [](const ::testing::TestParamInfo<int>& i) { return "K" + std::to_string(i.param); });

}  // namespace
