"""arfit from Python: measurements, fits, predictions with 90 % intervals, strategy choices and the engines' tables.

Every answer comes from arfit's C++ libraries (the extension ``arfit._core``), by the same calls the ``arfit``
command line makes, so the numbers and texts are those of the CLI to the bit. Arrays go in and come out whole:
no Python loop runs per point.

    import arfit
    samples = arfit.read_samples(["nccl_allreduce.txt"])          # a pandas DataFrame, the sample CSV's columns
    models = arfit.fit(samples, threads=2)
    p = models.predict("allreduce", bytes=np.logspace(10, 30, 21, base=2), nranks=8)   # DataFrame
    text = models.codegen("vllm", sm=90, map=["ONESHOT=custom", "SYMM=symm_mem"])

Errors are ``arfit.UsageError`` (a bad argument: what ``arfit`` exits 2 for; also a ``ValueError``) and
``arfit.DataError`` (bad input or a failed run: exit 1), both ``arfit.ArfitError``, with the CLI's messages.

The engine plugins (``arfit.plugins``) are plain Python and never import the extension, so that an engine
process loads them without it: importing this package loads ``arfit._core`` only when one of its calls (or
``__version__``) is first used.
"""
import importlib
import io
import os

from ._errors import ArfitError, DataError, UsageError  # noqa: F401


class _LazyCore:
    """arfit._core, imported at its first use."""

    def __getattr__(self, name):
        return getattr(importlib.import_module("arfit._core"), name)


_core = _LazyCore()


def __getattr__(name):
    if name == "__version__":
        return _core.__version__
    raise AttributeError("module 'arfit' has no attribute %r" % name)

__all__ = ["ArfitError", "DataError", "UsageError", "Models", "read_samples", "write_samples", "load_models", "fit",
           "evaluate", "effective_bytes", "formats", "__version__"]


def _pandas():
    import pandas  # imported when a DataFrame is asked for: the plugins and predict's dict form need none
    return pandas


def _paths(files):
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    return [os.fspath(f) for f in files]


def _sample_inputs(samples):
    """Files or DataFrames -> (paths, [(name, sample CSV text)])."""
    items = samples if isinstance(samples, (list, tuple)) else [samples]
    paths, texts = [], []
    for i, item in enumerate(items):
        if isinstance(item, (str, os.PathLike)):
            paths.append(os.fspath(item))
        elif hasattr(item, "to_csv"):
            texts.append(("<DataFrame %d>" % i, _csv_of_frame(item)))
        else:
            raise UsageError("samples: %r is neither a file path nor a DataFrame" % (item,))
    return paths, texts


def _csv_of_frame(frame):
    # The sample CSV reader checks every field as it checks a file (names, bounds, statuses): the DataFrame is
    # written as such a file, blanks for missing values.
    return "#arfit-samples v1\n" + frame.to_csv(index=False, na_rep="", lineterminator="\n")


def _numpy():
    import numpy
    return numpy


def read_samples(files, format="auto"):
    """Measurements of every format ``arfit ingest`` reads, as a DataFrame with the sample CSV's columns."""
    text = _core.samples_csv(_paths(files), format)
    return _pandas().read_csv(io.StringIO(text), comment="#", keep_default_na=False, na_values=[""],
                              dtype={"splits": str, "source": str, "device": str})


def write_samples(frame, path):
    """Writes a DataFrame of samples as arfit's sample CSV (checked as arfit reads one; written atomically)."""
    _core.write_samples(_csv_of_frame(frame), "<DataFrame>", os.fspath(path))


def load_models(path):
    """A models file written by ``arfit fit`` (or Models.save)."""
    return Models(_core.load_models(os.fspath(path)))


def fit(samples, priors=None, family="auto", threads=1, min_points=4, correction=True, joint=True, pool=True,
        format="auto"):
    """Fits every group of `samples` (files of any format, DataFrames, or a list of them) as ``arfit fit`` does;
    `priors` are other machines' Models (``arfit fit --prior``)."""
    paths, texts = _sample_inputs(samples)
    prior_models = [p._core for p in (priors or [])]
    return Models(_core.fit(paths, texts, format, prior_models, family, threads, min_points, correction, joint, pool))


def evaluate(samples, protocol, methods=None, threads=1, points=False, plan="auto", format="auto"):
    """Runs an evaluation protocol of ``arfit eval`` (interp2, sparse4, extrap, crossn, crosshw:K, alltoallv, select
    with `plan`): its JSON report as a dict, and with points=True also the per-point table as a DataFrame
    (``--points``; size protocols and alltoallv). The adaptive replay is the CLI's (``arfit eval --protocol adaptive``)."""
    import json
    paths, texts = _sample_inputs(samples)
    report, points_csv, _ = _core.evaluate(paths, texts, format, protocol, list(methods or []), threads, points, plan)
    result = json.loads(report)
    if points:
        return result, _pandas().read_csv(io.StringIO(points_csv))
    return result


