#include "codegen/table.h"


#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>

namespace arfit::codegen {

std::optional<int> trtllm_strategy_number(const std::string& strategy) {
  std::string s;
  for (char c : strategy) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s == "NCCL") return 0;
  if (s == "ONESHOT") return 4;
  if (s == "TWOSHOT") return 5;
  if (s == "NCCL_SYMMETRIC") return 8;
  return std::nullopt;
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::int64_t parse_positive(const std::string& text, const std::string& option) {
  const std::string t = trim(text);
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(option + ": '" + text + "' is not a positive integer");
  std::int64_t v = 0;
  try {
    v = std::stoll(t);
  } catch (const std::exception&) {
    throw std::invalid_argument(option + ": '" + text + "' is out of range");
  }
  if (v <= 0) throw std::invalid_argument(option + ": '" + text + "' is not a positive integer");
  return v;
}

bool is_pow2(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

}  // namespace

std::vector<int> parse_int_list(const std::string& spec, const std::string& option) {
  std::vector<int> out;
  for (const auto& part : split(spec, ',')) {
    std::int64_t v = parse_positive(part, option);
    if (v > std::numeric_limits<int>::max()) throw std::invalid_argument(option + ": '" + part + "' is too large");
    if (std::find(out.begin(), out.end(), static_cast<int>(v)) != out.end())
      throw std::invalid_argument(option + ": " + part + " is listed twice");
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw std::invalid_argument(option + ": empty list");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::int64_t> parse_pow2_axis(const std::string& spec, const std::string& option) {
  std::vector<std::int64_t> out;
  const auto colon = spec.find(':');
  if (colon != std::string::npos) {
    std::int64_t lo = parse_positive(spec.substr(0, colon), option);
    std::int64_t hi = parse_positive(spec.substr(colon + 1), option);
    if (!is_pow2(lo) || !is_pow2(hi))
      throw std::invalid_argument(option + ": range ends of '" + spec + "' must be powers of two");
    if (lo > hi) throw std::invalid_argument(option + ": range '" + spec + "' has its low end above its high end");
    for (std::int64_t v = lo; v <= hi; v *= 2) out.push_back(v);
  } else {
    for (const auto& part : split(spec, ',')) out.push_back(parse_positive(part, option));
    std::sort(out.begin(), out.end());
    if (std::adjacent_find(out.begin(), out.end()) != out.end())
      throw std::invalid_argument(option + ": a value is listed twice in '" + spec + "'");
    for (auto v : out)
      if (!is_pow2(v)) throw std::invalid_argument(option + ": " + std::to_string(v) + " is not a power of two");
  }
  if (out.empty()) throw std::invalid_argument(option + ": empty axis");
  return out;
}

std::vector<FusionOp> parse_fusion_list(const std::string& spec, const std::string& option) {
  if (trim(spec) == "all") return all_fusions();
  std::vector<FusionOp> out;
  for (const auto& part : split(spec, ',')) {
    auto f = try_parse_fusion(trim(part));
    if (!f) throw std::invalid_argument(option + ": unknown fusion op '" + part + "'");
    if (std::find(out.begin(), out.end(), *f) != out.end())
      throw std::invalid_argument(option + ": fusion op '" + part + "' is listed twice");
    out.push_back(*f);
  }
  if (out.empty()) throw std::invalid_argument(option + ": empty list");
  // The table's fusion axis keeps TensorRT-LLM's order whatever order the user listed.
  std::sort(out.begin(), out.end(), [](FusionOp a, FusionOp b) { return static_cast<int>(a) < static_cast<int>(b); });
  return out;
}

double log_sigma(const Prediction& p) {
  if (!(p.lo_us > 0) || !(p.hi_us > 0) || !(p.hi_us > p.lo_us)) return 0.0;
  return 0.5 * std::log(p.hi_us / p.lo_us) / 1.6448536269514722;
}

double expected_shortfall(double mean, double sigma) {
  // E[max(0, -d)], d ~ N(mean, sigma^2) = sigma * phi(mean/sigma) - mean * Phi(-mean/sigma).
  if (!(sigma > 0)) return std::max(0.0, -mean);
  const double z = mean / sigma;
  const double phi = std::exp(-0.5 * z * z) / std::sqrt(2.0 * M_PI);
  const double Phi_neg = 0.5 * std::erfc(z / std::sqrt(2.0));
  return std::max(0.0, sigma * phi - mean * Phi_neg);
}

int StrategyTable::uncertain_cells() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const Cell& c) { return c.uncertain; }));
}

int StrategyTable::fallback_cells() const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [](const Cell& c) { return c.fallback; }));
}

