#!/usr/bin/env python3
"""The DLRM performance-model figures from arfit's fits of public measurements.

    python examples/python/dlrm_figures.py LOG [LOG ...] [-o dlrm.png] [--nranks 8]

Left: bus bandwidth per collective, measured and fitted, with its turning points: the half-bandwidth size
(Hockney's n1/2, where the fitted bus bandwidth reaches half its largest value) and the size where it reaches
90 %. Right: an all-to-allv of DLRM embedding tables (batch B split over the ranks, T tables of dimension D drawn
per rank) predicted in each effective-size mode (sum, max_of_max, max_of_sum) from the uniform all-to-all fit.
Needs logs with an all-to-all curve for the right panel (nccl-tests alltoall, or aiconfigurator tables).
"""
import argparse

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import arfit


def turning_points(sizes, busbw):
    top = np.nanmax(busbw)
    return [sizes[np.argmax(busbw >= f * top)] for f in (0.5, 0.9)]


def dlrm_split(batch, tables, dim, nranks, seed):
    rng = np.random.default_rng(seed)
    per_rank = np.bincount(rng.integers(0, nranks, size=tables), minlength=nranks)
    return "%d,%s,%d" % (batch, "-".join(str(t) for t in per_rank), dim)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("logs", nargs="+")
    ap.add_argument("-o", "--output", default="dlrm_figures.png")
    ap.add_argument("--nranks", type=int, default=8)
    a = ap.parse_args()
    samples = arfit.read_samples(a.logs)
    models = arfit.fit(samples, threads=2)
    fig, (bw, a2a) = plt.subplots(1, 2, figsize=(12, 4.5))
    sizes = np.logspace(10, 31, 200, base=2)
    measured = samples[(samples.nranks == a.nranks) & (samples.strategy == "NCCL") & (samples.status == "ok")]
    for collective in sorted(measured.collective.unique()):
        rows = measured[measured.collective == collective]
        dtype = rows.dtype.iloc[0]
        p = models.predict(collective, bytes=sizes, nranks=a.nranks, dtype=dtype)
        line, = bw.plot(p.bytes, p.busbw_gbps, label="%s (%s)" % (collective, dtype))
        meas = models.predict(collective, bytes=rows.bytes.to_numpy(float), nranks=a.nranks, dtype=dtype)
        busbw_measured = meas.busbw_gbps * meas.time_us / rows.time_us.to_numpy()
        bw.scatter(rows.bytes, busbw_measured, s=8, color=line.get_color())
        for x in turning_points(p.bytes.to_numpy(), p.busbw_gbps.to_numpy()):
            bw.axvline(x, color=line.get_color(), ls=":", lw=0.8)
    bw.set_xscale("log", base=2)
    bw.set_xlabel("message bytes")
    bw.set_ylabel("bus bandwidth (GB/s)")
    bw.set_title("%d GPUs: fit and turning points (n1/2, 90 %%)" % a.nranks)
    bw.legend(fontsize=7)
    if "alltoall" in set(measured.collective):
        batches = 2 ** np.arange(9, 17)
        splits = [dlrm_split(int(b), 26, 128, a.nranks, seed=1) for b in batches]
        dtype = sorted(measured[measured.collective == "alltoall"].dtype.unique())[0]
        element_bytes = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}.get(dtype, 4)
        for mode in ("sum", "max_of_max", "max_of_sum"):
            eff = arfit.effective_bytes(splits, mode, element_bytes)
            p = models.predict("alltoall", bytes=eff, nranks=a.nranks, dtype=dtype)
            a2a.plot(batches, p.time_us, marker="o", label=mode)
            a2a.fill_between(batches, p.lo_us, p.hi_us, alpha=0.2)
        a2a.set_xscale("log", base=2)
        a2a.set_yscale("log")
        a2a.set_xlabel("batch (26 tables of dimension 128)")
        a2a.set_ylabel("predicted all-to-allv time (us, 90 % interval)")
        a2a.set_title("all-to-allv per effective-size mode")
        a2a.legend()
    else:
        a2a.text(0.5, 0.5, "no all-to-all curve in the logs", ha="center", transform=a2a.transAxes)
    fig.tight_layout()
    fig.savefig(a.output, dpi=120)
    print("wrote", a.output)


if __name__ == "__main__":
    main()
