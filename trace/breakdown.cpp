#include "trace/breakdown.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "model/sample_csv.h"
#include "model/text.h"

namespace arfit::trace {

Level parse_level(const std::string& s) {
  if (s == "module") return Level::Module;
  if (s == "kernel") return Level::Kernel;
  throw std::invalid_argument("unknown level '" + s + "' (expected module or kernel)");
}

namespace {

bool is_folded(const ProfileNode& n, const std::vector<std::string>& fold) {
  return std::find(fold.begin(), fold.end(), n.name) != fold.end();
}

bool is_leaf(const ProfileNode& n, const std::vector<std::string>& fold) { return n.children.empty() || is_folded(n, fold); }

void leaves_rec(const ProfileNode& n, std::vector<std::string>& path, const std::vector<std::string>& fold, Level level,
                std::vector<Leaf>& out) {
  bool take = is_leaf(n, fold);
  if (!take && level == Level::Module)
    take = std::all_of(n.children.begin(), n.children.end(), [&](const ProfileNode& c) { return is_leaf(c, fold); });
  if (take) {
    Leaf l;
    l.name = n.name;
    l.path = path;
    l.time_us = n.cuda_time_us;
    l.invocations = n.invocations;
    l.folded = is_folded(n, fold) && !n.children.empty();
    l.node = &n;
    out.push_back(std::move(l));
    return;
  }
  path.push_back(n.name);
  for (const auto& c : n.children) leaves_rec(c, path, fold, level, out);
  path.pop_back();
}

std::string pct(double part, double total) { return total > 0 ? format_number(100.0 * part / total, "%.2f") : "0.00"; }

}  // namespace

std::vector<Leaf> collect_leaves(const Phase& phase, const std::vector<std::string>& fold) {
  return collect_entries(phase, Level::Kernel, fold);
}

std::vector<Leaf> collect_entries(const Phase& phase, Level level, const std::vector<std::string>& fold) {
  std::vector<Leaf> out;
  std::vector<std::string> path;
  for (const auto& r : phase.roots) leaves_rec(r, path, fold, level, out);
  return out;
}

std::vector<std::string> unique_names(const std::vector<std::pair<std::string, std::vector<std::string>>>& items) {
  std::vector<std::string> out(items.size());
  std::map<std::string, std::vector<std::size_t>> by_name;
  for (std::size_t i = 0; i < items.size(); ++i) by_name[items[i].first].push_back(i);
  for (auto& [name, idx] : by_name) {
    if (idx.size() == 1) {
      out[idx[0]] = name;
      continue;
    }
    // Add ancestors, nearest first, until the group's display names differ (or the paths run out).
    std::size_t depth = 0, max_depth = 0;
    for (auto i : idx) max_depth = std::max(max_depth, items[i].second.size());
    auto label = [&](std::size_t i, std::size_t d) {
      const auto& p = items[i].second;
      std::string s;
      for (std::size_t k = p.size() > d ? p.size() - d : 0; k < p.size(); ++k) s += p[k] + "/";
      return s + name;
    };
    for (depth = 1; depth <= max_depth; ++depth) {
      std::set<std::string> seen;
      for (auto i : idx) seen.insert(label(i, depth));
      if (seen.size() == idx.size()) break;
    }
    depth = std::min(depth, max_depth);
    std::map<std::string, int> count;
    for (auto i : idx) {
      std::string l = label(i, depth);
      int n = ++count[l];
      out[i] = n == 1 ? l : l + " #" + std::to_string(n);
    }
  }
  return out;
}

namespace {
bool has_node(const ProfileNode& n, const std::string& name) {
  if (n.name == name) return true;
  return std::any_of(n.children.begin(), n.children.end(), [&](const ProfileNode& c) { return has_node(c, name); });
}
}  // namespace

bool profile_has_node(const Profile& profile, const std::string& name) {
  for (const auto& p : profile.phases)
    for (const auto& r : p.roots)
      if (has_node(r, name)) return true;
  return false;
}

Profile select_phases(const Profile& profile, const std::vector<std::string>& names) {
  if (names.empty()) return profile;
  Profile out = profile;
  out.phases.clear();
  std::vector<std::string> unknown;
  for (const auto& n : names)
    if (std::none_of(profile.phases.begin(), profile.phases.end(), [&](const Phase& p) { return p.name == n; }))
      unknown.push_back(n);
  if (!unknown.empty()) {
    std::string msg = "unknown phase";
    for (const auto& u : unknown) msg += " '" + u + "'";
    msg += " in " + profile.source + "; phases are:";
    for (const auto& p : profile.phases) msg += " " + p.name;
    throw std::invalid_argument(msg);
  }
  for (const auto& p : profile.phases)
    if (std::find(names.begin(), names.end(), p.name) != names.end()) out.phases.push_back(p);
  return out;
}

namespace {

// One pass over a profile's phases: each leaf kernel's class (rule table, folded node, or unmatched), the time and
// invocations per phase of every class and of every entry (name, path), and the unmatched kernels.
class BreakdownAccumulator {
 public:
  using EntryKey = std::pair<std::string, std::vector<std::string>>;
  struct ClassSeen {
    std::string label;
    bool comm = false;
  };
  struct PhaseTotals {
    std::map<std::string, std::pair<double, std::int64_t>> by_class;
    std::map<std::size_t, std::pair<double, std::int64_t>> by_entry;
    double total = 0, comm = 0;
  };

