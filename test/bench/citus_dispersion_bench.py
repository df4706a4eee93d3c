#!/usr/bin/env python3
"""An analyst's stddev/corr on a Citus distributed table (issue 24) against the owner's native
PostgreSQL aggregates on the same table, in the same run, as ratios (medians of 5).

Usage (clusters from `KEEP=1 NO_TESTS=1 ./scripts/run-citus.sh`):
  DXPRIV_CITUS_COORD=... DXPRIV_CITUS_W1=... DXPRIV_CITUS_W2=... test/bench/citus_dispersion_bench.py [rows ...]
Prints one line per query: rows, native ms, dx ms, ratio. (The owner's stddev is PostgreSQL's own:
dxpriv spells analysts' statistics only.)
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "citus"))
import citus_fixture as fx  # noqa: E402
from citus_common import citus_db, connect, execute, rows  # noqa: E402

QUERIES = [
    ("stddev(income)", "SELECT stddev(income) FROM people"),
    ("stddev(income), corr(income, age)", "SELECT stddev(income), corr(income, age) FROM people"),
    ("GROUP BY sex stddev(age), variance(income)",
     "SELECT sex, stddev(age), variance(income) FROM people GROUP BY sex"),
]


def timed(conn, sql, reps=5):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        rows(conn, sql)
        ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)


def main(sizes):
    for n in sizes:
        with citus_db() as db:
            fx.build(db, rows=n, shards=32)
            owner = connect("coord", db)
            execute(owner, "ANALYZE people")
            analyst = connect("coord", db, user=fx.ANALYST)
            execute(analyst, "SET client_min_messages = warning")
            for name, sql in QUERIES:
                timed(owner, sql, 1)
                timed(analyst, sql, 1)  # warm caches and connections
                nat, dxt = timed(owner, sql), timed(analyst, sql)
                print(n, name, f"native {nat:.1f} ms, dx {dxt:.1f} ms, ratio {dxt / nat:.2f}", flush=True)
            analyst.close()
            owner.close()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [200000])
