"""SGLang plugin: install arfit's NCCL crossovers into SGLang's custom all-reduce v2 configs in every scheduler
process, before the TP group's CustomAllReduceV2 is built.

Declared as the `sglang.srt.plugins` entry point `arfit = arfit.plugins.sglang:register`. SGLang's load_plugins()
(python/sglang/srt/plugins/__init__.py) calls every general plugin with no arguments, once per process; the
scheduler process of each rank calls it first thing in run_scheduler_process, before the Scheduler builds its
TP worker, model runner and communicators. Unlike vLLM, SGLang catches and logs any Exception a plugin raises
and starts anyway, so register() raises SystemExit (not an Exception) for a refused table: the scheduler process
exits and SGLang's launcher reports the rank dead instead of serving untuned.
"""
from arfit.plugins._table import install_table

CONSUMER = "sglang"
TABLE_VARIABLE = "ARFIT_SGLANG_TABLE"


def install(path=None):
    """Install the file written by `arfit codegen --format sglang` at `path` (default: $ARFIT_SGLANG_TABLE).

    Nothing happens when `path` is None and the variable is unset. RuntimeError naming the variable and the
    path when the file is missing, unreadable, not an sglang table, or refused by its own install() (a configs
    snapshot the file was not written for). Idempotent in a process. Returns the real path installed, or None.
    Also the one-line hook for an SGLang without the plugin framework: call it in each scheduler process before
    the communicators are built."""
    return install_table(CONSUMER, TABLE_VARIABLE, path)


def register():
    """The `sglang.srt.plugins` entry point: install() from $ARFIT_SGLANG_TABLE; SystemExit carrying the
    RuntimeError's message when the table is refused (SGLang would swallow the RuntimeError)."""
    try:
        install()
    except RuntimeError as error:
        raise SystemExit(str(error)) from error
