#!/usr/bin/env python3
"""Analysis benchmark (issue 23): what a dx statement costs before and around its rows.

Times, as medians of --runs round trips after one warm-up, on the cluster named by PGHOST/PGPORT
(a superuser as PGUSER; e.g. a throwaway cluster from scripts/pg-env.sh start_cluster), the wall
time and the CPU time of the server backend (from /proc/<pid>/schedstat, so the server must run on
this machine; on a loaded machine the CPU time is the steadier figure):

  native           the plain statement, run by the table owner (no dx analysis)
  native_explain   EXPLAIN of the plain statement, by the owner (planning only)
  dx_explain       SELECT * FROM dx.explain('<statement>') by the analyst: analysis + plan, no rows
  dx_analysis      the statement by the analyst with a new epsilon each run (no memo, no cached
                   answer): analysis, plan, charge and the rows
  dx_cached        the statement by the analyst, answered from the answer cache (same session)
  dx_cached_new_session  the same in a new session each run (connection set-up excluded): the
                   first statement of a session pays the analysis once
  dx_cached_first_statement  the same as the very first statement of a new session (dxpriv.epsilon
                   given in the connection's options, no SET or other statement before it): what the
                   backend's own first-statement set-up adds (catalog caches, dxpriv's objects and
                   analyst context), as a BI tool's new connection pays it

for: avg(income) with income an integer column declared 0..200000 step 1 (200,001 points,
absolute metric) and 0..999999 (10^6 points), 5 aggregates over a 10^5-point column, 5 aggregates
over a 950-point l2 location domain (pseudo-random points in the US bounding box) and one
aggregate over a 10^5-point l2 domain; two (an average and a FILTERed count) and five aggregates
over 10^4- and 10^5-point l2 domains (several cells varying over the points). Writes test/bench/results/analysis_bench.csv (statement,
measure, median_ms, min_ms, cpu_median_ms, runs, rows) and, with --goals, the goal rows of
issue 23 with their verdict; --plot also writes analysis_bench.png (matplotlib).

  python3 test/bench/analysis_bench.py --rows 100000 --runs 5 --plot

Before/after on one machine: run it with the earlier dxpriv.so installed (--out ..._before.csv),
install the new one, restart the cluster and run it again with --before ..._before.csv --skip-setup:
the goal rows then show both CPU medians and the plot puts both bars side by side.
"""

import argparse
import csv
import os
import random
import statistics
import time

import psycopg2
import psycopg2.extras

FIVE = ("SELECT count(*), sum(income), avg(income), count(*) FILTER (WHERE income > 50000), "
        "sum(income) FILTER (WHERE income < 20000) FROM t100k")
L2_FIVE = ("SELECT count(*), count(*) FILTER (WHERE lat > 40), sum(lat), avg(lon), "
           "count(*) FILTER (WHERE lon < -100) FROM cities")
STATEMENTS = [
    ("avg, 200,001 points", "t200k", "SELECT avg(income) FROM t200k"),
    ("avg, 10^6 points", "t1m", "SELECT avg(income) FROM t1m"),
    ("5 aggregates, 10^5 points", "t100k", FIVE),
    ("5 aggregates, 950 l2 points", "cities", L2_FIVE),
    ("avg, 10^5 l2 points", "places", "SELECT avg(lat) FROM places"),
    # two or more cells varying over an l2 column (the pair tree's row searches)
    ("avg + FILTERed count, 10^4 l2 points", "places10k",
     "SELECT avg(lat), count(*) FILTER (WHERE lon < -100) FROM places10k"),
    ("avg + FILTERed count, 10^5 l2 points", "places",
     "SELECT avg(lat), count(*) FILTER (WHERE lon < -100) FROM places"),
    ("5 aggregates, 10^4 l2 points", "places10k", L2_FIVE.replace("cities", "places10k")),
    ("5 aggregates, 10^5 l2 points", "places", L2_FIVE.replace("cities", "places")),
]
DOMAINS = {"t200k": 200000, "t1m": 999999, "t100k": 99999}
ANALYST = "dx_bench_analysis"
# (statement, measure, goal in ms, on what) for --goals
GOALS = [
    ("avg, 200,001 points", "dx_explain", 20, "analysis + plan"),
    ("avg, 10^6 points", "dx_explain", 100, "analysis + plan"),
    ("5 aggregates, 10^5 points", "dx_explain", 200, "analysis + plan"),
    ("5 aggregates, 950 l2 points", "dx_explain", 30, "analysis + plan"),
    ("avg, 10^5 l2 points", "dx_explain", 1000, "analysis + plan"),
] + [(s[0], "dx_cached", 2, "answer from the cache") for s in STATEMENTS]


def connect(user=None):
    kw = {"dbname": os.environ.get("PGDATABASE", "postgres")}
    if user:
        kw["user"] = user
    c = psycopg2.connect(**kw)
    c.autocommit = True
    return c


