"""FlashInfer: install arfit's one-shot thresholds into trtllm_ar._use_oneshot_heuristics.

FlashInfer has no plugin mechanism; the process that runs FlashInfer's all-reduce fusion calls install() once,
any time before its first fused all-reduce (FlashInfer reads the dict at every call). In vLLM or SGLang that is
one line in a general plugin or a sitecustomize (docs/python_plugins.md).
"""
from arfit.plugins._table import install_table

CONSUMER = "flashinfer"
TABLE_VARIABLE = "ARFIT_FLASHINFER_TABLE"


def install(path=None):
    """Install the file written by `arfit codegen --format flashinfer` at `path` (default:
    $ARFIT_FLASHINFER_TABLE).

    Nothing happens when `path` is None and the variable is unset. RuntimeError naming the variable and the
    path when the file is missing, unreadable, not a flashinfer table, or refused by its own install() (a
    FlashInfer version outside the file's range, e.g. one before 0.5.0, which has no dict). Idempotent in a
    process. Returns the real path installed, or None."""
    return install_table(CONSUMER, TABLE_VARIABLE, path)
