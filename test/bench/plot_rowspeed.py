#!/usr/bin/python3
"""Per-row goal table of issue 23: dx against native for every per-row goal row, serial and parallel.

Reads results/sql_bench.csv (sql_bench.py), results/unit_bench.csv (unit_bench.py) and
results/dashboard_bench.csv (dashboard_bench.py; mode "default": PostgreSQL's default settings) and writes
results/rowspeed_goals.csv (goal, query, mode, native_ms, dx_ms, ratio, goal_ratio, met) and
results/rowspeed_goals.png (one bar per row: dx/native, the goal as a marker). With --before DIR
(a results directory of an earlier run of the same benchmarks), the earlier ratio is written next
to each row (before_ratio) and drawn as a second bar. Prints the table. Needs Debian's
python3-matplotlib for the plot (the CSV is written without it).
"""
import argparse
import csv
import os
import sys

# (goal, label in the benchmark CSV, goal ratio); the label is matched exactly
SQL_GOALS = [
    ("count", "count(*)", 1.10),
    ("count WHERE", "count(*) WHERE age > 40 AND sex='M'", 1.10),
    ("sum int", "sum(qty) [int]", 1.10),
    ("sum numeric", "sum(income)", 1.10),
    ("sum float8", "sum(score)", 1.10),
    ("avg", "avg(income)", 1.10),
    ("GROUP BY 2", "GROUP BY sex [2 groups]: count(*), sum(qty)", 1.10),
    ("GROUP BY 73", "GROUP BY g73 [73 groups]: count(*), sum(qty)", 1.10),
    ("10 aggregates, 10 groups", "10 aggregates GROUP BY grp [10 groups]", 0.80),
]
DASHBOARD_GOALS = [
    ("dashboard first", "first", 2.0),
    ("dashboard cached", "cached", 1.2),
]
UNIT_GOALS = [
    ("unit count", "count(*)", 2.0),
    ("unit sum", "sum(cost) WHERE age >= 40", 2.0),
    ("unit GROUP BY", "GROUP BY ward: count(*), avg(cost)", 2.0),
    ("unit COUNT(DISTINCT)", "count(DISTINCT person)", 2.0),
]


def read(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def number(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def goal_rows(results_dir):
    """{(goal, mode): (query, native_ms, dx_ms, ratio, goal_ratio)} from one results directory."""
    out = {}
    sql = read(os.path.join(results_dir, "sql_bench.csv"))
    for goal, label, g in SQL_GOALS:
        for r in sql:
            if r["query"] == label:
                out[(goal, r["mode"])] = (label, number(r["native_ms"]), number(r["dx_ms"]), number(r["ratio"]), g)
    unit = read(os.path.join(results_dir, "unit_bench.csv"))
    for goal, label, g in UNIT_GOALS:
        for r in unit:
            if r["query"] == label:
                mode = "serial" if r.get("max_parallel_workers_per_gather", "0") in ("0", "") else "parallel"
                out[(goal, mode)] = (label, number(r["native_ms"]), number(r["dx_ms"]), number(r["ratio"]), g)
    dash = read(os.path.join(results_dir, "dashboard_bench.csv"))
    for goal, label, g in DASHBOARD_GOALS:
        for r in dash:
            if r["refresh"] == label:
                out[(goal, "default")] = ("8-tile refresh, " + label, number(r["native_ms"]), number(r["dx_ms"]),
                                          number(r["ratio"]), g)
    return out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(here, "results"))
    ap.add_argument("--before", default=None, help="results directory of the run to compare with")
    args = ap.parse_args()
    rows = goal_rows(args.results)
    before = goal_rows(args.before) if args.before else {}
    order = [(goal, mode) for goal, _, _ in SQL_GOALS + UNIT_GOALS + DASHBOARD_GOALS
             for mode in ("serial", "parallel", "default") if (goal, mode) in rows]
    with open(os.path.join(args.results, "rowspeed_goals.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["goal", "query", "mode", "native_ms", "dx_ms", "ratio", "goal_ratio", "met", "before_ratio"])
        for key in order:
            label, nat, dx, ratio, g = rows[key]
            b = before.get(key, (None,) * 5)[3]
            w.writerow([key[0], label, key[1], nat, dx, ratio, g, ratio is not None and ratio <= g,
                        "" if b is None else b])
    print(f"{'goal':28s} {'mode':8s} {'native_ms':>10s} {'dx_ms':>10s} {'ratio':>6s} {'goal':>5s}"
          + (f" {'before':>6s}" if before else ""))
    for key in order:
        label, nat, dx, ratio, g = rows[key]
        b = before.get(key, (None,) * 5)[3]
        cells = [f"{key[0]:28s}", f"{key[1]:8s}", f"{nat or 0:10.1f}", f"{dx or 0:10.1f}",
                 f"{ratio if ratio is not None else float('nan'):6.2f}", f"{g:5.2f}"]
        if before:
            cells.append(f"{b if b is not None else float('nan'):6.2f}")
        print(" ".join(cells))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_rowspeed: no matplotlib (apt-get install python3-matplotlib); CSV only", file=sys.stderr)
        return 0
    fig, ax = plt.subplots(figsize=(12, 5.5))
    xs = list(range(len(order)))
    width = 0.4 if before else 0.7
    ratios = [rows[k][3] or 0 for k in order]
    if before:
        ax.bar([x - width / 2 for x in xs], [before.get(k, (None,) * 5)[3] or 0 for k in order], width,
               label="before", color="#bbbbbb")
        ax.bar([x + width / 2 for x in xs], ratios, width, label="after", color="#3070b0")
    else:
        ax.bar(xs, ratios, width, label="dx / native", color="#3070b0")
    ax.scatter(xs, [rows[k][4] for k in order], marker="_", s=300, color="#c03030", zorder=3, label="goal")
    ax.set_xticks(xs)
    ax.set_xticklabels([f"{k[0]} ({k[1][0]})" for k in order], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("dx time / native time (median)")
    ax.set_yscale("log")
    ax.set_title("dxpriv per-row cost against native PostgreSQL (s = serial, p = parallel)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(args.results, "rowspeed_goals.png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
