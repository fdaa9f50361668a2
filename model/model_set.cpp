#include "model/model_set.h"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "model/atomic_file.h"
#include "model/bus_factor.h"
#include "model/errors.h"
#include "model/file_kind.h"
#include "model/group_model.h"
#include "model/joint_model.h"
#include "model/nccl_variant.h"
#include "model/json_input.h"
#include "model/alltoallv.h"
#include "model/scale_out.h"
#include "model/sm_targets.h"
#include "model/text.h"

namespace arfit {

std::string sample_system(const Sample& s) {
  auto it = s.extra.find("system");
  if (it != s.extra.end() && !it->second.empty()) return it->second;
  if (!s.device.empty()) return s.device;
  if (!s.source.empty()) return std::filesystem::path(s.source).stem().string();
  return "default";
}

GroupKey sample_group_key(const Sample& s) { return sample_group_key(s, sample_system(s)); }

GroupKey sample_group_key(const Sample& s, const std::string& system) {
  GroupKey k;
  k.system = system;
  k.collective = s.collective;
  k.strategy = s.strategy;
  k.fusion = s.fusion;
  k.dtype = canonical_dtype(s.dtype);
  k.nranks = s.nranks;
  k.nnodes = s.nnodes;
  return k;
}

std::string GroupKey::id() const {
  return system + "/" + to_string(collective) + "/" + strategy + "/" + to_string(fusion) + "/" + dtype + "/n" +
         std::to_string(nranks) + "/N" + std::to_string(nnodes);
}

bool GroupKey::operator<(const GroupKey& o) const {
  return std::tie(system, collective, strategy, fusion, dtype, nranks, nnodes) <
         std::tie(o.system, o.collective, o.strategy, o.fusion, o.dtype, o.nranks, o.nnodes);
}

bool GroupKey::operator==(const GroupKey& o) const {
  return std::tie(system, collective, strategy, fusion, dtype, nranks, nnodes) ==
         std::tie(o.system, o.collective, o.strategy, o.fusion, o.dtype, o.nranks, o.nnodes);
}

namespace {

const char* kWhere = "<models>";

// What a query asks for before its dtype, counts and size: system, collective, strategy and fusion.
using CurveKind = std::tuple<std::string, Collective, std::string, FusionOp>;
CurveKind curve_kind(const GroupKey& k) { return {k.system, k.collective, k.strategy, k.fusion}; }

}  // namespace

// Evaluating a model needs its parsed form; parsing a group from JSON costs far more than predicting from it,
// and codegen, plots and whatif predict thousands of cells from one set. So the set is parsed once, here, and
// indexed by curve kind: a prediction looks at its own curves only (it scanned every group, which made codegen
// and suggest quadratic in the number of curves: 4,800 groups took 12.8 s and 10.9 s; benchmarks/model).
struct ModelSet::Parsed {
  std::vector<GroupModel> groups;  // every group of the file, in file order (ok == false ones included)
  std::vector<JointModel> joint;
  std::map<CurveKind, std::vector<const GroupModel*>> groups_of_kind;  // the fitted ones, in file order
  std::map<CurveKind, std::vector<const JointModel*>> joint_of_kind;   // in file order
  std::vector<std::string> systems;                                    // of the fitted groups and joint families