def points(n, seed):
    rnd = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        p = (round(rnd.uniform(-124.7, -67.0), 4), round(rnd.uniform(25.1, 49.4), 4))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def setup(owner, rows):
    cur = owner.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS dxpriv")
    cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ANALYST,))
    if not cur.fetchone():
        cur.execute(f"CREATE ROLE {ANALYST} LOGIN")
        cur.execute("SELECT dx.add_analyst(%s)", (ANALYST,))
    for t, hi in DOMAINS.items():
        cur.execute(f"DROP TABLE IF EXISTS {t}")
        cur.execute(f"CREATE TABLE {t} (id int, income int)")
        cur.execute(f"INSERT INTO {t} SELECT g, (g * 7919) %% {hi + 1} FROM generate_series(1, %s) g", (rows,))
        cur.execute(f"ANALYZE {t}")
        cur.execute("SELECT dx.protect_table(%s, 1.0)", (t,))
        cur.execute("SELECT dx.set_column(%s, 'income', %s, %s)",
                    (t, '{"min": 0, "max": %d, "step": 1}' % hi, '{"type": "absolute", "scale": 1000}'))
        cur.execute("SELECT dx.grant_budget(%s, %s, 1e9)", (ANALYST, t))
    for t, n in (("cities", 950), ("places10k", 10000), ("places", 100000)):
        pts = points(n, n)
        cur.execute(f"DROP TABLE IF EXISTS {t}")
        cur.execute(f"CREATE TABLE {t} (id int, lon float8, lat float8)")
        cur.execute(f"INSERT INTO {t} SELECT g, a.lons[1 + (g * 7919) %% {n}], a.lats[1 + (g * 7919) %% {n}] "
                    f"FROM generate_series(1, %s) g, (SELECT %s::float8[] AS lons, %s::float8[] AS lats) a",
                    (rows, [p[0] for p in pts], [p[1] for p in pts]))
        cur.execute(f"ANALYZE {t}")
        cur.execute("SELECT dx.protect_table(%s, 1.0)", (t,))
        cur.execute("SELECT dx.set_column_group(%s, ARRAY['lon', 'lat'], %s, %s)",
                    (t, psycopg2.extras.Json({"points": [list(p) for p in pts]}),
                     '{"type": "l2", "scale": 1}'))
        cur.execute("SELECT dx.grant_budget(%s, %s, 1e9)", (ANALYST, t))


