// Predictions at GPU counts, machines and node counts nobody measured stay physical (../shared/data/public; skipped
// when absent). Every public file is fitted as `arfit fit FILE` fits it (auto, joint-n) and asked what `arfit
// predict` answers there, through ModelSet::predict, the call predict makes:
//   * BetweenMeasuredCounts: a count between two measured ones on one node (`--nranks 3, 5, 6, 7` of a 2, 4, 8
//     family), at the sizes both measured;
//   * OneDoublingBeyondTheMeasuredCounts: twice the largest measured count (`--nranks 16`);
//   * TransferredFromThreeAnchors: a file's curves reduced to the 3 sizes `arbench --plan anchors:3` measures and
//     transferred from the other machines' models (`arfit fit anchors.csv --prior others...`), read at every size
//     the file measured and between them;
//   * AcrossNodesBeyondTheMeasuredNodes: the largest measured count, and twice it, on twice the measured nodes
//     (`--nnodes 2`), with every other public file as a lender (`--prior`); a strategy other than NCCL's own that no
//     public file measured on more than one node (custom all-reduce: peer GPU memory within a node) is refused there.
// The envelopes and their reasons are at each constant below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fit/fit.h"
#include "fit/transfer.h"
#include "model/bus_factor.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "public_files.h"

using namespace arfit;

