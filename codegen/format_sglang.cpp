// --format sglang: the NCCL crossovers of SGLang's JIT custom all-reduce v2
// (python/sglang/srt/distributed/device_communicators/configs/custom_all_reduce_v2.py, per arch and world size,
// CUDA-graph and eager). SGLang's _pick_algo (custom_all_reduce_v2.py) runs 1shot_push while nbytes <=
// one_shot_push_threshold, 1shot_pull while <= one_shot_pull_threshold, multicast 2shot_pull inside `mc`,
// 2shot_pull while <= two_shot_pull_threshold, and NCCL above all of them. The file gives, per context, the
// crossover x and apply(), which keeps SGLang's own algorithm choice below x and clips every threshold (and the
// multicast range) to x, so SGLang runs its custom all-reduce exactly while nbytes <= x.
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/writers.h"

namespace arfit::codegen {

namespace {

std::string crossover_dict(const std::vector<ThresholdRow>& rows) {
  if (rows.empty()) return "None";
  return python_tp_dict(rows, "    ", [](const ThresholdRow& r) { return std::to_string(r.last_below_bytes()); },
                        [](const ThresholdRow& r) {
                          return r.split == 0 ? std::string("never custom") : "custom up to " + human_bytes(double(r.last_below_bytes()));
                        });
}

}  // namespace

std::string write_sglang(const SglangConfig& c, const Banner& banner) {
  std::ostringstream s;
  s << banner_text(banner, "# ", "SGLang custom all-reduce v2 NCCL crossovers for SM" + std::to_string(c.sm) +
                                     ", chosen from fitted models.");
  s << python_roles_comment(c.roles) << "#\n";
  s << "# SGLang runs its custom all-reduce while nbytes <= NCCL_CROSSOVER[context][world_size] and NCCL above, once\n"
       "# apply() has put the crossover into SGLang's tuned Heuristic (its workspace, 16 MiB pull by default, still\n"
       "# caps it). Contexts missing here (None) and world sizes not listed keep SGLang's tuned values. Install: call\n"
       "# install() before SGLang builds its communicators (it wraps configs/custom_all_reduce_v2.py's _sm90_config /\n"
       "# _sm100_config), or apply() to each Heuristic in get_all_reduce_config.\n";
  s << python_disagreement_comments(c.graph, "CUDA-graph crossover");
  s << python_disagreement_comments(c.eager, "eager crossover");
  s << "ARCH_MAJOR = " << c.sm / 10 << "\n";
  s << "NCCL_CROSSOVER = {\n    \"graph\": " << crossover_dict(c.graph) << ",\n    \"eager\": " << crossover_dict(c.eager)
    << ",\n}\n";
  s << R"(

def apply(heuristic, context, world_size):
    """SGLang's Heuristic for `context` ("graph" or "eager") with arfit's NCCL crossover: its own algorithms up to
    the crossover, every threshold and the multicast range clipped to it, NCCL above."""
    table = NCCL_CROSSOVER.get(context)
    if table is None or world_size not in table:
        return heuristic
    x = table[world_size]
    mc = heuristic.mc
    return heuristic._replace(
        one_shot_push_threshold=min(heuristic.one_shot_push_threshold, x),
        one_shot_pull_threshold=min(heuristic.one_shot_pull_threshold, x),
        two_shot_pull_threshold=x,
        mc=type(mc)(min(mc.min_bytes, x), min(mc.max_bytes, x)),
    )


def install():
    """Wrap SGLang's tuned config of ARCH_MAJOR so that get_all_reduce_config returns the crossovers above."""
    from sglang.srt.distributed.device_communicators.configs import custom_all_reduce_v2 as configs

    name = {9: "_sm90_config", 10: "_sm100_config"}.get(ARCH_MAJOR)
    if name is None:
        raise RuntimeError("SGLang has no tuned custom all-reduce v2 table for SM%d0" % ARCH_MAJOR)
    tuned = getattr(configs, name)

    def with_crossovers(world_size, num_sm):
        config = tuned(world_size, num_sm)
        return config._replace(
            graph=apply(config.graph, "graph", world_size),
            eager=apply(config.eager, "eager", world_size),
        )

    setattr(configs, name, with_crossovers)
    configs.get_all_reduce_config.cache_clear()
)";
  return s.str();
}

namespace {

bool is_sglang_custom(const std::string& n) { return n.rfind("sglang", 0) == 0 && n.find("custom") != std::string::npos; }
bool is_sglang_graph(const std::string& n) { return is_sglang_custom(n) && n.find("graph") != std::string::npos; }
bool is_sglang_eager(const std::string& n) { return is_sglang_custom(n) && n.find("eager") != std::string::npos; }

const std::vector<RoleSpec>& sglang_roles() {
  static const std::vector<RoleSpec> roles{
      {"custom_graph", &is_sglang_graph, "SGLang's custom all-reduce in CUDA-graph mode: sglang*custom*graph*"},
      {"custom_eager", &is_sglang_eager, "SGLang's custom all-reduce in eager mode: sglang*custom*eager*"},
      {"nccl", &is_nccl_name, "NCCL"}};
  return roles;
}

FormatOutput generate_sglang(const FormatInput& in) {
  const auto& specs = sglang_roles();
  const EnginePlanner p = engine_planner(in, "sglang", specs);
  require_role(p.roles, specs[2], "sglang");
  if (!p.has("custom_graph") && !p.has("custom_eager")) require_role(p.roles, specs[0], "sglang");
  SglangConfig c;
  c.sm = in.request.sm;
  c.roles = p.roles;
  if (p.has("custom_graph")) c.graph = p.plan("custom_graph", "nccl");
  if (p.has("custom_eager")) c.eager = p.plan("custom_eager", "nccl");
  if (c.graph.empty() && c.eager.empty())
    throw std::invalid_argument("--tp: no TP size has models of both SGLang's custom all-reduce and NCCL");
  std::ostringstream s;
  s << "crossovers for " << c.graph.size() << " world sizes (CUDA graph), " << c.eager.size() << " (eager), arch SM"
    << c.sm / 10 << "x";
  for (const auto& l : describe_disagreements(c.graph, "CUDA-graph crossover")) s << "; " << l;
  for (const auto& l : describe_disagreements(c.eager, "eager crossover")) s << "; " << l;
  return {write_sglang(c, in.banner), s.str()};
}

}  // namespace

FormatSpec sglang_format() {
  return {"sglang", "SGLang custom_all_reduce_v2 NCCL crossovers per arch, CUDA-graph and eager", &generate_sglang};
}

}  // namespace arfit::codegen
