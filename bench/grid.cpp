#include "bench/grid.h"

#include "bench/alltoallv_splits.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "model/anchors.h"
#include "model/checked.h"
#include "model/json_input.h"
#include "model/splitmix64.h"
#include "model/text.h"

namespace arfit::bench {
namespace {

// The host-alltoallv preset's splits: DLRM exchanges of 16 tables at three batch sizes with six table draws
// each (uneven senders; some draws come out even, the control where all modes agree), Zipf routing and a hot
// spot (uneven receivers) at every size.
constexpr const char* kHostAllToAllvSplits = "dlrm:64/128/256:16:16:1..6,zipf:1.5:1,hot:0.8";

std::vector<std::int64_t> pow2_range(std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = lo; x <= hi; x *= 2) v.push_back(x);
  return v;
}

}  // namespace

// ---------------------------------------------------------------- plan

namespace {

// FRACTION of random:FRACTION:SEED: a decimal number in (0, 1] ("0.25", ".5", "1", "1e-05" as Plan::to_string
// writes a small one), starting with a digit or a point; no sign, blank, hex form, inf or nan (std::stod read
// "+0.5", " 0.5" and "0x.8").
std::optional<double> plan_fraction(const std::string& text) {
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.') ||
      text.find_first_not_of("0123456789.eE+-") != std::string::npos)
    return std::nullopt;
  char* end = nullptr;
  const double f = std::strtod(text.c_str(), &end);
  if (*end != '\0' || !(f > 0.0 && f <= 1.0)) return std::nullopt;
  return f;
}

}  // namespace

// The text as written: no blank around it or its fields ("lattice: 2" is refused, as every count is; model/text.h).
Plan Plan::parse(const std::string& text, const std::string& option) {
  Plan p;
  const std::vector<std::string> parts = split_items(text, ':');
  const std::string usage =
      "expected 'full', 'lattice:K', 'random:FRACTION:SEED', 'anchors:K' or 'adaptive', found '" + text + "'";
  if (parts[0] == "full" && parts.size() == 1) return p;
  if (parts[0] == "adaptive" && parts.size() == 1) {
    p.kind = Kind::Adaptive;
    return p;
  }
  // lattice:K and anchors:K: a whole number K that fits Plan::stride, never wrapped (2^32 became 0, a division by
  // zero). lattice:1 keeps every point (= full); arfit eval's select --plan needs K >= 2 there (codegen/select_eval.h).
  if ((parts[0] == "lattice" || parts[0] == "anchors") && parts.size() == 2) {
    const bool lattice = parts[0] == "lattice";
    std::string why;
    const std::optional<std::uint64_t> k = parse_whole_number(parts[1], 1, std::numeric_limits<int>::max(), &why);
    if (!k) throw GridError(option, std::string(lattice ? "lattice stride K" : "anchors K (sizes per curve)") + ": " + why);
    p.kind = lattice ? Kind::Lattice : Kind::Anchors;
    p.stride = static_cast<int>(*k);
    return p;
  }
  if (parts[0] == "random" && parts.size() == 3) {
    const std::optional<double> f = plan_fraction(parts[1]);
    if (!f) throw GridError(option, "random fraction must be a decimal number in (0, 1], found '" + parts[1] + "'");
    std::string why;
    const std::optional<std::uint64_t> seed = parse_whole_number(parts[2], 0, UINT64_MAX, &why);
    if (!seed) throw GridError(option, "random seed: " + why);
    p.kind = Kind::Random;
    p.fraction = *f;
    p.seed = *seed;
    return p;
  }
  throw GridError(option, usage);
}

std::string Plan::to_string() const {
  switch (kind) {
    case Kind::Full: return "full";
    case Kind::Adaptive: return "adaptive";
    case Kind::Lattice: return "lattice:" + std::to_string(stride);
    case Kind::Anchors: return "anchors:" + std::to_string(stride);
    case Kind::Random: {
      std::ostringstream os;
      os << "random:" << fraction << ":" << seed;
      return os.str();
    }
  }
  return "?";
}

