#include "bench/alltoallv_splits.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <cstdint>
#include <numeric>
#include <optional>
#include <set>
#include <sstream>

#include "model/alltoallv.h"
#include "model/splitmix64.h"
#include "model/text.h"

namespace arfit::bench {
namespace {

constexpr std::size_t kMaxPatterns = 10000;  // a list or range expanding further is a typo, not a plan
constexpr double kMaxElements = 1e15;        // as parse_size bounds a byte count: far beyond any memory
// Numbers in split specs: ten significant digits, so what a user types survives the canonical spelling the cases
// are generated from.
constexpr const char* kSpelling = "%.10g";

std::vector<std::string> fields_of(const std::string& item) {
  std::vector<std::string> out;
  std::stringstream ss(item);
  std::string f;
  while (std::getline(ss, f, ':')) out.push_back(f);
  if (!item.empty() && item.back() == ':') out.emplace_back();
  return out;
}

// One field's values: "V", "A/B/C" or (integers) "LO..HI".
template <typename Parse>
auto field_values(const std::string& field, const std::string& what, const std::string& item, const std::string& option,
                  Parse parse) {
  std::vector<decltype(parse(std::string()))> out;
  auto fail = [&](const std::string& why) {
    throw GridError(option, "split '" + item + "': " + what + " " + why);
  };
  if (field.empty()) fail("is missing");
  const auto dots = field.find("..");
  if (dots != std::string::npos) {
    const auto lo = parse(field.substr(0, dots)), hi = parse(field.substr(dots + 2));
    if (lo != std::floor(lo) || hi != std::floor(hi)) fail("range '" + field + "' needs integer ends");
    if (hi < lo) fail("range '" + field + "' ends below its start");
    if (hi - lo >= static_cast<double>(kMaxPatterns)) fail("range '" + field + "' has too many values");
    for (auto v = lo; v <= hi; v += 1) out.push_back(v);
    return out;
  }
  std::stringstream ss(field);
  std::string v;
  while (std::getline(ss, v, '/')) out.push_back(parse(v));
  if (out.empty() || field.back() == '/') fail("'" + field + "' has an empty value");
  return out;
}

// Largest-remainder apportionment of `total` over non-negative weights: the parts sum to `total` exactly,
// ties go to the lower index (deterministic on every rank and machine).
std::vector<std::int64_t> apportion(std::int64_t total, const std::vector<double>& weights) {
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::int64_t> parts(weights.size(), 0);
  std::vector<std::pair<double, std::size_t>> remainders;
  std::int64_t used = 0;
  for (std::size_t k = 0; k < weights.size(); ++k) {
    const double exact = static_cast<double>(total) * weights[k] / sum;
    parts[k] = static_cast<std::int64_t>(std::floor(exact));
    used += parts[k];
    remainders.emplace_back(exact - static_cast<double>(parts[k]), k);
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t k = 0; used < total && k < remainders.size(); ++k, ++used) ++parts[remainders[k].second];
  // Rounding can floor a share to one above its exact value; take such units back from the smallest remainders.
  for (std::size_t k = remainders.size(); used > total && k-- > 0;)
    if (parts[remainders[k].second] > 0) --parts[remainders[k].second], --used;
  return parts;
}

// A seeded stream of 64-bit values (splitmix64 over a counter): the same on every rank and machine.
class SeededStream {
 public:
  SeededStream(std::uint64_t seed, std::uint64_t salt) : state_(splitmix64(seed) ^ splitmix64(salt)) {}
  std::uint64_t next() { return splitmix64(state_++); }
  // Uniform integer in [0, n) (the modulo bias of a 64-bit value is below 2^-50 for the n used here).
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }

 private:
  std::uint64_t state_;
};

}  // namespace

std::string SplitPattern::to_string() const {
  switch (kind) {
    case Kind::Cyclic: return "cyclic";
    case Kind::Even: return "even";
    case Kind::Dlrm:
      return "dlrm:" + std::to_string(batch) + ":" + std::to_string(tables) + ":" + std::to_string(dim) + ":" +
             std::to_string(seed);
    case Kind::Zipf: return "zipf:" + format_number(exponent, kSpelling) + ":" + std::to_string(seed);
    case Kind::HotSpot: return "hot:" + format_number(fraction, kSpelling) + ":" + std::to_string(hot_rank);
  }
  return "?";
}

namespace {

// One item of a split list being read: its fields, and the messages that name the option and the item.
struct SplitItem {
  const std::string& item;
  const std::string& option;
  std::vector<std::string> f;  // the fields, f[0] the kind