  BreakdownAccumulator(const RuleTable& rules, const BreakdownOptions& opt) : rules_(rules), opt_(opt) {}

  void add_phase(const Phase& ph) {
    PhaseTotals& a = phases.emplace_back();
    for (const Leaf& l : collect_leaves(ph, opt_.fold)) add_leaf(ph, l, a);
    for (const Leaf& e : collect_entries(ph, opt_.level, opt_.fold)) add_entry(e, a);
  }

  // Classes in rule-table order, then folded nodes, then unmatched.
  void write_class_columns(Breakdown& b) {
    for (const auto& c : rules_.classes())
      if (present.count(c.id)) {
        b.class_ids.push_back(c.id);
        b.class_labels.push_back(c.label);
      }
    for (const auto& f : folded_ids_)
      if (std::find(b.class_ids.begin(), b.class_ids.end(), f) == b.class_ids.end()) {
        b.class_ids.push_back(f);
        b.class_labels.push_back(present[f].label);
      }
    if (any_unmatched_) {
      b.class_ids.push_back(kUnmatchedClass);
      b.class_labels.push_back("Unmatched");
    }
  }

  std::map<std::string, ClassSeen> present;
  std::map<std::string, UnmatchedKernel> unmatched;
  std::vector<EntryKey> entry_keys;
  std::vector<double> entry_total;
  std::vector<std::string> entry_class;
  std::vector<PhaseTotals> phases;

 private:
  std::string class_of(const Leaf& l) {
    const std::string cache_key = l.name + (l.folded ? "\x01" : "");
    auto it = class_cache_.find(cache_key);
    if (it != class_cache_.end()) return it->second;
    std::string id;
    if (const OpClass* c = rules_.classify(l.name)) {
      id = c->id;
      present[id] = {c->label, c->communication};
    } else if (l.folded) {
      id = "folded:" + l.name;
      present[id] = {l.name, false};
      if (std::find(folded_ids_.begin(), folded_ids_.end(), id) == folded_ids_.end()) folded_ids_.push_back(id);
    } else {
      id = kUnmatchedClass;
      any_unmatched_ = true;
    }
    class_cache_[cache_key] = id;
    return id;
  }

  void add_leaf(const Phase& ph, const Leaf& l, PhaseTotals& a) {
    const std::string id = class_of(l);
    auto& c = a.by_class[id];
    c.first += l.time_us;
    c.second += l.invocations;
    a.total += l.time_us;
    if (id != kUnmatchedClass && present[id].comm) a.comm += l.time_us;
    if (id == kUnmatchedClass) {
      auto& u = unmatched[l.name];
      u.name = l.name;
      u.time_us += l.time_us;
      u.invocations += l.invocations;
      if (u.phases.empty() || u.phases.back() != ph.name) u.phases.push_back(ph.name);
    }
  }

