"""The Python package against the arfit command line: the same answers to the bit, the same texts byte for byte,
the same errors as exception classes. Synthetic curves (tests/install/samples.csv) always; the public
measurements (../shared/data/public) where present."""
import json
import os
import subprocess

import numpy as np
import pandas as pd
import pytest

import arfit

# The API needs the extension: built into <build>/python (ctest's PYTHONPATH) or installed with pip.
pytest.importorskip("arfit._core", reason="arfit._core not built (PYTHONPATH=<build>/python, or pip install .)")

SOURCE = os.environ.get("ARFIT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
CLI = os.environ.get("ARFIT_CLI", os.path.join(SOURCE, "build", "cli", "arfit"))
SYNTHETIC = os.path.join(SOURCE, "tests", "install", "samples.csv")
PUBLIC = os.path.join(SOURCE, "..", "shared", "data", "public", "aiconfigurator")
H100 = [os.path.join(PUBLIC, "aic_h100_sxm_%s_perf.txt" % f)
        for f in ("nccl_2.29.2_nccl", "vllm_0.24.0_custom_allreduce", "sglang_0.5.14_custom_allreduce",
                  "trtllm_1.3.0rc20_custom_allreduce")]
public = pytest.mark.skipif(not all(os.path.exists(p) for p in H100), reason="public data absent (../shared/data)")
needs_cli = pytest.mark.skipif(not os.access(CLI, os.X_OK), reason="arfit CLI not built (ARFIT_CLI)")


def cli(*args, cwd=None, check=True):
    r = subprocess.run([CLI, *args], capture_output=True, text=True, cwd=cwd)
    if check and r.returncode != 0:
        raise AssertionError("arfit %s: exit %d\n%s" % (" ".join(args), r.returncode, r.stderr))
    return r


@pytest.fixture(scope="module")
def synthetic_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("synthetic")
    path = str(d / "models.json")
    cli("fit", SYNTHETIC, "-o", path, "-q")
    return path


@pytest.fixture(scope="module")
def h100_models(tmp_path_factory):
    d = tmp_path_factory.mktemp("h100")
    path = str(d / "h100_models.json")
    cli("fit", *H100, "-o", path, "-q", "--threads", "2")
    return path


@needs_cli
def test_version_is_the_cli_version():
    assert "arfit " + arfit.__version__ == cli("version").stdout.strip()


@needs_cli
def test_samples_frame_has_the_sample_csv_columns_and_round_trips(tmp_path):
    frame = arfit.read_samples(SYNTHETIC)
    out = str(tmp_path / "ingested.csv")
    cli("ingest", SYNTHETIC, "-o", out, "-q")
    written = pd.read_csv(out, comment="#", keep_default_na=False, na_values=[""], dtype={"splits": str, "source": str})
    assert list(frame.columns) == list(written.columns)
    pd.testing.assert_frame_equal(frame, written, check_dtype=False)
    # Back to a file: arfit reads it as the same samples.
    again = str(tmp_path / "again.csv")
    arfit.write_samples(frame, again)
    pd.testing.assert_frame_equal(arfit.read_samples(again), frame)


def test_a_bad_sample_frame_is_a_data_error_naming_the_field(tmp_path):
    frame = arfit.read_samples(SYNTHETIC)
    frame.loc[3, "time_us"] = -1.0
    with pytest.raises(arfit.DataError, match="time_us") as e:
        arfit.write_samples(frame, tmp_path / "bad.csv")
    assert e.value.exit_code == 1
    assert not os.path.exists(tmp_path / "bad.csv")


def _cli_predictions(models, *args):
    return json.loads(cli("predict", models, "--json", *args).stdout)


@needs_cli
def test_predictions_and_intervals_are_the_clis_to_the_bit(synthetic_models):
    models = arfit.load_models(synthetic_models)
    sizes = [1024, 65536, 1 << 20, 3 << 20, 1 << 26]
    for strategy in models.strategies("allreduce", nranks=4):
        got = models.predict("allreduce", strategy=strategy, bytes=sizes, nranks=4)
        want = _cli_predictions(synthetic_models, "--collective", "allreduce", "--strategy", strategy, "--nranks", "4",
                                "--bytes", ",".join(str(s) for s in sizes))
        assert len(want) == len(got)
        for row, w in zip(got.itertuples(), want):
            assert (row.bytes, row.time_us, row.lo_us, row.hi_us, row.busbw_gbps) == (
                w["bytes"], w["time_us"], w["lo_us"], w["hi_us"], w["busbw_gbps"])
            assert (row.how, row.extrapolated) == (w["how"], w["extrapolated"])
    # tokens x hidden, vectorised over the GPU count as well
    got = models.predict("allreduce", strategy="TWOSHOT", tokens=[1024, 1024], hidden=[4096, 4096], nranks=[2, 4])
    for i, n in enumerate((2, 4)):
        w = _cli_predictions(synthetic_models, "--collective", "allreduce", "--strategy", "TWOSHOT", "--nranks", str(n),
                             "--tokens", "1024", "--hidden", "4096")[0]
        assert (got.time_us[i], got.lo_us[i], got.hi_us[i]) == (w["time_us"], w["lo_us"], w["hi_us"])


def test_points_without_an_answer_say_why(synthetic_models):
    models = arfit.load_models(synthetic_models)
    got = models.predict("allreduce", strategy="ONESHOT", bytes=[4096, 8192], nranks=4, nnodes=[1, 2])
    assert got.time_us[0] > 0 and got.error[0] == ""  # one node: answered
    # custom all-reduce across nodes: refused, saying why (model/model_set.h's across_nodes_refusal)
    assert np.isnan(got.time_us[1]) and "node" in got.error[1]


@needs_cli
def test_choices_and_every_generated_text_are_the_clis(synthetic_models, tmp_path):
    models = arfit.load_models(synthetic_models)
    options = dict(tp="2,4", fusion="NONE", hidden="1024:4096", tokens="1:1024")
    for fmt in ("header", "json"):
        out = str(tmp_path / ("table." + fmt))
        cli("codegen", synthetic_models, "--format", fmt, "--tp", "2,4", "--fusion", "NONE", "--hidden", "1024:4096",
            "--tokens", "1:1024", "-o", out)
        with open(out) as f:
            assert models.codegen(fmt, **options) == f.read(), fmt
    # TensorRT-LLM's table has its own axes (TP 2, 4, 8) and the tuner plugin's file its sizes.
    for fmt, args in (("trtllm", []),):
        out = str(tmp_path / ("table." + fmt))
        cli("codegen", synthetic_models, "--format", fmt, *args, "-o", out)
        kwargs = {args[i][2:].replace("-", "_"): args[i + 1] for i in range(0, len(args), 2)}
        with open(out) as f:
            assert models.codegen(fmt, **kwargs) == f.read(), fmt
    table = models.choose(**options)
    with open(tmp_path / "table.json") as f:
        cells = json.load(f)["cells"]
    assert len(table) == len(cells)
    assert list(table.choice) == [c["choice"] for c in cells]
    suggested = models.suggest(top=5, **options)
    cli("suggest", synthetic_models, "--top", "5", "--tp", "2,4", "--fusion", "NONE", "--hidden", "1024:4096",
        "--tokens", "1:1024", "--json", str(tmp_path / "s.json"))
    with open(tmp_path / "s.json") as f:
        assert suggested == json.load(f)


@public
@needs_cli
def test_public_h100_engine_tables_are_the_clis(h100_models, tmp_path):
    models = arfit.load_models(h100_models)
    cases = {
        "vllm": ["--map", "TRTLLM=symm_mem"],
        "sglang": [],
        "flashinfer": ["--map", "vLLM_custom_graph=oneshot", "--map", "TRTLLM=twoshot"],
        "nccl-tuner": [],
        "trtllm": ["--map", "vLLM_custom_graph=ONESHOT", "--map", "SGLang_CustomAllReduce_graph=TWOSHOT",
                   "--map", "vLLM_custom_eager=ignore", "--map", "SGLang_CustomAllReduce_eager=ignore",
                   "--map", "TRTLLM=ignore"],
    }
    for fmt, extra in cases.items():
        out = str(tmp_path / fmt)
        r = cli("codegen", h100_models, "--format", fmt, "--sm", "90", *extra, "-o", out, check=False)
        maps = [extra[i + 1] for i in range(0, len(extra), 2)]
        if r.returncode != 0:
            with pytest.raises(arfit.ArfitError) as e:
                models.codegen(fmt, sm=90, map=maps)
            assert e.value.exit_code == r.returncode, fmt
            continue
        with open(out) as f:
            assert models.codegen(fmt, sm=90, map=maps) == f.read(), fmt


@public
@needs_cli
def test_public_predictions_are_the_clis(h100_models):
    models = arfit.load_models(h100_models)
    sizes = np.logspace(9, 31, 23, base=2)
    got = models.predict("allreduce", strategy="NCCL", bytes=sizes, nranks=8, dtype="fp16")
    want = _cli_predictions(h100_models, "--collective", "allreduce", "--nranks", "8", "--dtype", "fp16",
                            "--bytes", ",".join("%d" % s for s in sizes))
    assert list(got.time_us) == [w["time_us"] for w in want]
    assert list(got.lo_us) == [w["lo_us"] for w in want]
    assert list(got.hi_us) == [w["hi_us"] for w in want]


@public
@needs_cli
def test_fit_in_python_is_the_cli_fit(h100_models):
    fitted = arfit.fit(H100, threads=2)
    with open(h100_models) as f:
        cli_groups = json.load(f)["groups"]
    py_groups = json.loads(fitted.json())["groups"]
    assert [g["id"] for g in py_groups] == [g["id"] for g in cli_groups]
    assert [g.get("model") for g in py_groups] == [g.get("model") for g in cli_groups]


@needs_cli
def test_evaluation_is_the_clis(tmp_path):
    report, points = arfit.evaluate(SYNTHETIC, "interp2", points=True)
    cli("eval", SYNTHETIC, "--protocol", "interp2", "--json", str(tmp_path / "e.json"), "--points", str(tmp_path / "p.csv"))
    with open(tmp_path / "e.json") as f:
        assert report == json.load(f)
    pd.testing.assert_frame_equal(points, pd.read_csv(tmp_path / "p.csv"))


@needs_cli
def test_every_error_class_is_the_cli_exit_code(synthetic_models, tmp_path):
    models = arfit.load_models(synthetic_models)
    usage_cases = [
        (lambda: models.predict("allreduce", strategy="BOGUS", bytes=[1024], nranks=4),
         ["predict", synthetic_models, "--collective", "allreduce", "--strategy", "BOGUS", "--nranks", "4", "--bytes", "1024"]),
        (lambda: models.predict("bogus", bytes=[1024], nranks=4),
         ["predict", synthetic_models, "--collective", "bogus", "--nranks", "4", "--bytes", "1024"]),
        (lambda: models.codegen("bogus"), ["codegen", synthetic_models, "--format", "bogus", "-o", str(tmp_path / "x")]),
        (lambda: arfit.evaluate(SYNTHETIC, "crosshw:+2"), ["eval", SYNTHETIC, "--protocol", "crosshw:+2"]),
    ]
    for call, args in usage_cases:
        r = cli(*args, check=False)
        assert r.returncode == 2, args
        with pytest.raises(arfit.UsageError) as e:
            call()
        assert isinstance(e.value, ValueError) and e.value.exit_code == 2
        assert str(e.value) in r.stderr, (str(e.value), r.stderr)
    bad = tmp_path / "bad.txt"
    bad.write_text("not a measurement\n")
    r = cli("ingest", str(bad), check=False)
    assert r.returncode == 1
    with pytest.raises(arfit.DataError) as e:
        arfit.read_samples(str(bad))
    assert e.value.exit_code == 1 and str(e.value) in r.stderr
    with pytest.raises(arfit.DataError):
        arfit.load_models(str(bad))
    # An output never replaces an input of the process (a usage error, as `arfit ingest x.csv -o x.csv`), which
    # stays as it was.
    copy = tmp_path / "copy.csv"
    copy.write_bytes(open(SYNTHETIC, "rb").read())
    frame = arfit.read_samples(str(copy))
    with pytest.raises(arfit.UsageError):
        arfit.write_samples(frame.head(3), str(copy))
    assert copy.read_bytes() == open(SYNTHETIC, "rb").read()


@needs_cli
def test_select_protocol_and_sm_arrays_are_the_clis(synthetic_models, tmp_path):
    report = arfit.evaluate(SYNTHETIC, "select", plan="lattice:2")
    cli("eval", SYNTHETIC, "--protocol", "select", "--plan", "lattice:2", "--json", str(tmp_path / "s.json"))
    with open(tmp_path / "s.json") as f:
        assert report == json.load(f)
    models = arfit.load_models(synthetic_models)
    got = models.predict("allreduce", strategy="NCCL", bytes=[1 << 20, 1 << 20], nranks=4, sm=[0, 100])
    for i, sm in enumerate((0, 100)):
        args = ["--sm", str(sm)] if sm else []
        w = _cli_predictions(synthetic_models, "--collective", "allreduce", "--nranks", "4", "--bytes", str(1 << 20), *args)[0]
        assert (got.time_us[i], got.lo_us[i], got.hi_us[i], got.how[i]) == (w["time_us"], w["lo_us"], w["hi_us"], w["how"])


@needs_cli
def test_priors_holding_the_targets_own_measurements_are_refused_as_the_cli_refuses(synthetic_models, tmp_path):
    """A prior is another machine (fit/prior_check.h), for the package's fit and predict as for --prior: a models file
    given as its own prior, a renamed copy of it or of the samples it was fitted from, and the target's own points
    under its label are usage errors; the same points under another machine's label are another machine."""
    models = arfit.load_models(synthetic_models)
    copy = tmp_path / "copy.json"
    copy.write_bytes(open(synthetic_models, "rb").read())
    ask = dict(bytes=[1 << 20], nranks=4, nnodes=2)
    for prior in (models, arfit.load_models(str(copy))):
        r = cli("predict", synthetic_models, "--collective", "allreduce", "--nranks", "4", "--nnodes", "2", "--bytes",
                str(1 << 20), "--prior", prior.path, check=False)
        assert r.returncode == 2, r.stderr
        with pytest.raises(arfit.UsageError) as e:
            models.predict("allreduce", priors=[prior], **ask)
        message = str(e.value)
        assert message.startswith("priors: %s " % prior.path) and message.endswith("a prior is another machine's file")
        # The CLI's words after the option's name.
        assert "--prior " + message[len("priors: "):] in r.stderr, (message, r.stderr)
    samples = tmp_path / "samples.csv"
    samples.write_bytes(open(SYNTHETIC, "rb").read())
    with pytest.raises(arfit.UsageError, match="was fitted from .*samples.csv, the same file as .*samples.csv, an input of this fit"):
        arfit.fit(SYNTHETIC, priors=[arfit.fit(str(samples))])
    frame = arfit.read_samples(SYNTHETIC)
    with pytest.raises(arfit.UsageError, match="measurement\\(s\\) of .* under the same machine label"):
        arfit.fit(frame.head(len(frame) - 5), priors=[arfit.fit(frame)])
    # The same points under another machine's label are another machine's: taken (one node only, so they lend no
    # step and the answer is the one without them).
    other = frame.copy()
    other["system"] = "other_box"
    taken = models.predict("allreduce", priors=[arfit.fit(other)], **ask)
    alone = models.predict("allreduce", **ask)
    assert taken.error[0] == "" and taken.time_us[0] == alone.time_us[0]