std::vector<std::pair<std::size_t, std::size_t>> anchor_points(int K, const std::vector<std::int64_t>& x,
                                                               const std::vector<std::int64_t>& y) {
  const bool two_d = !y.empty();
  std::map<std::int64_t, std::pair<std::size_t, std::size_t>> by_size;  // size -> first point with it
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t j = 0; j < (two_d ? y.size() : 1); ++j) by_size.emplace(two_d ? x[i] * y[j] : x[i], std::make_pair(i, j));
  std::vector<std::pair<std::size_t, std::size_t>> sizes;
  for (const auto& [size, point] : by_size) sizes.push_back(point);
  std::vector<std::pair<std::size_t, std::size_t>> out;
  // K beyond the curve's sizes keeps every size, as K = n does; capping it keeps anchor_indices' loop (one
  // step per anchor) short for anchors:2147483647.
  const int k_kept = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(K, 0)), sizes.size()));
  for (std::size_t k : anchor_indices(sizes.size(), k_kept)) out.push_back(sizes[k]);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> plan_points(const Plan& plan, std::size_t nx, std::size_t ny) {
  const bool two_d = ny > 0;
  const std::size_t my = two_d ? ny : 1;
  std::vector<std::pair<std::size_t, std::size_t>> all;
  for (std::size_t i = 0; i < nx; ++i)
    for (std::size_t j = 0; j < my; ++j) all.emplace_back(i, j);
  // adaptive: every point is a candidate; what is measured is decided in rounds (bench/adaptive.h).
  if (plan.kind == Plan::Kind::Full || plan.kind == Plan::Kind::Adaptive || all.empty()) return all;

  auto keep_axis = [&](std::size_t i, std::size_t n) {
    return i % static_cast<std::size_t>(plan.stride) == 0 || i + 1 == n;
  };
  if (plan.kind == Plan::Kind::Lattice) {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    for (auto [i, j] : all)
      if (keep_axis(i, nx) && (!two_d || keep_axis(j, ny))) out.emplace_back(i, j);
    return out;
  }
  // Random: corners always (the model must never extrapolate beyond measured ends), then the points with
  // the smallest hash(seed, i, j) until round(fraction * total) are kept.
  auto is_corner = [&](std::size_t i, std::size_t j) {
    return (i == 0 || i + 1 == nx) && (!two_d || j == 0 || j + 1 == ny);
  };
  std::vector<char> keep(all.size(), 0);
  std::size_t kept = 0;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (is_corner(all[k].first, all[k].second)) keep[k] = 1, ++kept;
  const std::size_t target = static_cast<std::size_t>(std::llround(plan.fraction * static_cast<double>(all.size())));
  std::vector<std::size_t> order;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (!keep[k]) order.push_back(k);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    auto h = [&](std::size_t k) { return splitmix64(plan.seed ^ splitmix64(all[k].first * 1000003ull + all[k].second)); };
    return h(a) < h(b);
  });
  for (std::size_t k : order) {
    if (kept >= target) break;
    keep[k] = 1;
    ++kept;
  }
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (keep[k]) out.push_back(all[k]);
  return out;
}

// ---------------------------------------------------------------- values

std::vector<std::string> split_list(const std::string& text, const std::string& option) {
  std::vector<std::string> out;
  const std::vector<std::string> items = split_items(text, ',');
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string_view t = trim(items[i]);
    // An empty item is a typo ("2,,4", a trailing comma) or an empty value; read as nothing it changed the run.
    if (t.empty())
      throw GridError(option, items.size() == 1 ? std::string("is empty: give at least one value")
                                                : "item " + std::to_string(i + 1) + " of '" + text + "' is empty");
    out.emplace_back(t);
  }
  return out;
}

std::int64_t parse_size(const std::string& text, const std::string& option) {
  const std::string t(trim(text));
  std::string why;
  const std::optional<double> bytes = parse_size_text(t, &why);
  if (!bytes) throw GridError(option, why);
  if (!(*bytes >= 1) || std::floor(*bytes) != *bytes) throw GridError(option, "'" + text + "' must be a positive whole number");
  if (*bytes > static_cast<double>(kMaxSize))
    throw GridError(option, "'" + text + "' is beyond the largest size arbench accepts, " + std::to_string(kMaxSize) +
                                " (10^15, about 909T)");
  return static_cast<std::int64_t>(*bytes);
}

