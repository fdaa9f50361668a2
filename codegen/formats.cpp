// The one table of output formats, and what several formats share: the request's table, roles, refusals.
#include "codegen/formats.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "codegen/rules_trtllm.h"
#include "model/nccl_variant.h"
#include "model/text.h"

namespace arfit::codegen {

const std::vector<FormatSpec>& output_formats() {
  static const std::vector<FormatSpec> formats{trtllm_format(), header_format(), nccl_tuner_format(), json_format(),
                                               vllm_format(),   sglang_format(), flashinfer_format()};
  return formats;
}

std::string format_names() {
  std::string s;
  for (const auto& f : output_formats()) s += (s.empty() ? "" : "|") + f.name;
  return s;
}

const FormatSpec& find_format(const std::string& name) {
  for (const auto& f : output_formats())
    if (f.name == name) return f;
  throw std::invalid_argument("--format: '" + name + "' is not one of " + format_names());
}

namespace {

// Why a grid came out all fallback cells: what it asked against what the system's all-reduce models hold.
std::string no_modelled_cell(const ModelSet& models, const std::string& system, const Request& r) {
  std::set<int> tps;
  std::set<std::string> fusions, dtypes;
  for (const GroupModelView& g : models.groups())
    if (g.key.system == system && g.key.collective == Collective::AllReduce) {
      tps.insert(g.key.nranks);
      fusions.insert(to_string(g.key.fusion));
      dtypes.insert(g.key.dtype);
    }
  const std::string head = "no cell of the grid has a modelled all-reduce strategy for system '" + system + "'";
  if (tps.empty()) return head + ": it has no all-reduce models";
  return head + ": the grid asks --tp " + r.tp + ", --fusion " + r.fusion + ", --dtype " + r.dtype +
         " (or another type of its element size); its all-reduce models are at TP " + join(tps, ",") + ", fusion " +
         join(fusions, ",") + ", dtype " + join(dtypes, ",");
}

// Refuses a --fallback no engine could run: the strategy a table names where no model answers goes into the engine's
// code (an enum member of the header, a JSON choice, a TensorRT-LLM number), so a typo ("NCLL") would be written
// there as if it were a strategy. Accepted: an all-reduce strategy the system's models hold, or one of NCCL's own
// (NCCL, NCCL_SYMMETRIC, a forced NCCL_<algorithm>_<protocol> variant) or arbench's ONESHOT/TWOSHOT, which every
// engine arfit writes for offers.
void check_fallback(const ModelSet& models, const std::string& system, const std::string& fallback) {
  const std::vector<std::string> modelled = system_strategies(models, system);
  const std::vector<std::string> known{strategy::kNccl, strategy::kNcclSymmetric, strategy::kOneShot, strategy::kTwoShot};
  const auto in = [&](const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), fallback) != names.end();
  };
  // A fallback fills cells anywhere in the grid, and TensorRT-LLM's TWOSHOT throws in cells of fewer tokens than
  // GPUs (codegen/rules_trtllm.h).
  if (upper(fallback) == strategy::kTwoShot)
    throw std::invalid_argument("--fallback: TWOSHOT cannot fill cells without a model: TensorRT-LLM's TWOSHOT throws "
                                "where a cell holds fewer tokens than GPUs (give NCCL, NCCL_SYMMETRIC or ONESHOT)");
  if (in(modelled) || in(known) || parse_nccl_variant(fallback)) return;
  throw std::invalid_argument("--fallback: '" + fallback + "' is neither an all-reduce strategy of system '" + system +
                              "' (" + (modelled.empty() ? std::string("none") : join(modelled, ", ")) + ") nor " +
                              join(known, ", ") + " or a forced NCCL_<algorithm>_<protocol> variant");
}

}  // namespace

Precondition table_precondition(int consumer_sm) {
  return [consumer_sm](const Cell& c, const std::string& strategy) {
    return trtllm_precondition(consumer_sm, c.tp, c.tokens, c.hidden, strategy);
  };
}

StrategyTable build_request_table(const ModelSet& models, const Request& r) {
  TableOptions o;
  o.system = resolve_system(models, r.system);
  check_sm_transfer(models, o.system, r);
  check_fallback(models, o.system, r.fallback);
  o.dtype = r.dtype;
  o.sm = prediction_sm(r);
  o.fallback = r.fallback;
  o.precondition = table_precondition(r.sm);
  // build_table sets the SM (o.sm) on every query and tries the other dtypes of --dtype's size itself.
  StrategyTable t = build_table(request_grid(r), model_set_candidates(models, o.system), model_set_predictor(models), o);
  if (t.fallback_cells() == static_cast<int>(t.cells.size())) throw std::invalid_argument(no_modelled_cell(models, o.system, r));
  return t;
}

void refuse_map(const Request& r, const std::string& format) {
  if (!r.map.empty())
    throw std::invalid_argument("--map: the " + format + " format keeps the models' strategy names; nothing to map onto");
}

