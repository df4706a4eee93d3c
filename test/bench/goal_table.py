#!/usr/bin/python3
"""Issue 23's goal table from the benchmark CSVs: one row per measured line of every goal row.

Reads, from --results (default test/bench/results), the CSVs that `make bench` writes:
  sql_bench.csv (+ sql_bench_env.txt)  sql_bench.py: dx/native per query, serial and parallel (goal rows 1, 2)
  unit_bench.csv                       unit_bench.py: privacy unit k = 10 (goal row 3)
  analysis_bench.csv                   analysis_bench.py: analysis + plan (dx.explain) and the cached
                                       statement, per domain (goal rows 4, 5; rows D: the l2 goals of
                                       the issue's directions)
  dashboard_bench.csv                  dashboard_bench.py: the 8-tile refresh, first and cached (goal row 6)
  citus_bench.csv                      citus_bench.py (DXPRIV_BENCH_CITUS=1 make bench): goal row 7
and writes --out-dir (default: --results)/goals.csv with the columns
  goal_row, what, mode, goal, unit (ratio: dx/native; ms: wall milliseconds), measured (median),
  native_ms, dx_ms, cpu_ms, met (yes / no / not measured), before (with --before DIR: the same row
  from an earlier results directory), scale (rows of the run), source (CSV), source_date, command, note
and goals.png (bars: measured / goal per row, log scale, a line at 1; Debian's python3-matplotlib).
A row whose CSV or line is missing is written as "not measured" (nothing is estimated). source_date
is the run date in sql_bench_env.txt for sql_bench.csv and the dashboard, else "committed <date>" for
a CSV unchanged since its last git commit, else the file's modification time (the time it was written).
Prints the table.

  /usr/bin/python3 test/bench/goal_table.py [--results DIR] [--before DIR] [--out-dir DIR]
"""
import argparse
import csv
import datetime
import os
import subprocess
import sys

RUN = "make bench (scripts/run-bench.sh: test/bench/{})"
SQL_CMD = RUN.format("sql_bench.py")
UNIT_CMD = RUN.format("unit_bench.py")
DASH_CMD = RUN.format("dashboard_bench.py")
ANALYSIS_CMD = RUN.format("analysis_bench.py --goals --plot")
CITUS_CMD = "DXPRIV_BENCH_CITUS=1 make bench (test/bench/citus_bench.py on the clusters of scripts/run-citus.sh)"

# (goal_row, what, source, selector, mode, goal, unit)
#   sql: selector = query label in sql_bench.csv, mode serial/parallel
#   unit: selector = query label in unit_bench.csv, mode serial (0 workers) / parallel (> 0)
#   analysis: selector = (statement, measure) in analysis_bench.csv
#   dashboard: selector = refresh (first / cached)
#   citus: selector = start of the query label in citus_bench.csv
GOALS = []
for _label, _what in [("count(*)", "count"),
                      ("count(*) WHERE age > 40 AND sex='M'", "count WHERE"),
                      ("sum(qty) [int]", "sum(int)"),
                      ("sum(income)", "sum(numeric)"),
                      ("sum(score)", "sum(float8)"),
                      ("avg(income)", "avg"),
                      ("GROUP BY sex [2 groups]: count(*), sum(qty)", "GROUP BY 2 groups"),
                      ("GROUP BY g73 [73 groups]: count(*), sum(qty)", "GROUP BY 73 groups")]:
    for _mode in ("serial", "parallel"):
        GOALS.append(("1", "dx/native 2M rows: " + _what, "sql", _label, _mode, 1.10, "ratio"))
for _mode in ("serial", "parallel"):
    GOALS.append(("2", "10 aggregates GROUP BY 10 groups", "sql", "10 aggregates GROUP BY grp [10 groups]",
                  _mode, 0.80, "ratio"))
