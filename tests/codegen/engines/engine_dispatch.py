#!/usr/bin/env python3
"""Ask a pinned engine fixture what it would do with each all-reduce.

    python3 engine_dispatch.py --fixture DIR [--generated FILE.py]
        [--install-call install] [--import-order before|after]
        [--env NAME=VALUE ...] [--fail-on-install-error]
        --queries QUERIES.json

DIR is one fixture root under fixtures/ (it holds the package `vllm`,
`sglang` or `flashinfer`). The harness puts DIR first on sys.path, imports the
engine's modules (before the generated file's install() with the default
--import-order before, i.e. the engine code is already loaded, as a plugin that
runs late would find it; `after` imports them only after install()), imports
FILE.py from its path and calls its install function, then answers every query
of QUERIES.json (a JSON list, or {"queries": [...]}; "-" reads stdin) and prints
one JSON document:

    {"engine": "vllm", "engine_version": "0.33.0", "fixture": DIR,
     "generated": FILE|null, "import_order": "before",
     "install": "ok"|"error"|"skipped", "install_error": "Type: msg"|null,
     "answers": [ {...}, ... ]}       # one answer per query, same order

Query and answer shapes are in README.md. An answer is either the engine's
decision or {"error": "<Type>: <message>"}, the exception the engine would
raise (while building the communicator or while dispatching). Exit status: 0
when every query was answered (install errors are reported, not fatal, unless
--fail-on-install-error: then 1); 2 for bad arguments or input.

Standard library only. One process answers thousands of queries.
"""
import argparse
import contextlib
import importlib
import importlib.util
import itertools
import json
import os
import sys

ENGINES = ("vllm", "sglang", "flashinfer")
_counter = itertools.count()
_inserted_paths = []


def format_exc(exc):
    return "%s: %s" % (type(exc).__name__, exc)


def detect_engine(fixture_dir):
    found = [e for e in ENGINES if os.path.isdir(os.path.join(fixture_dir, e))]
    if len(found) != 1:
        raise ValueError("fixture %s must hold exactly one of the packages %s (found %s)"
                         % (fixture_dir, ", ".join(ENGINES), found or "none"))
    return found[0]


def load_fixture(fixture_dir):
    """Make `fixture_dir` the only fixture on sys.path; forget earlier imports."""
    fixture_dir = os.path.abspath(fixture_dir)
    engine = detect_engine(fixture_dir)
    for name in list(sys.modules):
        if name.split(".")[0] in ENGINES:
            del sys.modules[name]
    while _inserted_paths:
        path = _inserted_paths.pop()
        while path in sys.path:
            sys.path.remove(path)
    sys.path.insert(0, fixture_dir)
    _inserted_paths.append(fixture_dir)
    importlib.invalidate_caches()
    package = importlib.import_module(engine)
    return engine, package