def backend_cpu_ns(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


def timed(conn, sql, runs, before=None, fresh_session=False, first_statement=False):
    """Median-ready lists of wall and backend CPU milliseconds (None, None when the statement fails).
    fresh_session: each run in a new session; first_statement: there, as its first statement."""
    walls, cpus = [], []
    conns = [conn]
    for i in range(runs + 1):
        c = conn
        if fresh_session and first_statement:
            c = psycopg2.connect(dbname=os.environ.get("PGDATABASE", "postgres"), user=ANALYST,
                                 options="-c dxpriv.epsilon=0.1")
            c.autocommit = True
            conns.append(c)
        elif fresh_session:
            c = connect(ANALYST)
            c.cursor().execute("SET dxpriv.epsilon = 0.1")
            conns.append(c)
        cur = c.cursor()
        if first_statement:
            pid = c.info.backend_pid
        else:
            cur.execute("SELECT pg_backend_pid()")
            pid = cur.fetchone()[0]
        text = before(i) if before else sql
        cpu0 = backend_cpu_ns(pid)
        t0 = time.perf_counter()
        try:
            cur.execute(text)
            cur.fetchall()
        except psycopg2.Error as e:
            print(f"    refused: {str(e).splitlines()[0]}")
            return None, None
        wall = (time.perf_counter() - t0) * 1000.0
        cpu = (backend_cpu_ns(pid) - cpu0) / 1e6
        if i > 0 or fresh_session:  # the first run warms the session up
            walls.append(wall)
            cpus.append(cpu)
        if fresh_session:
            c.close()
    return walls[-runs:], cpus[-runs:]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--skip-setup", action="store_true")
    ap.add_argument("--session-runs", type=int, default=None,
                    help="runs of the new-session measures (default 3 x --runs: a new session's ~1-2 ms "
                         "statement moves with every burst of host load, and one new session per run is cheap)")
    ap.add_argument("--only", help="time only the statements whose label contains this text (e.g. l2)")
    ap.add_argument("--measures", help="time only these measures (comma-separated, e.g. dx_cached_new_session: "
                                       "a new dxpriv.so's first statements A/B against an earlier one, after a restart)")
    ap.add_argument("--goals", action="store_true", help="print the issue-23 goal rows with a verdict")
    ap.add_argument("--plot", action="store_true", help="also write a PNG next to the CSV")
    ap.add_argument("--before", help="CSV of an earlier run (e.g. the previous dxpriv.so) to compare with")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "analysis_bench.csv"))
    a = ap.parse_args()
    session_runs = a.session_runs or 3 * a.runs
    owner = connect()
    if not a.skip_setup:
        setup(owner, a.rows)
    analyst = connect(ANALYST)
    analyst.cursor().execute("SET dxpriv.epsilon = 0.1")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"load average at start: {' '.join(load)}")
    results = []
    for label, table, sql in STATEMENTS:
        if a.only and a.only not in label:
            continue
        m = {}
        wanted = set(a.measures.split(",")) if a.measures else None
        want = lambda k: wanted is None or k in wanted  # noqa: E731
        quoted = psycopg2.extensions.adapt(sql).getquoted().decode()
        if want("native"):
            m["native"] = timed(owner, sql, a.runs)
        if want("native_explain"):
            m["native_explain"] = timed(owner, "EXPLAIN " + sql, a.runs)
        if want("dx_explain"):
            m["dx_explain"] = timed(analyst, "SELECT * FROM dx.explain(%s)" % quoted, a.runs)
        stamp = int(time.time() * 1000) % 100000
        if want("dx_analysis"):
            m["dx_analysis"] = timed(analyst, sql, a.runs,
                                     lambda i: "SET dxpriv.epsilon = %.12f; %s" % (0.1 + (stamp * 100 + i) * 1e-11, sql))
        analyst.cursor().execute("SET dxpriv.epsilon = 0.1")
        if want("dx_cached"):
            m["dx_cached"] = timed(analyst, sql, a.runs)
        if want("dx_cached_new_session"):
            m["dx_cached_new_session"] = timed(analyst, sql, session_runs, fresh_session=True)
        if wanted is not None and "dx_cached_first_statement" in wanted:  # (only when asked for)
            m["dx_cached_first_statement"] = timed(analyst, sql, session_runs, fresh_session=True, first_statement=True)
        for k, (w, c) in m.items():
            if w is None:
                results.append((label, k, None, None, None, 0, a.rows))
                continue
            results.append((label, k, statistics.median(w), min(w), statistics.median(c), len(w), a.rows))
            print(f"{label:28s} {k:22s} median {statistics.median(w):10.2f} ms  min {min(w):10.2f} ms  "
                  f"cpu {statistics.median(c):10.2f} ms")
    with open("/proc/loadavg") as f:
        load_end = f.read().split()[:3]
    print(f"load average at end: {' '.join(load_end)}")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["statement", "measure", "median_ms", "min_ms", "cpu_median_ms", "runs", "rows"])
        for r in results:
            w.writerow([r[0], r[1]] + ["" if x is None else "%.3f" % x for x in r[2:5]] + [r[5], r[6]])
        w.writerow(["# load average start/end", " ".join(load), " ".join(load_end), "", "", "", ""])
    before = {}
    if a.before:
        with open(a.before) as f:
            for row in csv.reader(f):
                if len(row) >= 5 and not row[0].startswith("#") and row[0] != "statement":
                    before[(row[0], row[1])] = float(row[4]) if row[4] else None
    if a.goals:
        print("\ngoal rows (issue 23): wall median / backend CPU median against the goal"
              + (" (before: CPU median of --before)" if before else ""))
        by = {(r[0], r[1]): r for r in results}
        for stmt, measure, goal, what in GOALS:
            if a.only and a.only not in stmt:
                continue
            r = by.get((stmt, measure))
            was = before.get((stmt, measure))
            was_text = (" before %s" % ("refused" if was is None else "%9.2f ms CPU" % was)) if (stmt, measure) in before else ""
            if not r or r[2] is None:
                print(f"  {stmt:28s} {what:24s} goal <= {goal:6g} ms: refused{was_text}")
                continue
            verdict = "met" if r[2] <= goal else ("met in CPU" if r[4] <= goal else "NOT met")
            print(f"  {stmt:28s} {what:24s} goal <= {goal:6g} ms: {r[2]:9.2f} ms wall, {r[4]:9.2f} ms CPU  {verdict}{was_text}")
    if a.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        measures = ["native", "dx_explain", "dx_analysis", "dx_cached", "dx_cached_new_session"]
        series = [(meas, {(r[0], r[1]): r[4] for r in results}) for meas in measures]
        if before:  # before/after of the analysis measures, side by side
            series = []
            for meas in ["dx_explain", "dx_analysis", "dx_cached_new_session"]:
                series.append((meas + " before", before))
                series.append((meas, {(r[0], r[1]): r[4] for r in results}))
        fig, ax = plt.subplots(figsize=(12, 5))
        width = 0.8 / len(series)
        for j, (label, values) in enumerate(series):
            meas = label.replace(" before", "")
            ys = [values.get((s[0], meas)) or 0 for s in STATEMENTS]
            ax.bar([i + j * width for i in range(len(STATEMENTS))], ys, width, label=label,
                   hatch="//" if label.endswith("before") else None)
        for stmt, measure, goal, what in GOALS:
            if measure == "dx_explain":
                i = [s[0] for s in STATEMENTS].index(stmt)
                ax.hlines(goal, i - width / 2, i + 0.8 - width / 2, colors="red", linestyles="dashed")
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(STATEMENTS))])
        ax.set_xticklabels([s[0] for s in STATEMENTS], fontsize=8)
        ax.set_yscale("log")
        ax.set_ylabel("backend CPU ms (median)")
        ax.set_title(f"dxpriv analysis, backend CPU (load {' '.join(load)}; red: dx_explain goal)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.splitext(a.out)[0] + ".png", dpi=110)


if __name__ == "__main__":
    main()
