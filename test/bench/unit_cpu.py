#!/usr/bin/env python3
"""Privacy units in backend CPU time (issue 23): the four statements of unit_bench.py, serial (no
parallel workers, answer cache off), native against dx with the hash bounding and with the sort
(dxpriv.unit_bounding = sort) and with unit profiles (dxpriv.unit_profiles, the default; also with
dxpriv.group_fold off: profile_nofold), interleaved --runs times after one warm-up; each run's CPU time is the
backend's user + system time (/proc/<pid>/stat) around the statement, steadier than wall clock on a
loaded machine. Needs the server on this machine, read access to /proc of its backends and a
superuser (PGHOST/PGPORT/PGUSER). Creates the table of unit_bench.py (--persons persons, k = 10) in
--db unless it exists. Prints one line per statement and writes --out (CSV, medians).
"""
import argparse
import csv
import os
import statistics

import psycopg2

from cpu_ratio import cpu_ms
from unit_bench import K, G, KG, create_bench_table, QUERIES


def run(cur, pid, sql):
    before = cpu_ms(pid)
    cur.execute(sql)
    cur.fetchall()
    return cpu_ms(pid) - before


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--persons", type=int, default=1_000_000)
    ap.add_argument("--db", default="dxpriv_unit_cpu")
    ap.add_argument("--work-mem", default=None)
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
    cur.execute("CREATE EXTENSION IF NOT EXISTS dxpriv")
    cur.execute("SELECT to_regclass('bench_visits') IS NOT NULL")
    if not cur.fetchone()[0]:
        create_bench_table(cur, args.persons)
        cur.execute(f"SELECT dx.set_privacy_unit('bench_visits', 'person', {K}, {G}, {KG})")
    cur.execute("SET max_parallel_workers_per_gather = 0")
    cur.execute("SET jit = off")
    cur.execute("SET dxpriv.cache_lifetime = 0")
    if args.work_mem:
        cur.execute(f"SET work_mem = '{args.work_mem}'")
    cur.execute("SHOW work_mem")
    work_mem = cur.fetchone()[0]
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    rows = []
    for label, native, _bounded, dx in QUERIES:
        times = {"native": [], "hash": [], "sort": [], "profile": [], "profile_nofold": []}
        for r in range(args.runs + 1):
            order = ["native", "profile", "profile_nofold", "hash", "sort"] if r % 2 == 0 else \
                ["sort", "hash", "profile_nofold", "profile", "native"]
            for mode in order:
                if mode != "native":
                    # profile: dxpriv.unit_profiles on (the default; its build is in the warm-up run)
                    cur.execute(f"SET dxpriv.unit_bounding = {'sort' if mode == 'sort' else 'hash'}")
                    cur.execute(f"SET dxpriv.unit_profiles = {'on' if mode.startswith('profile') else 'off'}")
                    # profile_nofold: the grouped statement's previous plan (dxpriv.group_fold off, unitpar)
                    cur.execute(f"SET dxpriv.group_fold = {'off' if mode == 'profile_nofold' else 'on'}")
                t = run(cur, pid, native if mode == "native" else dx)
                if r > 0:
                    times[mode].append(t)
        med = {k: statistics.median(v) for k, v in times.items()}
        rows.append([label, round(med["native"]), round(med["hash"]), round(med["sort"]),
                     round(med["hash"] / med["native"], 2), round(med["sort"] / med["native"], 2), work_mem, args.runs,
                     round(med["profile"]), round(med["profile"] / med["native"], 2),
                     round(med["profile_nofold"]), round(med["profile_nofold"] / med["native"], 2)])
        print(rows[-1], flush=True)
    if args.out:
        with open(args.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["query", "native_cpu_ms", "hash_cpu_ms", "sort_cpu_ms", "hash_ratio", "sort_ratio", "work_mem", "runs",
                        "profile_cpu_ms", "profile_ratio", "profile_nofold_cpu_ms", "profile_nofold_ratio"])
            w.writerows(rows)
    conn.close()


if __name__ == "__main__":
    main()
