"""Shared set-up of the Python tests: paths, the arfit CLI, fitted models and generated engine tables.

The CLI is $ARFIT_CLI, else build/cli/arfit under the repository root; tests that need it are skipped when it is
absent (CMake/ctest sets ARFIT_CLI to the target it built). The models are fitted from synthetic measurements
written here, so the tests need no data folder.
"""
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
PYTHON_ROOT = REPO_ROOT / "python"
ENGINES_DIR = REPO_ROOT / "tests" / "codegen" / "engines"
FIXTURES_DIR = ENGINES_DIR / "fixtures"

# The engine harness from the engine fixtures' folder; the package from PYTHONPATH when it is there (ctest points it
# at the build tree, whose arfit has the extension beside the sources), else from this checkout (the plugins need
# no extension).
if str(ENGINES_DIR) not in sys.path:
    sys.path.insert(0, str(ENGINES_DIR))
if str(PYTHON_ROOT) not in sys.path:
    sys.path.append(str(PYTHON_ROOT))

SAMPLE_COLUMNS = ("collective,strategy,fusion,dtype,nranks,nnodes,device,sm,tokens,hidden,bytes,time_us,p10_us,"
                  "p90_us,min_us,max_us,iterations,in_place,status,wrong,backend,source,splits")


def synthetic_time_us(strategy, ranks, nbytes):
    """Alpha-beta curves whose crossovers differ from every engine's default thresholds (the ones of
    tests/codegen/fixtures.h's fx_engines system): vLLM's custom all-reduce beats its symmetric memory below
    about 833 KB / ranks, SGLang's custom all-reduce beats NCCL up to a few hundred KiB, ONESHOT beats TWOSHOT
    at small sizes."""
    if strategy == "vLLM_custom_graph":
        return 3.0 + ranks * nbytes / 1e5
    if strategy == "vLLM_symm_mem":
        return 8.0 + ranks * nbytes / 2.5e5
    if strategy == "SGLang_CustomAllReduce_graph":
        return 2.5 + ranks * nbytes / 1.2e5
    if strategy == "SGLang_CustomAllReduce_eager":
        return 10.0 + ranks * nbytes / 1.2e5
    if strategy == "ONESHOT":
        return 3.0 + (ranks - 1) * nbytes / 5e4
    if strategy == "TWOSHOT":
        return 6.0 + 2.0 * nbytes / 1.5e5
    return 15.0 + 2.0 * nbytes / 4e5  # NCCL


def write_synthetic_samples(path):
    """An arfit samples CSV: every strategy above at 2, 4 and 8 ranks, 64 B to 1 GiB, SM 90, with a
    deterministic 1 % wiggle as measurements have."""
    lines = ["#arfit-samples v1", "# source: python/tests/conftest.py, synthetic alpha-beta curves", SAMPLE_COLUMNS]
    for ranks in (2, 4, 8):
        for strategy in ("NCCL", "vLLM_custom_graph", "vLLM_symm_mem", "SGLang_CustomAllReduce_graph",
                         "SGLang_CustomAllReduce_eager", "ONESHOT", "TWOSHOT"):
            for k in range(6, 31):
                time_us = synthetic_time_us(strategy, ranks, 1 << k) * (1 + 0.01 * math.sin(1.7 * k))
                lines.append("allreduce,%s,NONE,bf16,%d,1,synthetic,90,,,%d,%.4f,,,,,100,0,ok,0,synthetic,pytest,"
                             % (strategy, ranks, 1 << k, time_us))
    Path(path).write_text("\n".join(lines) + "\n")


def run_cli(cli, *args):
    result = subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True)
    if result.returncode != 0:
        raise AssertionError("arfit %s failed (exit %d):\n%s" % (" ".join(map(str, args)), result.returncode,
                                                                 result.stdout + result.stderr))
    return result


@pytest.fixture(scope="session")
def arfit_cli():
    """Path of the arfit CLI; the test is skipped when it is not built."""
    cli = Path(os.environ.get("ARFIT_CLI") or REPO_ROOT / "build" / "cli" / "arfit")
    if not (cli.is_file() and os.access(cli, os.X_OK)):
        pytest.skip("the arfit CLI is not built (%s); build it or set ARFIT_CLI" % cli)
    return cli


@pytest.fixture(scope="session")
def models_file(arfit_cli, tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    samples = folder / "samples.csv"
    write_synthetic_samples(samples)
    models = folder / "models.json"
    run_cli(arfit_cli, "fit", samples, "-o", models)
    return models


@pytest.fixture(scope="session")
def generate_table(arfit_cli, models_file, tmp_path_factory):
    """generate_table("vllm", "--consumer-version", "0.33.0") -> path of the file `arfit codegen` wrote; one file
    per distinct argument list in the session."""
    folder = tmp_path_factory.mktemp("tables")
    written = {}

    def generate(consumer, *options):
        key = (consumer,) + options
        if key not in written:
            path = folder / ("%s_%d.py" % (consumer, len(written)))
            run_cli(arfit_cli, "codegen", models_file, "--format", consumer, *options, "-o", path)
            written[key] = path
        return written[key]

    return generate