std::vector<std::int64_t> geometric_sizes(std::int64_t lo, std::int64_t hi, double factor, const std::string& option) {
  if (lo > hi) throw GridError(option, "range start " + std::to_string(lo) + " is above its end " + std::to_string(hi));
  if (!(factor > 1.0)) throw GridError(option, "step factor must be above 1");
  std::vector<std::int64_t> v;
  for (long double x = static_cast<long double>(lo); x <= static_cast<long double>(hi) * (1 + 1e-12L); x *= factor) {
    std::int64_t r = static_cast<std::int64_t>(std::llround(x));
    if (v.empty() || r != v.back()) v.push_back(r);
    if (v.size() > 100000) throw GridError(option, "range has too many points");
  }
  return v;
}

std::vector<std::int64_t> parse_size_list(const std::string& text, const std::string& option) {
  std::vector<std::int64_t> out;
  for (const std::string& item : split_list(text, option)) {
    if (item.find(':') == std::string::npos) {
      out.push_back(parse_size(item, option));
      continue;
    }
    std::vector<std::string> p;
    std::stringstream ss(item);
    std::string x;
    while (std::getline(ss, x, ':')) p.emplace_back(trim(x));
    if (p.size() < 2 || p.size() > 3)
      throw GridError(option, "range '" + item + "' must be LO:HI, LO:HI:xF or LO:HI:+STEP");
    std::int64_t lo = parse_size(p[0], option), hi = parse_size(p[1], option);
    if (p.size() == 2 || (!p[2].empty() && (p[2][0] == 'x' || p[2][0] == '*'))) {
      double f = 2;
      if (p.size() == 3) {
        try {
          size_t used = 0;
          f = std::stod(p[2].substr(1), &used);
          if (used != p[2].size() - 1) throw std::invalid_argument("");
        } catch (const std::logic_error&) {
          throw GridError(option, "range step '" + p[2] + "' is not a factor like x2");
        }
      }
      auto v = geometric_sizes(lo, hi, f, option);
      out.insert(out.end(), v.begin(), v.end());
    } else if (p[2][0] == '+') {
      std::int64_t step = parse_size(p[2].substr(1), option);
      if (lo > hi) throw GridError(option, "range start is above its end in '" + item + "'");
      if ((hi - lo) / step > 100000) throw GridError(option, "range '" + item + "' has too many points");
      for (std::int64_t s = lo; s <= hi; s += step) out.push_back(s);
    } else {
      throw GridError(option, "range step '" + p[2] + "' must be xF (geometric) or +STEP (linear)");
    }
  }
  if (out.empty()) throw GridError(option, "no values given");
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& option) {
  std::vector<int> out;
  for (auto v : parse_size_list(text, option)) {
    if (v > std::numeric_limits<int>::max()) throw GridError(option, "value " + std::to_string(v) + " is too large");
    out.push_back(static_cast<int>(v));
  }
  return out;
}

std::string format_bytes(std::int64_t b) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) b /= 1024, ++u;
  return std::to_string(b) + units[u];
}

// ---------------------------------------------------------------- cases

int Case::elem_size() const { return dtype_size(dtype); }

static std::string key_of(Collective c, const std::string& strategy, FusionOp f, const std::string& dtype, int n,
                          std::int64_t tokens, std::int64_t hidden, std::int64_t bytes, const std::string& splits) {
  std::ostringstream os;
  os << to_string(c) << '|' << strategy << '|' << to_string(f) << '|' << canonical_dtype(dtype) << '|' << n << '|'
     << tokens << '|' << hidden << '|' << bytes;
  if (!splits.empty()) os << '|' << splits;  // all-to-allv: several splits share one size
  return os.str();
}

std::string Case::key() const {
  const std::string splits = collective == Collective::AllToAllV ? alltoallv_recorded_splits(*this) : std::string();
  return key_of(collective, strategy, fusion, dtype, tp, tokens, hidden, bytes, splits);
}

