#include "tuner/tuner_costs.h"

#include <cmath>
#include <set>
#include <stdexcept>

#include "io/input_file.h"
#include "model/errors.h"
#include "model/nccl_variant.h"
#include "model/text.h"

namespace arfit::tuner {

std::optional<Collective> collective_of_nccl_function(int function) {
  switch (function) {
    case 0: return Collective::Broadcast;
    case 1: return Collective::Reduce;
    case 2: return Collective::AllGather;
    case 3: return Collective::ReduceScatter;
    case 4: return Collective::AllReduce;
    default: return std::nullopt;
  }
}

namespace {

bool looks_like_json(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

}  // namespace

TunerCosts TunerCosts::load(const std::string& path, const std::string& system) {
  const std::string text = read_input_file(path);
  TunerCosts t;
  if (!looks_like_json(text)) {
    t.rules_ = read_tuner_rules(text, path);
    t.description_ = "rules file " + path + ": " + std::to_string(t.rules_.size()) + " rule(s)";
    return t;
  }
  t.models_ = ModelSet::parse(text, path);
  t.system_ = resolve_system(*t.models_, system);
  std::set<std::string> collectives;
  for (Collective c : {Collective::Broadcast, Collective::Reduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllReduce})
    for (const std::string& s : t.models_->strategies(t.system_, c)) {
      const auto v = parse_nccl_variant(s);
      if (!v) continue;
      PredictQuery q;
      q.system = t.system_;
      q.collective = c;
      q.strategy = s;
      const auto dtypes = t.models_->dtypes(q);
      // NCCL's choice depends on bytes, not on the element type: one type's curve answers (the first, when several).
      t.variants_.push_back({c, nccl_algorithm_index(v->algorithm), nccl_protocol_index(v->protocol), s,
                             dtypes.empty() ? std::string() : dtypes.front()});
      collectives.insert(to_string(c));
    }
  if (t.variants_.empty())
    throw InputError(path, 0, "", "system '" + t.system_ + "' has no NCCL algorithm/protocol variant models (strategies "
                                  "named like NCCL_RING_LL128, measured with NCCL_ALGO/NCCL_PROTO): nothing to tune");
  t.description_ = "models file " + path + ", system " + t.system_ + ": " + std::to_string(t.variants_.size()) +
                   " NCCL variant model(s) of " + join(collectives, ", ");
  return t;
}

int TunerCosts::apply(const CollCall& call, float* table, int num_algo, int num_proto, int* nchannels) const {
  if (!table || num_algo <= 0 || num_proto <= 0) return 0;
  return models_ ? apply_models(call, table, num_algo, num_proto) : apply_rules(call, table, num_algo, num_proto, nchannels);
}

std::vector<float> TunerCosts::variant_times(const CollCall& call, Collective collective) const {
  const CallKey key{static_cast<int>(collective), call.nranks, call.nnodes, call.bytes};
  {
    std::lock_guard<std::mutex> lock(cache_->mutex);
    const auto it = cache_->times.find(key);
    if (it != cache_->times.end()) return it->second;
  }
  PredictQuery q;
  q.system = system_;
  q.collective = collective;
  q.nranks = static_cast<int>(std::min<std::size_t>(call.nranks, kMaxSampleRanks));
  q.nnodes = static_cast<int>(std::min<std::size_t>(call.nnodes, kMaxSampleRanks));
  q.bytes = static_cast<double>(call.bytes);
  q.across_nodes = false;  // a tuner's costs must not rest on a guess about node counts never measured
  std::vector<float> times(variants_.size(), std::nanf(""));
  for (std::size_t i = 0; i < variants_.size(); ++i) {
    if (variants_[i].collective != collective) continue;
    q.strategy = variants_[i].strategy;
    q.dtype = variants_[i].dtype;
    const auto p = models_->predict(q);
    // Only what was measured: an extrapolation in size, rank count or node count leaves NCCL's own estimate.
    if (p && !p->extrapolated && std::isfinite(p->time_us) && p->time_us > 0) times[i] = static_cast<float>(p->time_us);
  }
  std::lock_guard<std::mutex> lock(cache_->mutex);
  if (cache_->times.size() >= kMaxCachedCalls) cache_->times.clear();
  cache_->times.emplace(key, times);
  return times;
}

int TunerCosts::apply_models(const CollCall& call, float* table, int num_algo, int num_proto) const {
  const auto collective = collective_of_nccl_function(call.function);
  if (!collective || call.nranks < 1) return 0;
  const std::vector<float> times = variant_times(call, *collective);
  int changed = 0;
  for (std::size_t i = 0; i < variants_.size(); ++i) {
    const Variant& v = variants_[i];
    if (std::isnan(times[i]) || v.algorithm >= num_algo || v.protocol >= num_proto) continue;
    float& cost = table[v.algorithm * num_proto + v.protocol];
    if (!(cost >= 0)) continue;  // unavailable here: NCCL_ALGO_PROTO_IGNORE stays
    cost = times[i];
    ++changed;
  }
  return changed;
}

int TunerCosts::apply_rules(const CollCall& call, float* table, int num_algo, int num_proto, int* nchannels) const {
  for (const TunerRule& r : rules_) {
    if (!r.matches(call.function, call.bytes, call.nranks, call.nnodes, call.pipe_ops, call.reg_buff)) continue;
    int changed = 0;
    if (r.algorithm < num_algo && r.protocol < num_proto) {
      float& cost = table[r.algorithm * num_proto + r.protocol];
      if (cost >= 0) cost = 0.0f, changed = 1;
    }
    if (changed && r.channels > 0 && nchannels) *nchannels = r.channels;
    return changed;  // the first matching rule decides, as in the example plugin
  }
  return 0;
}

}  // namespace arfit::tuner
