// --format nccl-tuner: the CSV of NCCL's example tuner plugin (plugins/tuner/example since NCCL 2.29.7,
// ext-tuner/example before; NCCL_TUNER_CONFIG_FILE). The plugin reads each line with fgets into a 256-byte
// buffer and parses every line not starting with '#' as a rule, so every line here -- banner included -- is at
// most 255 characters: a longer comment's tail would be read as a rule.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "codegen/formats.h"
#include "codegen/rules_nccl_tuner.h"
#include "codegen/writers.h"
#include "model/text.h"

namespace arfit::codegen {

std::vector<TunerRule> tuner_rules(const std::vector<int>& nranks_list, const std::vector<double>& sizes,
                                   const std::vector<NcclVariant>& variants, const Predictor& predict,
                                   const PredictQuery& base, std::uint64_t max_bytes) {
  std::vector<TunerRule> rules;
  PredictQuery q = base;
  q.collective = Collective::AllReduce;
  for (int n : nranks_list) {
    q.nranks = n;
    std::vector<int> winner(sizes.size(), -1);
    std::vector<bool> extrapolated(sizes.size(), false);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      q.bytes = sizes[i];
      // The variants that answer, in order, chosen by the table's rule (fastest_two: ties to the earlier).
      std::vector<CandidateTime> answered;
      std::vector<int> variant_of;
      for (std::size_t v = 0; v < variants.size(); ++v) {
        q.strategy = variants[v].strategy;
        auto p = predict(q);
        if (!p || !(p->time_us > 0)) continue;
        answered.push_back({variants[v].strategy, *p});
        variant_of.push_back(static_cast<int>(v));
      }
      if (!answered.empty()) {
        const std::size_t best = fastest_two(answered).first;
        winner[i] = variant_of[best];
        extrapolated[i] = answered[best].prediction.extrapolated;
      }
    }
    // Merge runs of equal winners; sizes no variant can predict get no rule.
    std::size_t i = 0;
    while (i < sizes.size()) {
      if (winner[i] < 0) {
        ++i;
        continue;
      }
      std::size_t j = i;
      while (j + 1 < sizes.size() && winner[j + 1] == winner[i]) ++j;
      TunerRule r;
      r.nranks = n;
      r.nnodes = q.nnodes;
      r.strategy = variants[winner[i]].strategy;
      r.algorithm = variants[winner[i]].algorithm;
      r.protocol = variants[winner[i]].protocol;
      for (std::size_t k = i; k <= j; ++k) r.extrapolated = r.extrapolated || extrapolated[k];
      r.min_bytes = (i == 0 || winner[i - 1] < 0) ? (i == 0 ? 0 : static_cast<std::uint64_t>(sizes[i]))
                                                  : static_cast<std::uint64_t>(std::floor(std::sqrt(sizes[i - 1] * sizes[i]))) + 1;
      r.max_bytes = (j + 1 == sizes.size()) ? max_bytes
                    : (winner[j + 1] < 0 ? static_cast<std::uint64_t>(sizes[j])
                                         : static_cast<std::uint64_t>(std::floor(std::sqrt(sizes[j] * sizes[j + 1]))));
      rules.push_back(r);
      i = j + 1;
    }
  }
  return rules;
}

std::string write_nccl_tuner(const std::vector<TunerRule>& rules, const Banner& banner, int channels,
                             const std::string& version) {
  std::ostringstream s;
  s << banner_text(banner, "# ", "NCCL tuner plugin config (plugins/tuner/example, NCCL_TUNER_CONFIG_FILE), chosen from fitted models.",
                   kTunerMaxLine);
  s << comment_lines("One rule per rank count and size range: the NCCL algorithm/protocol variant with the lowest predicted "
                     "time, channels=" + std::to_string(channels) + ".",
                     "# ", kTunerMaxLine);
  for (const auto& note : nccl_example_plugin_notes(version, channels)) s << comment_lines(note, "# ", kTunerMaxLine);
  s << "# collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff\n";
  int previous_ranks = -2;
  for (const auto& r : rules) {
    if (r.nranks != previous_ranks) {
      previous_ranks = r.nranks;
      const auto n = std::count_if(rules.begin(), rules.end(), [&](const TunerRule& x) { return x.nranks == r.nranks && x.extrapolated; });
      if (n > 0)
        s << comment_lines("nRanks " + std::to_string(r.nranks) + ": " + std::to_string(n) + " rule(s) rest on extrapolated "
                           "predictions (sizes or a GPU count never measured)", "# ", kTunerMaxLine);
    }
    std::ostringstream line;
    line << r.collective << "," << r.min_bytes << "," << r.max_bytes << "," << r.algorithm << "," << r.protocol << ","
         << channels << "," << r.nnodes << "," << r.nranks << ",-1,-1";
    if (line.str().size() > kTunerMaxLine) throw std::logic_error("tuner rule longer than the plugin's line buffer");
    s << line.str() << "\n";
  }
  return s.str();
}

