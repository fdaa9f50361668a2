"""Load a file written by `arfit codegen --format vllm|sglang|flashinfer` and run its install(), once per process.

Shared by the three engine plugins. The generated file carries the engine-specific logic (its version check,
the in-place merge, SGLang's snapshot detection); this module only finds the file, checks that it is an arfit
table for the expected engine, and turns every failure into a RuntimeError that names the environment variable
and the path, so that the engine refuses to start instead of running untuned.
"""
import importlib.machinery
import importlib.util
import itertools
import logging
import os
import sys

logger = logging.getLogger("arfit.plugins")

# (engine, real path) installed in this process. The engines guard their own loaders, but a process may still
# reach install() twice (the entry point and a direct call, two distributions declaring the entry point), and a
# forked child inherits both the patched engine and this set.
_installed = set()
_module_numbers = itertools.count()


def path_from_environment(variable):
    """The path in environment variable `variable`, or None when it is unset.

    An empty value is refused: `ARFIT_VLLM_TABLE=$TABLE` with TABLE unset would otherwise run untuned silently."""
    value = os.environ.get(variable)
    if value is None:
        logger.debug("arfit: %s is not set; the engine keeps its own thresholds", variable)
        return None
    if not value.strip():
        raise RuntimeError("arfit: %s is set but empty; set it to the path of a file written by arfit codegen, or "
                           "unset it to run the engine's own thresholds" % variable)
    return value


def load_table(path, consumer, where):
    """The generated module at `path`, checked to be an arfit table for `consumer`; RuntimeError naming `where`
    (the variable and the path) otherwise."""
    if not os.path.isfile(path):
        raise RuntimeError("arfit: %s: no such file (expected a file written by arfit codegen --format %s)"
                           % (where, consumer))
    name = "arfit_table_%s_%d" % (consumer, next(_module_numbers))
    # An explicit source loader: spec_from_file_location finds none for a file name without ".py".
    loader = importlib.machinery.SourceFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise RuntimeError("arfit: %s: not a Python file written by arfit codegen --format %s (%s: %s)"
                           % (where, consumer, type(error).__name__, error)) from error
    found = getattr(module, "CONSUMER", None)
    if found != consumer:
        raise RuntimeError("arfit: %s is not an arfit %s table (its CONSUMER is %r); write one with arfit codegen "
                           "--format %s" % (where, consumer, found, consumer))
    missing = [n for n in ("check_version", "install") if not callable(getattr(module, n, None))]
    missing += [] if getattr(module, "CONSUMER_VERSIONS", None) else ["CONSUMER_VERSIONS"]
    if missing:
        raise RuntimeError("arfit: %s has no %s; regenerate it with arfit codegen --format %s"
                           % (where, ", ".join(missing), consumer))
    return module


def install_table(consumer, variable, path=None):
    """Install the table at `path` (default: the path in environment variable `variable`) into the running
    `consumer` engine, once per process.

    Returns the real path installed, or None when `path` is None and the variable is unset. RuntimeError naming
    the variable (or the explicit path) for an empty variable, a missing, unreadable or foreign file, and for
    the generated install()'s own refusals: a version or a shape of the engine the file was not written for,
    whose message names both."""
    if path is None:
        path = path_from_environment(variable)
        if path is None:
            return None
        where = "%s=%s" % (variable, path)
    else:
        path = os.fspath(path)
        where = path
    real = os.path.realpath(path)
    if (consumer, real) in _installed:
        logger.debug("arfit: %s is already installed in this process", real)
        return real
    module = load_table(path, consumer, where)
    try:
        # The generated install() checks the running engine's version (SGLang: the shape of its configs) before
        # it changes anything, and raises RuntimeError naming the version and the file's range.
        module.install()
    except Exception as error:
        message = str(error)
        raise RuntimeError("arfit: %s: %s" % (where, message[len("arfit: "):] if message.startswith("arfit: ")
                                              else message)) from error
    _installed.add((consumer, real))
    logger.info("arfit: installed %s into %s (a table for %s)", real, consumer, ", ".join(module.CONSUMER_VERSIONS))
    return real