void refuse_grid_options(const Request& r, const std::string& format) {
  auto refuse = [&](const std::string& option) {
    throw std::invalid_argument(option + ": the " + format + " format works on message sizes (--bytes) per GPU count "
                                "(--tp) and has no " + option.substr(2) + " axis");
  };
  if (parse_fusion_list(r.fusion, "--fusion") != all_fusions()) refuse("--fusion");
  if (parse_pow2_axis(r.hidden, "--hidden") != parse_pow2_axis(kDefaultRequest.hidden, "--hidden")) refuse("--hidden");
  if (parse_pow2_axis(r.tokens, "--tokens") != parse_pow2_axis(kDefaultRequest.tokens, "--tokens")) refuse("--tokens");
  // Their rules and thresholds lie between the strategies the models hold; no cell is written for want of a model.
  if (r.fallback != kDefaultRequest.fallback)
    throw std::invalid_argument("--fallback: the " + format + " format writes rules between the modelled strategies and "
                                "has no cell without a model to fill (--fallback is for trtllm, header, json)");
}

void refuse_size_options(const Request& r, const std::string& format) {
  if (request_sizes(r) != request_sizes(kDefaultRequest))
    throw std::invalid_argument("--bytes: the " + format + " format works on the --tokens x --hidden grid and has no "
                                "message-size axis (--bytes is for nccl-tuner, vllm, sglang, flashinfer)");
}

void refuse_base(const Request& r, const std::string& format, const std::string& why) {
  if (!r.base_path.empty()) throw std::invalid_argument("--base: the " + format + " format reads no consumer file: " + why);
}

void refuse_consumer_file(const Request& r, const std::string& format, const std::string& why) {
  refuse_base(r, format, why);
  if (!r.consumer_version.empty())
    throw std::invalid_argument("--consumer-version: the " + format + " format is not written for an engine version: " + why);
}

void refuse_tuner_options(const Request& r, const std::string& format) {
  auto refuse = [&](const std::string& option) {
    throw std::invalid_argument(option + ": only the nccl-tuner format writes it; the " + format +
                                " format is asked on one node and has no " + option.substr(2) + " field");
  };
  if (r.nnodes != kDefaultRequest.nnodes) refuse("--nnodes");
  if (r.channels != kDefaultRequest.channels) refuse("--channels");
}

StrategySources resolve_roles(const ModelSet& models, const Request& r, const std::vector<RoleSpec>& roles) {
  const auto strategies = system_strategies(models, resolve_system(models, r.system));
  std::vector<std::string> targets;
  for (const auto& role : roles) targets.push_back(role.name);
  const auto explicit_map = parse_map_options(r.map, strategies, targets);
  StrategySources out;
  for (const auto& [from, role] : explicit_map) out[role].push_back(from);
  for (const auto& role : roles) {
    if (out.count(role.name)) continue;  // --map names this role's strategies: no default
    for (const auto& s : strategies) {
      if (explicit_map.count(s)) continue;
      if (role.picks(lower(s))) out[role.name].push_back(s);
    }
  }
  return out;
}

void require_role(const StrategySources& roles, const RoleSpec& role, const std::string& format) {
  if (roles.count(role.name)) return;
  throw std::invalid_argument("--map: the " + format + " format needs a strategy for '" + role.name + "' (" +
                              role.default_rule + "); the models have none by that rule: name one with --map STRATEGY=" +
                              role.name);
}

bool is_nccl_name(const std::string& n) { return n == "nccl"; }
bool is_oneshot_name(const std::string& n) { return n == "oneshot"; }
bool is_twoshot_name(const std::string& n) { return n == "twoshot"; }

std::vector<ThresholdRow> EnginePlanner::plan(const std::string& below, const std::string& above) const {
  return plan_thresholds(tps, sizes, below, above, predict, base);
}

EnginePlanner engine_planner(const FormatInput& in, const std::string& format, const std::vector<RoleSpec>& roles) {
  const Request& r = in.request;
  refuse_grid_options(r, format);
  refuse_tuner_options(r, format);
  EnginePlanner p;
  p.tps = parse_rank_list(r.tp, "--tp");
  p.sizes = request_sizes(r);
  p.roles = resolve_roles(in.models, r, roles);
  p.predict = mapped_predictor(request_predictor(in.models, r), p.roles);
  p.base = engine_query(in.models, r);
  return p;
}

PredictQuery engine_query(const ModelSet& models, const Request& r) {
  PredictQuery q;
  q.system = resolve_system(models, r.system);
  check_sm_transfer(models, q.system, r);
  q.collective = Collective::AllReduce;
  q.fusion = FusionOp::None;
  q.dtype = r.dtype;
  q.sm = prediction_sm(r);
  q.nnodes = 1;
  return q;
}

std::vector<double> request_sizes(const Request& r) {
  std::vector<double> sizes;
  for (auto b : parse_pow2_axis(r.bytes, "--bytes")) sizes.push_back(static_cast<double>(b));
  return sizes;
}

}  // namespace arfit::codegen
