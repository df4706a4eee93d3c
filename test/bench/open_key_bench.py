#!/usr/bin/env python3
"""Benchmark of open GROUP BY keys (issue 26): 2M rows grouped by a 50,000-value open key.

Needs a running cluster with dxpriv (PGHOST/PGPORT/PGUSER, as scripts/run-bench.sh exports; or run
it through scripts/run-bench-open.sh). Creates bench_open(city text, qty int, sex text) with
--rows rows and --keys cities (row i in city i % keys), protects it (city open, qty 0..99, sex
discrete), and times native against dx in the same run, interleaved (median of --runs after a
warm-up): SELECT city, count(*), sum(qty), avg(qty) FROM bench_open [WHERE sex = 'F'] GROUP BY city.
Writes test/bench/results/open_key_bench.csv (or --out): query, native_ms, dx_ms, ratio, released keys.
--unit K adds a person column (row i belongs to person i / 4: 4 rows each, in 4 cities)
and declares it the privacy unit with K rows per unit; results go to open_key_unit_bench.csv (the
native queries do not bound anything: the ratio is the cost of the bounding and the distinct-unit
selection).
"""
import argparse
import csv
import pathlib
import statistics
import time

import psycopg2

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=2_000_000)
parser.add_argument("--keys", type=int, default=50_000)
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--unit", type=int, default=0)
parser.add_argument("--out", default=None, help="CSV to write (default: results/open_key_bench.csv, "
                    "or results/open_key_unit_bench.csv with --unit)")
args = parser.parse_args()

conn = psycopg2.connect("")
conn.autocommit = True
cur = conn.cursor()
cur.execute("CREATE EXTENSION IF NOT EXISTS dxpriv")
cur.execute("DROP TABLE IF EXISTS bench_open")
cur.execute("CREATE TABLE bench_open (city text, qty int, sex text, person int)")
cur.execute(f"INSERT INTO bench_open SELECT 'city' || (i % {args.keys}), (i * 7) % 100, "
            f"CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END, i / 4 "
            f"FROM generate_series(1, {args.rows}) AS i")
cur.execute("VACUUM ANALYZE bench_open")
cur.execute("SELECT dx.protect_table('bench_open', 1.0)")
cur.execute("""SELECT dx.set_column('bench_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}')""")
cur.execute("""SELECT dx.set_column('bench_open', 'qty', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}')""")
cur.execute("""SELECT dx.set_column('bench_open', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete"}')""")
cur.execute("SELECT dx.set_delta('bench_open', 1e-6)")
if args.unit:
    cur.execute(f"SELECT dx.set_privacy_unit('bench_open', 'person', {args.unit})")
cur.execute("SELECT dx.grant_budget(current_user::regrole, 'bench_open', 1e9, delta => 1)")
cur.execute("SET dxpriv.cache_lifetime = 0")
cur.execute("SET dxpriv.epsilon = 1")

PAIRS = [
    ("GROUP BY open key: count, sum, avg",
     "SELECT city, count(*), sum(qty), avg(qty) FROM bench_open GROUP BY city",
     "SELECT city, dx.count(*), dx.sum(qty), dx.avg(qty) FROM bench_open GROUP BY city"),
    ("... WHERE sex = 'F'",
     "SELECT city, count(*), sum(qty), avg(qty) FROM bench_open WHERE sex = 'F' GROUP BY city",
     "SELECT city, dx.count(*), dx.sum(qty), dx.avg(qty) FROM bench_open WHERE sex = 'F' GROUP BY city"),
    ("GROUP BY open key, sex: count",
     "SELECT city, sex, count(*) FROM bench_open GROUP BY city, sex",
     "SELECT city, sex, dx.count(*) FROM bench_open GROUP BY city, sex"),
]


def timed(sql):
    start = time.perf_counter()
    cur.execute(sql)
    rows = cur.fetchall()
    return (time.perf_counter() - start) * 1000, len(rows)


out = []
for label, native, dx in PAIRS:
    timed(native)
    timed(dx)
    tn, td, kept = [], [], 0
    for r in range(args.runs):
        order = [(native, tn), (dx, td)] if r % 2 == 0 else [(dx, td), (native, tn)]
        for sql, acc in order:
            ms, n = timed(sql)
            acc.append(ms)
            if sql is dx:
                kept = n
    mn, md = statistics.median(tn), statistics.median(td)
    out.append((label, round(mn, 1), round(md, 1), round(md / mn, 2), kept))
    print(f"{label}: native {mn:.0f} ms, dx {md:.0f} ms, ratio {md / mn:.2f}, released keys {kept}", flush=True)

path = pathlib.Path(args.out) if args.out else pathlib.Path(__file__).resolve().parent / (
    "results/open_key_unit_bench.csv" if args.unit else "results/open_key_bench.csv")
path.parent.mkdir(parents=True, exist_ok=True)
with open(path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["query", "native_ms", "dx_ms", "ratio", "released_keys"])
    w.writerows(out)
print(f"wrote {path} ({args.rows} rows, {args.keys} keys, unit {args.unit or 'none'}, median of {args.runs})")
