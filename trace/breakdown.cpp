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

Breakdown compute_breakdown(const Profile& profile, const RuleTable& rules, const BreakdownOptions& opt) {
  Breakdown b;
  b.source = profile.source;
  struct ClassAcc {
    std::string label;
    bool comm = false;
  };
  std::map<std::string, ClassAcc> present;
  std::vector<std::string> folded_ids;
  bool any_unmatched = false;
  std::map<std::string, UnmatchedKernel> unmatched;
  // Entry keys: (name, path), and their totals over all phases.
  std::map<std::pair<std::string, std::vector<std::string>>, std::size_t> entry_index;
  std::vector<std::pair<std::string, std::vector<std::string>>> entry_keys;
  std::vector<double> entry_total;
  std::vector<std::string> entry_class;

  struct PhaseAcc {
    std::map<std::string, std::pair<double, std::int64_t>> by_class;
    std::map<std::size_t, std::pair<double, std::int64_t>> by_entry;
    double total = 0, comm = 0;
  };
  std::vector<PhaseAcc> acc(profile.phases.size());
  std::map<std::string, std::string> class_cache;  // kernel name -> class id

  auto class_of = [&](const Leaf& l) -> std::string {
    auto it = class_cache.find(l.name + (l.folded ? "\x01" : ""));
    if (it != class_cache.end()) return it->second;
    std::string id;
    if (const OpClass* c = rules.classify(l.name)) {
      id = c->id;
      present[id] = {c->label, c->communication};
    } else if (l.folded) {
      id = "folded:" + l.name;
      present[id] = {l.name, false};
      if (std::find(folded_ids.begin(), folded_ids.end(), id) == folded_ids.end()) folded_ids.push_back(id);
    } else {
      id = kUnmatchedClass;
      any_unmatched = true;
    }
    class_cache[l.name + (l.folded ? "\x01" : "")] = id;
    return id;
  };

  for (std::size_t pi = 0; pi < profile.phases.size(); ++pi) {
    const Phase& ph = profile.phases[pi];
    auto& a = acc[pi];
    for (const Leaf& l : collect_leaves(ph, opt.fold)) {
      std::string id = class_of(l);
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
    for (const Leaf& e : collect_entries(ph, opt.level, opt.fold)) {
      auto key = std::make_pair(e.name, e.path);
      auto it = entry_index.find(key);
      std::size_t idx;
      if (it == entry_index.end()) {
        idx = entry_keys.size();
        entry_index.emplace(key, idx);
        entry_keys.push_back(key);
        entry_total.push_back(0);
        bool is_kernel_leaf = e.node && (e.node->children.empty() || e.folded);
        entry_class.push_back(is_kernel_leaf ? class_of(e) : "");
      } else {
        idx = it->second;
      }
      entry_total[idx] += e.time_us;
      auto& x = a.by_entry[idx];
      x.first += e.time_us;
      x.second += e.invocations;
    }
  }

  // Classes in rule-table order, then folded nodes, then unmatched.
  for (const auto& c : rules.classes())
    if (present.count(c.id)) {
      b.class_ids.push_back(c.id);
      b.class_labels.push_back(c.label);
    }
  for (const auto& f : folded_ids)
    if (std::find(b.class_ids.begin(), b.class_ids.end(), f) == b.class_ids.end()) {
      b.class_ids.push_back(f);
      b.class_labels.push_back(present[f].label);
    }
  if (any_unmatched) {
    b.class_ids.push_back(kUnmatchedClass);
    b.class_labels.push_back("Unmatched");
  }

  // Top K entries by total time over the phases.
  std::vector<std::size_t> order(entry_keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) { return entry_total[x] > entry_total[y]; });
  std::size_t keep = (opt.top_k == 0 || opt.top_k >= order.size()) ? order.size() : opt.top_k;
  std::vector<std::string> display = unique_names(entry_keys);
  std::vector<long> slot(entry_keys.size(), -1);  // entry -> column, -1 = others
  for (std::size_t r = 0; r < keep; ++r) {
    slot[order[r]] = static_cast<long>(r);
    b.entry_names.push_back(display[order[r]]);
  }
  bool has_others = keep < order.size();
  if (has_others) b.entry_names.push_back("others");

  for (std::size_t pi = 0; pi < profile.phases.size(); ++pi) {
    const Phase& ph = profile.phases[pi];
    PhaseBreakdown pb;
    pb.phase = ph.name;
    pb.kind = ph.kind;
    pb.step = ph.step;
    pb.total_us = acc[pi].total;
    pb.comm_us = acc[pi].comm;
    for (std::size_t ci = 0; ci < b.class_ids.size(); ++ci) {
      ClassTime ct;
      ct.id = b.class_ids[ci];
      ct.label = b.class_labels[ci];
      ct.communication = ct.id != kUnmatchedClass && present[ct.id].comm;
      auto it = acc[pi].by_class.find(ct.id);
      if (it != acc[pi].by_class.end()) {
        ct.time_us = it->second.first;
        ct.invocations = it->second.second;
      }
      pb.classes.push_back(ct);
    }
    pb.entries.resize(b.entry_names.size());
    for (std::size_t r = 0; r < keep; ++r) {
      pb.entries[r].name = b.entry_names[r];
      pb.entries[r].full_name = entry_keys[order[r]].first;
      pb.entries[r].class_id = entry_class[order[r]];
      pb.entries[r].path = entry_keys[order[r]].second;
    }
    if (has_others) pb.entries.back().name = "others";
    for (const auto& [idx, tv] : acc[pi].by_entry) {
      std::size_t col = slot[idx] >= 0 ? static_cast<std::size_t>(slot[idx]) : b.entry_names.size() - 1;
      pb.entries[col].time_us += tv.first;
      pb.entries[col].invocations += tv.second;
    }
    b.phases.push_back(std::move(pb));
  }
  for (auto& [k, u] : unmatched) b.unmatched.push_back(u);
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