  void add_entry(const Leaf& e, PhaseTotals& a) {
    EntryKey key = std::make_pair(e.name, e.path);
    auto it = entry_index_.find(key);
    std::size_t idx;
    if (it == entry_index_.end()) {
      idx = entry_keys.size();
      entry_index_.emplace(key, idx);
      entry_keys.push_back(key);
      entry_total.push_back(0);
      const bool is_kernel_leaf = e.node && (e.node->children.empty() || e.folded);
      entry_class.push_back(is_kernel_leaf ? class_of(e) : "");
    } else {
      idx = it->second;
    }
    entry_total[idx] += e.time_us;
    auto& x = a.by_entry[idx];
    x.first += e.time_us;
    x.second += e.invocations;
  }

  const RuleTable& rules_;
  const BreakdownOptions& opt_;
  std::vector<std::string> folded_ids_;
  bool any_unmatched_ = false;
  std::map<EntryKey, std::size_t> entry_index_;
  std::map<std::string, std::string> class_cache_;  // kernel name -> class id
};

// The entries shown: the top K by total time over the phases, in that order, the rest summed into "others".
struct EntryColumns {
  std::vector<std::size_t> order;  // entries by total time, largest first
  std::size_t keep = 0;            // how many of them get a column of their own
  std::vector<long> slot;          // entry -> column, -1 = others
  bool has_others = false;
};

EntryColumns choose_entry_columns(const BreakdownAccumulator& acc, std::size_t top_k, Breakdown& b) {
  EntryColumns cols;
  cols.order.resize(acc.entry_keys.size());
  for (std::size_t i = 0; i < cols.order.size(); ++i) cols.order[i] = i;
  std::stable_sort(cols.order.begin(), cols.order.end(),
                   [&](std::size_t x, std::size_t y) { return acc.entry_total[x] > acc.entry_total[y]; });
  cols.keep = (top_k == 0 || top_k >= cols.order.size()) ? cols.order.size() : top_k;
  const std::vector<std::string> display = unique_names(acc.entry_keys);
  cols.slot.assign(acc.entry_keys.size(), -1);
  for (std::size_t r = 0; r < cols.keep; ++r) {
    cols.slot[cols.order[r]] = static_cast<long>(r);
    b.entry_names.push_back(display[cols.order[r]]);
  }
  cols.has_others = cols.keep < cols.order.size();
  if (cols.has_others) b.entry_names.push_back("others");
  return cols;
}

// One phase's row: its class times in the breakdown's class columns, its entry times in the chosen entry columns.
PhaseBreakdown phase_row(const Phase& ph, const BreakdownAccumulator::PhaseTotals& totals, const BreakdownAccumulator& acc,
                         const EntryColumns& cols, const Breakdown& b) {
  PhaseBreakdown pb;
  pb.phase = ph.name;
  pb.kind = ph.kind;
  pb.step = ph.step;
  pb.total_us = totals.total;
  pb.comm_us = totals.comm;
  for (std::size_t ci = 0; ci < b.class_ids.size(); ++ci) {
    ClassTime ct;
    ct.id = b.class_ids[ci];
    ct.label = b.class_labels[ci];
    ct.communication = ct.id != kUnmatchedClass && acc.present.at(ct.id).comm;  // every other column's class was seen
    auto it = totals.by_class.find(ct.id);
    if (it != totals.by_class.end()) {
      ct.time_us = it->second.first;
      ct.invocations = it->second.second;
    }
    pb.classes.push_back(ct);
  }
  pb.entries.resize(b.entry_names.size());
  for (std::size_t r = 0; r < cols.keep; ++r) {
    pb.entries[r].name = b.entry_names[r];
    pb.entries[r].full_name = acc.entry_keys[cols.order[r]].first;
    pb.entries[r].class_id = acc.entry_class[cols.order[r]];
    pb.entries[r].path = acc.entry_keys[cols.order[r]].second;
  }
  if (cols.has_others) pb.entries.back().name = "others";
  for (const auto& [idx, tv] : totals.by_entry) {
    std::size_t col = cols.slot[idx] >= 0 ? static_cast<std::size_t>(cols.slot[idx]) : b.entry_names.size() - 1;
    pb.entries[col].time_us += tv.first;
    pb.entries[col].invocations += tv.second;
  }
  return pb;
}

}  // namespace

Breakdown compute_breakdown(const Profile& profile, const RuleTable& rules, const BreakdownOptions& opt) {
  Breakdown b;
  b.source = profile.source;
  BreakdownAccumulator acc(rules, opt);
  for (const Phase& ph : profile.phases) acc.add_phase(ph);
  acc.write_class_columns(b);
  const EntryColumns cols = choose_entry_columns(acc, opt.top_k, b);
  for (std::size_t pi = 0; pi < profile.phases.size(); ++pi)
    b.phases.push_back(phase_row(profile.phases[pi], acc.phases[pi], acc, cols, b));
  for (auto& [k, u] : acc.unmatched) b.unmatched.push_back(u);
  std::stable_sort(b.unmatched.begin(), b.unmatched.end(), [](const auto& x, const auto& y) { return x.time_us > y.time_us; });
  return b;
}

std::vector<std::size_t> figure_phases(const std::vector<PhaseBreakdown>& phases, std::size_t decode_steps) {
  std::vector<std::size_t> decode, out;
  for (std::size_t i = 0; i < phases.size(); ++i)
    if (phases[i].kind == PhaseKind::Decode) decode.push_back(i);
  std::set<std::size_t> chosen;
  if (decode_steps > 0 && !decode.empty()) {
    if (decode.size() <= decode_steps) {
      chosen.insert(decode.begin(), decode.end());
    } else if (decode_steps == 1) {
      chosen.insert(decode.back());
    } else {
      // Evenly spaced positions 0 .. n-1; the first and the last are always among them.
      for (std::size_t k = 0; k < decode_steps; ++k) {
        std::size_t pos = (k * (decode.size() - 1) + (decode_steps - 1) / 2) / (decode_steps - 1);
        chosen.insert(decode[pos]);
      }
      chosen.insert(decode.back());
    }
  }
  for (std::size_t i = 0; i < phases.size(); ++i)
    if (phases[i].kind != PhaseKind::Decode || chosen.count(i)) out.push_back(i);
  return out;
}

std::string class_table_csv(const Breakdown& b) {
  std::ostringstream o;
  o << "phase,kind,step,class,label,communication,time_us,share_pct,invocations\n";
  for (const auto& p : b.phases)
    for (const auto& c : p.classes)
      o << csv_escape(p.phase) << "," << to_string(p.kind) << "," << p.step << "," << csv_escape(c.id) << ","
        << csv_escape(c.label) << "," << (c.communication ? 1 : 0) << "," << format_number(c.time_us, "%.3f") << "," << pct(c.time_us, p.total_us)
        << "," << c.invocations << "\n";
  return o.str();
}

std::string entry_table_csv(const Breakdown& b) {
  std::ostringstream o;
  o << "phase,kind,step,entry,name,class,time_us,share_pct,invocations\n";
  for (const auto& p : b.phases)
    for (const auto& e : p.entries)
      o << csv_escape(p.phase) << "," << to_string(p.kind) << "," << p.step << "," << csv_escape(e.name) << ","
        << csv_escape(e.full_name) << "," << csv_escape(e.class_id) << "," << format_number(e.time_us, "%.3f") << ","
        << pct(e.time_us, p.total_us) << "," << e.invocations << "\n";
  return o.str();
}

std::string comm_share_csv(const Breakdown& b) {
  std::ostringstream o;
  o << "phase,kind,step,total_us,comm_us,comm_share_pct\n";
  for (const auto& p : b.phases)
    o << csv_escape(p.phase) << "," << to_string(p.kind) << "," << p.step << "," << format_number(p.total_us, "%.3f") << "," << format_number(p.comm_us, "%.3f")
      << "," << pct(p.comm_us, p.total_us) << "\n";
  return o.str();
}

std::string unmatched_csv(const Breakdown& b) {
  std::ostringstream o;
  o << "kernel,time_us,invocations,phases\n";
  for (const auto& u : b.unmatched) {
    std::string phases;
    for (const auto& p : u.phases) phases += (phases.empty() ? "" : " ") + p;
    o << csv_escape(u.name) << "," << format_number(u.time_us, "%.3f") << "," << u.invocations << "," << csv_escape(phases) << "\n";
  }
  return o.str();
}

}  // namespace arfit::trace
