#include <map>
#include <optional>
#include <sstream>

#include "fit/fit.h"
#include "fit/epilogue.h"
#include "fit/parallel_for.h"
#include "fit/siblings.h"
#include "fit/transfer.h"
#include "model/alltoallv.h"
#include "io/input_file.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/json_input.h"
#include "model/metrics.h"
#include "model/sm_targets.h"
#include "model/text.h"

namespace arfit::fit {
namespace {

// A curve of the machine: transferred from the priors when there are priors and it has fewer than
// kTransferBelowSizes sizes (its `how` then names the machines it borrowed from, or says that none was
// comparable), fitted alone otherwise.
GroupFit fit_or_transfer(const Curve& c, const FitOptions& options, bool& transferred) {
  transferred = false;
  if (!options.prior || static_cast<int>(c.bytes.size()) >= kTransferBelowSizes) return fit_curve(c, options);
  TransferTarget t;
  t.key = c.key;
  t.sm = datasheet_sm(c.sm, c.device, c.hardware);
  t.bytes = c.bytes;
  t.time_us = c.time_us;
  TransferOptions to;
  const int K = static_cast<int>(c.bytes.size());
  if (K <= 1) to.calibration = &options.prior->calibration(K);
  const Transfer tr = transfer_curve(t, options.prior->matching(c.key), to);
  if (!tr.ok()) {
    GroupFit g = fit_curve(c, options);
    if (!g.ok) {
      g.problem = tr.problem();
      g.model["problem"] = g.problem;
    }
    return g;
  }
  GroupFit g = transferred_group(t, tr, tr.min_bytes(), tr.max_bytes());
  if (!g.ok) return g;
  g.model["device"] = c.device;
  if (!c.network.empty()) g.model["network"] = c.network;
  g.model["sources"] = c.sources;
  transferred = true;
  return g;
}

// A fitted group whose JSON the models file's own reader refuses (GroupModel::from_json: a knot time beyond a
// sample's bounds, a log sigma beyond kMaxLogSigma, a parameter outside its family's box...) is not written as
// fitted: it becomes a group that could not be fitted, with the reader's reason, so `arfit fit` never writes a
// file that predict, codegen and plot refuse as bad data. The check is the reader itself, not a copy of its rules.
void unfit_if_unloadable(GroupFit& g) {
  if (!g.ok) return;
  try {
    GroupModel::from_json(g.model);
  } catch (const JsonError& e) {
    g.ok = false;
    g.problem = std::string("the fitted model is outside what a models file may hold: ") + e.what();
    const nlohmann::json points = g.model.at("range").value("points", 0);
    g.model = {{"id", g.key.id()}, {"key", group_key_to_json(g.key)}, {"ok", false}, {"problem", g.problem}, {"range", {{"points", points}}}};
  }
}

// A joint family's JSON as the reader reads it (JointModel::from_json); false when it would be refused.
bool joint_loadable(const nlohmann::json& family) {
  try {
    JointModel::from_json(family);
    return true;
  } catch (const JsonError&) {
    return false;
  }
}

nlohmann::json paths_with_hashes(const std::vector<std::string>& paths) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : paths) out.push_back({{"path", p}, {"fnv1a64", input_fingerprint(p)}});
  return out;
}

}  // namespace



