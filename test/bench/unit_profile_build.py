#!/usr/bin/env python3
"""Unit profiles (issue 23, unitcache): the first statement after a write builds the table's profile
(one scan + a sort of one 16-byte entry per row); the next ones read it. On the table of
unit_bench.py (run it first: --db names its database), times --runs times: an empty write
(`UPDATE ... WHERE false`, a new contents version), then the same dx statement twice (first: with the
build; second: cached), and the native statement; serial and with 2 parallel workers. Writes --out
(CSV: workers, run, native_ms, first_ms, cached_ms).

profilemem: --set NAME=VALUE (repeatable) sets a setting for the session first, e.g.
dxpriv.unit_profile_build_memory=4MB (superuser: the bench connects as one); --label names the row
group; the build's DEBUG2 line (superusers) gives its passes and the peak of its memory context,
written as passes and peak_kb (empty when the build's line is missing: a binary without it).
"""
import argparse
import csv
import os
import re
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
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--label", default="")
    ap.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    args = ap.parse_args()
    conn = psycopg2.connect(dbname=args.db)
    conn.autocommit = True
    cur = conn.cursor()
    for setting in args.set:
        name, _, value = setting.partition("=")
        cur.execute("SELECT set_config(%s, %s, false)", (name.strip(), value.strip()))
    build_memory = next((v.strip() for n, _, v in (x.partition("=") for x in args.set)
                         if n.strip() == "dxpriv.unit_profile_build_memory"), "default")
    conn.notices = []  # (unbounded: the DEBUG2 lines of a statement may be more than psycopg2's 50)
    cur.execute("SELECT dx.set_privacy_unit('bench_visits', 'person', 10, 3, 4)")
    dx, plain = (("SELECT dx.count(*) FROM bench_visits", "SELECT count(*) FROM bench_visits")
                 if args.statement == "count" else
                 ("SELECT dx.count_units(person) FROM bench_visits", "SELECT count(DISTINCT person) FROM bench_visits"))
    rows = []
    for workers in (0, 2):
        cur.execute(f"SET max_parallel_workers_per_gather = {workers}")
        for run in range(args.runs):
            cur.execute("UPDATE bench_visits SET age = age WHERE false")
            conn.notices.clear()
            cur.execute("SET client_min_messages = debug2")
            first = timed(cur, dx)
            cur.execute("RESET client_min_messages")
            passes, peak = "", ""
            for n in conn.notices:
                m = re.search(r"unit profile build memory: peak (\d+) bytes of \d+, (\d+) passes", n)
                if m:
                    peak, passes = round(int(m.group(1)) / 1024), int(m.group(2))
            cached = timed(cur, dx)
            native = timed(cur, plain)
            rows.append([args.label, build_memory, workers, run, round(native, 1), round(first, 1), round(cached, 1),
                         passes, peak])
            print(rows[-1], flush=True)
    exists = os.path.exists(args.out)
    with open(args.out, "a" if args.append else "w", newline="") as f:
        w = csv.writer(f)
        if not (args.append and exists):
            w.writerow(["label", "build_memory", "max_parallel_workers_per_gather", "run", "native_ms", "first_ms",
                        "cached_ms", "passes", "peak_kb"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
