#!/usr/bin/env python3
"""The strategy arfit chooses per (tokens, hidden) cell, one panel per TP size, from a models file.

    python examples/python/strategy_heatmap.py MODELS.json [-o heatmap.png] [--fusion NONE] [--dtype bf16]

Cells whose best and runner-up 90 % intervals overlap are hatched: measure those next (arfit suggest).
"""
import argparse

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

import arfit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("models")
    ap.add_argument("-o", "--output", default="strategy_heatmap.png")
    ap.add_argument("--tp", default="2,4,8")
    ap.add_argument("--fusion", default="NONE")
    ap.add_argument("--dtype", default="bf16")
    a = ap.parse_args()
    table = arfit.load_models(a.models).choose(tp=a.tp, fusion=a.fusion, dtype=a.dtype)
    strategies = sorted(table.choice.unique())
    code = {s: i for i, s in enumerate(strategies)}
    tps = sorted(table.tp.unique())
    fig, axes = plt.subplots(1, len(tps), figsize=(4.5 * len(tps), 4), squeeze=False)
    cmap = plt.get_cmap("tab10", len(strategies))
    for ax, tp in zip(axes[0], tps):
        cells = table[table.tp == tp]
        tokens, hidden = sorted(cells.tokens.unique()), sorted(cells.hidden.unique())
        grid = np.full((len(hidden), len(tokens)), np.nan)
        for row in cells.itertuples():
            grid[hidden.index(row.hidden), tokens.index(row.tokens)] = code[row.choice]
            if row.uncertain:
                ax.add_patch(plt.Rectangle((tokens.index(row.tokens) - 0.5, hidden.index(row.hidden) - 0.5), 1, 1,
                                           fill=False, hatch="//", lw=0))
        ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(strategies) - 0.5, origin="lower", aspect="auto")
        ax.set_xticks(range(len(tokens)), [str(t) for t in tokens], rotation=90, fontsize=7)
        ax.set_yticks(range(len(hidden)), [str(h) for h in hidden], fontsize=7)
        ax.set_xlabel("tokens")
        ax.set_ylabel("hidden")
        ax.set_title("TP %d, %s" % (tp, a.fusion))
    handles = [plt.Rectangle((0, 0), 1, 1, color=cmap(code[s])) for s in strategies]
    fig.legend(handles, strategies, loc="lower center", ncol=len(strategies), fontsize=8)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(a.output, dpi=120)
    print("wrote %s: %d cells, %d uncertain" % (a.output, len(table), int(table.uncertain.sum())))


if __name__ == "__main__":
    main()
