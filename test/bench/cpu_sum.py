#!/usr/bin/env python3
"""Serial backend CPU time summed over N interleaved runs of sql_bench.py pairs (issue 23): a sum
of 10 ms ticks over N runs resolves a few percent where a median of N runs cannot. Per pair, one
warm-up of each statement, then N rounds of (native, dx), the order alternating each round; CPU
time is the backend's user + system time from /proc/<pid>/stat around each statement (as
cpu_ratio.py: no parallel workers, JIT off, answer cache off). Connects with PGHOST/PGPORT/PGUSER
(a superuser, on this machine, after sql_bench.py created `bench`).

usage: cpu_sum.py [--runs N] [--only TEXT]... [--label L] [--out CSV] [--set NAME=VALUE]...
Prints and appends (--out) rows: label, query, runs, native_cpu_ms, dx_cpu_ms, ratio.
"""
import argparse
import csv
import os

import psycopg2

from cpu_ratio import cpu_ms, run
from sql_bench import BENCH_PAIRS

# the ungrouped per-row goal rows of issue 23
DEFAULT_ONLY = ["count(*)", "count(*) WHERE age > 40 AND sex='M'", "sum(qty) [int]", "sum(income)",
                "sum(score)", "avg(income)"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", action="append", default=None, help="exact pair label (repeatable)")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    args = ap.parse_args()
    only = args.only or DEFAULT_ONLY
    conn = psycopg2.connect(dbname=os.environ.get("PGDATABASE", "postgres"))
    conn.autocommit = True
    cur = conn.cursor()
    for s in ("SET max_parallel_workers_per_gather = 0", "SET jit = off", "SET dxpriv.cache_lifetime = 0"):
        cur.execute(s)
    for nv in args.set:
        name, value = nv.split("=", 1)
        cur.execute("SELECT set_config(%s, %s, false)", (name, value))
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    rows = []
    for pair in BENCH_PAIRS:
        label, native_sql, dx_sql = pair[0], pair[1], pair[2]
        if len(pair) > 4 or label not in only:
            continue
        run(cur, pid, native_sql)
        run(cur, pid, dx_sql)
        nat = dx = 0.0
        for i in range(args.runs):
            if i % 2 == 0:
                nat += run(cur, pid, native_sql)
                dx += run(cur, pid, dx_sql)
            else:
                dx += run(cur, pid, dx_sql)
                nat += run(cur, pid, native_sql)
        rows.append((args.label, label, args.runs, nat, dx, dx / nat if nat else float("nan")))
        print(f"{args.label:10s} {label:40s} native {nat:8.0f} ms CPU  dx {dx:8.0f} ms CPU  ratio {dx / nat:5.3f}",
              flush=True)
    if args.out:
        new = not os.path.exists(args.out)
        with open(args.out, "a", newline="") as fh:
            w = csv.writer(fh)
            if new:
                w.writerow(["label", "query", "runs", "native_cpu_ms", "dx_cpu_ms", "ratio"])
            for r in rows:
                w.writerow([r[0], r[1], r[2], f"{r[3]:.0f}", f"{r[4]:.0f}", f"{r[5]:.3f}"])


if __name__ == "__main__":
    main()
