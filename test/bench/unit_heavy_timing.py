#!/usr/bin/env python3
"""Backend CPU of SELECT dx.count(*) on three 400,000-row tables with a privacy unit (k = 3) that differ
only in how many rows belong to persons with more than k rows: none (200,000 persons of 2 rows),
all with a profile that fits a cache slot (20,000 persons of 20 rows), all with one that does not
(100,000 persons of 4 rows: built by every statement). The timing channel of doc/mechanisms.md
("Timing"). Serial plans, the analyst's backend CPU from /proc/<pid>/schedstat, medians.

    PGHOST=... PGPORT=... python3 test/bench/unit_heavy_timing.py --db unit_heavy_timing --runs 9
"""
import argparse
import os
import statistics

import psycopg2

ANALYST = "unit_timing_analyst"
TABLES = [("no_heavy", 2), ("heavy_cached", 20), ("heavy_uncached", 4)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="unit_heavy_timing")
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()

    def connect(db, user="postgres"):
        c = psycopg2.connect(host=os.environ.get("PGHOST"), port=os.environ.get("PGPORT"), user=user, dbname=db)
        c.autocommit = True
        return c

    def ex(c, sql):
        with c.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall() if cur.description else None

    root = connect("postgres")
    ex(root, f"DROP DATABASE IF EXISTS {args.db} WITH (FORCE)")
    ex(root, f"CREATE DATABASE {args.db}")
    ex(root, f"ALTER DATABASE {args.db} SET dxpriv.cache_lifetime = 0")
    ex(root, f"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ANALYST}') THEN "
             f"CREATE ROLE {ANALYST} LOGIN; END IF; END $$")
    admin = connect(args.db)
    ex(admin, "CREATE EXTENSION dxpriv")
    ex(admin, f"SELECT dx.add_analyst('{ANALYST}'::regrole)")
    for t, per in TABLES:
        ex(admin, f"CREATE TABLE {t} (u int, g text)")
        ex(admin, f"INSERT INTO {t} SELECT ((i::int8 * 7919) % (400000 / {per}))::int, 'x' FROM generate_series(0, 399999) i")
        ex(admin, f"SELECT dx.protect_table('{t}', 'Infinity')")
        ex(admin, f"""SELECT dx.set_column('{t}', 'g', '{{"values": ["x","y"]}}', '{{"type": "none"}}')""")
        ex(admin, f"SELECT dx.set_privacy_unit('{t}', 'u', 3)")
        ex(admin, f"SELECT dx.grant_budget('{ANALYST}'::regrole, '{t}', 1e12)")
        ex(admin, f"GRANT SELECT ON {t} TO {ANALYST}")
        ex(admin, f"VACUUM ANALYZE {t}")
    analyst = connect(args.db, ANALYST)
    ex(analyst, "SET max_parallel_workers_per_gather = 0")
    pid = ex(analyst, "SELECT pg_backend_pid()")[0][0]

    def cpu():
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])

    times = {t: [] for t, _ in TABLES}
    for t, _ in TABLES:
        ex(analyst, f"SELECT dx.count(*) FROM {t}")  # builds (and caches when it fits) the profile
    for _ in range(args.runs):
        for t, _ in TABLES:
            before = cpu()
            ex(analyst, f"SELECT dx.count(*) FROM {t}")
            times[t].append((cpu() - before) / 1e6)
    for t, per in TABLES:
        print(f"{t} ({per} rows per person): median backend CPU {statistics.median(times[t]):.1f} ms")
    analyst.close()
    admin.close()
    ex(root, f"DROP DATABASE {args.db} WITH (FORCE)")


if __name__ == "__main__":
    main()