StrategyTable build_table(const Grid& grid, const CandidateLister& candidates, const Predictor& predict,
                          const TableOptions& options) {
  StrategyTable table;
  table.grid = grid;
  table.options = options;
  table.cells.resize(grid.size());
  const int esize = dtype_size(options.dtype);
  if (esize <= 0) throw std::invalid_argument("unknown dtype '" + options.dtype + "'");
  std::set<std::string> seen;
  std::vector<std::string> same_size;
  for (const char* d : {"bf16", "fp16", "fp32", "fp64", "int8", "fp8_e4m3", "uint8", "int32", "int64"})
    if (dtype_size(d) == esize && canonical_dtype(d) != canonical_dtype(options.dtype)) same_size.push_back(d);

  PredictQuery q;
  q.system = options.system;
  q.collective = Collective::AllReduce;
  q.dtype = options.dtype;
  q.sm = options.sm;
  q.nnodes = 1;
  for (std::size_t ti = 0; ti < grid.tps.size(); ++ti) {
    for (std::size_t fi = 0; fi < grid.fusions.size(); ++fi) {
      std::vector<std::string> names = candidates(grid.tps[ti], grid.fusions[fi]);
      if (options.accept) names.erase(std::remove_if(names.begin(), names.end(), [&](const std::string& s) { return !options.accept(s); }), names.end());
      q.nranks = grid.tps[ti];
      q.fusion = grid.fusions[fi];
      for (std::size_t hi = 0; hi < grid.hiddens.size(); ++hi) {
        for (std::size_t ki = 0; ki < grid.tokens.size(); ++ki) {
          Cell& c = table.cells[grid.index(ti, fi, hi, ki)];
          c.tp = grid.tps[ti];
          c.fusion = grid.fusions[fi];
          c.hidden = grid.hiddens[hi];
          c.tokens = grid.tokens[ki];
          c.bytes = static_cast<double>(c.tokens) * static_cast<double>(c.hidden) * esize;
          q.tokens = c.tokens;
          q.hidden = c.hidden;
          q.bytes = c.bytes;
          for (const auto& name : names) {
            q.strategy = name;
            auto p = predict(q);
            // No model of this dtype: one of another type with the same element size answers (the fp16 NCCL
            // tables of aiconfigurator next to bf16 custom kernels): the model needs the size in bytes only.
            for (std::size_t a = 0; !p && a < same_size.size(); ++a) {
              PredictQuery alt = q;
              alt.dtype = same_size[a];
              p = predict(alt);
            }
            if (!p || !std::isfinite(p->time_us) || !(p->time_us > 0)) continue;
            c.candidates.push_back({name, *p});
            seen.insert(name);
          }
          if (c.candidates.empty()) {
            c.choice = options.fallback;
            c.fallback = true;
            continue;
          }
          // Best and runner-up; strict '<' keeps the earlier candidate on ties (deterministic).
          std::size_t best = 0;
          for (std::size_t i = 1; i < c.candidates.size(); ++i)
            if (c.candidates[i].prediction.time_us < c.candidates[best].prediction.time_us) best = i;
          std::size_t second = c.candidates.size();
          for (std::size_t i = 0; i < c.candidates.size(); ++i) {
            if (i == best) continue;
            if (second == c.candidates.size() || c.candidates[i].prediction.time_us < c.candidates[second].prediction.time_us)
              second = i;
          }
          const Prediction& pb = c.candidates[best].prediction;
          c.choice = c.candidates[best].strategy;
          c.extrapolated = pb.extrapolated;
          if (second < c.candidates.size()) {
            const Prediction& pr = c.candidates[second].prediction;
            c.runner_up = c.candidates[second].strategy;
            c.margin = pr.time_us / pb.time_us - 1.0;
            const double sb = log_sigma(pb), sr = log_sigma(pr);
            c.margin_sigma = std::sqrt(sb * sb + sr * sr);
            // Overlapping 90 % intervals: the measurements do not settle which one is faster.
            const double b_hi = pb.hi_us > 0 ? pb.hi_us : pb.time_us;
            const double r_lo = pr.lo_us > 0 ? pr.lo_us : pr.time_us;
            c.uncertain = b_hi >= r_lo;
            c.expected_regret = expected_shortfall(std::log(pr.time_us / pb.time_us), c.margin_sigma);
          }
        }
      }
    }
  }
  table.strategies.assign(seen.begin(), seen.end());
  return table;
}

CandidateLister model_set_candidates(const ModelSet& models, const std::string& system) {
  return [&models, system](int tp, FusionOp fusion) {
    return models.strategies(system, Collective::AllReduce, fusion, tp);
  };
}

Predictor model_set_predictor(const ModelSet& models) {
  return [&models](const PredictQuery& q) { return models.predict(q); };
}

}  // namespace arfit::codegen