namespace {

// Between two measured counts c1 < n < c2 at one size: min(t_c1, t_c2) / F <= t_n <= max(t_c1, t_c2) · F.
// Why: at a fixed message size every term of a collective's time is monotone in the GPU count on one node — the
// share of the message each GPU moves ((n − 1)/n, the bus factor) and the number of peers or steps grow, the
// per-GPU chunk falls — so the time between two measured counts lies between their times, up to a topology the
// unmeasured count alone has (a PCIe switch half filled); F is the sizes test's margin (tests/fit/
// test_between_sizes_data.cpp: 25 %, ten times a measurement's repeatability).
constexpr double kBetweenCounts = 1.25;

// One doubling beyond the largest measured count c (d the next smaller measured count, q = t_c / t_d at the size,
// per doubling q^(1 / log2(c / d))):
//   t_c · min(1, q) / F  <=  t_2c  <=  t_c · max(P, B, q, 1) · F,
//   P = (2c − 1) / (c − 1) the growth of a ring's peers (a latency-bound collective: steps ∝ n − 1),
//   B = f(2c) / f(c) the growth of the bus factor (a bandwidth-bound one: bytes each GPU moves ∝ f(n)).
// Why: adding GPUs to a node does not speed a fixed-size collective up — each GPU moves a growing share of the
// message over its own link, through more peers — unless the measured counts already showed it (a faster
// algorithm at the larger count, NVLS), and then by no more than that doubling did; nor does it slow it down by
// more than the latency's or the bandwidth's own law, or than the last measured doubling did (a topology that
// grew across sockets may grow again). F as between counts.
constexpr double kBeyondCounts = 1.25;

// The transfer's answer from one size to the next larger (the file's measured sizes, and the geometric middle of
// each gap) falls by at most D = kTransferDropMargin × the largest fall between adjacent measured sizes of any
// public curve on one node (spikes aside, as the fit sets them aside), computed when the test runs. Why: a
// collective's time grows with its message except where a protocol or algorithm switches, and the switches show in
// the measurements themselves; a transfer may move a switch (its size scale) but not deepen it. On the public set
// of 2026-11-24 the largest such fall is 2.33x (b60's vLLM eager custom all-reduce at 128 KiB), so D = 2.91. Curves
// across nodes are left out of the reference: there the falls are the network's interference, not a switch — the
// dense 1 KiB-step IB sweeps fall up to 3.3x from one KiB to the next, and the GH200 log run without its Slingshot
// hook (documented as degraded) 6.7x — and no transfer should reproduce them. The margin is the sizes test's F.
constexpr double kTransferDropMargin = 1.25;

// The same count on more nodes, or twice it on twice the nodes: t >= t_ref / F, t_ref the same count on the
// measured nodes (c: measured; 2c: the lower of c measured and predict's joint-n answer for 2c there). Why: a node
// boundary puts a network (a 400 Gb/s NIC per GPU at best among the public clusters, ~50 GB/s) on the ring beside
// the node's own links, which the ring still crosses, and adds its latency; a collective that crosses it moves at
// least as much per GPU as on one node. F as above: the lenders' own networks differ by more (up to 4x), but no
// step a lender measured went below its one-node time by more. Before the floor on fabric_adjusted_step and the
// lenders-near-the-size rule (model/scale_out.cpp) 137 of the 17,680 sizes fell below (L40S 16 GPUs on 2 nodes 7x
// under 8 on one; two PCIe GPUs on two nodes 1.4x under one node from logs that start at 1 MiB).
constexpr double kAcrossNodes = 1.25;

// Transferred curves whose violations are left, with the reason (group id).
//   * GH200 over Slingshot (CSCS Alps, 8 GPUs on 2 nodes) from its anchors at 8 B, 32 KiB and 128 MiB: its only
//     comparable source is the same cluster's log run without the CXI hook (degraded), whose measured curve has a
//     two-size hump — 357 and 373 us at 512 B and 1 KiB between 51 us at 256 B and 53 us at 2 KiB: interference
//     (the spike rule sets single sizes aside, not runs of two). The transfer lends that measured shape, moved by
//     its size scale: 186, 136 then 35 us at 4, 8 and 16 KiB (measured 32, 37, 37 us; its interval [20, 914] at
//     8 KiB covers it). Three anchors cannot judge a shape between 8 B and 32 KiB; keeping it out would take a
//     spike rule for runs of sizes, which every fit reads (a change for the fit, not the transfer).
const std::vector<std::string> kTransferLeft = {"cscs_alps_gh200_2node8gpu_slingshot_allreduce/allreduce/NCCL/NONE/fp32/n8/N2"};

struct PublicFile {
  std::string path;
  std::vector<Sample> samples;
  ModelSet models;
  std::map<GroupKey, fit::Curve> curves;
  std::set<std::string> systems;
};

// Every public file the readers take, fitted as `arfit fit FILE` fits it.
const std::vector<PublicFile>& fitted_files() {
  static const std::vector<PublicFile> files = [] {
    std::vector<PublicFile> out;
    fit::FitOptions o;
    o.threads = 2;
    for (const arfit::testing::PublicFileSamples& f : arfit::testing::readable_public_files()) {
      PublicFile p;
      p.path = f.path;
      p.samples = f.samples;
      p.models = fit::fit_model_set(p.samples, o);
      for (fit::Curve& c : fit::build_curves(p.samples)) {
        p.systems.insert(c.key.system);
        p.curves.emplace(c.key, std::move(c));
      }
      out.push_back(std::move(p));
    }
    return out;
  }();
  return files;
}

std::vector<GroupModel> groups_of(const ModelSet& set) {
  std::vector<GroupModel> out;
  for (const auto& gj : set.raw().at("groups")) out.push_back(GroupModel::from_json(gj));
  return out;
}

// The joint-n families of every fitted public file, with their file.
std::vector<std::pair<const PublicFile*, JointModel>> joint_families() {
  std::vector<std::pair<const PublicFile*, JointModel>> out;
  for (const PublicFile& f : fitted_files())
    if (f.models.raw().contains("joint"))
      for (const auto& j : f.models.raw().at("joint")) out.emplace_back(&f, JointModel::from_json(j));
  return out;
}

// `arfit predict --nranks N --nnodes M --bytes S` for a group's curve kind.
PredictQuery query_of(const GroupKey& k, int nranks, int nnodes, double bytes) {
  PredictQuery q = group_query(k, bytes);
  q.nranks = nranks;
  q.nnodes = nnodes;
  return q;
}

bool is_spike(const GroupModel& g, double bytes) {
  const double lb = std::log(bytes);
  return std::any_of(g.spike_log_bytes.begin(), g.spike_log_bytes.end(), [&](double x) { return std::fabs(x - lb) < 1e-9; });
}

// The measured (non-spike) time of a fitted group at `bytes`, or 0 where it did not measure that size.
double measured_at(const PublicFile& f, const GroupModel& g, double bytes) {
  const auto it = f.curves.find(g.key);
  if (it == f.curves.end() || is_spike(g, bytes)) return 0;
  const fit::Curve& c = it->second;
  const auto at = std::lower_bound(c.bytes.begin(), c.bytes.end(), bytes);
  return at != c.bytes.end() && *at == bytes ? c.time_us[at - c.bytes.begin()] : 0;
}

// A prediction that can be read at all: finite, positive, its interval around its point.
bool sane(const Prediction& p) {
  return std::isfinite(p.time_us) && p.time_us > 0 && std::isfinite(p.lo_us) && std::isfinite(p.hi_us) && p.lo_us <= p.time_us &&
         p.time_us <= p.hi_us && p.lo_us > 0;
}

struct Violation {
  std::string what;  // the group, the query and the bound
};

std::string describe(const std::vector<Violation>& v, size_t at_most = 40) {
  std::ostringstream o;
  for (size_t i = 0; i < v.size() && i < at_most; ++i) o << "  " << v[i].what << "\n";
  if (v.size() > at_most) o << "  ... " << v.size() - at_most << " more\n";
  return o.str();
}

std::string fmt(double x) {
  std::ostringstream o;
  o.precision(4);
  o << x;
  return o.str();
}

std::string answer(const Prediction& p) {
  return fmt(p.time_us) + " us [" + fmt(p.lo_us) + ", " + fmt(p.hi_us) + "] (" + p.how + ")";
}

// ------------------------------------------------------------------------------------------- GPU counts

TEST(PublicDataAcrossGpuCounts, BetweenMeasuredCounts) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const auto families = joint_families();
  int checked = 0;
  std::vector<Violation> v;
  for (const auto& [file, jm] : families) {
    const PublicFile& f = *file;
    for (size_t i = 0; i + 1 < jm.members.size(); ++i) {
      const GroupModel& a = jm.members[i];
      const GroupModel& b = jm.members[i + 1];
      for (int n = a.key.nranks + 1; n < b.key.nranks; ++n) {
        for (double s : f.curves.at(a.key).bytes) {
          const double ta = measured_at(f, a, s), tb = measured_at(f, b, s);
          if (ta <= 0 || tb <= 0) continue;
          const std::optional<Prediction> p = f.models.predict(query_of(a.key, n, a.key.nnodes, s));
          ++checked;
          const double lo = std::min(ta, tb) / kBetweenCounts, hi = std::max(ta, tb) * kBetweenCounts;
          if (!p || !sane(*p) || p->time_us < lo || p->time_us > hi)
            v.push_back({jm.key.id() + " --nranks " + std::to_string(n) + " --bytes " + fmt(s) + ": " + (p ? answer(*p) : "none") +
                         ", measured " + fmt(ta) + " us at " + std::to_string(a.key.nranks) + ", " + fmt(tb) + " us at " +
                         std::to_string(b.key.nranks) + " (" + f.path + ")"});
        }
      }
    }
  }
  std::cout << families.size() << " joint-n families, " << checked << " (count, size) between measured counts, " << v.size()
            << " outside [min / " << kBetweenCounts << ", max x " << kBetweenCounts << "]\n"
            << describe(v);
  EXPECT_GT(families.size(), 150u) << "the aiconfigurator tables measure 2, 4 and 8 GPUs";
  EXPECT_GT(checked, 5000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

TEST(PublicDataAcrossGpuCounts, OneDoublingBeyondTheMeasuredCounts) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const auto families = joint_families();
  int checked = 0;
  std::vector<Violation> v;
  for (const auto& [file, jm] : families) {
    const PublicFile& f = *file;
    const GroupModel& c = jm.members.back();
    const GroupModel& d = jm.members[jm.members.size() - 2];
    const int nc = c.key.nranks, nd = d.key.nranks, n = 2 * nc;
    const double peers = nc > 1 ? (n - 1.0) / (nc - 1.0) : n - 1.0;
    const double fc = bus_factor(c.key.collective, nc), fn = bus_factor(c.key.collective, n);
    const double bus = fc > 0 && fn > 0 ? fn / fc : 1.0;
    for (double s : f.curves.at(c.key).bytes) {
      const double tc = measured_at(f, c, s), td = measured_at(f, d, s);
      if (tc <= 0 || td <= 0) continue;
      const double q = std::pow(tc / td, 1.0 / std::log2(static_cast<double>(nc) / nd));
      const std::optional<Prediction> p = f.models.predict(query_of(c.key, n, c.key.nnodes, s));
      ++checked;
      const double lo = tc * std::min(1.0, q) / kBeyondCounts, hi = tc * std::max({peers, bus, q, 1.0}) * kBeyondCounts;
      if (!p || !sane(*p) || p->time_us < lo || p->time_us > hi)
        v.push_back({jm.key.id() + " --nranks " + std::to_string(n) + " --bytes " + fmt(s) + ": " + (p ? answer(*p) : "none") +
                     ", measured " + fmt(td) + " us at " + std::to_string(nd) + ", " + fmt(tc) + " us at " + std::to_string(nc) +
                     ", bounds [" + fmt(lo) + ", " + fmt(hi) + "] (" + f.path + ")"});
    }
  }
  std::cout << families.size() << " joint-n families, " << checked << " sizes one doubling beyond the measured counts, " << v.size()
            << " outside the bounds\n"
            << describe(v);
  EXPECT_GT(families.size(), 150u);
  EXPECT_GT(checked, 2000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

// ------------------------------------------------------------------------------------------- a new machine

// The largest fall t(s_i) / t(s_i+1) between adjacent measured sizes of any public curve on one node, spikes aside.
double largest_measured_drop(std::string* where) {
  double worst = 1;
  for (const PublicFile& f : fitted_files())
    for (const auto& [key, c] : f.curves) {
      if (key.nnodes != 1) continue;
      std::vector<double> t;
      std::vector<double> s;
      const std::vector<size_t> spikes = fit::spike_indices(c.time_us);
      for (size_t i = 0; i < c.time_us.size(); ++i)
        if (std::find(spikes.begin(), spikes.end(), i) == spikes.end()) {
          t.push_back(c.time_us[i]);
          s.push_back(c.bytes[i]);
        }
      for (size_t i = 0; i + 1 < t.size(); ++i) {
        if (t[i] / t[i + 1] > worst) {
          worst = t[i] / t[i + 1];
          *where = key.id() + ": " + fmt(t[i]) + " us at " + fmt(s[i]) + " B, " + fmt(t[i + 1]) + " us at " + fmt(s[i + 1]) + " B";
        }
      }
    }
  return worst;
}

TEST(PublicDataNewMachine, TransferredFromThreeAnchors) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  std::string where;
  const double drop = largest_measured_drop(&where) * kTransferDropMargin;
  std::cout << "largest fall between adjacent measured sizes on one node: " << where << "; allowed fall " << drop << "\n";
  int targets = 0, checked = 0;
  std::vector<Violation> v;
  const std::vector<PublicFile>& files = fitted_files();
  std::map<std::set<std::string>, std::shared_ptr<const fit::TransferLibrary>> libraries;  // per target machine
  for (const PublicFile& f : files) {
    std::shared_ptr<const fit::TransferLibrary>& lib = libraries[f.systems];
    if (!lib) {
      std::vector<ModelSet> priors;
      for (const PublicFile& o : files) {
        std::vector<std::string> common;
        std::set_intersection(o.systems.begin(), o.systems.end(), f.systems.begin(), f.systems.end(), std::back_inserter(common));
        if (common.empty()) priors.push_back(o.models);
      }
      lib = std::make_shared<fit::TransferLibrary>(priors);
    }
    fit::FitOptions o;
    o.threads = 2;
    o.prior = lib;
    const ModelSet set = fit::fit_model_set(arfit::testing::samples_at_anchors(f.samples, 3), o);
    for (const GroupModel& g : groups_of(set)) {
      if (!g.ok || g.transfer_how.empty()) continue;
      ++targets;
      // Every size the machine measured, and the geometric middle of each gap, ascending.
      std::vector<double> sizes;
      const std::vector<double>& measured = f.curves.at(g.key).bytes;
      for (size_t i = 0; i < measured.size(); ++i) {
        if (i > 0) sizes.push_back(std::sqrt(measured[i - 1] * measured[i]));
        sizes.push_back(measured[i]);
      }
      const std::string cmd = g.key.id() + " (anchors of " + f.path + ")";
      std::optional<Prediction> prev;
      double prev_s = 0;
      for (double s : sizes) {
        const Prediction p = g.predict(s);
        ++checked;
        if (!sane(p)) v.push_back({cmd + " --bytes " + fmt(s) + ": " + answer(p)});
        // Adjacent measured sizes are two grid steps apart: the fall between them is bounded too.
        if (prev && prev->time_us / p.time_us > drop)
          v.push_back({cmd + " --bytes " + fmt(prev_s) + "," + fmt(s) + ": " + answer(*prev) + " then " + answer(p)});
        prev = p;
        prev_s = s;
      }
      for (size_t i = 1; i < measured.size(); ++i) {
        const double a = g.predict(measured[i - 1]).time_us, b = g.predict(measured[i]).time_us;
        if (a / b > drop)
          v.push_back({cmd + " --bytes " + fmt(measured[i - 1]) + "," + fmt(measured[i]) + ": " + fmt(a) + " then " + fmt(b) + " us"});
      }
    }
  }
  std::cout << targets << " transferred curves, " << checked << " sizes, " << v.size() << " violations\n" << describe(v);
  const auto is_left = [](const Violation& x) {
    return std::any_of(kTransferLeft.begin(), kTransferLeft.end(), [&](const std::string& id) { return x.what.rfind(id + " ", 0) == 0; });
  };
  const size_t left = std::count_if(v.begin(), v.end(), is_left);
  v.erase(std::remove_if(v.begin(), v.end(), is_left), v.end());
  if (left > 0) std::cout << left << " of them in curves left alone (kTransferLeft)\n";
  EXPECT_GT(targets, 300) << "most public curves have a comparable curve on another machine";
  EXPECT_GT(checked, 10000);
  EXPECT_TRUE(v.empty()) << describe(v);
}

// ------------------------------------------------------------------------------------------- more nodes

TEST(PublicDataAcrossNodes, BeyondTheMeasuredNodes) {
  if (arfit::testing::public_data_dir().empty()) GTEST_SKIP() << "public data folder absent";
  const std::vector<PublicFile>& files = fitted_files();
  int asked = 0, checked = 0, refused = 0;
  std::vector<Violation> v;
  // The (collective, strategy) pairs some public file measured on more than one node: shown to run across nodes.
  std::set<std::pair<Collective, std::string>> across_nodes;
  for (const PublicFile& f : files)
    for (const GroupModel& g : groups_of(f.models))
      if (g.key.nnodes > 1) across_nodes.insert({g.key.collective, g.key.strategy});
  for (const PublicFile& f : files) {
    std::vector<ModelSet> lenders;  // `--prior` every other public file
    for (const PublicFile& o : files)
      if (&o != &f) lenders.push_back(o.models);
    const std::vector<GroupModel> groups = groups_of(f.models);
    for (const GroupModel& g : groups) {
      if (!g.ok) continue;
      // The machine's largest count on the most nodes it measured of this kind: what predict carries across.
      const bool largest = std::none_of(groups.begin(), groups.end(), [&](const GroupModel& o) {
        GroupKey k = o.key;
        k.nranks = g.key.nranks;
        k.nnodes = g.key.nnodes;
        return o.ok && k == g.key && std::tie(o.key.nnodes, o.key.nranks) > std::tie(g.key.nnodes, g.key.nranks);
      });
      if (!largest) continue;
      const bool runs_across_nodes = g.key.strategy == strategy::kNccl || g.key.strategy == strategy::kNcclSymmetric ||
                                     across_nodes.count({g.key.collective, g.key.strategy});
      for (const int n : {g.key.nranks, 2 * g.key.nranks}) {
        const int nodes = 2 * g.key.nnodes;
        ++asked;
        if (!runs_across_nodes) {
          // No answer, and the reason names the strategy.
          const PredictQuery q = query_of(g.key, n, nodes, f.curves.at(g.key).bytes.front());
          const std::optional<Prediction> p = f.models.predict(q, lenders);
          const std::string why = f.models.across_nodes_refusal(q, lenders);
          ++refused;
          if (p || why.rfind(g.key.strategy + ": ", 0) != 0)
            v.push_back({g.key.id() + " --nranks " + std::to_string(n) + " --nnodes " + std::to_string(nodes) + ": " +
                         (p ? answer(*p) : "none") + ", refusal '" + why + "' (" + f.path + ")"});
          continue;
        }
        for (double s : f.curves.at(g.key).bytes) {
          // The reference on the measured nodes: c measured; for 2c the lower of c measured (more GPUs move more)
          // and predict's answer for 2c there (the joint-n rule, bounded by OneDoublingBeyondTheMeasuredCounts,
          // which may fall below c where the measured counts fell).
          double t = measured_at(f, g, s);
          if (t <= 0) continue;
          if (n != g.key.nranks)
            if (const std::optional<Prediction> same_nodes = f.models.predict(query_of(g.key, n, g.key.nnodes, s)))
              t = std::min(t, same_nodes->time_us);
          const std::optional<Prediction> p = f.models.predict(query_of(g.key, n, nodes, s), lenders);
          ++checked;
          if (!p || !sane(*p) || p->time_us < t / kAcrossNodes)
            v.push_back({g.key.id() + " --nranks " + std::to_string(n) + " --nnodes " + std::to_string(nodes) + " --bytes " + fmt(s) +
                         ": " + (p ? answer(*p) : "none") + ", " + fmt(t) + " us on " + std::to_string(g.key.nnodes) + " node(s) (" +
                         f.path + ")"});
        }
      }
    }
  }
  std::cout << asked << " (count, nodes) asked, " << refused << " refused (strategy never measured across nodes), " << checked
            << " sizes, " << v.size() << " violations\n"
            << describe(v);
  EXPECT_GT(asked, 500);
  EXPECT_GT(refused, 0);  // the public custom all-reduce tables are one-node
  EXPECT_TRUE(v.empty()) << describe(v);
}

}  // namespace
