# Hand-made, DELIBERATELY WRONG example (tests/codegen/engines self-test), in
# the shape arfit's flashinfer generator wrote before issue 38: "never
# one-shot" as 0.0, no key for world size 16, no version check.
CONSUMER = "flashinfer"
CONSUMER_VERSIONS = ("0.5.0", "0.6.18")

USE_ONESHOT_HEURISTICS = {2: 0.0, 4: 0.0, 8: 0.0}


def check_version(version):
    pass


def install():
    from flashinfer.comm import trtllm_ar

    trtllm_ar._use_oneshot_heuristics.update(USE_ONESHOT_HEURISTICS)
