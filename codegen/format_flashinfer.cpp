// --format flashinfer: FlashInfer's _use_oneshot_heuristics (flashinfer/comm/trtllm_ar.py), the one-shot
// thresholds of trtllm_allreduce_fusion in MiB per world size. _should_use_oneshot takes one-shot while
// token_num * hidden_dim * 2 * world_size * itemsize / MiB <= _use_oneshot_heuristics[world_size], two-shot above;
// the value is that "comm size" of the last one-shot message, so it scales with 2 x world size.
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/writers.h"
#include "model/text.h"

namespace arfit::codegen {

double flashinfer_oneshot_mib(const ThresholdRow& row) {
  return static_cast<double>(row.last_below_bytes()) * 2.0 * row.tp / (1024.0 * 1024.0);
}

namespace {

// A Python float literal that reads back as exactly `v` (17 significant digits, always with a '.' or exponent).
std::string python_float(double v) {
  std::string s = format_number(v, "%.17g");
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

std::string write_flashinfer(const FlashinferConfig& c, const Banner& banner) {
  std::ostringstream s;
  s << banner_text(banner, "# ", "FlashInfer trtllm_allreduce_fusion one-shot thresholds for SM" + std::to_string(c.sm) +
                                     ", chosen from fitted models.");
  s << python_roles_comment(c.roles) << "#\n";
  s << "# FlashInfer takes one-shot while token_num * hidden_dim * 2 * world_size * itemsize / MiB <=\n"
       "# _use_oneshot_heuristics[world_size] and two-shot above (trtllm_ar.py, _should_use_oneshot; it still falls back\n"
       "# to two-shot above its Lamport buffer, MAX_COMM_SIZE). World sizes missing here keep FlashInfer's values.\n"
       "# Install: call install() before the first all-reduce, or merge the dict into flashinfer/comm/trtllm_ar.py.\n";
  s << python_disagreement_comments(c.oneshot_vs_twoshot, "threshold");
  s << "USE_ONESHOT_HEURISTICS = "
    << python_tp_dict(c.oneshot_vs_twoshot, "", [](const ThresholdRow& r) { return python_float(flashinfer_oneshot_mib(r)); },
                      [](const ThresholdRow& r) {
                        return r.split == 0 ? std::string("never one-shot")
                                            : "one-shot up to " + human_bytes(double(r.last_below_bytes())) + " per rank";
                      })
    << "\n";
  s << R"(

def install():
    """Merge USE_ONESHOT_HEURISTICS into FlashInfer's _use_oneshot_heuristics (read at every call)."""
    from flashinfer.comm import trtllm_ar

    trtllm_ar._use_oneshot_heuristics.update(USE_ONESHOT_HEURISTICS)
)";
  return s.str();
}

namespace {

const std::vector<RoleSpec>& flashinfer_roles() {
  static const std::vector<RoleSpec> roles{{"oneshot", &is_oneshot_name, "ONESHOT"}, {"twoshot", &is_twoshot_name, "TWOSHOT"}};
  return roles;
}

FormatOutput generate_flashinfer(const FormatInput& in) {
  const auto& specs = flashinfer_roles();
  const EnginePlanner p = engine_planner(in, "flashinfer", specs);
  for (const auto& spec : specs) require_role(p.roles, spec, "flashinfer");
  FlashinferConfig c;
  c.sm = in.request.sm;
  c.roles = p.roles;
  c.oneshot_vs_twoshot = p.plan("oneshot", "twoshot");
  if (c.oneshot_vs_twoshot.empty())
    throw std::invalid_argument("--tp: no TP size has models of both the one-shot and the two-shot all-reduce");
  std::ostringstream s;
  s << c.oneshot_vs_twoshot.size() << " world sizes";
  for (const auto& l : describe_disagreements(c.oneshot_vs_twoshot, "threshold")) s << "; " << l;
  return {write_flashinfer(c, in.banner), s.str()};
}

}  // namespace

FormatSpec flashinfer_format() {
  return {"flashinfer", "FlashInfer _use_oneshot_heuristics (one-shot vs two-shot, MiB per world size)", &generate_flashinfer};
}

}  // namespace arfit::codegen
