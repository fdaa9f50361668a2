#include "fit/prior_check.h"

#include <nlohmann/json.hpp>

#include "fit/fit.h"
#include "io/output_path_rule.h"

namespace arfit::fit {
namespace {

const char* const kAnotherMachine = "; a prior is another machine's file";

// The "measured_points" of a models file's group, when it records them.
const nlohmann::json* measured_points_of(const nlohmann::json& group) {
  if (!group.is_object()) return nullptr;
  const auto it = group.find("measured_points");
  return it != group.end() && it->is_array() ? &*it : nullptr;
}

}  // namespace

OwnMeasurements own_measurements_of_samples(const std::string& whose, const std::string& role, const std::vector<MeasurementFile>& files,
                                            const std::vector<Sample>& samples) {
  OwnMeasurements own;
  own.whose = whose;
  for (const MeasurementFile& f : files) {
    own.named.emplace_back(f.name, "also " + role);
    own.files.emplace(f.fingerprint, f.name + ", " + role);
  }
  CurveOptions co;
  co.group_by = GroupBy::System;
  for (const Curve& c : build_curves(samples, co))
    for (std::string& point : measured_point_fingerprints(c)) own.points[c.key.id()].insert(std::move(point));
  own.files.erase("");
  return own;
}

OwnMeasurements own_measurements_of_fit(const std::vector<MeasurementFile>& inputs, const std::vector<Sample>& samples) {
  return own_measurements_of_samples("this fit", "an input of this fit", inputs, samples);
}

OwnMeasurements own_measurements_of_models(const MeasurementFile& models_file, const ModelSet& set) {
  OwnMeasurements own;
  own.whose = models_file.name;
  own.named.emplace_back(models_file.name, "also the models file");
  own.files.emplace(models_file.fingerprint, models_file.name + ", the models file");
  for (const auto& in : set.raw().value("inputs", nlohmann::json::array()))
    if (in.is_object())
      own.files.emplace(in.value("fnv1a64", std::string()), in.value("path", std::string("a file")) + ", an input of " + models_file.name);
  for (const auto& g : set.raw().value("groups", nlohmann::json::array())) {
    const nlohmann::json* measured = measured_points_of(g);
    if (!measured) continue;
    std::set<std::string>& points = own.points[g.value("id", std::string())];
    for (const auto& point : *measured)
      if (point.is_string()) points.insert(point.get<std::string>());
  }
  own.files.erase("");
  return own;
}

void refuse_own_file_as_prior(const MeasurementFile& prior, const OwnMeasurements& own) {
  for (const auto& [path, what] : own.named)
    if (same_path(prior.name, path))
      throw PriorOfOwnMeasurements(prior.name + " is " + what + (prior.name == path ? "" : " (the same file as " + path + ")") +
                                   kAnotherMachine);
  if (const auto it = own.files.find(prior.fingerprint); !prior.fingerprint.empty() && it != own.files.end())
    throw PriorOfOwnMeasurements(prior.name + " is the same file as " + it->second + kAnotherMachine);
}

void refuse_own_models_as_prior(const std::string& name, const ModelSet& prior, const OwnMeasurements& own) {
  for (const auto& in : prior.raw().value("inputs", nlohmann::json::array())) {
    const auto it = in.is_object() ? own.files.find(in.value("fnv1a64", std::string())) : own.files.end();
    if (it != own.files.end())
      throw PriorOfOwnMeasurements(name + " was fitted from " + in.value("path", std::string("an input")) + ", the same file as " +
                                   it->second + kAnotherMachine);
  }
  for (const auto& g : prior.raw().value("groups", nlohmann::json::array())) {
    const nlohmann::json* measured = measured_points_of(g);
    if (!measured) continue;
    const std::string id = g.value("id", std::string());
    const auto it = own.points.find(id);
    if (it == own.points.end()) continue;
    std::size_t shared = 0;
    for (const auto& point : *measured) shared += point.is_string() && it->second.count(point.get<std::string>());
    if (shared > 0)
      throw PriorOfOwnMeasurements(name + " holds " + std::to_string(shared) + " measurement(s) of " + id +
                                   " (the same size and time) that " + own.whose + " holds under the same machine label" +
                                   kAnotherMachine);
  }
}

}  // namespace arfit::fit
