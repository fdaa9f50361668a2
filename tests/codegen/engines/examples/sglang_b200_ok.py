# Hand-made example of a generated file following generated_contract.md
# (tests/codegen/engines); values illustrative, not fitted. SGLang custom
# all-reduce v2 on B200 (SM100): NCCL above each crossover; world size 4 says
# "never custom" (0).
import functools
import sys

CONSUMER = "sglang"
CONSUMER_VERSIONS = ("s1-0fbab45d", "s2-09e7d8ed", "s3-dict-configs", "s4-two-shot-push")
ARCH_MAJOR = 10

NCCL_CROSSOVER = {
    "graph": {2: 8388608, 4: 0, 8: 1048576},
    "eager": {2: 8388608, 4: 0, 8: 1048576},
}

_CONFIGS = "sglang.srt.distributed.device_communicators.configs.custom_all_reduce_v2"
_CA_V2 = "sglang.srt.distributed.device_communicators.custom_all_reduce_v2"
_S1_FIELDS = ("one_shot_push_threshold", "one_shot_pull_threshold", "two_shot_pull_threshold", "mc")
_SHAPES = {
    ("function", _S1_FIELDS): "s1-0fbab45d",
    ("function", _S1_FIELDS + ("lamport",)): "s2-09e7d8ed",
    ("dict", _S1_FIELDS): "s3-dict-configs",
    ("dict", _S1_FIELDS + ("two_shot_push", "two_shot_push_mc")): "s4-two-shot-push",
}
_DICT_CACHES = ("_sm90_configs", "_sm100_configs", "_sm107_configs", "_get_all_reduce_configs",
                "get_supported_world_sizes")


def check_version(version):
    if version not in CONSUMER_VERSIONS:
        raise RuntimeError("arfit sglang table: SGLang custom_all_reduce_v2 configs snapshot %s is not "
                           "supported (this file is valid for %s)" % (version, ", ".join(CONSUMER_VERSIONS)))


def _is_range(value):
    return isinstance(value, tuple) and getattr(value, "_fields", None) == ("min_bytes", "max_bytes")


def apply(heuristic, context, world_size):
    """`heuristic` with every band and threshold clipped to the crossover: custom up to it, NCCL above."""
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
    return heuristic._replace(**changes)


def _apply_config(config, world_size):
    return config._replace(graph=apply(config.graph, "graph", world_size),
                           eager=apply(config.eager, "eager", world_size))


def detect_snapshot(configs):
    heuristic = getattr(configs, "Heuristic", None)
    fields = tuple(getattr(heuristic, "_fields", ()))
    if hasattr(configs, "_sm90_config") and hasattr(configs, "_sm100_config"):
        builders = "function"
    elif hasattr(configs, "_sm90_configs") and hasattr(configs, "_get_all_reduce_configs"):
        builders = "dict"
    else:
        builders = "unknown"
    snapshot = _SHAPES.get((builders, fields))
    if snapshot is None:
        names = sorted(n for n in vars(configs) if n.startswith(("_sm", "get_", "_get_")))
        raise RuntimeError("arfit sglang table: unknown custom_all_reduce_v2 configs shape (builders: %s; "
                           "Heuristic fields: %s); this file knows %s"
                           % (", ".join(names) or "none", fields or "none", ", ".join(CONSUMER_VERSIONS)))
    return snapshot


def install():
    try:
        import importlib

        configs = importlib.import_module(_CONFIGS)
    except ImportError as exc:
        raise RuntimeError("arfit sglang table: SGLang has no %s (%s); this file knows %s"
                           % (_CONFIGS, exc, ", ".join(CONSUMER_VERSIONS))) from exc
    snapshot = detect_snapshot(configs)
    check_version(snapshot)
    if snapshot in ("s1-0fbab45d", "s2-09e7d8ed"):
        name = {9: "_sm90_config", 10: "_sm100_config"}[ARCH_MAJOR]
        tuned = getattr(configs, name)
        if not getattr(tuned, "_arfit_installed", False):
            @functools.wraps(tuned)
            def with_crossovers(world_size, num_sm):
                return _apply_config(tuned(world_size, num_sm), world_size)

            with_crossovers._arfit_installed = True
            setattr(configs, name, with_crossovers)  # looked up at call time by get_all_reduce_config
        configs.get_all_reduce_config.cache_clear()
        return
    current = configs.get_all_reduce_config
    if not getattr(current, "_arfit_installed", False):
        tuned = current

        def applies():
            major, minor = configs.torch.cuda.get_device_capability()
            return major == ARCH_MAJOR and not (major == 10 and minor >= 7)  # SM107 has its own table

        @functools.wraps(tuned)
        def with_crossovers(world_size, *args, **kwargs):  # keeps multinode= (S4)
            config = tuned(world_size, *args, **kwargs)
            return _apply_config(config, world_size) if applies() else config

        with_crossovers._arfit_installed = True
        with_crossovers.cache_clear = tuned.cache_clear
        configs.get_all_reduce_config = with_crossovers
        current = with_crossovers
    ca_v2 = sys.modules.get(_CA_V2)  # imported before us: its copy of the name must follow
    if ca_v2 is not None and getattr(ca_v2, "get_all_reduce_config", None) is getattr(current, "__wrapped__", None):
        ca_v2.get_all_reduce_config = current
    for name in _DICT_CACHES:
        fn = getattr(configs, name, None)
        if fn is not None and hasattr(fn, "cache_clear"):
            fn.cache_clear()
    current.cache_clear()
