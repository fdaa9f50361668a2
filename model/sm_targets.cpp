#include "model/sm_targets.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>

#include "model/group_model.h"
#include "model/text.h"

namespace arfit {

const std::vector<SmTarget>& sm_targets() {
  static const std::vector<SmTarget> v = {
      {80, "A100 SXM4 80GB", 300, false, 2039, "NVIDIA A100 Tensor Core GPU datasheet"},
      {89, "L40S / RTX 4090 (PCIe 4.0)", 32, true, 864, "NVIDIA L40S datasheet"},
      {90, "H100 SXM5 80GB", 450, false, 3350, "NVIDIA H100 Tensor Core GPU datasheet"},
      {100, "B200 (HGX B200)", 900, false, 8000, "NVIDIA DGX B200 / HGX B200 datasheet"},
      {103, "B300 / GB300", 900, false, 8000, "NVIDIA GB300 NVL72 product page"},
      {120, "RTX PRO 6000 Blackwell Server (PCIe 5.0)", 64, true, 1792, "NVIDIA RTX PRO 6000 Blackwell datasheet"},
  };
  return v;
}

int sm_from_device(const std::string& device) {
  const std::string d = upper(device);
  auto has = [&](const char* k) { return d.find(k) != std::string::npos; };
  // Most specific names first (GB300 before B300 before B200, RTX PRO 6000 before 6000).
  if (has("GB300") || has("B300")) return 103;
  if (has("GB200") || has("B200") || has("B100")) return 100;
  if (has("RTX PRO 6000") || has("RTX_PRO_6000") || has("5090") || has("BLACKWELL")) return 120;
  if (has("H100") || has("H200") || has("H800") || has("GH200")) return 90;
  if (has("L40") || has("4090") || has("L4") || has("ADA")) return 89;
  if (has("A100") || has("A800") || has("A30")) return 80;
  return 0;
}

std::string gpu_model_name(const std::string& device) {
  // Words split at spaces, hyphens and underscores; a capacity ("40GB", "80G", "141GB") or a memory kind ("HBM3",
  // "HBM2E", "GDDR6") is dropped.
  const std::string d = upper(device);
  std::string out, word;
  auto memory = [](const std::string& w) {
    if (w.rfind("HBM", 0) == 0 || w.rfind("GDDR", 0) == 0) return true;
    std::size_t digits = 0;
    while (digits < w.size() && std::isdigit(static_cast<unsigned char>(w[digits]))) ++digits;
    const std::string unit = w.substr(digits);
    return digits > 0 && (unit == "GB" || unit == "G" || unit == "GIB");
  };
  auto flush = [&] {
    if (!word.empty() && !memory(word)) out += (out.empty() ? "" : " ") + word;
    word.clear();
  };
  for (char ch : d) {
    if (ch == ' ' || ch == '-' || ch == '_') flush();
    else word += ch;
  }
  flush();
  return out;
}

int sm_from_label(const std::string& label) {
  if (const int d = sm_from_device(label)) return d;
  const std::string l = upper(label);
  for (std::size_t at = l.find("SM"); at != std::string::npos; at = l.find("SM", at + 1)) {
    if (at > 0 && std::isalnum(static_cast<unsigned char>(l[at - 1]))) continue;
    std::size_t end = at + 2;
    while (end < l.size() && std::isdigit(static_cast<unsigned char>(l[end]))) ++end;
    const std::size_t digits = end - at - 2;
    if ((digits == 2 || digits == 3) && (end == l.size() || !std::isalpha(static_cast<unsigned char>(l[end]))))
      return std::stoi(l.substr(at + 2, digits));
  }
  return 0;
}

int datasheet_sm(int sm, const std::string& device, const std::string& system) {
  if (sm > 0) return sm;
  if (int d = sm_from_device(device)) return d;
  return sm_from_label(system);
}

bool sm_from_label_only(int sm, const std::string& device, const std::string& system) {
  return sm <= 0 && sm_from_device(device) == 0 && sm_from_label(system) != 0;
}

std::string label_file_name(const std::string& label, const std::vector<std::string>& sources) {
  if (label.empty()) return "";
  for (const std::string& source : sources) {
    const std::string stem = std::filesystem::path(source).stem().string();
    if (stem == label) return source;
  }
  return "";
}

std::map<std::string, LabelOnlyMachine> machines_known_by_label_only(const nlohmann::json& models_groups, const std::string& system) {
  std::map<std::string, LabelOnlyMachine> out;
  if (!models_groups.is_array()) return out;
  for (const auto& g : models_groups) {
    if (!g.is_object() || !g.contains("key") || !g["key"].is_object()) continue;
    const std::string label = g["key"].value("system", std::string());
    const int sm = g.contains("sm") && g["sm"].is_number_integer() ? g["sm"].get<int>() : 0;
    const std::string device = g.contains("device") && g["device"].is_string() ? g["device"].get<std::string>() : std::string();
    if ((!system.empty() && label != system) || !sm_from_label_only(sm, device, label)) continue;
    std::vector<std::string> sources;
    if (const auto it = g.find("sources"); it != g.end() && it->is_array())
      for (const auto& s : *it)
        if (s.is_string()) sources.push_back(s.get<std::string>());
    LabelOnlyMachine& m = out[label];
    m.sm = sm_from_label(label);
    if (m.file_name.empty()) m.file_name = label_file_name(label, sources);
  }
  return out;
}

std::string label_only_machine_note(const std::string& label, const LabelOnlyMachine& m) {
  const std::string sm = "SM " + std::to_string(m.sm);
  if (!m.file_name.empty())
    return "machine '" + label + "' taken from the file name " + m.file_name + "; the file does not say its GPU (no device or SM): " +
           sm + " is read from the name";
  return "machine '" + label + "': " + sm + " is read from its label; no file says its GPU (no device or SM)";
}

std::string label_only_machine_how(const std::string& label, const LabelOnlyMachine& m) {
  const std::string sm = "SM " + std::to_string(m.sm);
  if (!m.file_name.empty()) return " (machine '" + label + "' taken from the file name " + m.file_name + ": " + sm + ")";
  return " (machine '" + label + "': " + sm + " from its label only)";
}

std::optional<SmTarget> find_sm_target(int sm) {
  for (const auto& t : sm_targets())
    if (t.sm == sm) return t;
  return std::nullopt;
}

std::optional<Prediction> transfer_prediction(const Prediction& p, double latency_us, int from_sm, int to_sm) {
  const auto a = find_sm_target(from_sm), b = find_sm_target(to_sm);
  if (!a || !b) return std::nullopt;
  const double ratio = a->interconnect_gbps / b->interconnect_gbps;
  const double lat = std::min(latency_us, p.time_us);
  Prediction out = p;
  out.time_us = lat + (p.time_us - lat) * ratio;
  const double h0 = 0.5 * (std::log(p.hi_us) - std::log(p.lo_us));
  const double h = std::sqrt(h0 * h0 + (kZ90 * kSmTransferLogSigma) * (kZ90 * kSmTransferLogSigma));
  out.lo_us = out.time_us * std::exp(-h);
  out.hi_us = out.time_us * std::exp(h);
  out.extrapolated = true;
  out.how = p.how + " sm-transfer " + std::to_string(from_sm) + "->" + std::to_string(to_sm);
  return out;
}

}  // namespace arfit