for _label, _what in [("count(*)", "count"), ("sum(cost) WHERE age >= 40", "sum"),
                      ("GROUP BY ward: count(*), avg(cost)", "GROUP BY"),
                      ("count(DISTINCT person)", "COUNT(DISTINCT unit)")]:
    for _mode in ("serial", "parallel"):
        GOALS.append(("3", "privacy unit k = 10: " + _what, "unit", _label, _mode, 2.0, "ratio"))
GOALS += [
    ("4", "analysis + plan: avg over 200,001 points", "analysis", ("avg, 200,001 points", "dx_explain"), "", 20, "ms"),
    ("4", "analysis + plan: avg over 10^6 points", "analysis", ("avg, 10^6 points", "dx_explain"), "", 100, "ms"),
    ("4", "analysis + plan: 5 aggregates over 10^5 points", "analysis",
     ("5 aggregates, 10^5 points", "dx_explain"), "", 200, "ms"),
]
for _stmt in ["avg, 200,001 points", "avg, 10^6 points", "5 aggregates, 10^5 points",
              "5 aggregates, 950 l2 points", "avg, 10^5 l2 points",
              # several cells varying over 10^5 l2 points: 3.0-3.5 ms before replayfast
              "avg + FILTERed count, 10^5 l2 points", "5 aggregates, 10^5 l2 points"]:
    GOALS.append(("5", "answer cache: " + _stmt, "analysis", (_stmt, "dx_cached"), "same session", 2, "ms"))
    # (the first statement of a new session: its analysis from the shared analysis memo, session 16)
    GOALS.append(("5", "answer cache: " + _stmt, "analysis", (_stmt, "dx_cached_new_session"), "new session", 2,
                  "ms"))
GOALS += [
    ("6", "8-tile dashboard refresh, first", "dashboard", "first", "", 2.0, "ratio"),
    ("6", "8-tile dashboard refresh, cached", "dashboard", "cached", "", 1.2, "ratio"),
    ("7", "Citus: pruned single-shard count WHERE id = 5", "citus", "pruned single shard", "", 2.0, "ratio"),
    ("7", "Citus: GROUP BY a 70-value key, count", "citus", "GROUP BY a 70-value key: count (", "", 1.2, "ratio"),
    ("7", "Citus: GROUP BY a 70-value key, count + sum", "citus", "GROUP BY a 70-value key: count, sum", "", 1.2,
     "ratio"),
    ("D", "analysis + plan: 5 aggregates over 950 l2 points", "analysis",
     ("5 aggregates, 950 l2 points", "dx_explain"), "", 30, "ms"),
    ("D", "analysis + plan: avg over 10^5 l2 points", "analysis", ("avg, 10^5 l2 points", "dx_explain"), "", 1000,
     "ms"),
]
SOURCES = {"sql": ("sql_bench.csv", SQL_CMD), "unit": ("unit_bench.csv", UNIT_CMD),
           "analysis": ("analysis_bench.csv", ANALYSIS_CMD), "dashboard": ("dashboard_bench.csv", DASH_CMD),
           "citus": ("citus_bench.csv", CITUS_CMD)}
COLUMNS = ["goal_row", "what", "mode", "goal", "unit", "measured", "native_ms", "dx_ms", "cpu_ms", "met", "before",
           "scale", "source", "source_date", "command", "note"]


def read(path):
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if not next(iter(r.values()), "").startswith("#")]