def effective_bytes(splits, mode="sum", element_bytes=4):
    """The uniform all-to-all size an all-to-allv split stands for, per effective-size mode (sum, max_of_max,
    max_of_sum; model/alltoallv.h): what ``predict(..., splits=...)`` asks the all-to-all curves at."""
    splits = [splits] if isinstance(splits, str) else list(splits)
    return _core.effective_bytes(splits, mode, float(element_bytes))


def formats():
    """The names of ``arfit codegen --format``."""
    return _core.formats()


class Models:
    """A fitted model set: predictions with 90 % intervals, per-cell strategy choices, and the engines' tables."""

    def __init__(self, core):
        self._core = core

    @property
    def path(self):
        return self._core.path

    @property
    def systems(self):
        return self._core.systems

    def save(self, path):
        """Writes the models file (atomically; never over an input)."""
        self._core.save(os.fspath(path))

    def json(self):
        return self._core.json()

    def strategies(self, collective="allreduce", fusion="NONE", nranks=0, system=""):
        return self._core.strategies(system, collective, fusion, nranks)

    def predict(self, collective="allreduce", strategy="NCCL", bytes=None, tokens=None, hidden=None, nranks=0,
                nnodes=1, splits=None, dtype="", fusion="NONE", system="", sm=0, priors=None, frame=True):
        """Predicted time and 90 % interval for every point, as ``arfit predict --json`` answers each.

        Give sizes as `bytes`, or `tokens` and `hidden`, or all-to-allv `splits` (strings); `nranks` and `nnodes`
        and `sm` (0: the measured SM; another transfers the models, extrapolated) may be arrays too (0 GPUs: the
        file's only count). Arrays broadcast against each other. Returns a DataFrame
        (frame=False: a dict of numpy arrays) with bytes, time_us, lo_us, hi_us, busbw_gbps, extrapolated,
        transferred, how, and error (why nothing answers a point; its numbers are NaN).
        """
        given = (bytes is not None) + (tokens is not None or hidden is not None) + (splits is not None)
        if given != 1:
            raise UsageError("give exactly one of bytes, tokens/hidden, splits")
        if (tokens is None) != (hidden is None):
            raise UsageError("tokens and hidden go together")
        np = _numpy()
        split_list = None
        if splits is not None:
            split_list = [splits] if isinstance(splits, str) else [str(s) for s in splits]
            sizes = (np.arange(len(split_list)),)
        elif bytes is not None:
            sizes = (np.asarray(bytes, dtype=np.float64),)
        else:
            sizes = (np.asarray(tokens, dtype=np.int64), np.asarray(hidden, dtype=np.int64))
        arrays = np.broadcast_arrays(*sizes, np.asarray(nranks, dtype=np.int64), np.asarray(nnodes, dtype=np.int64),
                                     np.asarray(sm, dtype=np.int64))
        arrays = [np.ascontiguousarray(a.ravel()) for a in arrays]
        ranks, nodes, sms = arrays[-3], arrays[-2], arrays[-1]
        if split_list is not None:
            split_list = [split_list[i] for i in arrays[0]]
        result = _core.predict(
            self._core, [p._core for p in (priors or [])], collective, strategy, system, fusion, dtype,
            arrays[0].astype(np.float64) if bytes is not None else None,
            arrays[0] if tokens is not None else None, arrays[1] if tokens is not None else None,
            ranks, nodes, sms, split_list or [])
        result["extrapolated"] = result["extrapolated"].astype(bool)
        result["transferred"] = result["transferred"].astype(bool)
        if tokens is not None:
            result["tokens"], result["hidden"] = arrays[0], arrays[1]
        if split_list is not None:
            result["splits"] = split_list
        result["nranks"], result["nnodes"], result["sm"] = ranks, nodes, sms
        return _pandas().DataFrame(result) if frame else result

    def choose(self, **options):
        """The strategy table ``arfit codegen`` chooses from, one row per cell (tp, fusion, hidden, tokens): the
        choice, its predicted time, the runner-up, the margin, whether their intervals overlap, the expected regret.
        Options are codegen's (tp="2,4,8", fusion="all", hidden="128:8192", tokens="1:16384", dtype, sm, ...)."""
        return _pandas().DataFrame(_core.table(self._core, options))

    def suggest(self, top=20, **options):
        """The uncertain cells ranked by expected regret (``arfit suggest --json``), as a dict."""
        import json
        return json.loads(_core.suggest(self._core, options, top))

    def codegen(self, format, **options):
        """The text ``arfit codegen --format FORMAT`` writes, options as its long options (tp="2,4,8",
        map=["ONESHOT=custom"], consumer_version="0.33.0", ...)."""
        return _core.generate(self._core, format, options)[0]
