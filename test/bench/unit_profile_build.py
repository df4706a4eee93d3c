#!/usr/bin/env python3
"""Unit profiles (issue 23, unitcache): the first statement after a write builds the table's profile
(one scan + a sort of one 16-byte entry per row); the next ones read it. On the table of
unit_bench.py (run it first: --db names its database), times --runs times: an empty write
(`UPDATE ... WHERE false`, a new contents version), then the same dx statement twice (first: with the
build; second: cached), and the native statement; serial and with 2 parallel workers. Writes --out
(CSV: workers, run, native_ms, first_ms, cached_ms).
"""
import argparse
import csv
import os
import time

import psycopg2


def timed(cur, sql):
    start = time.perf_counter()
    cur.execute(sql)
    cur.fetchall()
    return (time.perf_counter() - start) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--db", default=os.environ.get("DXPRIV_BENCH_DB", "dxpriv_unit_bench"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--statement", choices=["count", "count_units"], default="count",
                    help="count: dx.count(*) against count(*); count_units: dx.count_units(person) against "
                         "count(DISTINCT person) (unitdistinct)")
    args = ap.parse_args()
    conn = psycopg2.connect(dbname=args.db)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT dx.set_privacy_unit('bench_visits', 'person', 10, 3, 4)")
    dx, plain = (("SELECT dx.count(*) FROM bench_visits", "SELECT count(*) FROM bench_visits")
                 if args.statement == "count" else
                 ("SELECT dx.count_units(person) FROM bench_visits", "SELECT count(DISTINCT person) FROM bench_visits"))
    rows = []
    for workers in (0, 2):
        cur.execute(f"SET max_parallel_workers_per_gather = {workers}")
        for run in range(args.runs):
            cur.execute("UPDATE bench_visits SET age = age WHERE false")
            first = timed(cur, dx)
            cached = timed(cur, dx)
            native = timed(cur, plain)
            rows.append([workers, run, round(native, 1), round(first, 1), round(cached, 1)])
            print(rows[-1], flush=True)
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["max_parallel_workers_per_gather", "run", "native_ms", "first_ms", "cached_ms"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
