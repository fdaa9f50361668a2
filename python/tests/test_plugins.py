"""arfit's engine plugins (python/arfit/plugins) against the pinned engine fixtures of tests/codegen/engines.

Each test installs a table that the built CLI generated from synthetic models (conftest.py) into a pure-Python
replica of vLLM, SGLang or FlashInfer, directly or through the engine's own entry-point loader, and asks the
engine's dispatch code (engine_dispatch.py's adapters) what it now runs. The fixtures share module names
(`vllm`, `sglang`, `flashinfer`), so the `engine` fixture forgets every engine module and arfit.plugins module
before and after each test.
"""
import copy
import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import engine_dispatch  # tests/codegen/engines, put on sys.path by conftest.py

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON_ROOT = REPO_ROOT / "python"
FIXTURES_DIR = REPO_ROOT / "tests" / "codegen" / "engines" / "fixtures"

MiB = 1024 * 1024
ENGINE_PACKAGES = ("vllm", "sglang", "flashinfer")
# Variables the plugins and the fixtures' loaders read; each test starts without them.
ENVIRONMENT = ("ARFIT_VLLM_TABLE", "ARFIT_SGLANG_TABLE", "ARFIT_FLASHINFER_TABLE", "VLLM_PLUGINS", "SGLANG_PLUGINS",
               "SGLANG_PLATFORM")
VLLM_FIXTURES = ("vllm-0.10.2", "vllm-0.11.0", "vllm-0.33.0")
SGLANG_FIXTURES = ("sglang-s1-0fbab45d", "sglang-s2-09e7d8ed", "sglang-s3-dict-configs", "sglang-s4-two-shot-push")
SGLANG_CONFIGS = "sglang.srt.distributed.device_communicators.configs.custom_all_reduce_v2"
WORLD_SIZES = (2, 4, 8)


def forget_engine_modules():
    for name in list(sys.modules):
        if (name.split(".")[0] in ENGINE_PACKAGES or name.startswith("arfit.plugins")
                or name.startswith("arfit_table_")):
            del sys.modules[name]


@pytest.fixture
def engine(monkeypatch):
    """engine("vllm-0.33.0", import_order="before") -> the harness adapter of that fixture, with the fixture first
    on sys.path and fresh modules of it and of arfit.plugins ("before": the engine's communicator modules are
    imported before the plugin runs, so names they imported by value are already bound; "after": only the
    package, the plugin imports the rest)."""
    for variable in ENVIRONMENT:
        monkeypatch.delenv(variable, raising=False)
    saved_path = list(sys.path)

    def use(fixture, import_order="before"):
        forget_engine_modules()
        name, _package = engine_dispatch.load_fixture(str(FIXTURES_DIR / fixture))
        adapter = engine_dispatch.ADAPTERS[name]()
        if import_order == "before":
            adapter.preimport()
        return adapter

    yield use
    forget_engine_modules()
    sys.path[:] = saved_path


def plugin(consumer):
    return importlib.import_module("arfit.plugins." + consumer)


def read_generated(path):
    """The generated module's values; loading it imports no engine (the generated file's contract)."""
    return engine_dispatch.load_generated(str(path))


def declare_entry_points(folder, monkeypatch, groups):
    """A distribution `arfit` on sys.path whose entry_points.txt declares `groups` ({group: "name = target"})."""
    dist_info = folder / "arfit-0.0.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: arfit\nVersion: 0.0.0\n")
    (dist_info / "entry_points.txt").write_text(
        "".join("[%s]\n%s\n\n" % (group, line) for group, line in groups.items()))
    monkeypatch.syspath_prepend(str(folder))
    return folder


# --------------------------------------------------------------------------------------------------------------
# vLLM
# --------------------------------------------------------------------------------------------------------------
# 0.10.2 reads the table only with torch symmetric memory on (its default is off); 0.33.0 runs FlashInfer's
# all-reduce before the custom one unless it is off.
VLLM_QUERY_ENV = {"VLLM_ALLREDUCE_USE_SYMM_MEM": "1", "VLLM_ALLREDUCE_USE_FLASHINFER": "0"}


def vllm_answer(adapter, fixture, world_size, nbytes):
    return adapter.answer({"capability": "9.0", "world_size": world_size, "nbytes": nbytes, "dtype": "bfloat16",
                           "env": VLLM_QUERY_ENV})


