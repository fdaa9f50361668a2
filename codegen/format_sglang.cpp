// --format sglang: the NCCL crossovers of SGLang's JIT custom all-reduce v2
// (python/sglang/srt/distributed/device_communicators/configs/custom_all_reduce_v2.py, per arch and world size,
// CUDA-graph and eager) under SGLang's rules (codegen/rules_sglang.h). The file gives, per context, the crossover x
// and apply(), which keeps SGLang's own algorithm choice below x and clips EVERY threshold and band of its tuned
// Heuristic to x (the lamport and two_shot_push bands of later snapshots too), so that SGLang runs its custom
// all-reduce exactly while nbytes <= x; install() recognises which shape of the configs file it meets.
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/python_install.h"
#include "codegen/rules_sglang.h"
#include "codegen/writers.h"

namespace arfit::codegen {

namespace {

std::string crossover_dict(const std::vector<ThresholdRow>& rows) {
  if (rows.empty()) return "None";
  return python_tp_dict(rows, "    ", [](const ThresholdRow& r) { return std::to_string(r.last_below_bytes()); },
                        [](const ThresholdRow& r) {
                          const std::string note = r.extrapolation_note();
                          return (r.last_below_bytes() == 0 ? std::string("never custom") : "custom up to " + human_bytes(double(r.last_below_bytes()))) +
                                 (note.empty() ? "" : "; " + note);
                        });
}

// The Python of apply() and install(): clip every field of the Heuristic, wrap the per-arch builders of the shape
// found, clear every cache SGLang keeps of them.
const char* kApplyAndInstall = R"PY(

_CONFIGS = "sglang.srt.distributed.device_communicators.configs.custom_all_reduce_v2"
_CA_V2 = "sglang.srt.distributed.device_communicators.custom_all_reduce_v2"
_S1_FIELDS = ("one_shot_push_threshold", "one_shot_pull_threshold", "two_shot_pull_threshold", "mc")
_SHAPES = {
    ("function", _S1_FIELDS): "s1-0fbab45d",
    ("function", _S1_FIELDS + ("lamport",)): "s2-09e7d8ed",
    ("dict", _S1_FIELDS): "s3-dict-configs",
    ("dict", _S1_FIELDS + ("two_shot_push", "two_shot_push_mc")): "s4-two-shot-push",
}
_CACHES = ("_sm90_configs", "_sm100_configs", "_sm107_configs", "_get_all_reduce_configs", "get_supported_world_sizes")


def _is_range(value):
    return isinstance(value, tuple) and getattr(value, "_fields", None) == ("min_bytes", "max_bytes")


def apply(heuristic, context, world_size):
    """SGLang's Heuristic for `context` ("graph" or "eager") with arfit's NCCL crossover x: every *_threshold and
    every (min_bytes, max_bytes) band clipped to x, two_shot_pull_threshold set to x, so that some custom algorithm
    runs for every nbytes <= x (SGLang's own choice among them) and none above. Other contexts and world sizes:
    unchanged."""
    table = NCCL_CROSSOVER.get(context)
    if table is None or world_size not in table:
        return heuristic
    x = table[world_size]
    changes = {}
    for name in heuristic._fields:
        value = getattr(heuristic, name)
        if name == "two_shot_pull_threshold":
            changes[name] = x
        elif name.endswith("_threshold"):
            changes[name] = min(value, x)
        elif _is_range(value):
            changes[name] = type(value)(min(value.min_bytes, x), min(value.max_bytes, x))
        else:
            raise RuntimeError("arfit: SGLang's Heuristic field %r is neither a threshold nor a band" % name)
    return heuristic._replace(**changes)


def _with_crossovers(config, world_size):
    return config._replace(graph=apply(config.graph, "graph", world_size), eager=apply(config.eager, "eager", world_size))


def snapshot_of(configs):
    """Which shape of configs/custom_all_reduce_v2.py `configs` has; RuntimeError for one this file does not know."""
    fields = tuple(getattr(getattr(configs, "Heuristic", None), "_fields", ()))
    if hasattr(configs, "_sm90_config") and hasattr(configs, "_sm100_config"):
        builders = "function"
    elif hasattr(configs, "_sm90_configs") and hasattr(configs, "_get_all_reduce_configs"):
        builders = "dict"
    else:
        builders = "unknown"
    snapshot = _SHAPES.get((builders, fields))
    if snapshot is None:
        names = sorted(n for n in vars(configs) if n.startswith(("_sm", "get_", "_get_")))
        raise RuntimeError("arfit: SGLang's configs/custom_all_reduce_v2.py has a shape this file was not written for "
                           "(builders: %s; Heuristic fields: %s); it knows %s"
                           % (", ".join(names) or "none", fields or "none", ", ".join(CONSUMER_VERSIONS)))
    return snapshot


def _wrap_builder(configs):
    """s1/s2: the per-arch builder, which get_all_reduce_config looks up at call time."""
    name = {9: "_sm90_config", 10: "_sm100_config"}[ARCH_MAJOR]
    tuned = getattr(configs, name)
    if getattr(tuned, "_arfit_installed", False):
        return

