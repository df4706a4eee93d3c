#!/usr/bin/env python3
"""Where the first dashboard refresh goes (issue 23): for each tile of dashboard_bench.py, in a new
session with the answer cache off (dxpriv.cache_lifetime = 0), the first statement (analysis, plan,
charge, rows) and the same statement again (the session's analysis memo is hit: plan, charge,
rows), against the native statement. first - again is the tile's analysis.

Connects like dashboard_bench.py (PGHOST/PGPORT/PGUSER, a superuser, after sql_bench.py created and
protected `bench`). Prints one line per tile and writes --out (CSV): tile, native_ms, dx_first_ms,
dx_again_ms, analysis_ms (medians of --runs).
"""
import argparse
import csv
import os
import statistics
import time

import psycopg2

from dashboard_bench import TILES


def session(settings):
    conn = psycopg2.connect(dbname=os.environ.get("PGDATABASE", "postgres"))
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SET jit = off")
    for name, value in settings:
        cur.execute("SELECT set_config(%s, %s, false)", (name, value))
    return conn, cur


def timed(cur, sql):
    t0 = time.perf_counter()
    cur.execute(sql)
    cur.fetchall()
    return (time.perf_counter() - t0) * 1000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE", help="a session setting (repeatable)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    settings = [tuple(s.split("=", 1)) for s in args.set] + [("dxpriv.cache_lifetime", "0")]
    rows = []
    for tile, sql in TILES:
        native, first, again = [], [], []
        for _ in range(args.runs):
            conn, cur = session(settings)
            native.append(timed(cur, sql.format(p="")))
            first.append(timed(cur, sql.format(p="dx.")))
            again.append(timed(cur, sql.format(p="dx.")))
            conn.close()
        n, f, a = statistics.median(native), statistics.median(first), statistics.median(again)
        rows.append((tile, n, f, a, f - a))
        print(f"{tile:45s} native {n:8.1f} ms  dx first {f:8.1f} ms  dx again {a:8.1f} ms  analysis {f - a:8.1f} ms",
              flush=True)
    tot = [sum(r[i] for r in rows) for i in range(1, 5)]
    print(f"{'total':45s} native {tot[0]:8.1f} ms  dx first {tot[1]:8.1f} ms  dx again {tot[2]:8.1f} ms  "
          f"analysis {tot[3]:8.1f} ms  first/native {tot[1] / tot[0]:.2f}  again/native {tot[2] / tot[0]:.2f}")
    if args.out:
        with open(args.out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["tile", "native_ms", "dx_first_ms", "dx_again_ms", "analysis_ms"])
            for r in rows + [("total",) + tuple(tot)]:
                w.writerow([r[0]] + [f"{x:.1f}" for x in r[1:]])


if __name__ == "__main__":
    main()
