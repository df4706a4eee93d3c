#!/usr/bin/env python3
"""Backend CPU time of open GROUP BY keys (issue 26): native against dx, same connection, interleaved.

Run after test/bench/open_key_bench.py (it reads its table bench_open). For each of the three
statements of that benchmark, times native and dx (median of --runs after a warm-up) by the wall
clock and by the backend's CPU time (user + system from /proc/<pid>/stat: the client must run on the
server's machine as root or as the server's user). Serial by default (max_parallel_workers_per_gather
= 0: the CPU time of one backend is then the statement's whole cost, a ratio a loaded machine does
not distort); --parallel keeps the server's setting (the leader's CPU only, so compare wall times).
Writes test/bench/results/open_key_cpu[_parallel].csv: query, native/dx wall and CPU ms, ratios.
"""
import argparse
import csv
import os
import pathlib
import statistics
import time

import psycopg2

parser = argparse.ArgumentParser()
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--parallel", action="store_true")
args = parser.parse_args()

conn = psycopg2.connect("")
conn.autocommit = True
cur = conn.cursor()
cur.execute("SET dxpriv.epsilon = 1")
cur.execute("SET dxpriv.cache_lifetime = 0")
if not args.parallel:
    cur.execute("SET max_parallel_workers_per_gather = 0")
cur.execute("SELECT pg_backend_pid()")
pid = cur.fetchone()[0]
tick = os.sysconf("SC_CLK_TCK")


def cpu_ms():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / tick


QUERIES = [
    ("GROUP BY open key: count, sum, avg", "SELECT city, {c}(*), {s}(qty), {a}(qty) FROM bench_open GROUP BY city"),
    ("... WHERE sex = 'F'", "SELECT city, {c}(*), {s}(qty), {a}(qty) FROM bench_open WHERE sex = 'F' GROUP BY city"),
    ("GROUP BY open key, sex: count", "SELECT city, sex, {c}(*) FROM bench_open GROUP BY city, sex"),
]
out = []
for label, q in QUERIES:
    native = q.format(c="count", s="sum", a="avg")
    dx = q.format(c="dx.count", s="dx.sum", a="dx.avg")
    wall = {native: [], dx: []}
    cpu = {native: [], dx: []}
    for r in range(args.runs + 1):  # run 0: warm-up
        for sql in ([native, dx] if r % 2 == 0 else [dx, native]):
            c0, t0 = cpu_ms(), time.perf_counter()
            cur.execute(sql)
            cur.fetchall()
            if r:
                wall[sql].append((time.perf_counter() - t0) * 1000)
                cpu[sql].append(cpu_ms() - c0)
    m = statistics.median
    row = (label, round(m(wall[native])), round(m(wall[dx])), round(m(wall[dx]) / m(wall[native]), 2),
           round(m(cpu[native])), round(m(cpu[dx])), round(m(cpu[dx]) / max(1.0, m(cpu[native])), 2))
    out.append(row)
    print(f"{label}: wall native {row[1]} ms, dx {row[2]} ms ({row[3]}); CPU native {row[4]} ms, dx {row[5]} ms ({row[6]})",
          flush=True)
path = pathlib.Path(__file__).resolve().parent / f"results/open_key_cpu{'_parallel' if args.parallel else ''}.csv"
with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["query", "native_wall_ms", "dx_wall_ms", "wall_ratio", "native_cpu_ms", "dx_cpu_ms", "cpu_ratio"])
    w.writerows(out)
print(f"wrote {path} (median of {args.runs}, {'parallel' if args.parallel else 'serial'})")
