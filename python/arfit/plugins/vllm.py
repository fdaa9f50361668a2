"""vLLM plugin: install arfit's custom all-reduce sizes in every vLLM process, before the communicators are built.

Declared as the `vllm.general_plugins` entry point `arfit = arfit.plugins.vllm:register`. vLLM's
load_general_plugins() (vllm/plugins/__init__.py, 0.10.2 to 0.33.0) calls every general plugin with no arguments,
once per process, in process 0, the engine core and every worker (WorkerWrapperBase.init_worker, before
init_device builds CudaCommunicator and CustomAllreduce, which read CUSTOM_ALL_REDUCE_MAX_SIZES once). What a
plugin raises there is not caught: a refused table stops vLLM from starting, which is the point.
"""
from arfit.plugins._table import install_table

CONSUMER = "vllm"
TABLE_VARIABLE = "ARFIT_VLLM_TABLE"


def install(path=None):
    """Install the file written by `arfit codegen --format vllm` at `path` (default: $ARFIT_VLLM_TABLE).

    Nothing happens when `path` is None and the variable is unset. RuntimeError naming the variable and the
    path when the file is missing, unreadable, not a vllm table, or refused by its own install() (a vLLM
    version outside the file's range, a capability without symmetric memory). Idempotent in a process.
    Returns the real path installed, or None."""
    return install_table(CONSUMER, TABLE_VARIABLE, path)


def register():
    """The `vllm.general_plugins` entry point: install() from $ARFIT_VLLM_TABLE."""
    install()