def assert_vllm_runs_bounds(adapter, fixture, bounds):
    """Custom all-reduce exactly below each world size's bound of `bounds` (the generated file's), torch
    symmetric memory at the bound."""
    for world_size in WORLD_SIZES:
        bound = bounds[world_size]
        below = vllm_answer(adapter, fixture, world_size, bound - 16)
        at = vllm_answer(adapter, fixture, world_size, bound)
        assert below["path"] == "custom", (fixture, world_size, bound, below)
        assert below["custom_max_size"] == bound, (fixture, world_size, below)
        assert at["path"] == "symm_mem", (fixture, world_size, bound, at)


def vllm_table():
    return importlib.import_module("vllm.distributed.device_communicators.all_reduce_utils").CUSTOM_ALL_REDUCE_MAX_SIZES


@pytest.mark.parametrize("import_order", ["before", "after"])
@pytest.mark.parametrize("fixture", VLLM_FIXTURES)
def test_vllm_register_installs_the_generated_bounds(engine, generate_table, monkeypatch, fixture, import_order):
    table = generate_table("vllm")
    bounds = read_generated(table).CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"]
    adapter = engine(fixture, import_order)
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(table))
    assert plugin("vllm").register() is None
    assert_vllm_runs_bounds(adapter, fixture, bounds)


@pytest.mark.parametrize("fixture", VLLM_FIXTURES)
def test_vllm_without_the_plugin_runs_other_bounds(engine, generate_table, fixture):
    # What the installing tests would see if register() did nothing: vLLM's own bounds, not the file's.
    bounds = read_generated(generate_table("vllm")).CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"]
    adapter = engine(fixture)
    differing = [ws for ws in WORLD_SIZES if vllm_answer(adapter, fixture, ws, bounds[ws])["path"] == "custom"]
    assert differing, "the synthetic models must give bounds that differ from vLLM %s's" % fixture


@pytest.mark.parametrize("fixture", ["vllm-0.10.2", "vllm-0.33.0"])
def test_vllm_general_plugins_loader_runs_register(engine, generate_table, monkeypatch, tmp_path, fixture):
    table = generate_table("vllm")
    bounds = read_generated(table).CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"]
    adapter = engine(fixture)
    declare_entry_points(tmp_path, monkeypatch, {"vllm.general_plugins": "arfit = arfit.plugins.vllm:register"})
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(table))
    importlib.import_module("vllm.plugins").load_general_plugins()
    assert_vllm_runs_bounds(adapter, fixture, bounds)


def test_vllm_plugins_filter_without_arfit_leaves_vllm_alone(engine, generate_table, monkeypatch, tmp_path):
    table = generate_table("vllm")
    engine("vllm-0.33.0")
    before = copy.deepcopy(vllm_table())
    declare_entry_points(tmp_path, monkeypatch, {"vllm.general_plugins": "arfit = arfit.plugins.vllm:register"})
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(table))
    monkeypatch.setenv("VLLM_PLUGINS", "some_other_plugin")
    importlib.import_module("vllm.plugins").load_general_plugins()
    assert vllm_table() == before


@pytest.mark.parametrize("fixture,running", [("vllm-0.33.0", "0.34.0"), ("vllm-0.10.2", "0.10.1")])
def test_vllm_refuses_a_version_outside_the_file_and_changes_nothing(engine, generate_table, monkeypatch,
                                                                     fixture, running):
    table = generate_table("vllm")
    engine(fixture)
    monkeypatch.setattr(importlib.import_module("vllm"), "__version__", running)
    before = copy.deepcopy(vllm_table())
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(table))
    with pytest.raises(RuntimeError) as refused:
        plugin("vllm").register()
    message = str(refused.value)
    for part in ("ARFIT_VLLM_TABLE", str(table), running, "0.10.2 to 0.33.0"):
        assert part in message
    assert vllm_table() == before


def test_vllm_refuses_a_capability_its_symmetric_memory_lacks(engine, generate_table, monkeypatch):
    # vLLM 0.10.2 has no "10.3" row: it would never read the file's table there.
    table = generate_table("vllm", "--sm", "103", "--transfer-sm")
    engine("vllm-0.10.2")
    before = copy.deepcopy(vllm_table())
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(table))
    with pytest.raises(RuntimeError, match="ARFIT_VLLM_TABLE=.*vLLM 0.10.2 runs no symmetric memory on compute "
                                           "capability 10.3"):
        plugin("vllm").register()
    assert vllm_table() == before


