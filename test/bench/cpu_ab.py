#!/usr/bin/env python3
"""Two builds of dxpriv side by side (issue 23): two clusters with the same `bench` table (each set up by
sql_bench.py), one running build A and one build B, measured in the same rounds. Per pair and round:
native and dx on A, native and dx on B (the order of the four statements rotates each round), each
statement's backend CPU time read from /proc/<pid>/schedstat (nanoseconds on the CPU, not 10 ms ticks;
no parallel workers, JIT off, answer cache off, as cpu_sum.py). Both builds meet the same load at the
same moments, so a drift of the machine's load between series does not enter the A/B comparison.

usage: cpu_ab.py --port-a P --port-b Q [--host H | --host-a H --host-b H] [--runs N] [--only LABEL]... [--label L] [--out CSV]
Prints and appends (--out) rows: label, query, runs, then per build native_cpu_ms, dx_cpu_ms, ratio,
and dx_b / dx_a.
"""
import argparse
import csv
import os

import psycopg2

from cpu_sum import DEFAULT_ONLY
from sql_bench import BENCH_PAIRS


def cpu_ns(pid):
    with open(f"/proc/{pid}/schedstat") as fh:
        return int(fh.read().split()[0])


def session(host, port):
    conn = psycopg2.connect(host=host, port=port, dbname=os.environ.get("PGDATABASE", "postgres"))
    conn.autocommit = True
    cur = conn.cursor()
    for s in ("SET max_parallel_workers_per_gather = 0", "SET jit = off", "SET dxpriv.cache_lifetime = 0"):
        cur.execute(s)
    cur.execute("SELECT pg_backend_pid()")
    return cur, cur.fetchone()[0]


def run(cur, pid, sql):
    before = cpu_ns(pid)
    cur.execute(sql)
    cur.fetchall()
    return (cpu_ns(pid) - before) / 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default=os.environ.get("PGHOST"))
    ap.add_argument("--host-a", default=None, help="(default --host)")
    ap.add_argument("--host-b", default=None, help="(default --host)")
    ap.add_argument("--port-a", type=int, required=True)
    ap.add_argument("--port-b", type=int, required=True)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", action="append", default=None, help="exact pair label (repeatable)")
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    only = args.only or DEFAULT_ONLY
    a, b = session(args.host_a or args.host, args.port_a), session(args.host_b or args.host, args.port_b)
    rows = []
    for pair in BENCH_PAIRS:
        label, native_sql, dx_sql = pair[0], pair[1], pair[2]
        if len(pair) > 4 or label not in only:
            continue
        steps = [(0, a, native_sql), (1, a, dx_sql), (2, b, native_sql), (3, b, dx_sql)]
        for _, (cur, pid), sql in steps:  # warm-up
            run(cur, pid, sql)
        total = [0.0] * 4
        for i in range(args.runs):
            k = i % 4
            for slot, (cur, pid), sql in steps[k:] + steps[:k]:
                total[slot] += run(cur, pid, sql)
        ra, rb = total[1] / total[0], total[3] / total[2]
        rows.append((args.label, label, args.runs, *total, ra, rb, total[3] / total[1]))
        print(f"{args.label:8s} {label:38s} A {total[0]:7.0f}/{total[1]:7.0f} ms ({ra:5.3f})  "
              f"B {total[2]:7.0f}/{total[3]:7.0f} ms ({rb:5.3f})  dx B/A {total[3] / total[1]:5.3f}", flush=True)
    if args.out:
        new = not os.path.exists(args.out)
        with open(args.out, "a", newline="") as fh:
            w = csv.writer(fh)
            if new:
                w.writerow(["label", "query", "runs", "a_native_cpu_ms", "a_dx_cpu_ms", "b_native_cpu_ms",
                            "b_dx_cpu_ms", "a_ratio", "b_ratio", "dx_b_over_a"])
            for r in rows:
                w.writerow([r[0], r[1], r[2]] + [f"{x:.1f}" for x in r[3:7]] + [f"{x:.3f}" for x in r[7:]])


if __name__ == "__main__":
    main()
