// crossn: for families measured at >= 3 GPU counts, fit all but the largest count and predict the largest.
// Four parts: choosing the families (crossn_families), predicting one family with one method
// (predict_family), scoring per node-count subset, reporting (eval_crossn).
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <ceres/ceres.h>

#include "fit/eval_common.h"
#include "fit/family_fit.h"
#include "fit/fit.h"
#include "model/bus_factor.h"
#include "fit/transfer.h"
#include "model/joint_model.h"
#include "model/scale_out.h"
#include "model/sm_targets.h"

namespace arfit::fit {
namespace {

using detail::CurvePreds;

// One crossn task: the measured counts of a family and the count it predicts.
struct Family {
  GroupKey key;                      // nranks 0; nnodes: the measured counts' (a family may span nodes)
  std::vector<const Curve*> train;   // ascending nranks
  const Curve* target = nullptr;
  bool more_nodes = false;           // the target spans more nodes than any measured count
};

// Families: one machine's curves (its label, Curve::hardware) of the same collective, strategy, fusion and dtype
// at >= 3 GPU counts, whatever their node counts (so that a count on more nodes is predicted from those on
// fewer), from one file or several (a log per count, labelled as one machine with `arfit ingest --system`).
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
    if (v.size() < 3) continue;
    Family f;
    f.train.assign(v.begin(), v.end() - 1);
    f.target = v.back();
    f.key = f.target->key;
    f.key.nranks = 0;
    int measured_nodes = 0;
    for (const Curve* c : f.train) measured_nodes = std::max(measured_nodes, c->key.nnodes);
    f.key.nnodes = measured_nodes;
    f.more_nodes = f.target->key.nnodes > measured_nodes;
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
  ceres::Solver::Options so;
  so.linear_solver_type = ceres::DENSE_QR;
  so.logging_type = ceres::SILENT;
  so.max_num_iterations = 200;
  ceres::Solver::Summary sum;
  ceres::Solve(so, &problem, &sum);
  std::vector<Prediction> out;
  for (double x : fam.target->bytes) {
    Prediction q;
    q.time_us = std::exp(p[0]) + std::exp(p[1]) * ring_steps(coll, N) + bus_factor(coll, N) * x / 1e3 * std::exp(-p[2]);
    out.push_back(q);
  }
  return out;
}

// ---- arfit: the joint-n rule, and across node boundaries

// The lenders of the family's scale-out step, as `arfit predict` takes them (model/scale_out.h): every other
// system that measured the family's largest measured count c (on its node count; same collective, strategy,
// fusion, element size) and either the target's count on the target's node count (a measured step) or counts on
// more than one node within the target's (a step bridged through its own network), as chosen_lenders chooses
// them. Only the chosen ones are fitted.
std::vector<ScaleOutLender> scale_out_lenders(const Family& fam, const std::vector<Curve>& curves, const std::string& method) {
  const Curve& c = *fam.train.back();
  const GroupKey& tk = fam.target->key;
  std::map<std::string, const Curve*> from, to;
  std::map<std::string, std::vector<const Curve*>> network;
  for (const Curve& o : curves) {
    if (o.hardware == c.hardware) continue;
    if (comparable_curves(c.key, o.key) && !from.count(o.hardware)) from[o.hardware] = &o;
    if (comparable_curves(tk, o.key)) {
      if (!to.count(o.hardware)) to[o.hardware] = &o;
    } else if (comparable_kinds(tk, o.key) && o.key.nnodes > 1 && o.key.nnodes <= tk.nnodes && o.key.nranks <= tk.nranks) {
      network[o.hardware].push_back(&o);
    }
  }
  struct Ends {
    std::string system;
    const Curve *from, *to;                // `to` null: a bridged step
    std::vector<const Curve*> network;
  };
  std::vector<Ends> candidates;
  std::vector<int> sms;
  std::vector<bool> measured;
  for (const auto& [sys, a] : from) {
    if (const auto it = to.find(sys); it != to.end()) candidates.push_back({sys, a, it->second, {}});
    else if (const auto nw = network.find(sys); nw != network.end()) candidates.push_back({sys, a, nullptr, nw->second});
    else continue;
    sms.push_back(datasheet_sm(a->sm, a->device, a->hardware));
    measured.push_back(candidates.back().to != nullptr);
  }
  const FitOptions options = detail::method_fit_options(method);
  auto fitted = [&](const Curve& curve) -> std::optional<GroupModel> {
    const GroupFit g = fit_curve(curve, options);
    if (!g.ok) return std::nullopt;
    return GroupModel::from_json(g.model);
  };
  std::vector<ScaleOutLender> lenders;
  for (std::size_t i : chosen_lenders(sms, measured, datasheet_sm(c.sm, c.device, c.hardware))) {
    const Ends& e = candidates[i];
    const auto fa = fitted(*e.from);
    if (!fa) continue;
    ScaleOutLender l{e.system, sms[i], *fa, std::nullopt, {}};
    if (e.to) {
      l.to = fitted(*e.to);
      if (!l.to) continue;
    } else {
      for (const Curve* b : e.network)
        if (const auto fb = fitted(*b)) l.network.push_back(*fb);
      if (l.network.empty()) continue;
    }
    lenders.push_back(std::move(l));
  }
  return lenders;
}

std::vector<Prediction> predict_joint(const Family& fam, const std::string& method, const std::vector<Curve>& curves) {
  std::vector<nlohmann::json> members;
  for (const Curve* c : fam.train) {
    GroupFit g = fit_curve(*c, detail::method_fit_options(method));
    if (g.ok) members.push_back(g.model);
  }
  std::vector<Prediction> preds;
  if (members.size() < 2) return preds;
  const JointModel jm = JointModel::from_json(JointModel::make_json(fam.key, members, kJointKappa, kJointSigmaPerDoubling));
  const int N = fam.target->key.nranks;
  if (!fam.more_nodes) {
    for (double x : fam.target->bytes) preds.push_back(jm.predict(N, x));
    return preds;
  }
  // The family measured its network: carried within it (its own network says more than other machines' do).
  std::vector<GroupModel> multi_node;
  for (const GroupModel& m : jm.members)
    if (m.key.nnodes > 1) multi_node.push_back(m);
  if (!multi_node.empty()) {
    for (double x : fam.target->bytes) preds.push_back(carry_within_network(multi_node, N, fam.target->key.nnodes, x));
    return preds;
  }
  const std::vector<ScaleOutLender> lenders = scale_out_lenders(fam, curves, method);
  std::vector<const ScaleOutLender*> chosen;
  for (const ScaleOutLender& l : lenders) chosen.push_back(&l);
  const GroupModel& last = jm.members.back();
  const int sm = datasheet_sm(last.sm, last.device, fam.target->hardware);
  for (double x : fam.target->bytes)
    preds.push_back(chosen.empty() ? widen_across_nodes(jm.predict(N, x), sm)
                                   : scale_out_by_lenders(last, sm, chosen, N, fam.target->key.nnodes, x, false));
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
  std::vector<char> same(tasks.size()), more(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) (tasks[i].more_nodes ? more : same)[i] = 1;
  res.subsets_key = "by_nodes";
  res.subsets = {{"same", static_cast<int>(std::count(same.begin(), same.end(), 1)), {}},
                 {"more", static_cast<int>(std::count(more.begin(), more.end(), 1)), {}}};
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
  }
  return res;
}

}  // namespace arfit::fit