namespace {

// Sibling knots: other dtypes of the same machine's group measured sizes this group did not. Transferred
// groups take no part (their knots are the transfer's answer, not measurements).
void pool_own_siblings(const std::vector<Curve>& curves, std::vector<GroupFit>& fits, const std::vector<char>& transferred) {
  std::vector<Curve> own_curves;
  std::vector<GroupFit> own_fits;
  std::vector<size_t> where;
  for (size_t i = 0; i < curves.size(); ++i)
    if (!transferred[i]) {
      own_curves.push_back(curves[i]);
      own_fits.push_back(std::move(fits[i]));
      where.push_back(i);
    }
  pool_siblings(own_curves, own_fits);
  for (size_t k = 0; k < where.size(); ++k) fits[where[k]] = std::move(own_fits[k]);
}

// Every curve fitted (or transferred from a prior), pooled with its siblings, checked loadable, with the fingerprints
// of its measured points and, for a fused group, its epilogue term.
std::vector<GroupFit> fit_groups(const std::vector<Curve>& curves, const FitOptions& options) {
  std::vector<GroupFit> fits(curves.size());
  std::vector<char> transferred(curves.size(), 0);
  auto fit_one = [&](size_t i) {
    bool tr = false;
    fits[i] = fit_or_transfer(curves[i], options, tr);
    transferred[i] = tr;
  };
  // Each group is fitted independently and written to its own slot: the result does not depend on the number
  // of threads.
  detail::parallel_for(curves.size(), options.threads, fit_one);
  if (options.pool_siblings && options.residual_correction) pool_own_siblings(curves, fits, transferred);
  for (GroupFit& g : fits) unfit_if_unloadable(g);
  // What the priors of a later fit or predict are checked against (fit/prior_check.h): a prior with this group's
  // id holding one of these points holds the machine's own measurements.
  for (size_t i = 0; i < curves.size(); ++i) fits[i].model["measured_points"] = measured_point_fingerprints(curves[i]);
  // Fused groups: the fitted epilogue term over the unfused twin (fit/epilogue.h).
  add_epilogue_terms(curves, fits);
  return fits;
}

// Joint fits across GPU counts: one family per group key without its GPU count, where two or more counts fitted.
nlohmann::json joint_families(const std::vector<GroupFit>& fits) {
  nlohmann::json joint = nlohmann::json::array();
  std::map<GroupKey, std::vector<const GroupFit*>> fams;
  for (const auto& g : fits) {
    if (!g.ok) continue;
    GroupKey k = g.key;
    k.nranks = 0;
    fams[k].push_back(&g);
  }
  for (auto& [k, members] : fams) {
    if (members.size() < 2) continue;
    std::vector<nlohmann::json> mj;
    for (const GroupFit* g : members) mj.push_back(g->model);
    nlohmann::json family = JointModel::make_json(k, mj, kJointKappa, kJointSigmaPerDoubling);
    if (joint_loadable(family)) joint.push_back(std::move(family));
  }
  return joint;
}

// all-to-allv: measured points with their splits are predicted through the same system's all-to-all model
// at each effective size; the mode with the lowest GMAE becomes the file's alltoallv_mode.
void choose_alltoallv_mode(const std::vector<Sample>& samples, nlohmann::json& j) {
  std::map<std::string, std::vector<double>> errs;
  std::optional<ModelSet> partial;  // the models so far, read once the first split needs them
  for (const Sample& x : samples) {
    if (!x.ok() || x.collective != Collective::AllToAllV || x.splits.empty() || !(x.time_us > 0)) continue;
    AllToAllvSplit sp;
    try {
      sp = parse_alltoallv_split(x.splits, dlrm_element_bytes(x.dtype));
    } catch (const std::exception&) {
      continue;
    }
    if (!partial) partial = ModelSet::from_json(j);
    for (EffectiveMode m : all_effective_modes()) {
      PredictQuery q;
      auto it = x.extra.find("system");
      q.system = it != x.extra.end() ? it->second : "";
      q.collective = Collective::AllToAll;
      q.strategy = x.strategy;
      q.nranks = x.nranks;
      q.nnodes = x.nnodes;
      q.bytes = effective_alltoall_bytes(sp, m);
      const auto p = partial->predict(q);
      if (p) errs[to_string(m)].push_back(relative_error(p->time_us, x.time_us));
    }
  }
  if (errs.empty()) return;
  nlohmann::json modes = nlohmann::json::object();
  std::string best;
  double best_g = 1e300;
  for (const auto& [m, e] : errs) {
    const double g = gmae(e);
    modes[m] = {{"gmae", g}, {"points", e.size()}};
    if (g < best_g) {
      best_g = g;
      best = m;
    }
  }
  j["alltoallv_modes"] = modes;
  j["alltoallv_mode"] = best;
}

}  // namespace

ModelSet fit_model_set(const std::vector<Sample>& samples, const FitOptions& options,
                       const std::vector<std::string>& input_paths, const std::vector<std::string>& prior_paths) {
  CurveOptions co;
  co.group_by = GroupBy::System;
  const std::vector<Curve> curves = build_curves(samples, co);
  const std::vector<GroupFit> fits = fit_groups(curves, options);
  nlohmann::json j;
  j["schema"] = "arfit-models";
  j["schema_version"] = 1;
  j["arfit_version"] = ARFIT_VERSION;
  j["inputs"] = paths_with_hashes(input_paths);
  if (!prior_paths.empty()) j["priors"] = paths_with_hashes(prior_paths);
  j["options"] = {{"family", options.family}, {"residual_correction", options.residual_correction},
                  {"min_points", options.min_points}, {"pool_siblings", options.pool_siblings}};
  j["alltoallv_mode"] = "max_of_sum";
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : fits) groups.push_back(g.model);
  j["groups"] = groups;
  j["joint"] = options.joint_n ? joint_families(fits) : nlohmann::json::array();
  choose_alltoallv_mode(samples, j);
  return ModelSet::from_json(j);
}

}  // namespace arfit::fit