def load_generated(path):
    name = "arfit_generated_%d" % next(_counter)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("cannot import %s" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def patched_environ(overrides):
    """Set (value) or unset (None) environment variables for one query."""
    if not overrides:
        yield
        return
    saved = {k: os.environ.get(k) for k in overrides}
    try:
        for k, v in overrides.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = str(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def parse_capability(value):
    """ "9.0" / [9, 0] / (9, 0) / 90 -> (9, 0)."""
    if isinstance(value, str):
        major, _, minor = value.partition(".")
        return int(major), int(minor or 0)
    if isinstance(value, int):
        return value // 10, value % 10
    major, minor = value
    return int(major), int(minor)


# --------------------------------------------------------------------------
# vLLM
# --------------------------------------------------------------------------
class VllmAdapter:
    ENGINE_MODULES = (
        "vllm.distributed.device_communicators.all_reduce_utils",
        "vllm.distributed.device_communicators.custom_all_reduce",
        "vllm.distributed.device_communicators.symm_mem",
        "vllm.distributed.device_communicators.cuda_communicator",
    )
    OPTIONAL_MODULES = ("vllm.distributed.device_communicators.flashinfer_all_reduce",)

    def __init__(self):
        self.fixture = importlib.import_module("vllm._fixture")

    def preimport(self):
        for name in self.ENGINE_MODULES:
            importlib.import_module(name)
        for name in self.OPTIONAL_MODULES:
            try:
                importlib.import_module(name)
            except ModuleNotFoundError:
                pass

    def answer(self, q):
        fx = self.fixture
        s = fx.settings
        s.reset()
        s.capability = parse_capability(q.get("capability", "9.0"))
        s.multicast = bool(q.get("multicast", True))
        s.fully_connected = bool(q.get("fully_connected", True))
        s.p2p = bool(q.get("p2p", True))
        s.enable_custom_all_reduce = bool(q.get("custom_all_reduce", True))
        s.flashinfer_available = bool(q.get("flashinfer_available", True))
        s.symm_mem_available = bool(q.get("symm_mem_available", True))
        cc = importlib.import_module("vllm.distributed.device_communicators.cuda_communicator")
        with patched_environ(q.get("env")):
            try:
                comm = cc.CudaCommunicator(fx.Group("tp:0", int(q["world_size"])))
            except Exception as exc:  # what the engine raises while building
                return {"error": format_exc(exc), "stage": "construct"}
            ca = getattr(comm, "ca_comm", None)
            sm = getattr(comm, "symm_mem_comm", None)
            fi = getattr(comm, "fi_ar_comm", None)
            out = {
                "custom_max_size": ca.max_size if ca is not None and not ca.disabled else None,
                "symm_mem_max_size": sm.max_size if sm is not None and not sm.disabled else None,
                "flashinfer_max_size": (fi.max_workspace_size
                                        if fi is not None and not fi.disabled else None),
            }
            try:
                tensor = fx.make_tensor(int(q["nbytes"]), q.get("dtype", "bfloat16"),
                                        int(q.get("ndim", 2)), q.get("hidden"),
                                        bool(q.get("contiguous", True)))
                out["path"] = comm.all_reduce(tensor)
            except Exception as exc:
                return {"error": format_exc(exc), "stage": "dispatch"}
        return out


# --------------------------------------------------------------------------
# SGLang custom all-reduce v2
# --------------------------------------------------------------------------
class SglangAdapter:
    CONFIGS = "sglang.srt.distributed.device_communicators.configs.custom_all_reduce_v2"
    CA_V2 = "sglang.srt.distributed.device_communicators.custom_all_reduce_v2"

    def __init__(self):
        self.fixture = importlib.import_module("sglang._fixture")
        self._device_key = None

    def preimport(self):
        importlib.import_module(self.CONFIGS)
        importlib.import_module(self.CA_V2)

    def clear_caches(self):
        """functools caches of the configs module and of ca_v2's bindings.

        Follows __wrapped__ chains, so a wrapper installed with functools.wraps
        over a cached function gets its original's cache cleared too."""
        seen = set()
        for modname in (self.CONFIGS, self.CA_V2):
            mod = sys.modules.get(modname)
            if mod is None:
                continue
            for obj in list(vars(mod).values()):
                depth = 0
                while obj is not None and callable(obj) and depth < 16:
                    if id(obj) not in seen:
                        seen.add(id(obj))
                        clear = getattr(obj, "cache_clear", None)
                        if callable(clear):
                            clear()
                    obj = getattr(obj, "__wrapped__", None)
                    depth += 1

    def answer(self, q):
        fx = self.fixture
        s = fx.settings
        s.reset()
        s.capability = parse_capability(q.get("arch", (9, 0)))
        s.num_sm = q.get("num_sm")
        s.multicast = bool(q.get("multicast", True))
        s.multinode = bool(q.get("multinode", False))
        s.tc_piecewise = bool(q.get("tc_piecewise", False))
        s.usable = bool(q.get("usable", True))
        device_key = (s.capability, s.num_sm)
        if device_key != self._device_key:
            # One process sees one device in SGLang; a new device means new caches.
            self.clear_caches()
            self._device_key = device_key
        context = q.get("context", "eager")
        if context not in ("graph", "eager"):
            return {"error": "ValueError: context must be 'graph' or 'eager'"}
        ca_v2 = importlib.import_module(self.CA_V2)
        try:
            ca = ca_v2.CustomAllReduceV2(fx.Group(int(q["world_size"])))
        except Exception as exc:
            return {"error": format_exc(exc), "stage": "construct"}
        if ca.disabled:
            return {"algo": "nccl", "custom_disabled": True}
        out = {"max_pull_size": ca.max_pull_size, "max_push_size": ca.max_push_size}
        try:
            tensor = fx.make_tensor(int(q["nbytes"]), q.get("dtype", "bfloat16"),
                                    bool(q.get("contiguous", True)))
            with contextlib.ExitStack() as stack:
                if context == "graph":
                    stack.enter_context(ca.capture())
                    s.capturing = True
                use_graph = ca._can_use_graph()
                out["graph"] = bool(use_graph)
                if not ca.should_custom_ar(tensor):
                    out["algo"] = "nccl"
                    return out
                nbytes = tensor.numel() * tensor.element_size()
                if hasattr(ca, "_pick_algo"):
                    algo, mode = ca._pick_algo(nbytes, use_graph)
                    name = algo.value
                    if mode.name == "MULTICAST":
                        name += "_mc"
                else:
                    cfg = ca._pick_config(nbytes, use_graph)
                    name = cfg.algo.value
                    if name == "2shot_pull" and cfg.use_multicast:
                        name += "_mc"
                    if name == "2shot_push":
                        out["multicast"] = bool(cfg.use_multicast)
                out["algo"] = name
        except Exception as exc:
            return {"error": format_exc(exc), "stage": "dispatch"}
        finally:
            s.capturing = False
        return out


# --------------------------------------------------------------------------
# FlashInfer trtllm all-reduce fusion
# --------------------------------------------------------------------------
class FlashinferAdapter:
    ENGINE_MODULES = ("flashinfer.comm.trtllm_ar",)

    def __init__(self):
        self.fixture = importlib.import_module("flashinfer._fixture")

    def preimport(self):
        for name in self.ENGINE_MODULES:
            importlib.import_module(name)

    def answer(self, q):
        fx = self.fixture
        ar = importlib.import_module("flashinfer.comm.trtllm_ar")
        try:
            dtype = fx.DTYPES[q.get("dtype", "bfloat16")]
            ws = int(q["world_size"])
            tokens = int(q["token_num"])
            hidden = int(q["hidden"])
            use_oneshot = q.get("use_oneshot")
            backend = q.get("backend", "trtllm")
            if backend == "mnnvl":
                try:
                    mnnvl = importlib.import_module("flashinfer.comm.trtllm_mnnvl_ar")
                except ModuleNotFoundError:
                    return {"error": "NotImplementedError: no MNNVL backend in this fixture"}
                if use_oneshot is None:
                    return {"algo": mnnvl.select_strategy(ws, tokens, hidden, dtype)}
                return {"algo": "oneshot" if use_oneshot else "twoshot"}
            if backend != "trtllm":
                return {"error": "ValueError: backend must be 'trtllm' or 'mnnvl'"}
            metadata = q.get("workspace")
            inp = fx.Tensor(dtype, (tokens, hidden))
            return {"algo": ar.trtllm_allreduce_fusion(inp, ws, tokens, hidden, use_oneshot,
                                                       metadata=metadata)}
        except Exception as exc:
            return {"error": format_exc(exc)}


ADAPTERS = {"vllm": VllmAdapter, "sglang": SglangAdapter, "flashinfer": FlashinferAdapter}


def run(fixture, queries, generated=None, install_call="install", import_order="before",
        env=None):
    """Answer `queries` against `fixture`, after installing `generated`. Returns the document."""
    import logging

    logging.disable(logging.CRITICAL)  # engine warnings (MAX_COMM_SIZE etc.) stay quiet
    with patched_environ(env or {}):
        engine, package = load_fixture(fixture)
        adapter = ADAPTERS[engine]()
        if import_order == "before":
            adapter.preimport()
        doc = {
            "engine": engine,
            "engine_version": getattr(package, "__version__", None),
            "fixture": os.path.abspath(fixture),
            "generated": os.path.abspath(generated) if generated else None,
            "import_order": import_order,
            "install": "skipped",
            "install_error": None,
        }
        if generated:
            try:
                module = load_generated(generated)
                getattr(module, install_call)()
                doc["install"] = "ok"
            except Exception as exc:
                doc["install"] = "error"
                doc["install_error"] = format_exc(exc)
        if import_order != "before":
            adapter.preimport()
        doc["answers"] = [adapter.answer(q) for q in queries]
    return doc


def read_queries(path):
    if path == "-":
        data = json.load(sys.stdin)
    else:
        with open(path) as f:
            data = json.load(f)
    if isinstance(data, dict):
        data = data.get("queries")
    if not isinstance(data, list) or not all(isinstance(q, dict) for q in data):
        raise ValueError("%s: expected a JSON list of query objects (or {\"queries\": [...]})"
                         % path)
    return data


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--fixture", required=True, help="fixture root, e.g. fixtures/vllm-0.33.0")
    p.add_argument("--generated", help="generated Python file to import and install")
    p.add_argument("--install-call", default="install", help="function to call (default install)")
    p.add_argument("--import-order", choices=("before", "after"), default="before",
                   help="import the engine modules before (default) or after install()")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                   help="environment for the whole run (set before the engine is imported)")
    p.add_argument("--queries", required=True, help="JSON file of queries, or - for stdin")
    p.add_argument("--fail-on-install-error", action="store_true",
                   help="exit 1 when install() raised")
    p.add_argument("--indent", type=int, default=None, help="pretty-print the JSON output")
    args = p.parse_args(argv)
    try:
        env = {}
        for item in args.env:
            name, sep, value = item.partition("=")
            if not sep or not name:
                raise ValueError("--env %r: expected NAME=VALUE" % item)
            env[name] = value
        detect_engine(args.fixture)
        if args.generated and not os.path.isfile(args.generated):
            raise ValueError("--generated %s: no such file" % args.generated)
        queries = read_queries(args.queries)
    except (OSError, ValueError) as exc:
        print("engine_dispatch: %s" % exc, file=sys.stderr)
        return 2
    doc = run(args.fixture, queries, generated=args.generated, install_call=args.install_call,
              import_order=args.import_order, env=env)
    json.dump(doc, sys.stdout, indent=args.indent)
    sys.stdout.write("\n")
    if args.fail_on_install_error and doc["install"] == "error":
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
