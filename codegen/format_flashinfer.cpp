// --format flashinfer: FlashInfer's _use_oneshot_heuristics (flashinfer/comm/trtllm_ar.py), the one-shot
// thresholds of trtllm_allreduce_fusion in MiB per world size, under FlashInfer's rules (codegen/rules_flashinfer.h):
// every world size it runs has a value, none below the floor that keeps decode steps off its two-shot assert,
// none above MAX_COMM_SIZE; world sizes arfit does not decide keep FlashInfer's own value (or --base's).
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/python_dict.h"
#include "codegen/python_install.h"
#include "codegen/rules_flashinfer.h"
#include "codegen/safe_text.h"
#include "codegen/writers.h"
#include "model/errors.h"
#include "model/text.h"

namespace arfit::codegen {

double flashinfer_oneshot_mib(const ThresholdRow& row) { return flashinfer_comm_mib(static_cast<double>(row.last_below_bytes()), row.tp); }

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// A Python float literal that reads back as exactly `v` (17 significant digits, always with a '.' or exponent).
std::string python_float(double v) {
  std::string s = format_number(v, "%.17g");
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

// FlashInfer's own values: the --base file's _use_oneshot_heuristics, else those of 0.5.0 to 0.6.18.
std::map<int, double> own_values(const Request& r) {
  if (r.base_path.empty()) return flashinfer_default_heuristics();
  const PyDict d = read_python_dict(r.base_text, r.base_path, "_use_oneshot_heuristics");
  if (!d.dicts.empty()) throw InputError(r.base_path, d.line, "_use_oneshot_heuristics", "holds a nested dict; FlashInfer's maps world sizes to numbers");
  std::map<int, double> out;
  for (const auto& [key, value] : d.numbers) {
    if (key.empty() || key.size() > 7 || key.find_first_not_of("0123456789") != std::string::npos)
      throw InputError(r.base_path, d.line, "_use_oneshot_heuristics", "key '" + key + "' is not a world size");
    if (!(value >= 0)) throw InputError(r.base_path, d.line, "_use_oneshot_heuristics", "world size " + key + ": negative threshold");
    out[std::stoi(key)] = value;
  }
  return out;
}

// arfit's row moved into FlashInfer's range: at least the floor (decode steps never reach the two-shot assert),
// at most MAX_COMM_SIZE (one-shot is downgraded above it). In bytes per rank.
void keep_in_range(ThresholdRow& row) {
  const auto floor_bytes = static_cast<std::uint64_t>(std::ceil(flashinfer_floor_mib(row.tp) * kMiB / (2.0 * row.tp)));
  const auto cap_bytes = static_cast<std::uint64_t>(std::floor(flashinfer_cap_mib() * kMiB / (2.0 * row.tp)));
  clamp_boundary(row, floor_bytes, cap_bytes,
                 row.last_below_bytes() < floor_bytes
                     ? "raised to " + python_float(flashinfer_floor_mib(row.tp)) + " (one-shot up to " +
                           human_bytes(double(floor_bytes)) + " per rank), the least that keeps every message of token_num <= " +
                           std::to_string(row.tp) + " off FlashInfer's two-shot assert at any hidden size"
                     : "lowered to " + python_float(flashinfer_cap_mib()) + ", MAX_COMM_SIZE, above which FlashInfer runs two-shot anyway");
}

FlashinferEntry decided_entry(const ThresholdRow& row) {
  const std::string note = row.extrapolation_note();
  return {row.tp, flashinfer_oneshot_mib(row),
          "arfit: " + (row.split == 0 && !row.imposed_boundary ? std::string("never one-shot")
                                                                : "one-shot up to " + human_bytes(double(row.last_below_bytes())) + " per rank") +
              (note.empty() ? "" : "; " + note)};
}

FlashinferEntry kept_entry(int ws, const std::map<int, double>& own, const std::string& whose) {
  const double floor = flashinfer_floor_mib(ws);
  const auto it = own.find(ws);
  if (it == own.end())
    return {ws, floor, "not decided by arfit; " + whose + " has none (FlashInfer raises KeyError without it): the floor"};
  if (it->second < floor)
    return {ws, floor, "not decided by arfit; " + whose + "'s " + python_float(it->second) + " would send token_num <= " +
                           std::to_string(ws) + " to two-shot's assert: the floor"};
  return {ws, it->second, "not decided by arfit: " + whose + "'s value"};
}

}  // namespace

std::string write_flashinfer(const FlashinferConfig& c, const Banner& banner) {
  std::ostringstream s;
  s << banner_text(banner, "# ", "FlashInfer trtllm_allreduce_fusion one-shot thresholds for SM" + std::to_string(c.sm) +
                                     ", chosen from fitted models.");
  s << python_roles_comment(c.roles) << "#\n";
  s << "# FlashInfer takes one-shot while token_num * hidden_dim * 2 * world_size * itemsize / MiB <=\n"
       "# _use_oneshot_heuristics[world_size] and two-shot above (trtllm_ar.py, _should_use_oneshot).\n";
  for (const auto& note : flashinfer_engine_notes(flashinfer_version_range().back())) s << comment_lines(note, "# ", 118);
  s << "# Install: install() in every process that runs the fused all-reduce, before the first call (it checks the\n"
       "# FlashInfer version first), or merge the dict into flashinfer/comm/trtllm_ar.py.\n";
  s << python_disagreement_comments(c.oneshot_vs_twoshot, "threshold");
  s << python_release_guard("flashinfer", flashinfer_version_range()) << "\n\n";
  s << "USE_ONESHOT_HEURISTICS = {\n";
  for (const auto& e : c.entries)
    s << "    " << e.world_size << ": " << python_float(e.mib) << ",  # " << comment_text(e.comment, CommentSyntax::Hash) << "\n";
  s << "}\n";
  s << R"PY(

def install():
    """Merge USE_ONESHOT_HEURISTICS into FlashInfer's _use_oneshot_heuristics (read at every call), after checking
    that the running FlashInfer is one this file was written for."""
    import flashinfer

    check_version(getattr(flashinfer, "__version__", "unknown"))
    from flashinfer.comm import trtllm_ar

    table = getattr(trtllm_ar, "_use_oneshot_heuristics", None)
    if not isinstance(table, dict):
        raise RuntimeError("arfit: flashinfer.comm.trtllm_ar has no _use_oneshot_heuristics dict to install into")
    table.update(USE_ONESHOT_HEURISTICS)
)PY";
  return s.str();
}

