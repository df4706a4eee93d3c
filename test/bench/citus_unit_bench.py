#!/usr/bin/env python3
"""Privacy units on a Citus table distributed by its unit column (citusunit): dx / native in one run,
for each bounding path: the window functions pushed to the workers (dxpriv.unit_bounding = sort),
the per-shard unit profile built by every statement (shards without a version), and the per-shard
profile cached per shard version (after dx.version_shards).

Usage (clusters from `KEEP=1 NO_TESTS=1 ./scripts/run-citus.sh`, ports in DXPRIV_CITUS_*):
  test/bench/citus_unit_bench.py [rows] [--runs N] [--out CSV]
The table is citus_bench.py's visits_by_unit (person p holds 1 + p % 5 rows, k = 3, 32 shards).
Each cell: median of N timings after one warm-up; native and dx interleaved in the same run.
"""
import argparse
import csv
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "citus"))
import citus_fixture as fx  # noqa: E402
from citus_common import citus_db, connect, execute, rows  # noqa: E402

QUERIES = [
    ("units co-located: count, sum (k=3)", "SELECT count(*), sum(income) FROM visits_by_unit",
     "SELECT dx.count(*), dx.sum(income) FROM visits_by_unit"),
    ("units co-located: count WHERE age > 40", "SELECT count(*) FROM visits_by_unit WHERE age > 40",
     "SELECT dx.count(*) FROM visits_by_unit WHERE age > 40"),
    ("units co-located: GROUP BY region count, avg", "SELECT region, count(*), avg(income) FROM visits_by_unit GROUP BY region",
     "SELECT region, dx.count(*), dx.avg(income) FROM visits_by_unit GROUP BY region"),
    ("units co-located: GROUP BY region count(DISTINCT person)",
     "SELECT region, count(DISTINCT person) FROM visits_by_unit GROUP BY region",
     "SELECT region, dx.count(DISTINCT person) FROM visits_by_unit GROUP BY region"),
]


def timed(conn, sql):
    t = time.perf_counter()
    rows(conn, sql)
    return (time.perf_counter() - t) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows", nargs="?", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "citus_unit_bench.csv"))
    args = ap.parse_args()
    persons = args.rows // 3
    with citus_db() as db, open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rows", "path", "query", "native_ms", "dx_ms", "ratio"])
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE visits_by_unit (id bigint, person int, age int, region text, income int)")
        execute(conn, "SELECT create_distributed_table('visits_by_unit', 'person', shard_count => 32)")
        execute(conn, f"""INSERT INTO visits_by_unit SELECT row_number() OVER (), p, 18 + (p * 37 + k) % 73,
            (ARRAY['north','south','east','west'])[1 + (p * 7 + k) % 4], ((p::bigint * 7919 + k) % 2000) * 100
            FROM generate_series(1, {persons}) p, generate_series(1, 5) k WHERE k <= 1 + p % 5""")
        execute(conn, "SELECT dx.protect_table('visits_by_unit', 1.0)")
        for col, domain, metric in fx.COLUMNS:
            if col != "sex":
                execute(conn, "SELECT dx.set_column('visits_by_unit', %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
        execute(conn, "SELECT dx.grant_budget('postgres', 'visits_by_unit', 1000000)")
        execute(conn, "SELECT dx.set_privacy_unit('visits_by_unit', 'person', 3)")
        execute(conn, "VACUUM ANALYZE visits_by_unit")
        execute(conn, "SET dxpriv.epsilon = 1")
        n = rows(conn, "SELECT count(*) FROM visits_by_unit")[0][0]
        for path in ("window (sort)", "per shard, built per statement", "per shard, cached per shard version"):
            if path.startswith("window"):
                execute(conn, "SET dxpriv.unit_bounding = sort")
            else:
                execute(conn, "RESET dxpriv.unit_bounding")
            if path.endswith("version"):
                print("placements versioned:", rows(conn, "SELECT dx.version_shards('visits_by_unit')")[0][0], flush=True)
            for name, native, dx in QUERIES:
                timed(conn, native)
                timed(conn, dx)
                nat, dxt = [], []
                for _ in range(args.runs):
                    nat.append(timed(conn, native))
                    dxt.append(timed(conn, dx))
                a, b = statistics.median(nat), statistics.median(dxt)
                w.writerow([n, path, name, f"{a:.1f}", f"{b:.1f}", f"{b / a:.2f}"])
                f.flush()
                print(n, path, "|", name, f"native {a:.1f} ms, dx {b:.1f} ms, ratio {b / a:.2f}", flush=True)
        conn.close()
    print("wrote", args.out)


if __name__ == "__main__":
    main()