std::string sample_key(const Sample& s) {
  return key_of(s.collective, s.strategy, s.fusion, s.dtype, s.nranks, s.tokens, s.hidden, s.bytes, s.splits);
}

Sample sample_of_case(const Case& c) {
  Sample s;
  s.collective = c.collective;
  s.strategy = c.strategy;
  s.fusion = c.fusion;
  s.dtype = c.dtype;
  s.nranks = c.tp;
  s.tokens = c.tokens;
  s.hidden = c.hidden;
  s.bytes = c.bytes;
  return s;
}

Case case_of_sample(const Sample& s) {
  Case c;
  c.collective = s.collective;
  c.strategy = s.strategy;
  c.fusion = s.fusion;
  c.dtype = s.dtype;
  c.tp = s.nranks;
  c.tokens = s.tokens;
  c.hidden = s.hidden;
  c.bytes = s.bytes;
  return c;
}

std::string Case::describe() const {
  std::ostringstream os;
  os << to_string(collective) << ' ' << strategy << ' ' << to_string(fusion) << ' ' << dtype << " tp=" << tp;
  if (!split.empty()) os << " split=" << split;
  if (tokens) os << " tokens=" << tokens << " hidden=" << hidden;
  os << " bytes=" << format_bytes(bytes);
  return os.str();
}

std::int64_t message_count(Collective c, std::int64_t elements, int nranks) {
  switch (c) {
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::AllToAllV:
    case Collective::Gather:
    case Collective::Scatter: return nranks > 0 ? elements / nranks * nranks : elements;
    default: return elements;
  }
}

std::string GridSpec::option_for(const std::string& axis) const {
  auto it = origin.find(axis);
  if (it != origin.end()) return it->second;
  static const std::map<std::string, std::string> flags = {
      {"collectives", "--collective"}, {"strategies", "--strategy"}, {"fusions", "--fusion"}, {"dtypes", "--dtype"},
      {"tp", "--tp"},                  {"tokens", "--tokens"},       {"hidden", "--hidden"},  {"bytes", "--bytes"},
      {"plan", "--plan"},              {"backend", "--backend"},     {"splits", "--splits"}};
  auto f = flags.find(axis);
  return f == flags.end() ? axis : f->second;
}

std::string GridSpec::to_json() const {
  nlohmann::json j;
  j["backend"] = backend;
  for (auto c : collectives) j["collectives"].push_back(arfit::to_string(c));
  j["strategies"] = strategies;
  for (auto f : fusions) j["fusions"].push_back(arfit::to_string(f));
  j["dtypes"] = dtypes;
  j["tp"] = tp;
  if (token_mode()) {
    j["tokens"] = tokens;
    j["hidden"] = hidden;
  } else {
    j["bytes"] = bytes;
  }
  // Only grids with all-to-allv name their splits, so grids without all-to-allv recorded before splits existed
  // still compare equal. An older all-to-allv output differs (plan_cases fills in "cyclic"), and --resume refuses
  // it: its cases' keys changed too.
  if (std::find(collectives.begin(), collectives.end(), Collective::AllToAllV) != collectives.end()) j["splits"] = splits;
  j["plan"] = plan.to_string();
  return j.dump();
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> v = {"trtllm", "nccl-tests", "host-main", "host-alltoallv"};
  return v;
}

