#!/usr/bin/env python3
"""dx vs native aggregates on a Citus distributed table (issue 13), same run, as ratios.

Usage (clusters from `KEEP=1 NO_TESTS=1 ./scripts/run-citus.sh`):
  DXPRIV_CITUS_COORD=... DXPRIV_CITUS_W1=... DXPRIV_CITUS_W2=... test/bench/citus_bench.py [rows ...]
Writes test/bench/results/citus_bench.csv: rows, query, native ms, dx ms (medians of 5), ratio, the
bytes of the task query Citus sends to each shard (the per-point tables travel in it, or their
digest), and whether
the dx answer on a noiseless copy of the table (presence Infinity, every metric none: sensitivity 0)
equals PostgreSQL's own aggregate on it (the workers' partial sums combined without loss).
"""
import csv
import math
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "citus"))
import citus_fixture as fx  # noqa: E402
from citus_common import citus_db, connect, execute, rows  # noqa: E402

NOISELESS = [(c, d, '{"type": "none"}') for c, d, _ in fx.COLUMNS]

QUERIES = [
    ("count(*)", "SELECT count(*) FROM people", "SELECT dx.count(*) FROM people"),
    ("count WHERE age>40 AND sex='F'", "SELECT count(*) FROM people WHERE age > 40 AND sex = 'F'",
     "SELECT dx.count(*) FROM people WHERE age > 40 AND sex = 'F'"),
    ("sum(income)", "SELECT sum(income) FROM people", "SELECT dx.sum(income) FROM people"),
    ("avg(income)", "SELECT avg(income) FROM people", "SELECT dx.avg(income) FROM people"),
    ("GROUP BY region count, avg", "SELECT region, count(*), avg(income) FROM people GROUP BY region",
     "SELECT region, dx.count(*), dx.avg(income) FROM people GROUP BY region"),
    ("linear(income*income/1e6) (dense table)", "SELECT sum(income::float8 * income / 1e6) FROM people",
     "SELECT dx.linear(income::float8 * income / 1e6) FROM people"),
]


def timed(conn, sql, reps=5):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        rows(conn, sql)
        ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)


def same_answers(native, dx):
    """Row by row; numbers within 1e-12 relative (PostgreSQL sums float8 in the order rows arrive from
    the shards, so its last bits vary between runs; dx sums exactly in grid units)."""
    return len(native) == len(dx) and all(
        len(a) == len(b) and all(x == y if isinstance(x, str) else math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-9)
                                 for x, y in zip(a, b))
        for a, b in zip(native, dx))


def task_bytes(conn, sql):
    plan = [r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + sql)]
    q = [line.split("Query: ", 1)[1] for line in plan if "Query: " in line and "FROM public.people_" in line]
    return len(q[0].encode()) if q else 0


def main(sizes):
    out = os.path.join(os.path.dirname(__file__), "results", "citus_bench.csv")
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rows", "shards", "query", "native_ms", "dx_ms", "ratio", "task_query_bytes", "noiseless_equal"])
        for n in sizes:
            with citus_db() as db:
                fx.build(db, rows=n, shards=32)
                conn = connect("coord", db)
                execute(conn, "CREATE TABLE exact AS SELECT * FROM people")
                execute(conn, "SELECT create_distributed_table('exact', 'id', shard_count => 32)")
                execute(conn, "SELECT dx.protect_table('exact', 'Infinity')")
                for col, domain, metric in NOISELESS:
                    execute(conn, "SELECT dx.set_column('exact', %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
                execute(conn, "SELECT dx.grant_budget('postgres', 'exact', 1000)")
                execute(conn, "ANALYZE people")
                execute(conn, "SET dxpriv.epsilon = 1")
                for name, native, dx in QUERIES:
                    timed(conn, native, 1)
                    timed(conn, dx, 1)  # warm caches and connections
                    nat, dxt = timed(conn, native), timed(conn, dx)
                    exact = [tuple(round(float(v), 6) if not isinstance(v, str) else v for v in r)
                             for r in sorted(rows(conn, native.replace("people", "exact")), key=str)]
                    noiseless = [tuple(round(float(v), 6) if not isinstance(v, str) else v for v in r)
                                 for r in sorted(rows(conn, dx.replace("people", "exact")), key=str)]
                    if "GROUP BY" in name:  # the empty declared group ('none') is answered too
                        noiseless = [r for r in noiseless if r[0] != "none"]
                    equal = same_answers(exact, noiseless)
                    w.writerow([n, 32, name, f"{nat:.1f}", f"{dxt:.1f}", f"{dxt / nat:.2f}", task_bytes(conn, dx), equal])
                    f.flush()
                    print(n, name, f"native {nat:.1f} ms, dx {dxt:.1f} ms, ratio {dxt / nat:.2f}, "
                          f"noiseless equal {equal}", flush=True)
                conn.close()
    print("wrote", out)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000000, 4000000])
