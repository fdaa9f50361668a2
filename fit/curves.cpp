#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "fit/fit.h"
#include "model/metrics.h"
#include "model/text.h"

namespace arfit::fit {
namespace {

// Per source, whether its samples name more than one machine (sample_system): a file written by hand or by a
// script with a system column and no source column holds several machines under one source.
std::set<std::string> sources_of_several_machines(const std::vector<Sample>& samples) {
  std::map<std::string, std::string> first;
  std::set<std::string> several;
  for (const Sample& s : samples) {
    const std::string system = sample_system(s);
    const auto [it, fresh] = first.emplace(s.source, system);
    if (!fresh && it->second != system) several.insert(s.source);
  }
  return several;
}

// The curve's label under `by`. By source, a source of several machines is split by machine ("source · system"):
// one label had made one curve of three machines' points, the median of their times at each size.
std::string system_label(const Sample& s, GroupBy by, const std::set<std::string>& several) {
  if (by == GroupBy::System) return sample_system(s);
  return several.count(s.source) ? s.source + " · " + sample_system(s) : s.source;
}

// Curve::machine: the hardware labels joined through the placements (device and hosts) their curves share.
void name_machines(std::vector<Curve>& curves, const std::vector<std::set<std::string>>& placements) {
  std::map<std::string, std::string> parent;  // union-find over hardware labels
  auto root = [&](std::string x) {
    while (parent.at(x) != x) x = parent.at(x);
    return x;
  };
  auto unite = [&](const std::string& a, const std::string& b) {
    const std::string ra = root(a), rb = root(b);
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);  // the first label in name order names the machine
  };
  for (const Curve& c : curves) parent.emplace(c.hardware, c.hardware);
  std::map<std::string, std::string> label_of_placement;
  for (size_t i = 0; i < curves.size(); ++i)
    for (const std::string& p : placements[i]) {
      const auto [it, fresh] = label_of_placement.emplace(p, curves[i].hardware);
      if (!fresh) unite(it->second, curves[i].hardware);
    }
  for (Curve& c : curves) c.machine = root(c.hardware);
}

}  // namespace

double curve_bytes(const Sample& s) {
  if (s.bytes > 0) return static_cast<double>(s.bytes);
  if (s.tokens > 0 && s.hidden > 0) return message_bytes(static_cast<double>(s.tokens), static_cast<double>(s.hidden), s.dtype);
  return 0;
}

std::vector<Curve> build_curves(const std::vector<Sample>& samples, const CurveOptions& options) {
  struct Acc {
    std::map<double, std::vector<double>> by_size;
    std::set<std::string> sources;
    std::set<std::int64_t> hidden;
    std::vector<Curve::ShapePoint> shape;
    std::set<int> sms;
    std::string device;
    std::string hardware;
    std::string network;
    std::set<std::string> placements;  // "device @ hosts" of the samples that name their hosts
  };
  std::map<GroupKey, Acc> groups;
  const std::set<std::string> several =
      options.group_by == GroupBy::Source ? sources_of_several_machines(samples) : std::set<std::string>{};
  for (const Sample& s : samples) {
    if (!s.ok()) continue;
    if (options.out_of_place_only && s.in_place) continue;
    const double bytes = curve_bytes(s);
    if (!(bytes > 0) || !(s.time_us > 0) || !std::isfinite(s.time_us)) continue;
    const GroupKey k = sample_group_key(s, system_label(s, options.group_by, several));
    Acc& a = groups[k];
    a.by_size[bytes].push_back(s.time_us);
    a.sources.insert(s.source);
    if (s.hidden > 0) {
      a.hidden.insert(s.hidden);
      a.shape.push_back({s.tokens, s.hidden, bytes, s.time_us});
    }
    a.sms.insert(s.sm);
    if (a.device.empty()) a.device = s.device;
    if (a.hardware.empty()) a.hardware = sample_system(s);
    if (auto n = s.extra.find("network"); a.network.empty() && n != s.extra.end()) a.network = n->second;
    if (auto h = s.extra.find("hosts"); h != s.extra.end() && !h->second.empty()) a.placements.insert(s.device + " @ " + h->second);
  }
  std::vector<Curve> out;
  std::vector<std::set<std::string>> placements;  // per curve of `out`
  for (auto& [key, a] : groups) {
    if (static_cast<int>(a.by_size.size()) < options.min_sizes) continue;
    Curve c;
    c.key = key;
    for (const auto& [bytes, v] : a.by_size) {
      c.bytes.push_back(bytes);
      c.time_us.push_back(size_median(v));
    }
    c.sources.assign(a.sources.begin(), a.sources.end());
    c.hidden.assign(a.hidden.begin(), a.hidden.end());
    c.shape_points = std::move(a.shape);
    c.sm = a.sms.size() == 1 ? *a.sms.begin() : 0;
    c.device = a.device;
    c.hardware = a.hardware;
    c.network = a.network;
    out.push_back(std::move(c));
    placements.push_back(std::move(a.placements));
  }
  name_machines(out, placements);
  return out;
}

std::vector<std::string> measured_point_fingerprints(const Curve& c) {
  std::vector<std::string> out;
  char point[64];
  for (std::size_t i = 0; i < c.bytes.size() && i < c.time_us.size(); ++i) {
    std::snprintf(point, sizeof point, "%.17g %.17g", c.bytes[i], c.time_us[i]);
    out.push_back(fnv1a64_hex(point));
  }
  return out;
}

}  // namespace arfit::fit
