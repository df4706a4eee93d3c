#!/usr/bin/env python3
"""dx.explain time of the dashboard's two grouped tiles (doc/performance.md, "Grouped statements"):
the bench's domains on two 1,000-row tables, the group columns declared discrete (as in
sql_bench.py) or none. Connects with PGHOST/PGPORT/PGUSER (a superuser, dxpriv preloaded); creates
the extension if missing and the tables gf_b1/gf_b2 (dropped at the end). Medians of --runs."""
import argparse
import statistics
import time

import psycopg2

SETUP = """
CREATE EXTENSION IF NOT EXISTS dxpriv;
CREATE TABLE gf_b1 (age int, qty int, grp int, g73 int);
INSERT INTO gf_b1 SELECT i % 121, i % 51, i % 10, i % 73 FROM generate_series(1, 1000) i;
CREATE TABLE gf_b2 AS SELECT * FROM gf_b1;
SELECT dx.protect_table('gf_b1', 1.0), dx.protect_table('gf_b2', 1.0);
"""
DOMAINS = {"age": ('{"min":0,"max":120}', '{"type":"absolute","scale":10}'),
           "qty": ('{"min":0,"max":50}', '{"type":"none"}'),
           "grp": ('{"min":0,"max":9}', None), "g73": ('{"min":0,"max":72}', None)}
TILES = {"g73": "SELECT g73, dx.count(*), dx.avg(qty) FROM {t} GROUP BY g73",
         "grp": "SELECT grp, dx.count(*), dx.sum(qty), dx.avg(age) FROM {t} GROUP BY grp"}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    conn = psycopg2.connect(dbname="postgres")
    conn.autocommit = True
    cur = conn.cursor()
    cur.execute(SETUP)
    for table, group_metric in (("gf_b1", '{"type":"discrete"}'), ("gf_b2", '{"type":"none"}')):
        for col, (domain, metric) in DOMAINS.items():
            cur.execute("SELECT dx.set_column(%s, %s, %s, %s)", (table, col, domain, metric or group_metric))
    try:
        for name, sql in TILES.items():
            for table, label in (("gf_b1", "discrete"), ("gf_b2", "none")):
                wall = []
                for _ in range(args.runs):
                    t0 = time.perf_counter()
                    cur.execute("SELECT count(*) FROM dx.explain(%s)", (sql.format(t=table),))
                    rows = cur.fetchone()[0]
                    wall.append((time.perf_counter() - t0) * 1000)
                print(f"{name} tile, group column {label}: {rows} explain rows, "
                      f"dx.explain median {statistics.median(wall):.0f} ms (min {min(wall):.0f})")
    finally:
        cur.execute("DROP TABLE gf_b1, gf_b2")


if __name__ == "__main__":
    main()