  // A decimal number in [lo, hi].
  std::function<double(const std::string&)> number(const std::string& what, double lo, double hi) const {
    return [=, item = item, option = option](const std::string& s) {
      std::size_t used = 0;
      double v = 0;
      try {
        v = std::stod(s, &used);
      } catch (const std::logic_error&) {
        used = 0;
      }
      if (s.empty() || used != s.size() || !std::isfinite(v) || v < lo || v > hi)
        throw GridError(option, "split '" + item + "': " + what + " '" + s + "' must be a number in [" +
                                    format_number(lo, kSpelling) + ", " + format_number(hi, kSpelling) + "]");
      return v;
    };
  }
  // Counts, seeds and ranks: decimal digits (model/text.h), not "1e3" or "+2" through stod.
  std::function<double(const std::string&)> integer(const std::string& what, double lo, double hi) const {
    return [=, item = item, option = option](const std::string& s) {
      std::string why;
      const std::optional<std::uint64_t> v =
          parse_whole_number(s, static_cast<std::uint64_t>(lo), static_cast<std::uint64_t>(hi), &why);
      if (!v) throw GridError(option, "split '" + item + "': " + what + " " + why);
      return static_cast<double>(*v);
    };
  }
  void arity(std::size_t min_fields, std::size_t max_fields, const std::string& usage) const {
    if (f.size() < min_fields || f.size() > max_fields) throw GridError(option, "split '" + item + "': expected " + usage);
  }
  // Field `field`'s values (a list or a range of them, field_values) as `parse` reads each.
  std::vector<double> values(const std::string& field, const std::string& what,
                             const std::function<double(const std::string&)>& parse) const {
    return field_values(field, what, item, option, parse);
  }
};

// dlrm:B:T:D:SEED, each field a value or several: one pattern per combination.
void read_dlrm(const SplitItem& it, const std::function<void(const SplitPattern&)>& add) {
  it.arity(5, 5, "dlrm:B:T:D:SEED (batch, tables, dimension, seed)");
  SplitPattern p;
  p.kind = SplitPattern::Kind::Dlrm;
  for (double b : it.values(it.f[1], "batch", it.integer("batch", 1, 1e9)))
    for (double t : it.values(it.f[2], "tables", it.integer("tables", 1, 1e6)))
      for (double d : it.values(it.f[3], "dimension", it.integer("dimension", 1, 1e6)))
        for (double s : it.values(it.f[4], "seed", it.integer("seed", 0, 1e15))) {
          if (b * t * d > kMaxElements)
            throw GridError(it.option, "split '" + it.item + "': B·T·D = " + format_number(b * t * d, kSpelling) +
                                           " elements is more than a rank can send (" + format_number(kMaxElements, kSpelling) + ")");
          p.batch = static_cast<std::int64_t>(b);
          p.tables = static_cast<std::int64_t>(t);
          p.dim = static_cast<std::int64_t>(d);
          p.seed = static_cast<std::uint64_t>(s);
          add(p);
        }
}

// zipf:EXPONENT[:SEED].
void read_zipf(const SplitItem& it, const std::function<void(const SplitPattern&)>& add) {
  it.arity(2, 3, "zipf:EXPONENT[:SEED]");
  SplitPattern p;
  p.kind = SplitPattern::Kind::Zipf;
  for (double e : it.values(it.f[1], "exponent", it.number("exponent", 0, 20)))
    for (double s : it.values(it.f.size() > 2 ? it.f[2] : "0", "seed", it.integer("seed", 0, 1e15))) {
      p.exponent = e;
      p.seed = static_cast<std::uint64_t>(s);
      add(p);
    }
}

// hot:FRACTION[:RANK].
void read_hot_spot(const SplitItem& it, const std::function<void(const SplitPattern&)>& add) {
  it.arity(2, 3, "hot:FRACTION[:RANK]");
  SplitPattern p;
  p.kind = SplitPattern::Kind::HotSpot;
  for (double x : it.values(it.f[1], "fraction", it.number("fraction", 0, 1)))
    for (double r : it.values(it.f.size() > 2 ? it.f[2] : "0", "rank", it.integer("rank", 0, 1e6))) {
      p.fraction = x;
      p.hot_rank = static_cast<int>(r);
      add(p);
    }
}

}  // namespace