def test_vllm_loader_lets_the_refusal_stop_the_process(engine, generate_table, monkeypatch, tmp_path):
    # vLLM does not catch what a general plugin's call raises: the worker fails and vLLM does not start.
    table = generate_table("vllm")
    engine("vllm-0.33.0")
    monkeypatch.setattr(importlib.import_module("vllm"), "__version__", "0.35.1")
    before = copy.deepcopy(vllm_table())
    declare_entry_points(tmp_path, monkeypatch, {"vllm.general_plugins": "arfit = arfit.plugins.vllm:register"})
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(table))
    with pytest.raises(RuntimeError, match="ARFIT_VLLM_TABLE.*0.35.1"):
        importlib.import_module("vllm.plugins").load_general_plugins()
    assert vllm_table() == before


def test_vllm_register_twice_installs_once(engine, generate_table, monkeypatch):
    table = generate_table("vllm")
    engine("vllm-0.33.0")
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(table))
    plugin("vllm").register()
    assert vllm_table()["9.0"][2] == read_generated(table).CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"][2]
    vllm_table()["9.0"][2] = 4096  # a second install() would overwrite this
    plugin("vllm").register()
    assert plugin("vllm").install() == os.path.realpath(table)
    assert vllm_table()["9.0"][2] == 4096


# --------------------------------------------------------------------------------------------------------------
# SGLang
# --------------------------------------------------------------------------------------------------------------
def sglang_answer(adapter, context, world_size, nbytes):
    return adapter.answer({"arch": [9, 0], "world_size": world_size, "nbytes": nbytes, "context": context})


def sglang_answers(adapter, crossovers):
    """{(context, world size, nbytes): algorithm} at each crossover (rounded down to 16 bytes) and 16 above."""
    out = {}
    for context, by_world_size in crossovers.items():
        for world_size, crossover in by_world_size.items():
            at = crossover // 16 * 16
            for nbytes in (at, at + 16):
                out[(context, world_size, nbytes)] = sglang_answer(adapter, context, world_size, nbytes)["algo"]
    return out


def assert_sglang_runs_crossovers(adapter, crossovers):
    for (context, world_size, nbytes), algo in sglang_answers(adapter, crossovers).items():
        custom = nbytes <= crossovers[context][world_size]
        assert (algo != "nccl") == custom, (context, world_size, nbytes, algo)


@pytest.mark.parametrize("import_order", ["before", "after"])
@pytest.mark.parametrize("fixture", SGLANG_FIXTURES)
def test_sglang_register_installs_the_generated_crossovers(engine, generate_table, monkeypatch, fixture,
                                                           import_order):
    table = generate_table("sglang", "--sm", "90")
    crossovers = read_generated(table).NCCL_CROSSOVER
    adapter = engine(fixture, import_order)
    monkeypatch.setenv("ARFIT_SGLANG_TABLE", str(table))
    assert plugin("sglang").register() is None
    assert_sglang_runs_crossovers(adapter, crossovers)


@pytest.mark.parametrize("fixture", SGLANG_FIXTURES)
def test_sglang_without_the_plugin_runs_custom_above_the_crossovers(engine, generate_table, fixture):
    crossovers = read_generated(generate_table("sglang", "--sm", "90")).NCCL_CROSSOVER
    adapter = engine(fixture)
    above = [key for key, algo in sglang_answers(adapter, crossovers).items()
             if key[2] > crossovers[key[0]][key[1]] and algo != "nccl"]
    assert above, "the synthetic models must give crossovers below SGLang %s's own" % fixture


def test_sglang_load_plugins_runs_register(engine, generate_table, monkeypatch, tmp_path):
    table = generate_table("sglang", "--sm", "90")
    crossovers = read_generated(table).NCCL_CROSSOVER
    adapter = engine("sglang-s4-two-shot-push")
    declare_entry_points(tmp_path, monkeypatch, {"sglang.srt.plugins": "arfit = arfit.plugins.sglang:register"})
    monkeypatch.setenv("ARFIT_SGLANG_TABLE", str(table))
    monkeypatch.setenv("SGLANG_PLUGINS", " arfit ,other")
    importlib.import_module("sglang.srt.plugins").load_plugins()
    assert_sglang_runs_crossovers(adapter, crossovers)


def sglang_lookup_is_untouched():
    return not getattr(importlib.import_module(SGLANG_CONFIGS).get_all_reduce_config, "_arfit_installed", False)


