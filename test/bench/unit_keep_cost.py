#!/usr/bin/env python3
"""Where the privacy-unit count's time goes (issue 23, doc/performance.md "the keep qual's per-row cost"):
plain count(*) over unit_bench.py's table, then the same scan with quals that add one piece of
dx._unit_keep's cost at a time (a qual at all, the unit column's deform, a function call, the system
columns, the profile's function itself), then dx.count(*) with the unit and without it. Backend CPU
time from /proc/<pid>/schedstat (nanoseconds), serial, JIT off, interleaved --runs times after one
warm-up; medians. The superuser calls dx._unit_profile and dx._unit_keep directly (allowed to
superusers only). Needs the server on this machine and PGHOST/PGPORT/PGUSER of a superuser; creates
the table of unit_bench.py in --db unless it exists. Prints one line per statement; --out writes a CSV.
"""
import argparse
import csv
import os
import statistics

import psycopg2

from unit_bench import K, G, KG, create_bench_table

PROFILE = "(SELECT dx._unit_profile('bench_visits'::regclass, true, 1::int2, {k}, 0))"
STEPS = [
    ("count(*)", "SELECT count(*) FROM bench_visits"),
    ("count(person) (deform, no qual)", "SELECT count(person) FROM bench_visits"),
    ("+ a qual on a system column", "SELECT count(*) FROM bench_visits WHERE ctid IS NOT NULL"),
    ("+ a qual on the unit column (deform)", "SELECT count(*) FROM bench_visits WHERE person IS NOT NULL"),
    ("+ a function call on the unit", "SELECT count(*) FROM bench_visits WHERE int4eq(person, person)"),
    ("dx._unit_keep qual", "SELECT count(*) FROM bench_visits WHERE dx._unit_keep(" + PROFILE + ", person, tableoid, ctid)"),
    ("dx._unit_keep qual, constant OID", "SELECT count(*) FROM bench_visits WHERE dx._unit_keep(" + PROFILE +
     ", person, 'bench_visits'::regclass::oid, ctid)"),
    ("dx._unit_keep as FILTER", "SELECT count(*) FILTER (WHERE dx._unit_keep(" + PROFILE + ", person, tableoid, ctid)) "
     "FROM bench_visits"),
    ("dx.count(*) (unit, k rows)", "SELECT dx.count(*) FROM bench_visits"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--persons", type=int, default=1_000_000)
    ap.add_argument("--db", default="dxpriv_unit_cpu")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    admin = psycopg2.connect(dbname="postgres")
    admin.autocommit = True
    with admin.cursor() as c:
        c.execute("SELECT 1 FROM pg_database WHERE datname = %s", (args.db,))
        if not c.fetchone():
            c.execute(f"CREATE DATABASE {args.db}")
            c.execute(f"ALTER DATABASE {args.db} SET dxpriv.cache_lifetime = 0")
    conn = psycopg2.connect(dbname=args.db)
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute("SELECT to_regclass('bench_visits') IS NOT NULL")
    if not cur.fetchone()[0]:
        cur.execute("CREATE EXTENSION IF NOT EXISTS dxpriv")
        create_bench_table(cur, args.persons)
    cur.execute(f"SELECT dx.set_privacy_unit('bench_visits', 'person', {K}, {G}, {KG})")
    cur.execute("SET max_parallel_workers_per_gather = 0")
    cur.execute("SET jit = off")
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    steps = [(label, sql.replace("{k}", str(K))) for label, sql in STEPS]
    steps.append(("dx.count(*) (no unit)", "SELECT dx.count(*) FROM bench_visits"))

    def cpu_ms():
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e6

    times = {label: [] for label, _ in steps}
    for run in range(args.runs + 1):
        order = steps if run % 2 == 0 else list(reversed(steps))
        for label, sql in order:
            if label == "dx.count(*) (no unit)":
                cur.execute("SELECT dx.unset_privacy_unit('bench_visits')")
            before = cpu_ms()
            cur.execute(sql)
            cur.fetchall()
            spent = cpu_ms() - before
            if label == "dx.count(*) (no unit)":
                cur.execute(f"SELECT dx.set_privacy_unit('bench_visits', 'person', {K}, {G}, {KG})")
            if run > 0:
                times[label].append(spent)
    base = statistics.median(times["count(*)"])
    rows = []
    for label, _ in steps:
        med = statistics.median(times[label])
        rows.append([label, round(med, 1), round(med / base, 2)])
        print(f"{label:40s} {med:7.1f} ms CPU  {med / base:.2f}", flush=True)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["statement", "cpu_ms", "ratio_to_count", "runs"])
            for r in rows:
                w.writerow(r + [args.runs])


if __name__ == "__main__":
    main()