GridSpec preset(const std::string& name) {
  GridSpec g;
  const std::string origin = "--preset " + name;
  g.preset = name;
  if (name == "trtllm") {
    g.collectives = {Collective::AllReduce};
    g.fusions = all_fusions();
    g.dtypes = {"bf16"};
    g.tp = {2, 4, 8};
    g.tokens = pow2_range(1, 16384);
    g.hidden = pow2_range(128, 8192);
    g.skip_unsupported = true;
  } else if (name == "nccl-tests") {
    g.collectives = {Collective::AllReduce, Collective::AllGather, Collective::ReduceScatter, Collective::AllToAll};
    g.fusions = {FusionOp::None};
    g.dtypes = {"fp32"};
    g.bytes = pow2_range(8, std::int64_t{8} << 30);
    g.skip_unsupported = true;
  } else if (name == "host-main") {
    // The CPU-only main job: about a minute on 2 cores (docs/bench.md gives the measured time).
    g.backend = "host";
    g.collectives = {Collective::AllReduce};
    g.strategies = {"MPI", strategy::kOneShot, strategy::kTwoShot};
    g.fusions = {FusionOp::None, FusionOp::ResidualRmsNorm};
    g.dtypes = {"bf16"};
    g.tp = {2};
    g.tokens = pow2_range(1, 1024);
    g.hidden = pow2_range(256, 4096);
    g.plan = Plan::parse("lattice:2");
  } else if (name == "host-alltoallv") {
    // The main job's all-to-allv set (docs/bench.md): the uniform all-to-all curve and the uneven splits in one
    // launch (a host's speed can change between launches), 8 K to 512 K per rank on 2 host ranks.
    g.backend = "host";
    g.collectives = {Collective::AllToAll, Collective::AllToAllV};
    g.strategies = {"MPI"};
    g.fusions = {FusionOp::None};
    g.dtypes = {"fp32"};
    g.tp = {2};
    // Half-octave steps: the seed baseline needs a dozen sizes to place its turning points and fit its logistic.
    // Each rounded to 64 bytes: a whole number of fp32 elements for every peer of up to 16 ranks.
    g.bytes = geometric_sizes(std::int64_t{8} << 10, std::int64_t{512} << 10, std::sqrt(2.0), origin);
    for (std::int64_t& b : g.bytes) b = (b + 32) / 64 * 64;
    for (const auto& p : parse_split_patterns(kHostAllToAllvSplits, "--preset host-alltoallv")) g.splits.push_back(p.to_string());
  } else {
    throw GridError("--preset", "unknown preset '" + name + "' (known: " + join(preset_names(), ", ") + ")");
  }
  for (const char* axis : {"collectives", "strategies", "fusions", "dtypes", "tp", "tokens", "hidden", "bytes", "plan", "splits"})
    g.origin[axis] = origin;
  return g;
}

// ---------------------------------------------------------------- JSON spec

