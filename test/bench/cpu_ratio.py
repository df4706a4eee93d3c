#!/usr/bin/env python3
"""Serial dx/native ratios in backend CPU time (issue 23): less sensitive than round trips to the
load of a shared machine. For each pair of sql_bench.py (serial: no parallel workers, answer cache
off, JIT off), native and dx run interleaved --runs times after one warm-up; each run's CPU time is
the backend's user + system time (/proc/<pid>/stat, clock ticks) around the statement. Needs the
server on this machine and read access to /proc of its backends.

Connects with PGHOST/PGPORT/PGUSER (a superuser, after sql_bench.py has created `bench`). Prints
one line per pair and writes --out (CSV): query, native_cpu_ms, dx_cpu_ms, ratio (medians).
"""
import argparse
import csv
import os
import statistics

import psycopg2

from sql_bench import BENCH_PAIRS

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")


def cpu_ms(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_MS  # utime, stime (fields 14 and 15)


def run(cur, pid, sql):
    before = cpu_ms(pid)
    cur.execute(sql)
    cur.fetchall()
    return cpu_ms(pid) - before


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", default=None, help="only the pairs whose label contains this text")
    ap.add_argument("--out", default=None)
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting for the session (e.g. dxpriv.keys_in_scan=off); repeatable")
    args = ap.parse_args()
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
        if len(pair) > 4 or (args.only and args.only not in label):
            continue  # (the noise-family variants read the rows as the default family does)
        run(cur, pid, native_sql)
        run(cur, pid, dx_sql)  # warm-up; the analysis memo is filled here
        native, dx = [], []
        for i in range(args.runs):
            order = [(native, native_sql), (dx, dx_sql)]
            for out, sql in (order if i % 2 == 0 else order[::-1]):
                out.append(run(cur, pid, sql))
        n, d = statistics.median(native), statistics.median(dx)
        rows.append((label, n, d, d / n if n else float("nan")))
        print(f"{label:46s} native {n:8.1f} ms CPU  dx {d:8.1f} ms CPU  ratio {d / n if n else float('nan'):5.2f}",
              flush=True)
    if args.out:
        with open(args.out, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["query", "native_cpu_ms", "dx_cpu_ms", "ratio"])
            for r in rows:
                w.writerow([r[0], f"{r[1]:.1f}", f"{r[2]:.1f}", f"{r[3]:.3f}"])


if __name__ == "__main__":
    main()
