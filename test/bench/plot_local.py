#!/usr/bin/python3
"""Plots the local-model experiments written by dxpriv_local_experiments.

Reads test/bench/results/local_kantorovich.csv (or --results DIR) and writes
local_kantorovich.png: one panel per (domain, family) row and epsilon column, the mean Kantorovich
distance between the IBU estimate and the true sample distribution against the sample size, for
the truncated geometric mechanism at epsilon/r (r = 5, 10) and k-RR at epsilon (MECHANISMS.md §4.6),
with one standard deviation over the runs as error bars. Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import os
import statistics
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_rows(path):
    """Rows of the per-run CSV file as dictionaries."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    parser.add_argument("--results", default=os.path.join(here, "results"))
    args = parser.parse_args()

    rows = read_rows(os.path.join(args.results, "local_kantorovich.csv"))
    # (max_value, family, epsilon, series) -> sample size -> distances over runs
    data = defaultdict(lambda: defaultdict(list))
    for r in rows:
        series = f"geometric, eps/{float(r['radius']):g}" if r["mechanism"] == "geometric" else "k-RR, eps"
        key = (int(r["max_value"]), r["family"], float(r["epsilon"]), series)
        data[key][int(r["sample_size"])].append(float(r["kantorovich"]))

    panels = sorted({(k[0], k[1]) for k in data}, key=lambda p: (p[0], p[1] != "binomial"))
    epsilons = sorted({k[2] for k in data})
    series_names = sorted({k[3] for k in data},
                          key=lambda s: (s.startswith("k-RR"), float(s.split("/")[-1]) if "/" in s else 0.0))
    colours = {"k-RR, eps": "#cc3311"}
    palette = iter(["#0077bb", "#33bbee", "#009988"])

    fig, axes = plt.subplots(len(panels), len(epsilons), figsize=(4.2 * len(epsilons), 3.2 * len(panels)),
                             squeeze=False, sharex=True)
    for i, (max_value, family) in enumerate(panels):
        for j, eps in enumerate(epsilons):
            ax = axes[i][j]
            for name in series_names:
                per_size = data.get((max_value, family, eps, name))
                if not per_size:
                    continue
                if name not in colours:
                    colours[name] = next(palette)
                sizes = sorted(per_size)
                means = [statistics.mean(per_size[n]) for n in sizes]
                sds = [statistics.stdev(per_size[n]) if len(per_size[n]) > 1 else 0.0 for n in sizes]
                ax.errorbar(sizes, means, yerr=sds, marker="o", capsize=3, label=name, color=colours[name])
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{family} on 0..{max_value}, eps = {eps:g}", fontsize=10)
            if i == len(panels) - 1:
                ax.set_xlabel("sample size")
            if j == 0:
                ax.set_ylabel("Kantorovich distance")
            ax.grid(True, which="both", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("IBU reconstruction error: truncated geometric at eps/r vs k-RR at eps "
                 "(mean +/- sd over runs; k-RR pools the runs of both radii)", fontsize=11)
    fig.tight_layout()
    out = os.path.join(args.results, "local_kantorovich.png")
    fig.savefig(out, dpi=110)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