def test_sglang_load_plugins_cannot_swallow_the_refusal(engine, generate_table, monkeypatch, tmp_path):
    # SGLang logs and ignores an Exception from a plugin's call; register() exits instead, naming the snapshot.
    table = generate_table("sglang", "--sm", "90", "--consumer-version", "s1-0fbab45d")
    adapter = engine("sglang-s4-two-shot-push")
    crossovers = read_generated(table).NCCL_CROSSOVER
    before = sglang_answers(adapter, crossovers)
    declare_entry_points(tmp_path, monkeypatch, {"sglang.srt.plugins": "arfit = arfit.plugins.sglang:register"})
    monkeypatch.setenv("ARFIT_SGLANG_TABLE", str(table))
    with pytest.raises(SystemExit) as exited:
        importlib.import_module("sglang.srt.plugins").load_plugins()
    for part in ("ARFIT_SGLANG_TABLE", str(table), "s4-two-shot-push", "s1-0fbab45d"):
        assert part in str(exited.value.code)
    assert sglang_lookup_is_untouched()
    assert sglang_answers(adapter, crossovers) == before


def test_sglang_load_plugins_swallows_a_runtime_error(engine, generate_table, monkeypatch, tmp_path):
    # Why register() raises SystemExit: the same refusal as a RuntimeError (install() as the entry point) is
    # logged by SGLang's loader, which then starts untuned.
    table = generate_table("sglang", "--sm", "90", "--consumer-version", "s1-0fbab45d")
    engine("sglang-s4-two-shot-push")
    declare_entry_points(tmp_path, monkeypatch, {"sglang.srt.plugins": "arfit = arfit.plugins.sglang:install"})
    monkeypatch.setenv("ARFIT_SGLANG_TABLE", str(table))
    importlib.import_module("sglang.srt.plugins").load_plugins()
    assert sglang_lookup_is_untouched()


@pytest.mark.parametrize("fixture", SGLANG_FIXTURES[1:])
def test_sglang_refuses_a_snapshot_outside_the_file_and_changes_nothing(engine, generate_table, monkeypatch,
                                                                        fixture):
    table = generate_table("sglang", "--sm", "90", "--consumer-version", "s1-0fbab45d")
    adapter = engine(fixture)
    crossovers = read_generated(table).NCCL_CROSSOVER
    before = sglang_answers(adapter, crossovers)
    monkeypatch.setenv("ARFIT_SGLANG_TABLE", str(table))
    with pytest.raises(RuntimeError) as refused:
        plugin("sglang").install()
    for part in ("ARFIT_SGLANG_TABLE", str(table), fixture.split("-", 1)[1], "s1-0fbab45d"):
        assert part in str(refused.value)
    assert sglang_answers(adapter, crossovers) == before


def test_sglang_register_twice_wraps_once(engine, generate_table, monkeypatch):
    table = generate_table("sglang", "--sm", "90")
    crossovers = read_generated(table).NCCL_CROSSOVER
    adapter = engine("sglang-s4-two-shot-push")
    configs = importlib.import_module(SGLANG_CONFIGS)
    original = configs.get_all_reduce_config
    monkeypatch.setenv("ARFIT_SGLANG_TABLE", str(table))
    plugin("sglang").register()
    plugin("sglang").register()
    assert configs.get_all_reduce_config.__wrapped__ is original
    assert_sglang_runs_crossovers(adapter, crossovers)


# --------------------------------------------------------------------------------------------------------------
# FlashInfer
# --------------------------------------------------------------------------------------------------------------
HIDDEN = 4096