std::vector<SplitPattern> parse_split_patterns(const std::string& text, const std::string& option) {
  std::vector<SplitPattern> out;
  std::set<std::string> seen;
  const std::function<void(const SplitPattern&)> add = [&](const SplitPattern& p) {
    if (!seen.insert(p.to_string()).second) return;
    if (out.size() >= kMaxPatterns) throw GridError(option, "more than " + std::to_string(kMaxPatterns) + " split patterns");
    out.push_back(p);
  };
  for (const std::string& item : split_list(text, option)) {
    const SplitItem it{item, option, fields_of(item)};
    const std::string& kind = it.f.empty() ? item : it.f[0];
    if (kind == "cyclic" || kind == "even") {
      it.arity(1, 1, "'" + kind + "' without fields");
      SplitPattern p;
      p.kind = kind == "cyclic" ? SplitPattern::Kind::Cyclic : SplitPattern::Kind::Even;
      add(p);
    } else if (kind == "dlrm") {
      read_dlrm(it, add);
    } else if (kind == "zipf") {
      read_zipf(it, add);
    } else if (kind == "hot") {
      read_hot_spot(it, add);
    } else {
      throw GridError(option, "unknown split '" + item + "' (known: cyclic, even, dlrm:B:T:D:SEED, zipf:EXPONENT[:SEED], "
                                                         "hot:FRACTION[:RANK])");
    }
  }
  if (out.empty()) throw GridError(option, "no split patterns given");
  return out;
}

std::vector<std::int64_t> dlrm_tables_per_rank(const SplitPattern& p, int n) {
  std::vector<std::int64_t> per_rank(static_cast<std::size_t>(n), 0);
  SeededStream draw(p.seed, static_cast<std::uint64_t>(n));
  for (std::int64_t t = 0; t < p.tables; ++t) ++per_rank[static_cast<std::size_t>(draw.below(n))];
  return per_rank;
}

std::int64_t dlrm_mean_count(const SplitPattern& p, int n) { return p.batch / n * p.tables * p.dim; }

SplitCounts split_counts(const SplitPattern& p, std::int64_t count, int n) {
  const auto un = static_cast<std::size_t>(n);
  SplitCounts c(un);
  std::vector<double> weights(un, 1.0);
  switch (p.kind) {
    case SplitPattern::Kind::Dlrm: {
      const std::vector<std::int64_t> tables = dlrm_tables_per_rank(p, n);
      for (std::size_t i = 0; i < un; ++i) c[i].assign(un, p.batch / n * tables[i] * p.dim);
      return c;
    }
    case SplitPattern::Kind::Cyclic:
      for (std::size_t i = 0; i < un; ++i) {
        for (std::size_t j = 0; j < un; ++j) weights[j] = static_cast<double>(1 + (i + j) % un);
        c[i] = apportion(count, weights);
      }
      return c;
    case SplitPattern::Kind::Even: break;
    case SplitPattern::Kind::Zipf: {
      // Popularity order: a seeded Fisher-Yates shuffle of the ranks; the k-th most popular gets 1/k^EXP.
      std::vector<std::size_t> order(un);
      std::iota(order.begin(), order.end(), std::size_t{0});
      SeededStream draw(p.seed, 0x5a49504600000000ull + un);
      for (std::size_t k = un; k > 1; --k) std::swap(order[k - 1], order[static_cast<std::size_t>(draw.below(static_cast<int>(k)))]);
      for (std::size_t k = 0; k < un; ++k) weights[order[k]] = std::pow(static_cast<double>(k + 1), -p.exponent);
      break;
    }
    case SplitPattern::Kind::HotSpot:
      if (n > 1)
        for (std::size_t j = 0; j < un; ++j)
          weights[j] = static_cast<int>(j) == p.hot_rank ? p.fraction : (1.0 - p.fraction) / (n - 1);
      if (std::accumulate(weights.begin(), weights.end(), 0.0) <= 0) weights.assign(un, 1.0);
      break;
  }
  // Every sender spreads its elements with the same destination weights.
  const std::vector<std::int64_t> row = apportion(count, weights);
  for (auto& r : c) r = row;
  return c;
}

kernels::ByteCounts alltoallv_byte_bound(std::int64_t count, int elem, int nranks) {
  const std::int64_t bound = count * elem * std::max(1, nranks);
  return kernels::ByteCounts{bound, bound};
}

SplitCounts alltoallv_case_counts(const Case& c) {
  const std::vector<SplitPattern> p = parse_split_patterns(c.split.empty() ? "cyclic" : c.split, "--splits");
  return split_counts(p.front(), c.count, c.tp);
}

std::string alltoallv_recorded_splits(const Case& c) {
  const std::vector<SplitPattern> p = parse_split_patterns(c.split.empty() ? "cyclic" : c.split, "--splits");
  const SplitPattern& pat = p.front();
  if (pat.kind == SplitPattern::Kind::Dlrm) {
    std::string tables;
    for (std::int64_t t : dlrm_tables_per_rank(pat, c.tp)) tables += (tables.empty() ? "" : "-") + std::to_string(t);
    return std::to_string(pat.batch) + "," + tables + "," + std::to_string(pat.dim);
  }
  SplitCounts bytes = split_counts(pat, c.count, c.tp);
  for (auto& row : bytes)
    for (auto& v : row) v *= c.elem_size();
  return format_alltoallv_matrix(bytes);
}

}  // namespace arfit::bench
