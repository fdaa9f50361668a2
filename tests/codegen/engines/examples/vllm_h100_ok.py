# Hand-made example of a generated file following generated_contract.md
# (tests/codegen/engines), written before arfit's generators emit it; the
# values are illustrative, not fitted. vLLM, H100 (capability "9.0").
CONSUMER = "vllm"
CONSUMER_VERSIONS = ("0.10.2", "0.33.0")  # inclusive min and max release

CUSTOM_ALL_REDUCE_MAX_SIZES = {
    "9.0": {2: 8388608, 4: 1048576, 6: 524288, 8: 131072},
}


def _release(version):
    parts = []
    for piece in str(version).split("+")[0].split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def check_version(version):
    lo, hi = (_release(v) for v in (CONSUMER_VERSIONS[0], CONSUMER_VERSIONS[-1]))
    if not _release(version) or not lo <= _release(version) <= hi:
        raise RuntimeError("arfit vllm table: vLLM %s is not supported (this file is valid for %s..%s)"
                           % (version, CONSUMER_VERSIONS[0], CONSUMER_VERSIONS[-1]))


def install():
    import vllm

    check_version(getattr(vllm, "__version__", "unknown"))
    from vllm.distributed.device_communicators import all_reduce_utils

    table = getattr(all_reduce_utils, "CUSTOM_ALL_REDUCE_MAX_SIZES", None)
    if not isinstance(table, dict):
        raise RuntimeError("arfit vllm table: vLLM %s has no CUSTOM_ALL_REDUCE_MAX_SIZES dict"
                           % vllm.__version__)
    for capability, sizes in CUSTOM_ALL_REDUCE_MAX_SIZES.items():
        table.setdefault(capability, {}).update(sizes)  # in place: never rebind
