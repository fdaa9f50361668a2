// --format vllm: vLLM's CUSTOM_ALL_REDUCE_MAX_SIZES (vllm/distributed/device_communicators/all_reduce_utils.py):
// per compute capability and world size, the size up to which vLLM's custom all-reduce runs. CustomAllreduce
// takes min(table[capability][world_size], max_size) and should_custom_ar runs the custom kernel while
// inp_size < that, NCCL from there up. The one-shot/two-shot switch (csrc/custom_all_reduce.cuh: 2 GPUs always
// one-stage; up to 4 GPUs below 512 KiB, up to 8 below 256 KiB) is compiled in; it is written alongside when the
// models have one-shot and two-shot strategies.
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/writers.h"

namespace arfit::codegen {

std::string vllm_capability(int sm) { return std::to_string(sm / 10) + "." + std::to_string(sm % 10); }

std::uint64_t vllm_max_size(const ThresholdRow& row) { return row.split == 0 ? 0 : row.last_below_bytes() + 1; }

namespace {

// `taken`: what runs below the size ("custom", "one-shot"); the comment names the largest size that takes it
// (vLLM compares inp_size < the value).
std::string max_size_dict(const std::string& name, const std::string& taken, const std::string& capability,
                          const std::vector<ThresholdRow>& rows) {
  return name + " = {\n    \"" + capability + "\": " +
         python_tp_dict(rows, "    ", [](const ThresholdRow& r) { return std::to_string(vllm_max_size(r)); },
                        [&taken](const ThresholdRow& r) {
                          return vllm_max_size(r) == 0 ? "never " + taken : taken + " up to " + human_bytes(double(r.last_below_bytes()));
                        }) +
         ",\n}\n";
}

}  // namespace

std::string write_vllm(const VllmConfig& c, const Banner& banner) {
  const std::string cap = vllm_capability(c.sm);
  std::ostringstream s;
  s << banner_text(banner, "# ", "vLLM custom all-reduce sizes for compute capability " + cap + ", chosen from fitted models.");
  s << python_roles_comment(c.roles) << "#\n";
  s << "# vLLM runs its custom all-reduce while inp_size < CUSTOM_ALL_REDUCE_MAX_SIZES[capability][world_size] (bytes)\n"
       "# and NCCL from there up (custom_all_reduce.py, should_custom_ar). It reads the table when symmetric memory is\n"
       "# enabled and caps it at CustomAllreduce's max_size (8 MiB by default). World sizes missing here keep vLLM's\n"
       "# values. Install: call install() before vLLM builds its communicators, or merge the dict into\n"
       "# vllm/distributed/device_communicators/all_reduce_utils.py.\n";
  s << python_disagreement_comments(c.custom_vs_nccl, "size threshold");
  s << max_size_dict("CUSTOM_ALL_REDUCE_MAX_SIZES", "custom", cap, c.custom_vs_nccl) << "\n";
  s << "# The one-shot/two-shot switch: one-stage kernel while the message is below this size (bytes), two-stage from\n"
       "# there up. vLLM compiles its switch into csrc/custom_all_reduce.cuh (REDUCE_CASE); using these sizes means\n"
       "# editing that condition and rebuilding.\n";
  if (c.oneshot_vs_twoshot.empty()) {
    s << "# Not modelled: the models have no one-shot and two-shot strategies (ONESHOT, TWOSHOT or --map).\n";
    s << "ONESHOT_MAX_SIZES = None\n";
  } else {
    s << python_disagreement_comments(c.oneshot_vs_twoshot, "size switch");
    s << max_size_dict("ONESHOT_MAX_SIZES", "one-shot", cap, c.oneshot_vs_twoshot);
  }
  s << R"(

def install():
    """Merge CUSTOM_ALL_REDUCE_MAX_SIZES into vLLM's table (custom_all_reduce.py reads the same dict object)."""
    from vllm.distributed.device_communicators import all_reduce_utils

    for capability, sizes in CUSTOM_ALL_REDUCE_MAX_SIZES.items():
        all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES.setdefault(capability, {}).update(sizes)
)";
  return s.str();
}

namespace {

bool is_vllm_custom(const std::string& n) {
  return n.rfind("vllm", 0) == 0 && n.find("custom") != std::string::npos && n.find("eager") == std::string::npos;
}

const std::vector<RoleSpec>& vllm_roles() {
  static const std::vector<RoleSpec> roles{
      {"custom", &is_vllm_custom, "vLLM's custom all-reduce: vllm*custom*, not eager (vLLM captures decode in CUDA graphs)"},
      {"nccl", &is_nccl_name, "NCCL"},
      {"oneshot", &is_oneshot_name, "ONESHOT"},
      {"twoshot", &is_twoshot_name, "TWOSHOT"}};
  return roles;
}

FormatOutput generate_vllm(const FormatInput& in) {
  const auto& specs = vllm_roles();
  const EnginePlanner p = engine_planner(in, "vllm", specs);
  require_role(p.roles, specs[0], "vllm");
  require_role(p.roles, specs[1], "vllm");
  VllmConfig c;
  c.sm = in.request.sm;
  c.roles = p.roles;
  c.custom_vs_nccl = p.plan("custom", "nccl");
  if (c.custom_vs_nccl.empty())
    throw std::invalid_argument("--tp: no TP size has models of both the custom all-reduce and NCCL");
  if (p.has("oneshot") && p.has("twoshot")) c.oneshot_vs_twoshot = p.plan("oneshot", "twoshot");
  std::ostringstream s;
  s << c.custom_vs_nccl.size() << " world sizes for capability " << vllm_capability(c.sm);
  for (const auto& l : describe_disagreements(c.custom_vs_nccl, "size threshold")) s << "; " << l;
  return {write_vllm(c, in.banner), s.str()};
}

}  // namespace

FormatSpec vllm_format() {
  return {"vllm", "vLLM CUSTOM_ALL_REDUCE_MAX_SIZES (custom all-reduce vs NCCL) and the one-/two-shot switch size",
          &generate_vllm};
}

}  // namespace arfit::codegen
