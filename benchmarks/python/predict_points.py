#!/usr/bin/env python3
"""Models.predict over 10^6 sizes in one call against the C++ loop over the same points (bench_predict_points).

    PYTHONPATH=build/python python benchmarks/python/predict_points.py MODELS.json --bench build/benchmarks/model/bench_predict_points \
        [--strategy NCCL --dtype fp16 --nranks 8]

Prints the Python call's best of 3 and the Google Benchmark's time per iteration, and their ratio (the goal: at
most 1.5). Not a test: timings on a shared machine are reported, not asserted.
"""
import argparse
import json
import os
import subprocess
import time

import numpy as np

import arfit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models")
    ap.add_argument("--bench", required=True, help="the built bench_predict_points")
    ap.add_argument("--strategy", default="NCCL")
    ap.add_argument("--dtype", default="")
    ap.add_argument("--nranks", type=int, default=0)
    ap.add_argument("--points", type=int, default=1000000)
    a = ap.parse_args()
    models = arfit.load_models(a.models)
    sizes = np.power(2.0, 3 + 27.0 * np.arange(a.points) / (a.points - 1))
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        r = models.predict("allreduce", strategy=a.strategy, bytes=sizes, nranks=a.nranks, dtype=a.dtype, frame=False)
        best = min(best, time.perf_counter() - t)
    answered = int(np.count_nonzero(~np.isnan(r["time_us"])))
    env = dict(os.environ, ARFIT_BENCH_MODELS=a.models, ARFIT_BENCH_STRATEGY=a.strategy, ARFIT_BENCH_DTYPE=a.dtype,
               ARFIT_BENCH_NRANKS=str(a.nranks))
    out = subprocess.run([a.bench, "--benchmark_format=json", "--benchmark_filter=BM_PredictPoints/%d" % a.points],
                         env=env, capture_output=True, text=True, check=True).stdout
    cpp = json.loads(out)["benchmarks"][0]
    cpp_s = cpp["real_time"] / {"ms": 1e3, "us": 1e6, "ns": 1e9, "s": 1}[cpp["time_unit"]]
    print("python Models.predict: %.3f s for %d points (%d answered), %.0f ns/point" % (best, a.points, answered, best / a.points * 1e9))
    print("C++ loop (Google Benchmark): %.3f s, %.0f ns/point" % (cpp_s, cpp_s / a.points * 1e9))
    print("ratio python / C++: %.2f" % (best / cpp_s))


if __name__ == "__main__":
    main()
