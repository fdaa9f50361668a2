#include "planner/table.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>

#include "model/metrics.h"

namespace arfit::planner {

TargetTable::TargetTable(std::vector<PlanCase> cases, std::vector<std::vector<int>> cells)
    : cases_(std::move(cases)), cells_(std::move(cells)) {
  std::map<std::string, int> curve_ids;
  curve_of_.resize(cases_.size());
  cells_of_.resize(cases_.size());
  for (std::size_t k = 0; k < cases_.size(); ++k) {
    if (!(cases_[k].bytes > 0)) throw std::invalid_argument("planner: case " + std::to_string(k) + " has no positive size");
    const auto [it, fresh] = curve_ids.emplace(cases_[k].curve.id(), static_cast<int>(curve_cases_.size()));
    if (fresh) curve_cases_.emplace_back();
    curve_of_[k] = it->second;
    curve_cases_[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(k));
  }
  for (auto& members : curve_cases_)
    std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return cases_[a].bytes < cases_[b].bytes; });
  for (std::size_t i = 0; i < cells_.size(); ++i) {
    if (cells_[i].empty()) throw std::invalid_argument("planner: cell " + std::to_string(i) + " has no case");
    for (int k : cells_[i]) {
      if (k < 0 || static_cast<std::size_t>(k) >= cases_.size())
        throw std::invalid_argument("planner: cell " + std::to_string(i) + " names case " + std::to_string(k) + " of " +
                                    std::to_string(cases_.size()));
      cells_of_[static_cast<std::size_t>(k)].push_back(static_cast<int>(i));
    }
  }
}

std::size_t Measurements::count() const {
  return static_cast<std::size_t>(std::count_if(round.begin(), round.end(), [](int r) { return r >= 0; }));
}

double Measurements::spent_s() const {
  double s = 0;
  for (std::size_t k = 0; k < round.size(); ++k)
    if (round[k] >= 0) s += seconds[k];
  return s;
}

double measured_overhead_s(const Measurements& m, const CostModel& cost) {
  std::vector<double> beyond;
  for (std::size_t k = 0; k < m.round.size(); ++k)
    if (m.round[k] >= 0 && m.time_us[k] > 0) beyond.push_back(std::max(0.0, m.seconds[k] - cost.iterations_s(m.time_us[k])));
  return beyond.empty() ? 0.0 : size_median(beyond);
}

Measurements Measurements::before_round(int r) const {
  Measurements m(round.size());
  for (std::size_t k = 0; k < round.size(); ++k)
    if (round[k] >= 0 && round[k] < r) {
      m.time_us[k] = time_us[k];
      m.seconds[k] = seconds[k];
      m.round[k] = round[k];
    }
  return m;
}

}  // namespace arfit::planner