  Parsed() = default;
  Parsed(const Parsed&) = delete;  // the index points into groups and joint
  Parsed& operator=(const Parsed&) = delete;
  void index() {
    std::set<std::string> s;
    for (const GroupModel& m : groups)
      if (m.ok) {
        groups_of_kind[curve_kind(m.key)].push_back(&m);
        s.insert(m.key.system);
      }
    for (const JointModel& jm : joint) {
      joint_of_kind[curve_kind(jm.key)].push_back(&jm);
      s.insert(jm.key.system);
    }
    systems.assign(s.begin(), s.end());
  }
  template <typename T>
  static const std::vector<const T*>& of_kind(const std::map<CurveKind, std::vector<const T*>>& index, const PredictQuery& q) {
    static const std::vector<const T*> none;
    const auto it = index.find({q.system, q.collective, q.strategy, q.fusion});
    return it == index.end() ? none : it->second;
  }
  // The fitted groups and the joint families of the query's curve kind.
  const std::vector<const GroupModel*>& groups_of(const PredictQuery& q) const { return of_kind(groups_of_kind, q); }
  const std::vector<const JointModel*>& joint_of(const PredictQuery& q) const { return of_kind(joint_of_kind, q); }
};

// The document read and validated; throws JsonError naming the pointer of the first bad value.
ModelSet ModelSet::parse_checked(const nlohmann::json& j) {
  const JsonView root(j);
  root.expect_object();
  const JsonView schema = root.at("schema");
  if (schema.string() != "arfit-models") schema.fail("wrong schema name (expected \"arfit-models\")");
  const JsonView version = root.at("schema_version");
  if (version.integer<std::int64_t>() != 1) version.fail("unsupported version " + version.json().dump() + " (this arfit reads 1)");
  auto parsed = std::make_shared<Parsed>();
  const JsonView groups = root.at("groups");
  // One group per key: a second one would be shadowed by the first without a word (a hand edit or two
  // files pasted together).
  std::map<std::string, std::size_t> first_of_key;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    parsed->groups.push_back(GroupModel::from_json(groups.at(i)));
    const auto [it, fresh] = first_of_key.emplace(parsed->groups.back().key.id(), i);
    if (!fresh)
      groups.at(i).at("key").fail("the same group as /groups/" + std::to_string(it->second) + " (" + it->first + "): one group per key");
  }
  if (const auto joint = root.find("joint")) {
    std::map<std::string, std::size_t> first_of_family;
    for (std::size_t i = 0; i < joint->size(); ++i) {
      parsed->joint.push_back(JointModel::from_json(joint->at(i)));
      const auto [it, fresh] = first_of_family.emplace(parsed->joint.back().key.id(), i);
      if (!fresh)
        joint->at(i).at("key").fail("the same family as /joint/" + std::to_string(it->second) + " (" + it->first +
                                    "): one joint model per family");
    }
  }
  if (const auto mode = root.find("alltoallv_mode")) {
    try {
      parse_effective_mode(mode->string());
    } catch (const std::invalid_argument& e) {
      mode->fail(e.what());
    }
  }
  parsed->index();
  ModelSet m;
  m.json_ = j;
  m.parsed_ = std::move(parsed);
  return m;
}

ModelSet ModelSet::from_json(const nlohmann::json& j) {
  try {
    return parse_checked(j);
  } catch (const JsonError& e) {
    throw InputError(kWhere, 0, "", e.what());
  }
}

nlohmann::json ModelSet::to_json() const { return json_; }

ModelSet ModelSet::load(const std::string& path) { return parse(read_input_file(path), path); }

namespace {

// Another file arfit writes, given where a models file belongs, is refused for what it is: the reader's own complaint
// named a symptom ("invalid JSON at column 1" for a sample CSV, "missing key 'schema'" for a codegen json table).
void refuse_other_arfit_file(const std::string& text, const std::string& name) {
  const auto k = arfit_file_kind(text);
  if (!k || k->kind == ArfitFileKind::Models) return;
  throw InputError(name, 0, "", k->what + ", not a models file" +
                                    (k->kind == ArfitFileKind::Samples ? ": fit it first (arfit fit " + name + " -o models.json)" : ""));
}

// A models file read by a command must hold a model: with none (`groups: []`, or no group fitted), every command
// found a symptom instead ("choose one with --system (systems: none)", "no model answers", whatif keeping every
// collective as measured with exit 0). `arfit fit` never writes such a file; the reader refuses it, naming the file.
void require_a_model(const ModelSet& m, const nlohmann::json& j, const std::string& name) {
  if (!m.systems().empty()) return;  // a fitted group or a joint family
  const JsonView groups = JsonView(j).at("groups");
  const std::string fit_one = "; fit one with `arfit fit SAMPLES -o " + name + "`";
  if (groups.size() == 0) groups.fail("the file holds no models (groups is empty)" + fit_one);
  const nlohmann::json& first = groups.at(0).json();
  const std::string first_problem =
      first.contains("problem") && first["problem"].is_string() ? first["problem"].get<std::string>() : "not fitted";
  groups.fail("the file holds no fitted model (none of its " + std::to_string(groups.size()) + " groups was fitted; " +
              groups.at(0).pointer() + ": " + first_problem + ")" + fit_one);
}

}  // namespace

