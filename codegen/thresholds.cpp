#include "codegen/thresholds.h"

#include <cmath>
#include <sstream>

#include "codegen/banner.h"
#include "codegen/safe_text.h"
#include "model/text.h"

namespace arfit::codegen {

std::uint64_t ThresholdRow::last_below_bytes() const {
  if (imposed_boundary) return *imposed_boundary;
  if (split == 0 || sizes.empty()) return 0;
  if (split >= sizes.size()) return static_cast<std::uint64_t>(sizes.back().bytes);
  return static_cast<std::uint64_t>(std::floor(std::sqrt(sizes[split - 1].bytes * sizes[split].bytes)));
}

namespace {

std::optional<Prediction> time_of(const Predictor& predict, PredictQuery q, const std::string& strategy) {
  q.strategy = strategy;
  const auto p = predict(q);
  if (!p || !std::isfinite(p->time_us) || !(p->time_us > 0)) return std::nullopt;
  return p;
}

// The sizes where row.split uses the slower strategy, and the mean regret of doing so.
void score_split(ThresholdRow& row) {
  row.disagree.clear();
  double total = 0;
  for (std::size_t i = 0; i < row.sizes.size(); ++i) {
    const bool used_below = i < row.split;
    const auto& s = row.sizes[i];
    total += std::log((used_below ? s.below_us : s.above_us) / std::min(s.below_us, s.above_us));
    if (s.below_us != s.above_us && used_below != s.below_faster()) row.disagree.push_back(s.bytes);
  }
  row.regret = row.sizes.empty() ? 0.0 : total / static_cast<double>(row.sizes.size());
}

// The split of `sizes` with the least total ln(t_used / t_faster); ties go to the smaller split.
void choose_split(ThresholdRow& row) {
  const std::size_t n = row.sizes.size();
  // cost(split) = sum_{i < split} loss_below(i) + sum_{i >= split} loss_above(i), computed incrementally.
  double cost = 0;
  for (const auto& s : row.sizes) cost += std::log(s.above_us / std::min(s.below_us, s.above_us));
  double best_cost = cost;
  std::size_t best = 0;
  for (std::size_t k = 1; k <= n; ++k) {
    const auto& s = row.sizes[k - 1];
    const double fastest = std::min(s.below_us, s.above_us);
    cost += std::log(s.below_us / fastest) - std::log(s.above_us / fastest);
    if (cost < best_cost - 1e-12) {
      best_cost = cost;
      best = k;
    }
  }
  row.split = best;
  score_split(row);
}

}  // namespace

std::string ThresholdRow::extrapolation_note() const {
  std::size_t n = 0;
  for (const auto& s : sizes) n += s.extrapolated;
  if (n == 0) return "";
  if (n == sizes.size()) return "extrapolated: every size predicted beyond what was measured (a GPU count or sizes never measured)";
  // The boundary lies between sizes[split - 1] and sizes[split]: does it rest on an extrapolation?
  const bool before = split > 0 && sizes[split - 1].extrapolated, after = split < sizes.size() && sizes[split].extrapolated;
  if (before || after) return "the boundary rests on extrapolated predictions";
  return "";
}

bool clamp_boundary(ThresholdRow& row, std::uint64_t lo, std::uint64_t hi, const std::string& why) {
  const std::uint64_t b = row.last_below_bytes();
  if (b >= lo && b <= hi) return false;
  const std::uint64_t moved = b < lo ? lo : hi;
  row.imposed_boundary = moved;
  row.imposed_why = why;
  row.split = 0;
  while (row.split < row.sizes.size() && row.sizes[row.split].bytes <= static_cast<double>(moved)) ++row.split;
  score_split(row);
  return true;
}

std::vector<ThresholdRow> plan_thresholds(const std::vector<int>& tps, const std::vector<double>& sizes,
                                          const std::string& below, const std::string& above,
                                          const Predictor& predict, const PredictQuery& base) {
  std::vector<ThresholdRow> rows;
  for (int tp : tps) {
    ThresholdRow row;
    row.tp = tp;
    PredictQuery q = base;
    q.nranks = tp;
    for (double b : sizes) {
      q.bytes = b;
      const auto tb = time_of(predict, q, below), ta = time_of(predict, q, above);
      if (tb && ta) row.sizes.push_back({b, tb->time_us, ta->time_us, tb->extrapolated || ta->extrapolated});
    }
    if (row.sizes.empty()) continue;
    choose_split(row);
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<std::string> describe_disagreements(const std::vector<ThresholdRow>& rows, const std::string& what) {
  std::vector<std::string> out;
  for (const auto& r : rows) {
    if (r.disagree.empty() && !r.imposed_boundary) continue;
    std::ostringstream s;
    s << "TP " << r.tp << ": ";
    if (r.imposed_boundary) s << r.imposed_why << "; the " << what << " then differs from arfit's choice at ";
    else s << "one " << what << " cannot follow arfit's choice at ";
    s << r.disagree.size() << " of " << r.sizes.size() << " sizes";
    if (!r.disagree.empty()) {
      s << " (";
      for (std::size_t i = 0; i < r.disagree.size(); ++i) s << (i ? ", " : "") << human_bytes(r.disagree[i]);
      s << ")";
    }
    s << (r.imposed_boundary ? "" : "; least-regret split") << ", mean predicted regret "
      << format_number(100.0 * (std::exp(r.regret) - 1.0), "%.3g") << " %";
    out.push_back(s.str());
  }
  return out;
}

std::vector<std::string> describe_extrapolations(const std::vector<ThresholdRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows)
    if (!r.extrapolation_note().empty()) out.push_back("TP " + std::to_string(r.tp) + ": " + r.extrapolation_note());
  return out;
}

std::string python_tp_dict(const std::vector<ThresholdRow>& rows, const std::string& indent,
                           const std::function<std::string(const ThresholdRow&)>& value,
                           const std::function<std::string(const ThresholdRow&)>& comment) {
  std::string s = "{\n";
  for (const auto& r : rows)
    s += indent + "    " + std::to_string(r.tp) + ": " + value(r) + ",  # " + comment_text(comment(r), CommentSyntax::Hash) + "\n";
  return s + indent + "}";
}

std::string python_roles_comment(const StrategySources& roles) {
  std::string s;
  bool several = false;
  for (const auto& [role, from] : roles) {
    s += (s.empty() ? "" : "; ") + role + " = ";
    for (std::size_t i = 0; i < from.size(); ++i) s += (i ? " or " : "") + from[i];
    several |= from.size() > 1;
  }
  return "# Strategies: " + comment_text(s, CommentSyntax::Hash) + (several ? " (several: the faster of them at each size)" : "") +
         ".\n";
}

std::string python_disagreement_comments(const std::vector<ThresholdRow>& rows, const std::string& what) {
  if (rows.empty()) return "";
  const auto lines = describe_disagreements(rows, what);
  if (lines.empty()) {
    std::string s = "# Every size follows arfit's choice (" + what + ").\n";
    for (const auto& l : describe_extrapolations(rows)) s += comment_lines(l, "# ", 118);
    return s;
  }
  std::string s;
  for (const auto& l : lines) s += comment_lines(l, "# ", 118);
  for (const auto& l : describe_extrapolations(rows)) s += comment_lines(l, "# ", 118);
  return s;
}

}  // namespace arfit::codegen