def number(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def env_line(results, key):
    """The value of 'key: ...' in sql_bench_env.txt, or None."""
    path = os.path.join(results, "sql_bench_env.txt")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split(":", 1)[1].strip()
    return None


def file_date(path):
    """'committed <date>' when the file is unchanged since its last commit, else its modification time."""
    d = os.path.dirname(os.path.abspath(path))
    try:
        dirty = subprocess.run(["git", "-C", d, "status", "--porcelain", "--", path], capture_output=True,
                               text=True, check=True).stdout.strip()
        tracked = subprocess.run(["git", "-C", d, "ls-files", "--error-unmatch", "--", path],
                                 capture_output=True, text=True).returncode == 0
        if tracked and not dirty:
            when = subprocess.run(["git", "-C", d, "log", "-1", "--format=%cI", "--", path], capture_output=True,
                                  text=True, check=True).stdout.strip()
            if when:
                return "committed " + when[:16].replace("T", " ")
    except (OSError, subprocess.CalledProcessError):
        pass
    t = datetime.datetime.fromtimestamp(os.path.getmtime(path), datetime.timezone.utc)
    return "written " + t.strftime("%Y-%m-%d %H:%M UTC")


def source_date(results, name):
    path = os.path.join(results, name)
    run = env_line(results, "date") if name in ("sql_bench.csv", "dashboard_bench.csv") else None
    fd = file_date(path)
    if run and name == "sql_bench.csv":
        return "run " + run[:16].replace("T", " ") + " (sql_bench_env.txt); " + fd
    return fd


def matches(kind, selector, mode, rows):
    """[(mode, native_ms, dx_ms, measured, cpu_ms, scale, note)] for one goal from one CSV's rows."""
    out = []
    for r in rows:
        if kind == "sql" and r.get("query") == selector and r.get("mode") == mode:
            out.append((mode, number(r["native_ms"]), number(r["dx_ms"]), number(r["ratio"]), None, None,
                        "parallel plan: " + r.get("parallel_plan", "")))
        elif kind == "unit" and r.get("query") == selector:
            workers = r.get("max_parallel_workers_per_gather", "0") or "0"
            if ("serial" if workers == "0" else "parallel") != mode:
                continue
            out.append((f"{mode} ({workers} workers, work_mem {r.get('work_mem', '?')})", number(r["native_ms"]),
                        number(r["dx_ms"]), number(r["ratio"]), None, f"{r.get('rows')} rows", ""))
        elif kind == "analysis" and (r.get("statement"), r.get("measure")) == selector:
            wall = number(r.get("median_ms"))
            note = "refused (no measurement: the statement was refused)" if wall is None else ""
            out.append((mode, None, wall, wall, number(r.get("cpu_median_ms")), f"{r.get('rows')} rows", note))
        elif kind == "dashboard" and r.get("refresh") == selector:
            out.append((mode, number(r["native_ms"]), number(r["dx_ms"]), number(r["ratio"]), None, None,
                        f"{r.get('runs')} refreshes"))
        elif kind == "citus" and r.get("query", "").startswith(selector):
            out.append((mode, number(r["native_ms"]), number(r["dx_ms"]), number(r["ratio"]), None,
                        f"{r.get('rows')} rows, {r.get('shards')} shards", r.get("query")))
    return out


def goal_rows(results):
    """Every goal row measured in one results directory (not measured rows included)."""
    cache, table = {}, []
    sql_scale = env_line(results, "bench")
    for row, what, kind, selector, mode, goal, unit in GOALS:
        name, command = SOURCES[kind]
        if name not in cache:
            cache[name] = read(os.path.join(results, name))
        rows = cache[name]
        base = {"goal_row": row, "what": what, "goal": ("<= %g x native" if unit == "ratio" else "<= %g ms") % goal,
                "goal_value": goal, "unit": unit, "command": command, "source": name}
        found = matches(kind, selector, mode, rows) if rows is not None else []
        if not found:
            table.append(dict(base, mode=mode, measured=None, native_ms=None, dx_ms=None, cpu_ms=None,
                              met="not measured", scale="", source_date="" if rows is None else
                              source_date(results, name),
                              note=("no " + name) if rows is None else "no such line in " + name))
            continue
        for m, nat, dx, measured, cpu, scale, note in found:
            if kind in ("sql", "dashboard") and sql_scale:
                scale = sql_scale.split(";")[0]
            if measured is None:
                met = "no" if "refused" in note else "not measured"
            else:
                met = "yes" if measured <= goal else "no"
                if unit == "ms" and met == "no" and cpu is not None and cpu <= goal:
                    note = (note + "; " if note else "") + "backend CPU median within the goal (loaded machine)"
            if kind in ("sql", "dashboard") and sql_scale and not sql_scale.startswith("2000000 "):
                note = (note + "; " if note else "") + "not the goal's 2M rows"
            table.append(dict(base, mode=m, measured=measured, native_ms=nat, dx_ms=dx, cpu_ms=cpu, met=met,
                              scale=scale or "", source_date=source_date(results, name), note=note))
    return table


def fmt(x):
    return "" if x is None else ("%.3f" % x).rstrip("0").rstrip(".")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(here, "results"), help="directory of the benchmark CSVs")
    ap.add_argument("--before", default=None, help="results directory of an earlier run on the same machine")
    ap.add_argument("--out-dir", default=None, help="where goals.csv and goals.png go (default: --results)")
    args = ap.parse_args()
    out_dir = args.out_dir or args.results
    os.makedirs(out_dir, exist_ok=True)
    table = goal_rows(args.results)
    before = {}
    if args.before:
        for r in goal_rows(args.before):
            before.setdefault((r["what"], r["mode"]), r["measured"])
    for r in table:
        r["before"] = before.get((r["what"], r["mode"]))
    with open(os.path.join(out_dir, "goals.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in table:
            w.writerow([fmt(r[c]) if isinstance(r[c], float) or r[c] is None else r[c] for c in COLUMNS])
    print(f"{'row':3s} {'what':50s} {'mode':13s} {'goal':>16s} {'measured':>9s} {'met':12s} source (date)")
    for r in table:
        print(f"{r['goal_row']:3s} {r['what'][:50]:50s} {r['mode'][:13]:13s} {r['goal']:>16s} "
              f"{fmt(r['measured']) or '-':>9s} {r['met']:12s} {r['source']} ({r['source_date'] or 'missing'})")
    met = sum(r["met"] == "yes" for r in table)
    measured = sum(r["met"] in ("yes", "no") for r in table)
    print(f"goal_table: {met} of {measured} measured rows meet their goal; "
          f"{len(table) - measured} not measured; wrote {os.path.join(out_dir, 'goals.csv')}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("goal_table: no matplotlib (apt-get install python3-matplotlib; run with /usr/bin/python3); CSV only",
              file=sys.stderr)
        return 0
    fig, ax = plt.subplots(figsize=(14, 6.5))
    xs = list(range(len(table)))
    width = 0.4 if before else 0.75
    ys = [r["measured"] / r["goal_value"] if r["measured"] is not None else None for r in table]
    colors = ["#3a9a48" if r["met"] == "yes" else "#c03a30" for r in table]
    shift = width / 2 if before else 0.0
    if before:
        bx = [(x - shift, r["before"] / r["goal_value"]) for x, r in zip(xs, table) if r["before"] is not None]
        ax.bar([b[0] for b in bx], [b[1] for b in bx], width, color="#bbbbbb", label="before")
    now = [(x + shift, y, c) for x, y, c in zip(xs, ys, colors) if y is not None]
    ax.bar([n[0] for n in now], [n[1] for n in now], width, color=[n[2] for n in now], label="now")
    for x, y, r in zip(xs, ys, table):
        if y is None:
            ax.text(x, 1.0, "refused" if r["met"] == "no" else "not measured", rotation=90, ha="center",
                    va="bottom", fontsize=7, color="#555555")
    ax.axhline(1.0, color="black", linewidth=1, label="goal")
    ax.set_yscale("log")
    ax.set_xticks(xs)
    def tick(r):
        mode = r["mode"].split(" ")[0] if r["mode"].startswith(("serial", "parallel")) else ""
        return f"{r['goal_row']}: {r['what'].split(': ', 1)[-1]} {mode}"[:48]
    ax.set_xticklabels([tick(r) for r in table], rotation=75, ha="right", fontsize=7)
    ax.set_ylabel("measured / goal (median; below 1 = met)")
    ax.set_title("dxpriv against the goals of issue 23 (green: met, red: not met; rows: goal table row)")
    if before:
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "goals.png"), dpi=100)
    return 0


if __name__ == "__main__":
    sys.exit(main())