namespace {

FormatOutput generate_nccl_tuner(const FormatInput& in) {
  const Request& r = in.request;
  refuse_map(r, "nccl-tuner");
  refuse_grid_options(r, "nccl-tuner");
  refuse_base(r, "nccl-tuner", "the example plugin's config is written whole (its first matching rule wins)");
  const std::string version = nccl_example_plugin_version(r.consumer_version);
  if (r.channels < 0)
    throw std::invalid_argument("--channels: " + std::to_string(r.channels) +
                                " is negative; the example plugin keeps the 1 channel it sets before matching for -1, "
                                "use 0 for NCCL's own channel count");
  if (r.nnodes < 1) throw std::invalid_argument("--nnodes: must be at least 1");
  const std::vector<int> tps = parse_rank_list(r.tp, "--tp");
  const std::vector<double> sizes = request_sizes(r);
  const std::string system = resolve_system(in.models, r.system);
  std::vector<NcclVariant> variants;
  for (const auto& n : system_strategies(in.models, system))
    if (auto v = parse_nccl_variant(n)) variants.push_back(*v);
  if (variants.empty())
    throw std::invalid_argument("--format nccl-tuner: the models of system '" + system +
                                "' have no NCCL algorithm/protocol variants (all-reduce strategies named like "
                                "NCCL_RING_LL128 or NCCL_TREE_SIMPLE); nothing to write a tuner config from");
  PredictQuery base = engine_query(in.models, r);
  base.nnodes = r.nnodes;
  base.across_nodes = false;  // rules only where the variants were measured on --nnodes nodes
  // NCCL's algorithm choice depends on bytes, not on the type: a variant measured in one type answers ("" asks for
  // the group's only type), else one of --dtype's element size.
  base.dtype.clear();
  const Predictor by_type = request_predictor(in.models, r);
  const Predictor predict = [by_type, dtype = r.dtype](const PredictQuery& q) {
    auto p = by_type(q);
    if (p) return p;
    PredictQuery typed = q;
    typed.dtype = dtype;
    return by_type(typed);
  };
  // The last rule ends at the largest size_t: sizes the rules leave out would get the 1 channel the example plugin
  // sets before matching.
  const auto rules = tuner_rules(tps, sizes, variants, predict, base,
                                 std::numeric_limits<std::uint64_t>::max());
  std::vector<int> missing;
  for (int tp : tps)
    if (std::none_of(rules.begin(), rules.end(), [&](const TunerRule& x) { return x.nranks == tp; })) missing.push_back(tp);
  if (!missing.empty()) {
    std::set<int> nodes;
    for (const auto& g : in.models.groups())
      if (g.key.system == system && parse_nccl_variant(g.key.strategy)) nodes.insert(g.key.nnodes);
    const std::string option = nodes.count(r.nnodes) ? "--tp" : "--nnodes";
    throw std::invalid_argument(option + ": no NCCL variant model answers for " + join(missing, ",") + " ranks on " +
                                std::to_string(r.nnodes) + " node(s) (the variants were measured on " + join(nodes, ",") +
                                " node(s)); a config without rules for them would leave NCCL's choice at 1 channel");
  }
  std::ostringstream s;
  s << rules.size() << " rules from " << variants.size() << " NCCL variants, channels " << r.channels;
  s << "; for NCCL's example plugin 2.30.3 to " << version << " (it runs every call without a matching rule on 1 channel)";
  return {write_nccl_tuner(rules, in.banner, r.channels, version), s.str()};
}

}  // namespace

FormatSpec nccl_tuner_format() {
  return {"nccl-tuner", "CSV for NCCL's example tuner plugin (plugins/tuner/example, NCCL >= 2.30.3)", &generate_nccl_tuner};
}

}  // namespace arfit::codegen