    @functools.wraps(tuned)
    def with_crossovers(world_size, *args, **kwargs):
        return _with_crossovers(tuned(world_size, *args, **kwargs), world_size)

    with_crossovers._arfit_installed = True
    setattr(configs, name, with_crossovers)


def _wrap_lookup(configs):
    """s3/s4: get_all_reduce_config itself (s4 swaps multinode bands in after the per-arch tables), on the file's
    arch only (SM107 has its own table); custom_all_reduce_v2.py's copy of the name follows when it was imported."""
    current = configs.get_all_reduce_config
    if not getattr(current, "_arfit_installed", False):
        tuned = current

        def on_this_arch():
            major, minor = configs.torch.cuda.get_device_capability()
            return major == ARCH_MAJOR and not (major == 10 and minor >= 7)

        @functools.wraps(tuned)
        def with_crossovers(world_size, *args, **kwargs):
            config = tuned(world_size, *args, **kwargs)
            return _with_crossovers(config, world_size) if on_this_arch() else config

        with_crossovers._arfit_installed = True
        with_crossovers.cache_clear = tuned.cache_clear
        configs.get_all_reduce_config = with_crossovers
        current = with_crossovers
    ca_v2 = sys.modules.get(_CA_V2)
    if ca_v2 is not None and getattr(ca_v2, "get_all_reduce_config", None) is getattr(current, "__wrapped__", None):
        ca_v2.get_all_reduce_config = current


def install():
    """Put the crossovers above into SGLang's tuned config of ARCH_MAJOR, for every CustomAllReduceV2 built
    afterwards (run it before SGLang builds its communicators, in every TP worker), and clear SGLang's caches of it.
    Idempotent; RuntimeError for a configs shape this file was not written for."""
    import importlib

    if ARCH_MAJOR not in (9, 10):
        raise RuntimeError("arfit: SGLang has no tuned custom all-reduce v2 table for SM%d0" % ARCH_MAJOR)
    try:
        configs = importlib.import_module(_CONFIGS)
    except ImportError as error:
        raise RuntimeError("arfit: SGLang has no %s (%s); this file knows %s"
                           % (_CONFIGS, error, ", ".join(CONSUMER_VERSIONS))) from error
    snapshot = snapshot_of(configs)
    check_version(snapshot)
    if snapshot in ("s1-0fbab45d", "s2-09e7d8ed"):
        _wrap_builder(configs)
    else:
        _wrap_lookup(configs)
    for name in _CACHES:
        clear = getattr(getattr(configs, name, None), "cache_clear", None)
        if clear is not None:
            clear()
    configs.get_all_reduce_config.cache_clear()
)PY";

}  // namespace

