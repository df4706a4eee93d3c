#!/usr/bin/env python3
"""A/B of dx.avg(income) against avg(income) on sql_bench.py's table (session 22, avg_ab.txt).
Usage: avg_ab.py WORKERS [ROUNDS] [NATIVE_SQL DX_SQL]; PGHOST/PGPORT name the cluster (its build
installed in turn, the cluster restarted and warmed with one serial series between builds).
Native and dx interleaved, the order alternating each round; medians without the first round."""
import os
import psycopg2, time, statistics, sys
c = psycopg2.connect(host=os.environ.get("PGHOST", "/tmp/ns/c"), port=int(os.environ.get("PGPORT", "55530")), user="postgres", dbname="postgres"); c.autocommit=True
cur = c.cursor()
cur.execute("SET max_parallel_workers_per_gather=%s" % sys.argv[1]); cur.execute("SET jit=off"); cur.execute("SET dxpriv.cache_lifetime=0")
qs = {"native": "SELECT avg(income) FROM bench", "dx": "SELECT dx.avg(income) FROM bench"}
if len(sys.argv) > 3:
    qs = {"native": sys.argv[3], "dx": sys.argv[4]}
t = {k: [] for k in qs}
for r in range(int(sys.argv[2]) if len(sys.argv) > 2 else 21):
    for k in (list(qs) if r % 2 else list(qs)[::-1]):
        t0 = time.perf_counter(); cur.execute(qs[k]); cur.fetchall(); t[k].append((time.perf_counter()-t0)*1000)
m = {k: statistics.median(v[1:]) for k, v in t.items()}
print({k: round(v, 2) for k, v in m.items()}, "ratio", round(m["dx"]/m["native"], 3))
