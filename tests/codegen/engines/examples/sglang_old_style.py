# Hand-made, DELIBERATELY WRONG example (tests/codegen/engines self-test), in
# the shape arfit's sglang generator wrote before issue 38: apply() clips only
# S1's three thresholds and `mc` (so S2's lamport and S4's two_shot_push bands
# survive), and install() assumes the S1/S2 builder functions (so it raises
# AttributeError on S3/S4). Values as in sglang_b200_ok.py.
CONSUMER = "sglang"
CONSUMER_VERSIONS = ("s1-0fbab45d",)
ARCH_MAJOR = 10
NCCL_CROSSOVER = {
    "graph": {2: 8388608, 4: 0, 8: 1048576},
    "eager": {2: 8388608, 4: 0, 8: 1048576},
}


def check_version(version):
    pass


def apply(heuristic, context, world_size):
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
    from sglang.srt.distributed.device_communicators.configs import custom_all_reduce_v2 as configs

    for name in ("_sm90_config", "_sm100_config"):
        tuned = getattr(configs, name)

        def with_crossovers(world_size, num_sm, tuned=tuned):
            config = tuned(world_size, num_sm)
            return config._replace(graph=apply(config.graph, "graph", world_size),
                                   eager=apply(config.eager, "eager", world_size))

        setattr(configs, name, with_crossovers)
    configs.get_all_reduce_config.cache_clear()
