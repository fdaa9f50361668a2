# Hand-made, DELIBERATELY WRONG example (tests/codegen/engines self-test): it
# rebinds vLLM's module attribute instead of updating the dict in place, writes
# a row without world sizes 2/4/6 and a value above 8 MiB, and checks no
# version. Once custom_all_reduce.py is imported the rebinding has no effect;
# imported later, the short row makes vLLM < 0.33 raise KeyError.
CONSUMER = "vllm"
CONSUMER_VERSIONS = ("0.10.2", "0.33.0")

CUSTOM_ALL_REDUCE_MAX_SIZES = {"9.0": {8: 4294967297}}


def check_version(version):
    pass


def install():
    from vllm.distributed.device_communicators import all_reduce_utils

    merged = dict(all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES)
    merged.update(CUSTOM_ALL_REDUCE_MAX_SIZES)
    all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES = merged