std::string write_sglang(const SglangConfig& c, const Banner& banner) {
  std::ostringstream s;
  s << banner_text(banner, "# ", "SGLang custom all-reduce v2 NCCL crossovers for SM" + std::to_string(c.sm) +
                                     ", chosen from fitted models.");
  s << python_roles_comment(c.roles) << "#\n";
  s << "# SGLang runs its custom all-reduce while nbytes <= NCCL_CROSSOVER[context][world_size] and NCCL above, once\n"
       "# install() has put the crossover into SGLang's tuned Heuristics. Contexts missing here (None) and world sizes\n"
       "# not listed keep SGLang's tuned values.\n";
  for (const auto& note : sglang_engine_notes(c.snapshots)) s << comment_lines(note, "# ", 118);
  s << python_disagreement_comments(c.graph, "CUDA-graph crossover");
  s << python_disagreement_comments(c.eager, "eager crossover");
  s << "import functools\nimport sys\n\n";
  s << python_snapshot_guard("sglang", c.snapshots) << "\n\n";
  s << "ARCH_MAJOR = " << c.sm / 10 << "\n";
  s << "NCCL_CROSSOVER = {\n    \"graph\": " << crossover_dict(c.graph) << ",\n    \"eager\": " << crossover_dict(c.eager)
    << ",\n}\n";
  s << kApplyAndInstall;
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

// No custom algorithm runs above SGLang's pull workspace.
void keep_in_workspace(std::vector<ThresholdRow>& rows) {
  for (auto& row : rows)
    clamp_boundary(row, 0, static_cast<std::uint64_t>(kSglangPullWorkspaceBytes),
                   "lowered to 16 MiB, SGLang's pull workspace, above which no custom algorithm runs");
}

FormatOutput generate_sglang(const FormatInput& in) {
  const auto& specs = sglang_roles();
  refuse_base(in.request, "sglang", "SGLang's tuned values are code, kept at run time for every world size and context "
                                    "the file does not list");
  const std::vector<std::string> snapshots = sglang_versions(in.request.consumer_version);
  const EnginePlanner p = engine_planner(in, "sglang", specs);
  require_role(p.roles, specs[2], "sglang");
  if (!p.has("custom_graph") && !p.has("custom_eager")) require_role(p.roles, specs[0], "sglang");
  if (in.request.sm / 10 != 9 && in.request.sm / 10 != 10)
    throw std::invalid_argument("--sm " + std::to_string(in.request.sm) + ": SGLang's custom all-reduce v2 has tuned tables "
                                "for SM90 and SM100 only (other archs take a fixed default arfit does not replace)");
  SglangConfig c;
  c.sm = in.request.sm;
  c.snapshots = snapshots;
  c.roles = p.roles;
  if (p.has("custom_graph")) c.graph = p.plan("custom_graph", "nccl");
  if (p.has("custom_eager")) c.eager = p.plan("custom_eager", "nccl");
  if (c.graph.empty() && c.eager.empty())
    throw std::invalid_argument("--tp: no TP size has models of both SGLang's custom all-reduce and NCCL");
  keep_in_workspace(c.graph);
  keep_in_workspace(c.eager);
  std::ostringstream s;
  s << "crossovers for " << c.graph.size() << " world sizes (CUDA graph), " << c.eager.size() << " (eager), arch SM"
    << c.sm / 10 << "x, SGLang configs " << join(c.snapshots, ", ");
  for (const auto& l : describe_disagreements(c.graph, "CUDA-graph crossover")) s << "; " << l;
  for (const auto& l : describe_disagreements(c.eager, "eager crossover")) s << "; " << l;
  for (const auto& l : describe_extrapolations(c.graph)) s << "; CUDA graph " << l;
  for (const auto& l : describe_extrapolations(c.eager)) s << "; eager " << l;
  return {write_sglang(c, in.banner), s.str()};
}

}  // namespace

FormatSpec sglang_format() {
  return {"sglang", "SGLang custom_all_reduce_v2 NCCL crossovers per arch, CUDA-graph and eager", &generate_sglang};
}

}  // namespace arfit::codegen
