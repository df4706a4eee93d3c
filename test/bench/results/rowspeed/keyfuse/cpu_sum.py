"""Sum of backend CPU over N interleaved runs (after one warm-up) of the two GROUP BY pairs of
sql_bench.py (serial); usage: cpu_sum.py N LABEL (PGHOST/PGPORT/PGUSER as for cpu_ratio.py)."""
import os, sys, psycopg2
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))  # test/bench
from sql_bench import BENCH_PAIRS
from cpu_ratio import cpu_ms, run
N = int(sys.argv[1]); label = sys.argv[2]
conn = psycopg2.connect(dbname="postgres"); conn.autocommit = True; cur = conn.cursor()
for s in ("SET max_parallel_workers_per_gather = 0", "SET jit = off", "SET dxpriv.cache_lifetime = 0"):
    cur.execute(s)
cur.execute("SELECT pg_backend_pid()"); pid = cur.fetchone()[0]
for pair in BENCH_PAIRS:
    if "GROUP BY sex" not in pair[0] and "GROUP BY g73" not in pair[0]:
        continue
    run(cur, pid, pair[1]); run(cur, pid, pair[2])
    nat = dx = 0.0
    for _ in range(N):
        nat += run(cur, pid, pair[1]); dx += run(cur, pid, pair[2])
    print(f"{label},{pair[0]!r},{N},{nat:.0f},{dx:.0f},{dx/nat:.3f}", flush=True)