namespace {

std::vector<std::int64_t> json_sizes(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return parse_size_list(v.get<std::string>(), where);
  if (v.is_number_integer()) return {parse_size(std::to_string(v.get<std::int64_t>()), where)};
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      if (it.key() != "min" && it.key() != "max" && it.key() != "factor")
        throw GridError(where, "unknown key '" + it.key() + "' (expected min, max, factor)");
    if (!v.contains("min") || !v.contains("max")) throw GridError(where, "a range object needs 'min' and 'max'");
    auto one = [&](const nlohmann::json& x) {
      return x.is_string() ? parse_size(x.get<std::string>(), where) : parse_size(x.dump(), where);
    };
    if (v.contains("factor") && !v["factor"].is_number()) throw GridError(where, "'factor' must be a number, found " + v["factor"].dump());
    double f = v.contains("factor") ? v["factor"].get<double>() : 2.0;
    return geometric_sizes(one(v["min"]), one(v["max"]), f, where);
  }
  if (v.is_array()) {
    std::vector<std::int64_t> out;
    for (const auto& x : v) {
      if (x.is_string())
        for (auto s : parse_size_list(x.get<std::string>(), where)) out.push_back(s);
      else if (x.is_number_integer())
        out.push_back(parse_size(std::to_string(x.get<std::int64_t>()), where));
      else
        throw GridError(where, "expected sizes as integers or strings like \"1K\", found " + x.dump());
    }
    if (out.empty()) throw GridError(where, "empty list");
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  throw GridError(where, "expected a list, a range string or {min, max, factor}, found " + v.dump());
}

std::vector<std::string> json_strings(const nlohmann::json& v, const std::string& where) {
  if (v.is_string()) return split_list(v.get<std::string>(), where);
  if (!v.is_array()) throw GridError(where, "expected a list of strings, found " + v.dump());
  std::vector<std::string> out;
  for (const auto& x : v) {
    if (!x.is_string()) throw GridError(where, "expected a string, found " + x.dump());
    out.push_back(x.get<std::string>());
  }
  if (out.empty()) throw GridError(where, "empty list");
  return out;
}

// Each string of a JSON list as `parse` reads it (an empty optional: refused as an unknown `what`).
template <typename Parse>
auto parsed_strings(const nlohmann::json& v, const std::string& w, const std::string& what, Parse parse) {
  std::vector<typename decltype(parse(std::string()))::value_type> out;
  for (const auto& s : json_strings(v, w)) {
    auto x = parse(s);
    if (!x) throw GridError(w, "unknown " + what + " '" + s + "'");
    out.push_back(*x);
  }
  return out;
}

// One key of a spec (not "preset") onto `spec`; `w` names the file, line and key for errors.
void apply_spec_key(GridSpec& spec, const std::string& k, const nlohmann::json& v, const std::string& w) {
  if (k == "backend") {
    if (!v.is_string()) throw GridError(w, "expected a string");
    spec.backend = v.get<std::string>();
  } else if (k == "collectives" || k == "collective") {
    spec.collectives = parsed_strings(v, w, "collective", [](const std::string& s) { return try_parse_collective(s); });
    spec.origin["collectives"] = w;
  } else if (k == "strategies" || k == "strategy") {
    spec.strategies = json_strings(v, w);
    spec.origin["strategies"] = w;
  } else if (k == "fusions" || k == "fusion") {
    spec.fusions = parsed_strings(v, w, "fusion op", [](const std::string& s) { return try_parse_fusion(s); });
    spec.origin["fusions"] = w;
  } else if (k == "dtypes" || k == "dtype") {
    spec.dtypes.clear();
    for (const auto& s : json_strings(v, w)) spec.dtypes.push_back(canonical_dtype(s));
    spec.origin["dtypes"] = w;
  } else if (k == "tp") {
    spec.tp.clear();
    for (auto x : json_sizes(v, w)) {
      const auto tp = checked_narrow<int>(x);
      if (!tp) throw GridError(w, "TP size " + std::to_string(x) + " is too large");
      spec.tp.push_back(*tp);
    }
    spec.origin["tp"] = w;
  } else if (k == "tokens" || k == "hidden" || k == "bytes") {
    auto sizes = json_sizes(v, w);
    (k == "tokens" ? spec.tokens : k == "hidden" ? spec.hidden : spec.bytes) = sizes;
    spec.origin[k] = w;
  } else if (k == "splits") {
    spec.splits.clear();
    for (const auto& s : json_strings(v, w))
      for (const auto& p : parse_split_patterns(s, w)) spec.splits.push_back(p.to_string());
    spec.origin["splits"] = w;
  } else if (k == "plan") {
    if (!v.is_string()) throw GridError(w, "expected a string like \"lattice:2\"");
    spec.plan = Plan::parse(v.get<std::string>(), w);
    spec.origin["plan"] = w;
  } else if (k == "skip_unsupported") {
    if (!v.is_boolean()) throw GridError(w, "expected true or false");
    spec.skip_unsupported = v.get<bool>();
  } else {
    throw GridError(w, "unknown key (known: preset, backend, collectives, strategies, fusions, dtypes, tp, tokens, "
                       "hidden, bytes, splits, plan, skip_unsupported)");
  }
}

}  // namespace

void apply_json_spec(GridSpec& spec, const std::string& text, const std::string& file) {
  // The shared JSON loading path: bounded nesting, "file:line: invalid JSON at column C: why".
  nlohmann::json j;
  try {
    j = parse_json(text, file);
  } catch (const InputError& e) {
    throw GridError("--spec", e.what());
  }
  if (!j.is_object()) throw GridError("--spec " + file, "the spec must be a JSON object");
  // "--spec FILE:LINE key 'KEY'": the line where the key's value starts (the rule: file, line and field).
  auto where = [&](const std::string& key) {
    const long line = json_line_of(text, json_pointer_append("", key));
    return "--spec " + file + (line > 0 ? ":" + std::to_string(line) : std::string()) + " key '" + key + "'";
  };
  // A preset first, whatever its place: the other keys change it.
  if (j.contains("preset")) {
    if (!j["preset"].is_string()) throw GridError(where("preset"), "expected a string");
    try {
      GridSpec base = preset(j["preset"].get<std::string>());
      if (!j.contains("backend")) base.backend = spec.backend;
      spec = base;
    } catch (const GridError& e) {
      throw GridError(where("preset"), e.what());
    }
  }
  for (auto it = j.begin(); it != j.end(); ++it)
    if (it.key() != "preset") apply_spec_key(spec, it.key(), it.value(), where(it.key()));
}

