#!/usr/bin/python3
"""Plots the improvement-factor experiments written by dxpriv_if_experiments.

Reads test/bench/results/if_single.csv and if_multi.csv (or --results DIR) and writes
if_single.png (histogram of single-query IF) and if_multi.png (mean geometric-mean IF per m,
one panel per matrix family, one line per strategy). Needs Debian's python3-matplotlib.
"""
import argparse
import csv
import os
import statistics

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STRATEGIES = [
    ("if_equal_split", "Strategy 1 (equal split)"),
    ("if_equal_scale", "Strategy 2 (equal scale)"),
    ("if_algorithm3", "Strategy 3 (Algorithm 3)"),
    ("if_optimal", "Optimal"),
]


def read_csv(path):
    """Rows of a CSV file as dictionaries."""
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def plot_single(rows, out):
    """Histogram of the single-query improvement factors."""
    values = [float(r["improvement_factor"]) for r in rows]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.hist(values, bins=40, color="#4477aa", edgecolor="white")
    ax.axvline(statistics.mean(values), color="#cc3311", linestyle="--",
               label=f"mean {statistics.mean(values):.3f}")
    ax.set_xlabel("improvement factor (plain DP scale / d_X scale)")
    ax.set_ylabel("queries")
    ax.set_title(f"{len(values)} random single queries, U[0,1] coefficients")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_multi(rows, out):
    """Mean geometric-mean IF per m for each strategy, real and binary matrices."""
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=False)
    for ax, family, title in zip(axes, ["real", "binary"], ["U[0,1] entries", "{0,1} entries"]):
        fam = [r for r in rows if r["family"] == family]
        ms = sorted({int(r["m"]) for r in fam})
        per_m = {m: [r for r in fam if int(r["m"]) == m] for m in ms}
        for key, label in STRATEGIES:
            means = [statistics.mean(float(r[key]) for r in per_m[m]) for m in ms]
            ax.plot(ms, means, marker="o", label=label)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xlabel("number of queries m")
        ax.set_ylabel("mean geometric-mean IF")
        count = len(per_m[ms[0]]) if ms else 0
        ax.set_title(f"{title} ({count} matrices per m)")
        ax.set_xticks(ms)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    """Parses arguments and writes both figures."""
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", default=os.path.join(here, "results"))
    args = parser.parse_args()
    plot_single(read_csv(os.path.join(args.results, "if_single.csv")),
                os.path.join(args.results, "if_single.png"))
    plot_multi(read_csv(os.path.join(args.results, "if_multi.csv")),
               os.path.join(args.results, "if_multi.png"))
    print("wrote", os.path.join(args.results, "if_single.png"), "and",
          os.path.join(args.results, "if_multi.png"))


if __name__ == "__main__":
    main()
