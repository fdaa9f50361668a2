#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "fit/fit.h"
#include "fit/epilogue.h"
#include "fit/siblings.h"
#include "model/alltoallv.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/metrics.h"

namespace arfit::fit {
namespace {

// FNV-1a 64-bit of a file's bytes, as 16 hex digits; "" when unreadable.
std::string fnv1a_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::uint64_t h = 1469598103934665603ULL;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof buf);
    for (std::streamsize i = 0; i < in.gcount(); ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ULL;
    }
  }
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

}  // namespace


ModelSet fit_model_set(const std::vector<Sample>& samples, const FitOptions& options,
                       const std::vector<std::string>& input_paths) {
  CurveOptions co;
  co.group_by = GroupBy::System;
  const std::vector<Curve> curves = build_curves(samples, co);
  std::vector<GroupFit> fits(curves.size());
  const int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(curves.size())));
  if (threads <= 1) {
    for (size_t i = 0; i < curves.size(); ++i) fits[i] = fit_curve(curves[i], options);
  } else {
    // Each group is fitted independently and written to its own slot: the result does not depend on
    // the number of threads.
    std::atomic<size_t> next{0};
    std::vector<std::thread> pool;
    for (int w = 0; w < threads; ++w)
      pool.emplace_back([&] {
        for (size_t i = next++; i < curves.size(); i = next++) fits[i] = fit_curve(curves[i], options);
      });
    for (auto& th : pool) th.join();
  }
  // Sibling knots: other dtypes of the same machine's group measured sizes this group did not.
  if (options.pool_siblings && options.residual_correction) pool_siblings(curves, fits);
  // Fused groups: the fitted epilogue term over the unfused twin (fit/epilogue.h).
  add_epilogue_terms(curves, fits);
  nlohmann::json j;
  j["schema"] = "arfit-models";
  j["schema_version"] = 1;
  j["arfit_version"] = ARFIT_VERSION;
  nlohmann::json inputs = nlohmann::json::array();
  for (const auto& p : input_paths) inputs.push_back({{"path", p}, {"fnv1a64", fnv1a_file(p)}});
  j["inputs"] = inputs;
  j["options"] = {{"family", options.family}, {"residual_correction", options.residual_correction},
                  {"min_points", options.min_points}, {"pool_siblings", options.pool_siblings}};
  j["alltoallv_mode"] = "max_of_sum";
  nlohmann::json groups = nlohmann::json::array();
  for (const auto& g : fits) groups.push_back(g.model);
  j["groups"] = groups;
  // Joint fits across GPU counts.
  nlohmann::json joint = nlohmann::json::array();
  if (options.joint_n) {
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
      joint.push_back(JointModel::make_json(k, mj, kJointKappa, kJointSigmaPerDoubling));
    }
  }
  j["joint"] = joint;
  // all-to-allv: measured points with their splits are predicted through the same system's all-to-all model
  // at each effective size; the mode with the lowest GMAE becomes the file's alltoallv_mode.
  {
    std::map<std::string, std::vector<double>> errs;
    for (const Sample& x : samples) {
      if (!x.ok() || x.collective != Collective::AllToAllV || x.splits.empty() || !(x.time_us > 0)) continue;
      AllToAllvSplit sp;
      try {
        sp = parse_alltoallv_split(x.splits, std::max(1, dtype_size(x.dtype)));
      } catch (const std::exception&) {
        continue;
      }
      const ModelSet partial = ModelSet::from_json(j);
      for (EffectiveMode m : all_effective_modes()) {
        PredictQuery q;
        auto it = x.extra.find("system");
        q.system = it != x.extra.end() ? it->second : "";
        q.collective = Collective::AllToAll;
        q.strategy = x.strategy;
        q.nranks = x.nranks;
        q.nnodes = x.nnodes;
        q.bytes = effective_alltoall_bytes(sp, m);
        const auto p = partial.predict(q);
        if (p) errs[to_string(m)].push_back(relative_error(p->time_us, x.time_us));
      }
    }
    if (!errs.empty()) {
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
  }
  return ModelSet::from_json(j);
}

}  // namespace arfit::fit