// ---------------------------------------------------------------- expansion

PlannedGrid expand_grid(const GridSpec& spec, const std::function<std::vector<std::string>(Collective)>& strategies_for) {
  PlannedGrid out;
  const bool tok = spec.token_mode();
  const std::size_t nx = tok ? spec.tokens.size() : spec.bytes.size();
  const std::size_t ny = tok ? spec.hidden.size() : 0;
  const auto points = spec.plan.kind == Plan::Kind::Anchors
                          ? anchor_points(spec.plan.stride, tok ? spec.tokens : spec.bytes, tok ? spec.hidden : std::vector<std::int64_t>{})
                          : plan_points(spec.plan, nx, ny);
  out.full_points = nx * (tok ? ny : 1);
  out.planned_points = points.size();
  // Split patterns (all-to-allv only); "" stands for "no split" for every other collective.
  std::vector<std::string> a2av_splits = spec.splits.empty() ? std::vector<std::string>{"cyclic"} : spec.splits;
  // A case with the key of an earlier one is the same measurement and would be indistinguishable in the output
  // and on --resume: dlrm seeds that draw the same tables per rank, a split given twice.
  std::set<std::string> keys;
  for (int tp : spec.tp)
    for (Collective c : spec.collectives) {
      const std::vector<std::string> strategies = spec.strategies.empty() ? strategies_for(c) : spec.strategies;
      const std::vector<std::string> splits = c == Collective::AllToAllV ? a2av_splits : std::vector<std::string>{""};
      for (const std::string& dtype : spec.dtypes)
        for (FusionOp f : spec.fusions)
          for (const std::string& split : splits) {
            std::optional<SplitPattern> pattern;
            if (!split.empty()) {
              pattern = parse_split_patterns(split, spec.option_for("splits")).front();
              if (pattern->kind == SplitPattern::Kind::HotSpot && pattern->hot_rank >= tp)
                throw GridError(spec.option_for("splits"), "split '" + split + "': the hot rank " +
                                                               std::to_string(pattern->hot_rank) + " is not below TP " +
                                                               std::to_string(tp));
            }
            const bool by_tables = pattern && pattern->sized_by_tables();
            out.full_cases += (by_tables ? 1 : out.full_points) * strategies.size();
            // A dlrm pattern sets its own size: one case, whatever the size axis.
            const std::size_t npoints = by_tables ? 1 : points.size();
            for (std::size_t pi = 0; pi < npoints; ++pi)
              for (const std::string& s : strategies) {
                Case k;
                k.backend = spec.backend;
                k.collective = c;
                k.strategy = s;
                k.fusion = f;
                k.dtype = canonical_dtype(dtype);
                k.tp = tp;
                k.split = split;
                const int es = std::max(1, dtype_size(k.dtype));
                if (by_tables) {
                  k.count = dlrm_mean_count(*pattern, tp);
                } else {
                  const auto [ix, iy] = points[pi];
                  std::int64_t elements;
                  if (tok) {
                    k.tokens = spec.tokens[ix];
                    k.hidden = spec.hidden[iy];
                    elements = k.tokens * k.hidden;
                  } else {
                    elements = spec.bytes[ix] / es;
                  }
                  k.count = message_count(c, elements, tp);
                }
                k.bytes = k.count * es;
                if (!keys.insert(k.key()).second) {
                  ++out.repeated_cases;
                  if (by_tables) --out.full_cases;  // counted once per pattern above
                  continue;
                }
                k.index = static_cast<int>(out.cases.size());
                out.cases.push_back(k);
              }
          }
    }
  return out;
}

}  // namespace arfit::bench
