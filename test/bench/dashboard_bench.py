#!/usr/bin/env python3
"""Dashboard benchmark (issue 23): a refresh of 8 typical BI tiles on the 2M-row `bench` table of
sql_bench.py, dx against native, same run, medians of --runs refreshes.

  * native: the 8 native statements, one after the other, on one connection;
  * dx first: a new connection (no analysis memo), the answer cache emptied (dx.clear_cache()), then
    the 8 dx statements: every tile is analysed, charged and reads its rows;
  * dx cached: the same 8 statements again on that connection: every answer is replayed from the
    answer cache (dxpriv.cache_lifetime at its default), free, without reading rows.

Connects with PGHOST/PGPORT/PGUSER (a superuser; the cluster of scripts/run-bench.sh, after
sql_bench.py has created and protected `bench`). Writes --out (dashboard_bench.csv): refresh,
native_ms, dx_ms, ratio, goal, plus one row per tile (tile N: its first-refresh time).
"""
import argparse
import csv
import os
import statistics
import time

import psycopg2

# (tile, native SQL); the dx statement is the same with dx. aggregates
TILES = [
    ("KPI: rows", "SELECT {p}count(*) FROM bench"),
    ("KPI: average income", "SELECT {p}avg(income) FROM bench"),
    ("bar: rows per sex", "SELECT sex, {p}count(*) FROM bench GROUP BY sex"),
    ("bar: quantity per group", "SELECT grp, {p}sum(qty) FROM bench GROUP BY grp"),
    ("KPI: women aged 30-50", "SELECT {p}count(*) FROM bench WHERE age BETWEEN 30 AND 50 AND sex = 'F'"),
    ("line: rows and average quantity per week", "SELECT g73, {p}count(*), {p}avg(qty) FROM bench GROUP BY g73"),
    ("table: group summary", "SELECT grp, {p}count(*), {p}sum(qty), {p}avg(age) FROM bench GROUP BY grp"),
    ("KPI: large orders, total score", "SELECT {p}count(*) FILTER (WHERE qty > 25), {p}sum(score) FROM bench"),
]
GOALS = {"first": 2.0, "cached": 1.2}


def connect():
    conn = psycopg2.connect(dbname=os.environ.get("PGDATABASE", "postgres"))
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SET jit = off")
    return conn, cur


def refresh(cur, prefix):
    """Milliseconds of the 8 tiles, in order, and their total."""
    times = []
    for _, sql in TILES:
        t0 = time.perf_counter()
        cur.execute(sql.format(p=prefix))
        cur.fetchall()
        times.append((time.perf_counter() - t0) * 1000.0)
    return times, sum(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a session setting (repeatable)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                   "dashboard_bench.csv"))
    args = ap.parse_args()
    native, first, cached = [], [], []
    tile_first = [[] for _ in TILES]
    _, ncur = connect()
    refresh(ncur, "")  # warm-up (buffers, catalog caches)
    for _ in range(args.runs):
        native.append(refresh(ncur, "")[1])
        conn, cur = connect()
        for setting in args.set:
            name, _, value = setting.partition("=")
            cur.execute("SELECT set_config(%s, %s, false)", (name.strip(), value.strip()))
        cur.execute("SELECT dx.clear_cache()")
        times, total = refresh(cur, "dx.")
        first.append(total)
        for i, t in enumerate(times):
            tile_first[i].append(t)
        cached.append(refresh(cur, "dx.")[1])
        conn.close()
    nat = statistics.median(native)
    rows = [("first", nat, statistics.median(first)), ("cached", nat, statistics.median(cached))]
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["refresh", "native_ms", "dx_ms", "ratio", "goal", "runs"])
        for name, n, d in rows:
            w.writerow([name, f"{n:.1f}", f"{d:.1f}", f"{d / n:.3f}", GOALS[name], args.runs])
        for (tile, _), ts in zip(TILES, tile_first):
            w.writerow([f"tile: {tile}", "", f"{statistics.median(ts):.1f}", "", "", args.runs])
    for name, n, d in rows:
        print(f"dashboard {name:7s} native {n:8.1f} ms  dx {d:8.1f} ms  ratio {d / n:5.2f}  goal {GOALS[name]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
