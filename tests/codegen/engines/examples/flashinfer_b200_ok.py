# Hand-made example of a generated file following generated_contract.md
# (tests/codegen/engines); values illustrative, each at or above the
# hidden-size-independent floor of notes/flashinfer.md section 2
# (T[2] >= 1, T[4] >= 4, T[8] >= 16, T[16] >= 64 MiB).
CONSUMER = "flashinfer"
CONSUMER_VERSIONS = ("0.5.0", "0.6.18")  # inclusive; the dict exists from v0.5.0rc1

USE_ONESHOT_HEURISTICS = {2: 8.0, 4: 8.0, 8: 16.0, 16: 64.0}


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
        raise RuntimeError("arfit flashinfer table: FlashInfer %s is not supported (this file is valid "
                           "for %s..%s)" % (version, CONSUMER_VERSIONS[0], CONSUMER_VERSIONS[-1]))


def install():
    import flashinfer

    check_version(getattr(flashinfer, "__version__", "unknown"))
    from flashinfer.comm import trtllm_ar

    table = getattr(trtllm_ar, "_use_oneshot_heuristics", None)
    if not isinstance(table, dict):
        raise RuntimeError("arfit flashinfer table: FlashInfer %s has no _use_oneshot_heuristics dict"
                           % flashinfer.__version__)
    table.update(USE_ONESHOT_HEURISTICS)  # in place; read at every call
