#!/usr/bin/env python3
"""Analysis benchmark (issue 23): what a dx statement costs before and around its rows.

Times, as medians of --runs round trips after one warm-up, on the cluster named by PGHOST/PGPORT
(a superuser as PGUSER; e.g. a throwaway cluster from scripts/pg-env.sh start_cluster):

  native          the plain statement, run by the table owner (no dx analysis)
  native_explain  EXPLAIN of the plain statement, by the owner (planning only)
  dx_explain      SELECT * FROM dx.explain('<statement>') by the analyst: analysis + plan, no rows
  dx_fresh        the statement by the analyst after dx.clear_cache(table) (analysis, charge, rows)
  dx_cached       the statement by the analyst, answered from the answer cache (after a warm-up)

for: avg(income) with income an integer column declared 0..200000 step 1 (200,001 points,
absolute metric) and 0..999999 (10^6 points), and 5 aggregates over a 10^5-point column.
Writes test/bench/results/analysis_bench.csv (statement, measure, median_ms, min_ms, runs, rows).

  python3 test/bench/analysis_bench.py --rows 100000 --runs 5
"""

import argparse
import csv
import os
import statistics
import time

import psycopg2

STATEMENTS = [
    ("avg, 200,001 points", "t200k", "SELECT avg(income) FROM t200k"),
    ("avg, 10^6 points", "t1m", "SELECT avg(income) FROM t1m"),
    ("5 aggregates, 10^5 points", "t100k",
     "SELECT count(*), sum(income), avg(income), count(*) FILTER (WHERE income > 50000), "
     "sum(income) FILTER (WHERE income < 20000) FROM t100k"),
]
DOMAINS = {"t200k": 200000, "t1m": 999999, "t100k": 99999}
ANALYST = "dx_bench_analysis"


def connect(user=None):
    kw = {"dbname": os.environ.get("PGDATABASE", "postgres")}
    if user:
        kw["user"] = user
    c = psycopg2.connect(**kw)
    c.autocommit = True
    return c


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


def timed(cur, sql, runs, before=None):
    cur.execute(sql)
    cur.fetchall()
    out = []
    for _ in range(runs):
        if before:
            before()
        t0 = time.perf_counter()
        cur.execute(sql)
        cur.fetchall()
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                  "analysis_bench.csv"))
    a = ap.parse_args()
    owner = connect()
    setup(owner, a.rows)
    analyst = connect(ANALYST)
    ocur, acur = owner.cursor(), analyst.cursor()
    acur.execute("SET dxpriv.epsilon = 0.1")
    results = []
    for label, table, sql in STATEMENTS:
        m = {}
        m["native"] = timed(ocur, sql, a.runs)
        m["native_explain"] = timed(ocur, "EXPLAIN " + sql, a.runs)
        m["dx_explain"] = timed(acur, "SELECT * FROM dx.explain(%s)" % psycopg2.extensions.adapt(sql).getquoted().decode(),
                                a.runs)
        m["dx_fresh"] = timed(acur, sql, a.runs, lambda: ocur.execute("SELECT dx.clear_cache(%s)", (table,)))
        m["dx_cached"] = timed(acur, sql, a.runs)
        for k, v in m.items():
            results.append((label, k, statistics.median(v), min(v), len(v), a.rows))
            print(f"{label:28s} {k:15s} median {statistics.median(v):10.2f} ms  min {min(v):10.2f} ms")
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["statement", "measure", "median_ms", "min_ms", "runs", "rows"])
        for r in results:
            w.writerow([r[0], r[1], "%.3f" % r[2], "%.3f" % r[3], r[4], r[5]])


if __name__ == "__main__":
    main()