def last_one_shot_tokens(world_size, threshold_mib):
    """The most tokens of HIDDEN bf16 whose comm size (tokens x hidden x 2 x world size x 2 bytes) is within the
    threshold, by FlashInfer's comparison."""
    tokens = int(threshold_mib * MiB // (HIDDEN * 2 * world_size * 2))
    assert tokens * HIDDEN * 2 * world_size * 2 / MiB <= threshold_mib
    return tokens


def flashinfer_algo(adapter, world_size, tokens):
    answer = adapter.answer({"world_size": world_size, "token_num": tokens, "hidden": HIDDEN, "dtype": "bfloat16",
                             "use_oneshot": None})
    return answer.get("algo", answer.get("error"))


@pytest.mark.parametrize("from_environment", [True, False])
def test_flashinfer_install_sets_the_one_shot_thresholds(engine, generate_table, monkeypatch, from_environment):
    table = generate_table("flashinfer")
    thresholds = read_generated(table).USE_ONESHOT_HEURISTICS
    adapter = engine("flashinfer-0.6.18")
    if from_environment:
        monkeypatch.setenv("ARFIT_FLASHINFER_TABLE", str(table))
        assert plugin("flashinfer").install() == os.path.realpath(table)
    else:
        assert plugin("flashinfer").install(table) == os.path.realpath(table)
    for world_size in (2, 4, 8, 16):
        tokens = last_one_shot_tokens(world_size, thresholds[world_size])
        assert tokens + 1 > world_size  # two-shot there is legal (FlashInfer asserts token_num > world_size)
        assert flashinfer_algo(adapter, world_size, tokens) == "oneshot", world_size
        assert flashinfer_algo(adapter, world_size, tokens + 1) == "twoshot", world_size


def test_flashinfer_without_install_decides_otherwise(engine, generate_table):
    thresholds = read_generated(generate_table("flashinfer")).USE_ONESHOT_HEURISTICS
    adapter = engine("flashinfer-0.6.18")
    answers = {ws: flashinfer_algo(adapter, ws, last_one_shot_tokens(ws, thresholds[ws]) + 1) for ws in (2, 8, 16)}
    assert answers == {2: "oneshot", 8: "oneshot", 16: "KeyError: 16"}


@pytest.mark.parametrize("fixture,running", [("flashinfer-0.4.1", None), ("flashinfer-0.6.18", "0.7.0")])
def test_flashinfer_refuses_a_version_outside_the_file_and_changes_nothing(engine, generate_table, monkeypatch,
                                                                           fixture, running):
    table = generate_table("flashinfer")
    engine(fixture)
    package = importlib.import_module("flashinfer")
    if running:
        monkeypatch.setattr(package, "__version__", running)
    running = package.__version__
    trtllm_ar = importlib.import_module("flashinfer.comm.trtllm_ar")
    before = copy.deepcopy(getattr(trtllm_ar, "_use_oneshot_heuristics", None))
    monkeypatch.setenv("ARFIT_FLASHINFER_TABLE", str(table))
    with pytest.raises(RuntimeError) as refused:
        plugin("flashinfer").install()
    for part in ("ARFIT_FLASHINFER_TABLE", str(table), running, "0.5.0 to 0.6.18"):
        assert part in str(refused.value)
    assert getattr(trtllm_ar, "_use_oneshot_heuristics", None) == before


# --------------------------------------------------------------------------------------------------------------
# Every plugin: the environment variable
# --------------------------------------------------------------------------------------------------------------
PLUGINS = [("vllm", "vllm-0.33.0", "ARFIT_VLLM_TABLE"), ("sglang", "sglang-s4-two-shot-push", "ARFIT_SGLANG_TABLE"),
           ("flashinfer", "flashinfer-0.6.18", "ARFIT_FLASHINFER_TABLE")]


def engine_state(consumer):
    """What each plugin changes: vLLM's table, SGLang's lookup function, FlashInfer's dict."""
    if consumer == "vllm":
        return copy.deepcopy(vllm_table())
    if consumer == "sglang":
        return importlib.import_module(SGLANG_CONFIGS).get_all_reduce_config
    return copy.deepcopy(importlib.import_module("flashinfer.comm.trtllm_ar")._use_oneshot_heuristics)


def entry_point(consumer):
    module = plugin(consumer)
    return getattr(module, "register", module.install)


@pytest.mark.parametrize("consumer,fixture,variable", PLUGINS)
def test_unset_variable_changes_nothing(engine, consumer, fixture, variable):
    engine(fixture)
    before = engine_state(consumer)
    assert plugin(consumer).install() is None
    entry_point(consumer)()
    assert engine_state(consumer) == before


def refusal_message(consumer):
    """What the entry point raises: RuntimeError, or for SGLang SystemExit with the same message."""
    try:
        entry_point(consumer)()
    except RuntimeError as error:
        return str(error)
    except SystemExit as exited:
        assert consumer == "sglang"
        return str(exited.code)
    pytest.fail("%s's plugin accepted a table it must refuse" % consumer)


@pytest.mark.parametrize("consumer,fixture,variable", PLUGINS)
def test_missing_file_is_refused_naming_the_variable(engine, monkeypatch, tmp_path, consumer, fixture, variable):
    engine(fixture)
    before = engine_state(consumer)
    missing = tmp_path / "no_such_table.py"
    monkeypatch.setenv(variable, str(missing))
    message = refusal_message(consumer)
    assert variable in message and str(missing) in message and "no such file" in message
    assert engine_state(consumer) == before


@pytest.mark.parametrize("consumer,fixture,variable", PLUGINS)
def test_table_of_another_engine_is_refused_naming_both(engine, generate_table, monkeypatch, consumer, fixture,
                                                        variable):
    other = {"vllm": "flashinfer", "sglang": "vllm", "flashinfer": "sglang"}[consumer]
    table = generate_table(other, *(["--sm", "90"] if other == "sglang" else []))
    engine(fixture)
    before = engine_state(consumer)
    monkeypatch.setenv(variable, str(table))
    message = refusal_message(consumer)
    assert variable in message and str(table) in message
    assert "not an arfit %s table" % consumer in message and repr(other) in message
    assert engine_state(consumer) == before


@pytest.mark.parametrize("content,expected", [
    ("CONSUMER = 'vllm'\n", "has no check_version, install, CONSUMER_VERSIONS"),
    ("CONSUMER = 'vllm'\nCONSUMER_VERSIONS = ('0.10.2', '0.33.0')\n", "has no check_version, install"),
    ("collective,strategy\nallreduce,NCCL\n", "not a Python file written by arfit codegen --format vllm"),
    ("raise ValueError('broken on purpose')\n", "ValueError: broken on purpose"),
])
def test_a_file_that_is_not_a_generated_table_is_refused(engine, monkeypatch, tmp_path, content, expected):
    engine("vllm-0.33.0")
    path = tmp_path / "table.txt"
    path.write_text(content)
    monkeypatch.setenv("ARFIT_VLLM_TABLE", str(path))
    with pytest.raises(RuntimeError) as refused:
        plugin("vllm").register()
    assert "ARFIT_VLLM_TABLE=%s" % path in str(refused.value) and expected in str(refused.value)


@pytest.mark.parametrize("consumer,fixture,variable", PLUGINS)
def test_empty_variable_is_refused(engine, monkeypatch, consumer, fixture, variable):
    engine(fixture)
    monkeypatch.setenv(variable, " ")
    message = refusal_message(consumer)
    assert variable in message and "empty" in message


def test_importing_the_plugins_imports_no_engine_and_no_extension():
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        import arfit.plugins, arfit.plugins.vllm, arfit.plugins.sglang, arfit.plugins.flashinfer
        print(sorted(m for m in sys.modules
                     if m.split(".")[0] in ("vllm", "sglang", "flashinfer", "torch") or m == "arfit._core"))
    """ % str(PYTHON_ROOT))
    result = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def run_fixture_process(tmp_path, fixture, code, env):
    """A fresh Python with the fixture, this checkout's python/ and a distribution declaring arfit's entry points
    on PYTHONPATH, as an engine process finds an installed arfit."""
    dist = tmp_path / "site"
    dist.mkdir()
    info = dist / "arfit-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: arfit\nVersion: 0.0.0\n")
    (info / "entry_points.txt").write_text("[vllm.general_plugins]\narfit = arfit.plugins.vllm:register\n\n"
                                           "[sglang.srt.plugins]\narfit = arfit.plugins.sglang:register\n")
    clean = {k: v for k, v in os.environ.items() if k not in ENVIRONMENT and k != "PYTHONPATH"}
    clean.update(env, PYTHONPATH=os.pathsep.join([str(FIXTURES_DIR / fixture), str(PYTHON_ROOT), str(dist)]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=clean)


def test_a_fresh_vllm_process_installs_through_its_entry_point(generate_table, tmp_path):
    table = generate_table("vllm")
    result = run_fixture_process(tmp_path, "vllm-0.33.0", """
        from vllm.plugins import load_general_plugins
        from vllm.distributed.device_communicators import all_reduce_utils
        load_general_plugins()
        print(all_reduce_utils.CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"])
    """, {"ARFIT_VLLM_TABLE": str(table)})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(read_generated(table).CUSTOM_ALL_REDUCE_MAX_SIZES["9.0"])


def test_a_fresh_sglang_process_exits_on_a_refused_table(generate_table, tmp_path):
    table = generate_table("sglang", "--sm", "90", "--consumer-version", "s1-0fbab45d")
    result = run_fixture_process(tmp_path, "sglang-s4-two-shot-push", """
        from sglang.srt.plugins import load_plugins
        load_plugins()
        print("SGLang would start")
    """, {"ARFIT_SGLANG_TABLE": str(table)})
    assert result.returncode == 1
    assert "SGLang would start" not in result.stdout
    assert "ARFIT_SGLANG_TABLE=%s" % table in result.stderr and "s4-two-shot-push" in result.stderr