namespace {

const std::vector<RoleSpec>& flashinfer_roles() {
  static const std::vector<RoleSpec> roles{{"oneshot", &is_oneshot_name, "ONESHOT"}, {"twoshot", &is_twoshot_name, "TWOSHOT"}};
  return roles;
}

void require_flashinfer_world_sizes(const std::vector<int>& tps) {
  for (int tp : tps)
    if (std::find(flashinfer_world_sizes().begin(), flashinfer_world_sizes().end(), tp) == flashinfer_world_sizes().end())
      throw std::invalid_argument("--tp: FlashInfer's fused all-reduce runs 2, 4, 8 or 16 GPUs, not " + std::to_string(tp));
}

FormatOutput generate_flashinfer(const FormatInput& in) {
  const auto& specs = flashinfer_roles();
  const std::string version = flashinfer_version(in.request.consumer_version);
  const EnginePlanner p = engine_planner(in, "flashinfer", specs);
  for (const auto& spec : specs) require_role(p.roles, spec, "flashinfer");
  require_flashinfer_world_sizes(p.tps);
  FlashinferConfig c;
  c.sm = in.request.sm;
  c.version = version;
  c.roles = p.roles;
  c.oneshot_vs_twoshot = p.plan("oneshot", "twoshot");
  if (c.oneshot_vs_twoshot.empty())
    throw std::invalid_argument("--tp: no TP size has models of both the one-shot and the two-shot all-reduce");
  for (auto& row : c.oneshot_vs_twoshot) keep_in_range(row);
  const auto own = own_values(in.request);
  const std::string whose = in.request.base_path.empty() ? "FlashInfer " + c.version : in.request.base_path;
  for (int ws : flashinfer_world_sizes()) {
    const auto row = std::find_if(c.oneshot_vs_twoshot.begin(), c.oneshot_vs_twoshot.end(), [&](const ThresholdRow& r) { return r.tp == ws; });
    c.entries.push_back(row != c.oneshot_vs_twoshot.end() ? decided_entry(*row) : kept_entry(ws, own, whose));
  }
  std::ostringstream s;
  s << c.oneshot_vs_twoshot.size() << " of " << c.entries.size() << " world sizes decided by arfit (the others: " << whose
    << "'s values, at least the floor) for FlashInfer 0.5.0 to " << flashinfer_version_range().back();
  for (const auto& l : describe_disagreements(c.oneshot_vs_twoshot, "threshold")) s << "; " << l;
  for (const auto& l : describe_extrapolations(c.oneshot_vs_twoshot)) s << "; " << l;
  return {write_flashinfer(c, in.banner), s.str()};
}

}  // namespace

FormatSpec flashinfer_format() {
  return {"flashinfer", "FlashInfer _use_oneshot_heuristics (one-shot vs two-shot, MiB per world size)", &generate_flashinfer};
}

}  // namespace arfit::codegen
