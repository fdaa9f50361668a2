// crossn: for families measured at >= 3 GPU counts (2 where the largest spans more nodes), fit all but the
// largest count and predict the largest.
// Four parts: choosing the families (crossn_families), predicting one family with one method
// (predict_family), scoring per node-count subset, reporting (eval_crossn).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <ceres/ceres.h>

#include "fit/small_problem.h"

#include "fit/eval_common.h"
#include "fit/family_fit.h"
#include "fit/fit.h"
#include "model/bus_factor.h"
#include "fit/topology_fit.h"
#include "fit/transfer.h"
#include "model/joint_model.h"
#include "model/metrics.h"
#include "model/scale_out.h"
#include "model/stated_network.h"
#include "model/sm_targets.h"
#include "model/topology.h"

namespace arfit::fit {
namespace {

using detail::CurvePreds;

// One crossn task: the measured counts of a family and the count it predicts.
struct Family {
  GroupKey key;                      // nranks 0; nnodes: the measured counts' (a family may span nodes)
  std::vector<const Curve*> train;   // ascending nranks
  const Curve* target = nullptr;
  bool more_nodes = false;           // the target spans more nodes than any measured count
  // The target on the measured nodes (more than one) with more GPUs per node than any count measured on them:
  // the NICs per node it shares were never measured shared that far (a subset of `same`).
  bool more_gpus_per_node = false;
};

// Families: one machine's curves (its label, Curve::hardware) of the same collective, strategy, fusion and dtype
// at >= 3 GPU counts (or 2 where the larger is on more nodes), whatever their node counts (so that a count on
// more nodes is predicted from those on fewer), from one file or several (a log per count, labelled as one machine with `arfit ingest --system`).
// Where the machine measured a count twice (several files or versions of one table) the families are per file
// instead, and a file that measured one count on several node counts is split by node count.
std::vector<Family> crossn_families(const std::vector<Curve>& curves) {
  auto distinct_counts = [](const std::vector<const Curve*>& v) {
    std::set<int> counts;
    for (const Curve* c : v) counts.insert(c->key.nranks);
    return counts.size() == v.size();
  };
  std::map<GroupKey, std::vector<const Curve*>> machines;
  for (const Curve& c : curves) {
    GroupKey k = c.key;
    k.system = c.hardware;
    k.nranks = 0;
    k.nnodes = 0;
    machines[k].push_back(&c);
  }
  std::vector<std::vector<const Curve*>> groups;
  for (auto& [k, v] : machines) {
    if (distinct_counts(v)) {
      groups.push_back(v);
      continue;
    }
    std::map<std::string, std::vector<const Curve*>> by_source;
    for (const Curve* c : v) by_source[c->key.system].push_back(c);
    for (auto& [source, w] : by_source) {
      if (distinct_counts(w)) {
        groups.push_back(w);
        continue;
      }
      std::map<int, std::vector<const Curve*>> by_nodes;
      for (const Curve* c : w) by_nodes[c->key.nnodes].push_back(c);
      for (auto& [n, x] : by_nodes) groups.push_back(x);
    }
  }
  std::vector<Family> out;
  for (auto& v : groups) {
    std::sort(v.begin(), v.end(), [](const Curve* a, const Curve* b) { return a->key.nranks < b->key.nranks; });
    // Two counts make a task only when the larger lies on more nodes: across nodes the answer is the largest
    // measured count carried by other machines' steps, where the joint-n rule needs two counts to fit.
    const bool across_nodes = v.size() == 2 && v[1]->key.nnodes > v[0]->key.nnodes;
    if (v.size() < 3 && !across_nodes) continue;
    Family f;
    f.train.assign(v.begin(), v.end() - 1);
    f.target = v.back();
    f.key = f.target->key;
    f.key.nranks = 0;
    int measured_nodes = 0;
    for (const Curve* c : f.train) measured_nodes = std::max(measured_nodes, c->key.nnodes);
    f.key.nnodes = measured_nodes;
    f.more_nodes = f.target->key.nnodes > measured_nodes;
    int measured_per_node = 0;  // the most GPUs per node measured on the target's nodes
    for (const Curve* c : f.train)
      if (c->key.nnodes == f.target->key.nnodes) measured_per_node = std::max(measured_per_node, c->key.nranks / c->key.nnodes);
    f.more_gpus_per_node = !f.more_nodes && f.target->key.nnodes > 1 && measured_per_node > 0 &&
                           f.target->key.nranks / f.target->key.nnodes > measured_per_node;
    out.push_back(f);
  }
  return out;
}

// ---- baselines

struct StepAlphaBetaResidual {
  double s, f, steps, log_t;
  template <typename T>
  bool operator()(const T* p, T* r) const {
    using std::exp;
    using std::log;
    r[0] = log(exp(p[0]) + exp(p[1]) * steps + T(f * s / 1e3) * exp(-p[2])) - T(log_t);
    return true;
  }
};

double ring_steps(Collective c, int n) { return c == Collective::AllReduce ? 2.0 * (n - 1) : static_cast<double>(n - 1); }

// Bus bandwidth of the next smaller count, log-log interpolated over sizes (the reference's busbw-invariant).
std::vector<Prediction> predict_loglog(const Family& fam) {
  const Curve& prev = *fam.train.back();
  const Collective coll = fam.key.collective;
  const double fm = bus_factor(coll, prev.key.nranks), fN = bus_factor(coll, fam.target->key.nranks);
  std::vector<double> bw(prev.bytes.size());
  for (size_t k = 0; k < bw.size(); ++k) bw[k] = prev.bytes[k] / prev.time_us[k] * fm;
  std::vector<Prediction> out;
  for (double x : fam.target->bytes) {
    Prediction p;
    p.time_us = x * fN / loglog_at(prev.bytes, bw, x);
    out.push_back(p);
  }
  return out;
}

// The seed fitted on the next smaller count, evaluated with the target's bus factor.
std::vector<Prediction> predict_seed(const Family& fam) {
  const Curve& prev = *fam.train.back();
  const Collective coll = fam.key.collective;
  const SeedModel sm = fit_seed(prev.bytes, prev.time_us, bus_factor(coll, prev.key.nranks));
  std::vector<Prediction> out;
  for (double x : fam.target->bytes) {
    Prediction p;
    p.time_us = sm.time_us(x, bus_factor(coll, fam.target->key.nranks));
    out.push_back(p);
  }
  return out;
}

// NCCL-style α-β with a per-step latency, fitted jointly on the smaller counts.
std::vector<Prediction> predict_alphabeta(const Family& fam) {
  const Collective coll = fam.key.collective;
  const int N = fam.target->key.nranks;
  double p[3];
  double smax = 0, tmax = 0;
  ceres::Problem problem;
  ceres::SoftLOneLoss* loss = new ceres::SoftLOneLoss(1.0);
  for (const Curve* c : fam.train)
    for (size_t k = 0; k < c->bytes.size(); ++k) {
      smax = std::max(smax, c->bytes[k]);
      tmax = std::max(tmax, c->time_us[k]);
      problem.AddResidualBlock(new ceres::AutoDiffCostFunction<StepAlphaBetaResidual, 1, 3>(new StepAlphaBetaResidual{
                                   c->bytes[k], bus_factor(coll, c->key.nranks), ring_steps(coll, c->key.nranks),
                                   std::log(c->time_us[k])}),
                               loss, p);
    }
  p[0] = std::log(5.0);
  p[1] = std::log(1.0);
  p[2] = std::log(std::max(smax / tmax / 1e3, 1e-3));
  solve_small_problem(problem);
  std::vector<Prediction> out;
  for (double x : fam.target->bytes) {
    Prediction q;
    q.time_us = std::exp(p[0]) + std::exp(p[1]) * ring_steps(coll, N) + bus_factor(coll, N) * x / 1e3 * std::exp(-p[2]);
    out.push_back(q);
  }
  return out;
}

// ---- arfit: the joint-n rule, and across node boundaries

// The lenders of the family's scale-out step, planned as `arfit predict` plans them (model/scale_out.h,
// plan_scale_out_lenders) over the other machines' curves; only the chosen ones are fitted, each once.
std::vector<ScaleOutLender> scale_out_lenders(const Family& fam, const std::vector<Curve>& curves, const std::string& method) {
  const Curve& c = *fam.train.back();
  GroupKey largest = c.key, target = fam.target->key;
  largest.system = target.system = c.hardware;
  std::vector<LenderCurve> pool;
  for (const Curve& o : curves) {
    GroupKey k = o.key;
    k.system = o.hardware;
    pool.push_back({k, datasheet_sm(o.sm, o.device, o.hardware), o.device});
  }
  const FitOptions options = detail::method_fit_options(method);
  std::map<std::size_t, std::optional<GroupModel>> fits;
  auto fitted = [&](std::size_t i) -> const std::optional<GroupModel>& {
    auto it = fits.find(i);
    if (it == fits.end()) {
      const GroupFit g = fit_curve(curves[i], options);
      it = fits.emplace(i, g.ok ? std::optional<GroupModel>(GroupModel::from_json(g.model)) : std::nullopt).first;
    }
    return it->second;
  };
  std::vector<ScaleOutLender> lenders;
  for (const LenderPlan& plan : plan_scale_out_lenders(pool, largest, target, datasheet_sm(c.sm, c.device, c.hardware))) {
    ScaleOutLender l{plan.system, plan.sm, {}, std::nullopt, {}, plan.paired};
    for (std::size_t i : plan.from)
      if (const auto& f = fitted(i)) l.from.push_back(*f);
    if (plan.to)
      if (const auto& t = fitted(*plan.to)) l.to = *t;
    if (!l.to)  // a bridged step, or the measured one's curve could not be fitted
      for (std::size_t i : plan.network)
        if (const auto& f = fitted(i)) l.network.push_back(*f);
    if (!l.from.empty() && (l.to || !l.network.empty())) lenders.push_back(std::move(l));
  }
  return lenders;
}

// Other machines' measurements of the same step: the largest count's and the target's GPUs per node on the same nodes
// (comparable_steps kinds), each pair fitted as the family's counts are.
struct PerNodeStep {
  GroupModel from, to;
};
std::vector<PerNodeStep> per_node_step_lenders(const Family& fam, const GroupKey& largest, const std::vector<Curve>& curves,
                                               const std::string& method) {
  std::map<std::string, std::pair<const Curve*, const Curve*>> by_machine;
  for (const Curve& c : curves) {
    if (c.hardware == fam.target->hardware || !comparable_steps(c.key, largest) || c.key.nnodes != largest.nnodes) continue;
    auto& [from, to] = by_machine[c.hardware];
    if (c.key.nranks == largest.nranks && !from) from = &c;
    if (c.key.nranks == fam.target->key.nranks && !to) to = &c;
  }
  std::vector<PerNodeStep> out;
  for (const auto& [machine, pair] : by_machine) {
    if (!pair.first || !pair.second) continue;
    const GroupFit from = fit_curve(*pair.first, detail::method_fit_options(method));
    const GroupFit to = fit_curve(*pair.second, detail::method_fit_options(method));
    if (from.ok && to.ok) out.push_back({GroupModel::from_json(from.model), GroupModel::from_json(to.model)});
  }
  return out;
}

// The machine's largest count measured on `nodes` nodes, null when none.
const GroupModel* largest_on_nodes(const std::vector<GroupModel>& counts, int nodes) {
  const GroupModel* largest = nullptr;
  for (const GroupModel& m : counts)
    if (m.key.nnodes == nodes && (!largest || m.key.nranks > largest->key.nranks)) largest = &m;
  return largest;
}

// How far the farthest other machine's step (ln t(to) − ln t(from) at `bytes`) lies from the answer `p`'s step from
// `largest`: the spread of their networks, which the interval adds in quadrature.
double steps_spread(const std::vector<PerNodeStep>& lenders, const GroupModel& largest, const Prediction& p, double bytes) {
  const double step = std::log(p.time_us / largest.predict(bytes).time_us);
  double spread = 0;
  for (const PerNodeStep& l : lenders)
    spread = std::max(spread, std::abs(std::log(l.to.predict(bytes).time_us / l.from.predict(bytes).time_us) - step));
  return spread;
}

// Other machines' measurements of the step from the machine's largest count on the target's nodes to the target
// (per_node_step_lenders); none when the machine measured no count there.
std::vector<PerNodeStep> other_machines_steps(const Family& fam, const std::vector<Curve>& curves,
                                              const std::vector<GroupModel>& counts, const std::string& method) {
  const GroupModel* largest = largest_on_nodes(counts, fam.target->key.nnodes);
  return largest ? per_node_step_lenders(fam, largest->key, curves, method) : std::vector<PerNodeStep>{};
}

// More GPUs per node on the measured nodes: the topology family (model/topology.h) fitted on the family's counts and
// the machine's one-node curves of the same kind, its step carried from the largest count measured on the target's
// nodes; the interval's low end reaches the joint-n answer (`jm`, when the family has one), which carries the
// bus bandwidth's growth on, and it widens by other machines' steps (`lenders`, other_machines_steps; none: the family's
// own interval, as the held-out check needs only the points). Empty when the family does not fit.
std::vector<Prediction> predict_topology(const Family& fam, const std::vector<Curve>& curves, const std::vector<GroupModel>& counts,
                                         const std::optional<JointModel>& jm, const std::vector<PerNodeStep>& lenders) {
  const GroupModel* largest = largest_on_nodes(counts, fam.target->key.nnodes);
  if (!largest) return {};
  std::vector<const Curve*> fitted(fam.train.begin(), fam.train.end());
  for (const Curve& c : curves)
    if (c.hardware == fam.target->hardware && c.key.nnodes == 1 && comparable_kinds(c.key, fam.target->key) &&
        std::find(fitted.begin(), fitted.end(), &c) == fitted.end())
      fitted.push_back(&c);
  // The rails the machine's logs state (a header, `ingest --network`) are kept; else the fit chooses them.
  double stated_rails = 0;
  for (const Curve* c : fitted)
    if (const auto n = parse_stated_network(c->network); n && stated_rails == 0) stated_rails = n->rails;
  const std::optional<TopologyModel> topology = fit_topology(fitted, stated_rails);
  if (!topology) return {};
  std::vector<Prediction> preds;
  const int N = fam.target->key.nranks;
  for (double x : fam.target->bytes) {
    const double low_end_us = jm ? jm->predict(N, x).time_us : 0;
    Prediction p = topology_carry(*largest, *topology, N, x, low_end_us);
    if (!lenders.empty()) {
      // The interval widens by the farthest other machine's step from the family's: their networks' spread.
      p = topology_carry(*largest, *topology, N, x, low_end_us, steps_spread(lenders, *largest, p, x));
      p.how += "; other machines' steps: " + std::to_string(lenders.size());
    }
    preds.push_back(p);
  }
  return preds;
}

// More GPUs per node where the joint-n rule won the family's held-out count (topology_wins_held_out): its answer,
// extrapolated across the topology, the interval widened by other machines' steps in quadrature as the family's is.
std::vector<Prediction> predict_joint_more_per_node(const Family& fam, const std::vector<GroupModel>& counts,
                                                    const JointModel& jm, const std::vector<PerNodeStep>& lenders) {
  const GroupModel* largest = largest_on_nodes(counts, fam.target->key.nnodes);
  std::vector<Prediction> preds;
  for (double x : fam.target->bytes) {
    Prediction p = jm.predict(fam.target->key.nranks, x);
    if (largest && !lenders.empty()) {
      const double spread = steps_spread(lenders, *largest, p, x);
      p.lo_us = p.time_us * std::exp(-std::hypot(std::log(p.time_us / p.lo_us), spread));
      p.hi_us = p.time_us * std::exp(std::hypot(std::log(p.hi_us / p.time_us), spread));
      p.how += "; other machines' steps: " + std::to_string(lenders.size());
    }
    p.extrapolated = true;
    p.how += std::string("; over the topology family by its held-out count; ") + kExtrapolatedAcrossTopology;
    preds.push_back(p);
  }
  return preds;
}

// The topology family against the joint-n rule on the family's own counts (issue 41: the family is used only where
// it wins): the largest count measured on the target's nodes held out and predicted from the rest by both; the
// family stands unless joint-n's GMAE there is lower. Its reason carries over to any cluster: where the rails were
// not yet shared at the held-out count the held bandwidth loses to the measured trend, and the trend is the better
// guess one doubling further too. Without three counts on those nodes (two to carry from, one to check), or a count
// that did not fit, there is nothing to hold out and the family stands.
bool topology_wins_held_out(const Family& fam, const std::vector<Curve>& curves, const std::vector<nlohmann::json>& members) {
  if (members.size() != fam.train.size()) return true;
  std::vector<std::size_t> on_nodes;
  for (std::size_t i = 0; i < fam.train.size(); ++i)
    if (fam.train[i]->key.nnodes == fam.target->key.nnodes) on_nodes.push_back(i);
  if (on_nodes.size() < 3) return true;
  const std::size_t held = on_nodes.back();  // train is in ascending nranks
  Family sub = fam;
  sub.target = fam.train[held];
  sub.train.erase(sub.train.begin() + static_cast<std::ptrdiff_t>(held));
  std::vector<nlohmann::json> sub_members = members;
  sub_members.erase(sub_members.begin() + static_cast<std::ptrdiff_t>(held));
  std::vector<GroupModel> sub_counts;
  for (const nlohmann::json& m : sub_members) sub_counts.push_back(GroupModel::from_json(m));
  const std::optional<JointModel> sub_jm =
      JointModel::from_json(JointModel::make_json(sub.key, sub_members, kJointKappa, kJointSigmaPerDoubling));
  const std::vector<Prediction> topology = predict_topology(sub, curves, sub_counts, sub_jm, {});
  if (topology.size() != sub.target->bytes.size()) return true;
  std::vector<double> topology_errors, joint_errors;
  for (std::size_t k = 0; k < sub.target->bytes.size(); ++k) {
    const double measured = sub.target->time_us[k];
    topology_errors.push_back(relative_error(topology[k].time_us, measured));
    joint_errors.push_back(relative_error(sub_jm->predict(sub.target->key.nranks, sub.target->bytes[k]).time_us, measured));
  }
  return !(gmae(joint_errors) < gmae(topology_errors));
}

std::vector<Prediction> predict_joint(const Family& fam, const std::string& method, const std::vector<Curve>& curves) {
  std::vector<nlohmann::json> members;
  for (const Curve* c : fam.train) {
    GroupFit g = fit_curve(*c, detail::method_fit_options(method));
    if (g.ok) members.push_back(g.model);
  }
  std::vector<Prediction> preds;
  if (members.empty() || (members.size() < 2 && !fam.more_nodes)) return preds;
  std::optional<JointModel> jm;
  if (members.size() >= 2) jm = JointModel::from_json(JointModel::make_json(fam.key, members, kJointKappa, kJointSigmaPerDoubling));
  const int N = fam.target->key.nranks;
  if (fam.more_gpus_per_node) {
    std::vector<GroupModel> counts;
    for (const nlohmann::json& m : members) counts.push_back(GroupModel::from_json(m));
    const std::vector<PerNodeStep> lenders = other_machines_steps(fam, curves, counts, method);
    if (!topology_wins_held_out(fam, curves, members) && jm) return predict_joint_more_per_node(fam, counts, *jm, lenders);
    preds = predict_topology(fam, curves, counts, jm, lenders);
    if (!preds.empty()) return preds;
  }
  if (!fam.more_nodes) {
    for (double x : fam.target->bytes) preds.push_back(jm->predict(N, x));
    return preds;
  }
  // On more nodes than measured: the answer says it crossed the topology (its interval is the scale-out step's).
  auto across = [](Prediction p) {
    p.how += std::string("; ") + kExtrapolatedAcrossTopology;
    return p;
  };
  const std::vector<GroupModel> counts = jm ? jm->members : std::vector<GroupModel>{GroupModel::from_json(members.front())};
  // The family measured its network: carried within it (its own network says more than other machines' do).
  std::vector<GroupModel> multi_node;
  for (const GroupModel& m : counts)
    if (m.key.nnodes > 1) multi_node.push_back(m);
  if (!multi_node.empty()) {
    for (double x : fam.target->bytes) preds.push_back(across(carry_within_network(multi_node, N, fam.target->key.nnodes, x)));
    return preds;
  }
  const std::vector<ScaleOutLender> lenders = scale_out_lenders(fam, curves, method);
  // The machine's network is what its measured counts' logs state (GroupModel::network), as `arfit predict` reads it
  // from a models file: the held-out count's own log is not read for it.
  const GroupModel& last = counts.back();
  const int sm = datasheet_sm(last.sm, last.device, fam.target->hardware);
  const int nnodes = fam.target->key.nnodes;
  for (double x : fam.target->bytes) {
    if (!lenders.empty()) preds.push_back(across(scale_out_by_lenders(last, sm, lenders, N, nnodes, x, false)));
    else if (jm) preds.push_back(across(joint_across_nodes(*jm, last, N, x, sm)));
    else preds.push_back(across(one_count_across_nodes(last, N, nnodes, x, sm)));
  }
  return preds;
}

std::vector<Prediction> predict_family(const Family& fam, const std::string& method, const std::vector<Curve>& curves) {
  if (method == "loglog") return predict_loglog(fam);
  if (method == "seed") return predict_seed(fam);
  if (method == "alphabeta") return predict_alphabeta(fam);
  return predict_joint(fam, method, curves);
}

}  // namespace

EvalResult eval_crossn(const std::vector<Sample>& samples, const EvalOptions& options) {
  detail::check_methods(options.methods, false);
  EvalResult res;
  res.protocol = "crossn";
  const std::vector<Curve> curves = eval_curves(samples, options.min_sizes);
  const std::vector<Family> tasks = crossn_families(curves);
  res.curves = static_cast<int>(tasks.size());
  std::vector<char> same(tasks.size()), more(tasks.size()), more_per_node(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    (tasks[i].more_nodes ? more : same)[i] = 1;
    more_per_node[i] = tasks[i].more_gpus_per_node;
  }
  auto count = [](const std::vector<char>& v) { return static_cast<int>(std::count(v.begin(), v.end(), 1)); };
  res.subsets_key = "by_nodes";
  // The third subset lies within `same`: the same nodes, more GPUs on each.
  res.subsets = {{"same", count(same), {}}, {"more", count(more), {}}, {"more_gpus_per_node", count(more_per_node), {}}};
  for (const std::string& m : options.methods) {
    std::vector<CurvePreds> per(tasks.size());
    detail::parallel_for(tasks.size(), options.threads, [&](size_t i) {
      const std::vector<Prediction> preds = predict_family(tasks[i], m, curves);
      const Curve& tgt = *tasks[i].target;
      if (preds.size() != tgt.bytes.size()) return;
      per[i].ok = true;
      for (size_t k = 0; k < preds.size(); ++k) per[i].points.push_back({tgt.key, tgt.bytes[k], tgt.time_us[k], preds[k]});
    });
    res.methods.push_back(detail::summarize(m, per, options.keep_points));
    res.subsets[0].methods.push_back(detail::summarize(m, per, false, same));
    res.subsets[1].methods.push_back(detail::summarize(m, per, false, more));
    res.subsets[2].methods.push_back(detail::summarize(m, per, false, more_per_node));
  }
  return res;
}

}  // namespace arfit::fit