ModelSet ModelSet::parse(const std::string& text, const std::string& name) {
  nlohmann::json j;
  try {
    j = parse_json(text, name);
  } catch (const InputError&) {
    refuse_other_arfit_file(text, name);
    throw;
  }
  return from_document(j, text, name);
}

ModelSet ModelSet::from_document(const nlohmann::json& j, const std::string& text, const std::string& name) {
  try {
    return read_json_document(text, name, [&] {
      ModelSet m = parse_checked(j);
      require_a_model(m, j, name);
      return m;
    });
  } catch (const InputError&) {
    refuse_other_arfit_file(text, name);
    throw;
  }
}

void ModelSet::save(const std::string& path) const { write_string_atomically(path, json_document_text(json_)); }

std::vector<GroupModelView> ModelSet::groups() const {
  std::vector<GroupModelView> out;
  if (!parsed_) return out;
  for (const GroupModel& m : parsed_->groups) {
    if (!m.ok) continue;
    GroupModelView v;
    v.key = m.key;
    v.family = m.family;
    v.min_bytes = m.min_bytes;
    v.max_bytes = m.max_bytes;
    v.points = m.points;
    v.cv_gmae = m.cv_gmae;
    v.sm = m.sm;
    if (m.spec.kind == FamilyKind::Seed) v.seed_turning_points.push_back({std::exp2(m.seed.ln_p), std::exp2(m.seed.sats_p)});
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> ModelSet::systems() const { return parsed_ ? parsed_->systems : std::vector<std::string>{}; }

namespace {

// The strategies of the fitted groups and joint families whose key passes `keep` (a joint family's key has no GPU
// count: it answers every one).
template <class Keep>
std::vector<std::string> strategies_where(const std::vector<GroupModel>& groups, const std::vector<JointModel>& joint,
                                          const Keep& keep) {
  std::set<std::string> s;
  for (const GroupModel& m : groups)
    if (m.ok && keep(m.key, true)) s.insert(m.key.strategy);
  for (const JointModel& jm : joint)
    if (keep(jm.key, false)) s.insert(jm.key.strategy);
  return {s.begin(), s.end()};
}

}  // namespace

std::vector<std::string> ModelSet::strategies(const std::string& system, Collective c, FusionOp f, int nranks) const {
  if (!parsed_) return {};
  return strategies_where(parsed_->groups, parsed_->joint, [&](const GroupKey& k, bool fitted_group) {
    return (system.empty() || k.system == system) && k.collective == c && k.fusion == f && (!fitted_group || k.nranks == nranks);
  });
}

std::vector<std::string> ModelSet::strategies(const std::string& system, Collective c) const {
  if (!parsed_) return {};
  return strategies_where(parsed_->groups, parsed_->joint,
                          [&](const GroupKey& k, bool) { return (system.empty() || k.system == system) && k.collective == c; });
}

namespace {

// The query's element type, or any when it names none.
bool dtype_matches(const GroupKey& k, const PredictQuery& q) { return q.dtype.empty() || canonical_dtype(q.dtype) == k.dtype; }

// A group or joint family of the query's curve kind that answers `q` on the nodes it measured: its dtype and node
// count.
bool answers_on_its_nodes(const GroupKey& k, const PredictQuery& q) { return dtype_matches(k, q) && k.nnodes == q.nnodes; }

// The fitted groups of the query's curve kind (`kind`) that answer `q` at their own count: predict's first
// candidates, counted by gpu_counts.
std::vector<const GroupModel*> measured_on_its_nodes(const std::vector<const GroupModel*>& kind, const PredictQuery& q) {
  std::vector<const GroupModel*> out;
  for (const GroupModel* m : kind)
    if (answers_on_its_nodes(m->key, q)) out.push_back(m);
  return out;
}

// The machine's largest measured count on the most nodes it measured below the query's (at most the query's
// count): what an answer on more nodes is carried from. Null when none, or when the query names no dtype and the
// candidates have several (ambiguous).
const GroupModel* largest_on_fewer_nodes(const std::vector<const GroupModel*>& groups, const PredictQuery& q) {
  const GroupModel* last = nullptr;
  for (const GroupModel* m : groups) {
    const GroupKey& k = m->key;
    if (!dtype_matches(k, q) || k.nnodes >= q.nnodes || k.nranks > q.nranks) continue;
    if (last && q.dtype.empty() && last->key.dtype != k.dtype) return nullptr;  // ambiguous dtype
    if (!last || std::tie(k.nnodes, k.nranks) > std::tie(last->key.nnodes, last->key.nranks)) last = m;
  }
  return last;
}

// A count on more nodes than the query's machine measured (model/scale_out.h). `q` has its system and
// collective resolved. From the machine's largest measured count on the most nodes it measured (at most the
// query's count): when that is on more than one node, the network is measured and the answer is carried within
// it; otherwise other systems lend their scale-out step as plan_scale_out_lenders chooses them — measured where
// they measured the query's count on the query's nodes, else bridged through their own network; from their own
// one-node count, else paired with one-node logs of their GPU — carried to the machine's fabric; without any, the
// same count's own answer, the joint-n answer (at least the largest count's time: joint_across_nodes), or the one
// count carried (one_count_across_nodes) is kept, widened by the unknown network.
// `lender_pool`: the groups other machines' steps may come from (the set's own, then those of --prior files).
// `groups` and `joint`: the fitted groups and the joint families of the query's curve kind.
std::optional<Prediction> carry_across_nodes(const std::vector<const GroupModel*>& groups, const std::vector<const JointModel*>& joint,
                                             const std::vector<const GroupModel*>& lender_pool, const PredictQuery& q,
                                             double bytes, int* measured_sm, double* latency_us) {
  if (q.nranks <= 0 || !q.across_nodes) return std::nullopt;
  const GroupModel* last = largest_on_fewer_nodes(groups, q);
  if (!last) return std::nullopt;
  *measured_sm = last->sm;
  *latency_us = last->predict(last->min_bytes).time_us;
  const int sm = last->sm;  // GroupModel::from_json already resolved it (datasheet_sm)
  if (last->key.nnodes > 1) {
    // The machine measured its network: carried within it, from its counts on more than one node.
    std::vector<GroupModel> multi_node;
    for (const GroupModel* m : groups)
      if (m->key.dtype == last->key.dtype && m->key.nnodes > 1 && m->key.nnodes < q.nnodes && m->key.nranks <= q.nranks)
        multi_node.push_back(*m);
    return carry_within_network(multi_node, q.nranks, q.nnodes, bytes);
  }
  GroupKey target = last->key;
  target.nranks = q.nranks;
  target.nnodes = q.nnodes;
  // Other machines' steps to the query's count (model/scale_out.h): measured, or bridged through their own
  // network, from their own one-node count or paired with one-node machines of their GPU.
  std::vector<LenderCurve> pool;
  std::vector<const GroupModel*> fitted;  // pool[i] is fitted[i]
  for (const GroupModel* g : lender_pool)
    if (g->ok) {
      pool.push_back({g->key, g->sm, g->device});
      fitted.push_back(g);
    }
  std::vector<ScaleOutLender> chosen;
  for (const LenderPlan& plan : plan_scale_out_lenders(pool, last->key, target, sm)) {
    ScaleOutLender l{plan.system, plan.sm, {}, std::nullopt, {}, plan.paired};
    for (std::size_t i : plan.from) l.from.push_back(*fitted[i]);
    if (plan.to) l.to = *fitted[*plan.to];
    for (std::size_t i : plan.network) l.network.push_back(*fitted[i]);
    chosen.push_back(std::move(l));
  }
  if (!chosen.empty()) return scale_out_by_lenders(*last, sm, chosen, q.nranks, q.nnodes, bytes, true);
  if (q.nranks == last->key.nranks) return widen_across_nodes(last->predict(bytes), sm);
  for (const JointModel* jm : joint) {
    if (jm->key.nnodes == last->key.nnodes && jm->key.dtype == last->key.dtype)
      return joint_across_nodes(*jm, *last, q.nranks, bytes, sm);
  }
  return one_count_across_nodes(*last, q.nranks, q.nnodes, bytes, sm);
}

// Node counts up to which predict_across_nodes holds each answer at the one on one node fewer; beyond, at half
// the nodes. One node at a time keeps every pair of node counts in order (4 nodes not faster than 3), not only
// those on a halving chain, at one carried answer per node count: up to 64 nodes (512 GPUs of 8-GPU nodes, past
// any tensor- or expert-parallel group) that is cheap; beyond, halving keeps the chain about log2(N) long.
constexpr int kNodeByNodeHoldLimit = 64;

// The query `q` on fewer nodes with the same GPUs per node that predict_across_nodes holds `q`'s answer at: one
// node fewer (GPUs split evenly, more than two nodes, at most kNodeByNodeHoldLimit), else half the nodes and GPUs
// (both even), else one node fewer (GPUs split evenly); nullopt when none.
std::optional<PredictQuery> fewer_nodes_to_hold_at(const PredictQuery& q) {
  const bool even_split = q.nnodes > 0 && q.nranks % q.nnodes == 0;
  PredictQuery fewer = q;
  if (even_split && q.nnodes > 2 && q.nnodes <= kNodeByNodeHoldLimit) {
    fewer.nnodes = q.nnodes - 1;
    fewer.nranks = q.nranks / q.nnodes * fewer.nnodes;
  } else if (q.nnodes % 2 == 0 && q.nranks % 2 == 0) {
    fewer.nranks /= 2;
    fewer.nnodes /= 2;
  } else if (even_split && q.nnodes > 2) {
    fewer.nnodes = q.nnodes - 1;
    fewer.nranks = q.nranks / q.nnodes * fewer.nnodes;
  } else {
    return std::nullopt;
  }
  return fewer;
}

// carry_across_nodes, held at least at the answer for the same GPUs per node on fewer nodes
// (fewer_nodes_to_hold_at) where those fewer nodes are themselves beyond the measured ones. The same GPUs per node
// on more nodes is a longer ring (a deeper tree) over the same links: each GPU moves at least the share it moved
// on fewer nodes, through more hops, so no collective gets faster by adding nodes. The rule alone can: each node
// count borrows the steps of the lenders that measured nearest to it (a B200 cluster that measured 32 GPUs on four
// nodes lends there, H100 clusters that measured 16 on two lend there), and networks differ up to 4x, so a public
// A100 node came out 3.5x faster on four nodes than on two and, held only along halving, public nodes 25 % faster
// on eight than on six, on four than on three. The answer then keeps the fewer nodes' time, its interval reaching
// their upper end. From the measured nodes to twice them the rule's answer stands: its steps are other machines'
// measurements, not a guess.
std::optional<Prediction> predict_across_nodes(const std::vector<const GroupModel*>& groups, const std::vector<const JointModel*>& joint,
                                               const std::vector<const GroupModel*>& lender_pool, const PredictQuery& q,
                                               double bytes, int* measured_sm, double* latency_us) {
  std::optional<Prediction> p = carry_across_nodes(groups, joint, lender_pool, q, bytes, measured_sm, latency_us);
  if (!p) return p;
  const std::optional<PredictQuery> fewer_query = fewer_nodes_to_hold_at(q);
  if (!fewer_query) return p;
  const PredictQuery& fewer = *fewer_query;
  const GroupModel* last = largest_on_fewer_nodes(groups, q);
  if (!last || last->key.nnodes >= fewer.nnodes || last->key.nranks > fewer.nranks) return p;
  int fewer_sm = 0;
  double fewer_latency_us = 0;
  const std::optional<Prediction> h = predict_across_nodes(groups, joint, lender_pool, fewer, bytes, &fewer_sm, &fewer_latency_us);
  if (h)
    hold_at_least(*p, *h, "; held at " + std::to_string(fewer.nranks) + " GPUs on " + std::to_string(fewer.nnodes) +
                              " nodes (more nodes are not faster)");
  return p;
}

// Why a query on more nodes than its machine measured gets no answer although the machine measured its curve kind
// on fewer: its strategy is not shown to run across nodes. NCCL's own do by construction (nccl_runs_across_nodes:
// NCCL, NCCL_SYMMETRIC and the forced variants whose algorithm spans nodes); any other (vLLM's,
// SGLang's and TensorRT-LLM's custom all-reduce, arbench's one-shot and two-shot) exchanges through peer GPU
// memory, which ends at the node unless the machine's NVLink domain spans nodes (GB200/GB300 NVL72), so it
// runs across nodes only where some machine in `lender_pool` (the query's own included) measured it, same
// collective, on more than one node. Decided by evidence, so it holds for strategies arfit has never seen.
// Empty when nothing refuses the query. `groups`: the fitted groups of the query's curve kind.
std::string refuse_across_nodes(const std::vector<const GroupModel*>& groups, const std::vector<const GroupModel*>& lender_pool,
                                 const PredictQuery& q) {
  if (q.nranks <= 0 || !q.across_nodes || nccl_runs_across_nodes(q.strategy)) return "";
  const auto on_fewer_nodes = [&](const GroupModel* g) { return g->key.nnodes < q.nnodes; };
  if (std::none_of(groups.begin(), groups.end(), on_fewer_nodes)) return "";
  for (const GroupModel* g : lender_pool)
    if (g->key.collective == q.collective && g->key.strategy == q.strategy && g->key.nnodes > 1) return "";
  return q.strategy + ": no machine in the models measured it (" + to_string(q.collective) +
         ") on more than one node; only NCCL's own (" + strategy::kNccl + ", " + strategy::kNcclSymmetric +
         ", its ring, tree, PAT, CollNet and NVLS-tree variants) run across nodes by construction (custom all-reduce "
         "kernels and forced NVLS run within one NVLink or peer-memory domain), so it has no answer on " +
         std::to_string(q.nnodes) + " nodes";
}

}  // namespace

std::vector<const GroupModel*> ModelSet::lender_pool(const std::vector<ModelSet>& lenders) const {
  std::vector<const GroupModel*> pool;
  for (const GroupModel& g : parsed_->groups) pool.push_back(&g);
  for (const ModelSet& l : lenders)
    if (l.parsed_)
      for (const GroupModel& g : l.parsed_->groups) pool.push_back(&g);
  return pool;
}

std::string ModelSet::across_nodes_refusal(const PredictQuery& q0, const std::vector<ModelSet>& lenders) const {
  const std::optional<PredictQuery> q = resolve_query(q0);
  if (!parsed_ || !q || predict(q0, lenders)) return "";
  return refuse_across_nodes(parsed_->groups_of(*q), lender_pool(lenders), *q);
}

std::optional<PredictQuery> ModelSet::resolve_query(const PredictQuery& q0) const {
  PredictQuery q = q0;
  // An all-to-allv split is predicted through the uniform all-to-all model at its effective size.
  if (!q.splits.empty()) q.collective = Collective::AllToAll;
  // Resolve the system when the set has only one.
  if (q.system.empty()) {
    const auto sys = systems();
    if (sys.size() != 1) return std::nullopt;
    q.system = sys[0];
  }
  return q;
}

std::vector<int> ModelSet::gpu_counts(const PredictQuery& q0) const {
  const std::optional<PredictQuery> q = resolve_query(q0);
  if (!parsed_ || !q) return {};
  std::set<int> counts;
  for (const GroupModel* m : measured_on_its_nodes(parsed_->groups_of(*q), *q)) counts.insert(m->key.nranks);
  return {counts.begin(), counts.end()};
}

std::vector<std::string> ModelSet::dtypes(const PredictQuery& q0) const {
  const std::optional<PredictQuery> q = resolve_query(q0);
  if (!parsed_ || !q) return {};
  std::set<std::string> types;
  for (const GroupModel* m : parsed_->groups_of(*q)) types.insert(canonical_dtype(m->key.dtype));
  for (const JointModel* jm : parsed_->joint_of(*q)) types.insert(canonical_dtype(jm->key.dtype));
  return {types.begin(), types.end()};
}

PredictQuery group_query(const GroupKey& key, double bytes) {
  PredictQuery q;
  q.system = key.system;
  q.collective = key.collective;
  q.strategy = key.strategy;
  q.fusion = key.fusion;
  q.dtype = key.dtype;
  q.nranks = key.nranks;
  q.nnodes = key.nnodes;
  q.bytes = bytes;
  return q;
}

std::optional<Prediction> ModelSet::predict(const PredictQuery& q) const { return predict(q, {}); }

std::optional<Prediction> ModelSet::predict(const PredictQuery& q0, const std::vector<ModelSet>& lenders) const {
  if (!parsed_) return std::nullopt;
  std::optional<PredictQuery> resolved = resolve_query(q0);
  if (!resolved) return std::nullopt;
  // A split names its ranks (one entry each): without a count it is asked at its own, never at whichever count
  // the file holds (a 4-rank split was answered from an 8-rank curve).
  if (!resolved->splits.empty() && resolved->nranks == 0) resolved->nranks = parse_alltoallv_split(resolved->splits).nranks();
  const PredictQuery& q = *resolved;
  const std::vector<const GroupModel*> cands = measured_on_its_nodes(parsed_->groups_of(q), q);
  // Effective size: bytes, or tokens × hidden × dtype size, or an all-to-allv split.
  double bytes = q.bytes;
  std::string how_size;
  const std::string dtype = !q.dtype.empty() ? canonical_dtype(q.dtype) : (!cands.empty() ? cands[0]->key.dtype : "bf16");
  if (bytes <= 0 && q.tokens > 0 && q.hidden > 0) bytes = message_bytes(static_cast<double>(q.tokens), static_cast<double>(q.hidden), dtype);
  if (!q.splits.empty()) {
    const AllToAllvSplit sp = parse_alltoallv_split(q.splits, dlrm_element_bytes(dtype));
    bytes = effective_alltoall_bytes(sp, parse_effective_mode(json_.value("alltoallv_mode", std::string("max_of_sum"))));
    how_size = " alltoallv-" + json_.value("alltoallv_mode", std::string("max_of_sum"));
  }
  if (!(bytes > 0)) return std::nullopt;

  std::optional<Prediction> out;
  int measured_sm = 0;
  double latency_us = 0;  // the model's time at its smallest measured size (SM transfer keeps it)
  // 1) a group measured at this rank count
  {
    const GroupModel* best = nullptr;
    for (const GroupModel* m : cands)
      if (m->key.nranks == q.nranks || q.nranks == 0) {
        if (q.dtype.empty() && best && best->key.dtype != m->key.dtype) return std::nullopt;  // ambiguous dtype
        if (!best) best = m;
      }
    if (best) {
      out = best->predict(bytes);
      measured_sm = best->sm;
      latency_us = best->predict(best->min_bytes).time_us;
    }
  }
  // 2) the joint fit across GPU counts, for two ranks and more: one rank has no peer and moves no data (bus factor
  //    0), so both of the rule's laws vanish there; carried down from 4 and 8 ranks whose latency grew faster than
  //    the peers law allows, it answered 0 us inside [0, 0] (exit 0). Only a measured one-rank curve answers one rank.
  if (!out && q.nranks > 1) {
    for (const JointModel* jm : parsed_->joint_of(q)) {
      if (!answers_on_its_nodes(jm->key, q)) continue;
      out = jm->predict(q.nranks, bytes);
      measured_sm = jm->sm;
      latency_us = jm->predict(q.nranks, jm->members.back().min_bytes).time_us;
      break;
    }
  }
  // 3) more nodes than the machine measured
  //    (none for a strategy not shown to run across nodes: across_nodes_refusal)
  if (!out) {
    const std::vector<const GroupModel*> pool = lender_pool(lenders);
    if (!refuse_across_nodes(parsed_->groups_of(q), pool, q).empty()) return std::nullopt;
    out = predict_across_nodes(parsed_->groups_of(q), parsed_->joint_of(q), pool, q, bytes, &measured_sm, &latency_us);
  }
  if (!out) return std::nullopt;
  // 4) another SM target: scale by the per-generation bandwidth table
  if (q.sm != 0 && q.sm != measured_sm) {
    auto t = transfer_prediction(*out, latency_us, measured_sm, q.sm);
    if (!t) return std::nullopt;
    out = t;
  }
  out->how += how_size;
  out->bytes = bytes;
  return out;
}

std::string resolve_system(const ModelSet& models, const std::string& requested) {
  const auto systems = models.systems();
  auto list = [&] { return systems.empty() ? std::string("none") : join(systems, ", "); };
  if (!requested.empty()) {
    if (std::find(systems.begin(), systems.end(), requested) == systems.end())
      throw std::invalid_argument("--system: '" + requested + "' is not in the models file (systems: " + list() + ")");
    return requested;
  }
  if (systems.size() != 1)
    throw std::invalid_argument("the models file holds " + std::to_string(systems.size()) +
                                " systems; choose one with --system (systems: " + list() + ")");
  return systems[0];
}

std::string requested_system(const ModelSet& models, const std::string& requested) {
  if (requested.empty() && models.systems().size() <= 1) return requested;
  return resolve_system(models, requested);
}

void require_held_strategy(const std::string& requested, const std::vector<std::string>& held,
                           const std::string& of_what) {
  if (std::find(held.begin(), held.end(), requested) != held.end()) return;
  throw std::invalid_argument("--strategy: '" + requested + "' is not " + of_what + " (strategies: " +
                              (held.empty() ? std::string("none") : join(held, ", ")) + ")");
}

std::vector<std::string> same_size_dtypes(const std::string& dtype) {
  const std::string asked = canonical_dtype(dtype);
  const int size = dtype_size(asked);
  std::vector<std::string> out;
  if (size <= 0) return out;
  for (const char* d : {"bf16", "fp16", "fp32", "fp8_e4m3", "fp8_e5m2", "int8", "uint8", "int16", "uint16", "int32", "uint32", "fp64", "int64", "uint64"})
    if (d != asked && dtype_size(d) == size) out.push_back(d);
  return out;
}

std::optional<Prediction> predict_same_element_size(const std::function<std::optional<Prediction>(const PredictQuery&)>& predict,
                                                    const PredictQuery& q, std::string* used) {
  if (used) *used = q.dtype.empty() ? std::string() : canonical_dtype(q.dtype);
  std::optional<Prediction> p = predict(q);
  if (p || q.dtype.empty()) return p;
  PredictQuery alt = q;
  for (const std::string& d : same_size_dtypes(q.dtype)) {
    alt.dtype = d;
    if ((p = predict(alt))) {
      if (used) *used = d;
      p->how += (p->how.empty() ? "" : "; ") + ("no " + canonical_dtype(q.dtype) + " model: used " + d + " (same element size)");
      return p;
    }
  }
  return p;
}

}  // namespace arfit
