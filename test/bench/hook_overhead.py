#!/usr/bin/env python3
"""What dxpriv's hooks cost a statement that is not a dx statement (issue: hook cost per statement).

Compares, in backend CPU time (/proc/<pid>/stat, user + system), the same native workloads on
  base   a cluster WITHOUT dxpriv in shared_preload_libraries (the honest baseline),
  noext  the dxpriv cluster (preloaded), a database where the extension is not created,
  ext    the dxpriv cluster, a database with CREATE EXTENSION dxpriv (superuser, no protected table
         touched: what every DBA/application statement pays).
Workloads: sqlfn = SELECT f(i) FROM generate_series(1, N) with f a non-inlinable LANGUAGE sql STABLE
function reading a small table; plpgsql = the same through a PL/pgSQL function running a query per
call; select1 / pklookup = many tiny statements sent one by one (pgbench-like, CPU of the backend
only). Runs are interleaved (base, noext, ext) --runs times after a warm-up; medians are printed
with ratios to base. Started by test/bench/hook_overhead.sh, which creates both clusters.
"""
import argparse
import os
import statistics

import psycopg2

TICK_MS = 1000.0 / os.sysconf("SC_CLK_TCK")

SETUP = """
DROP TABLE IF EXISTS small_t CASCADE;
CREATE TABLE small_t (k int PRIMARY KEY, v int);
INSERT INTO small_t SELECT g, g * 7 FROM generate_series(1, 100) g;
ANALYZE small_t;
CREATE OR REPLACE FUNCTION f_sql(i int) RETURNS int LANGUAGE sql STABLE
  AS $$ SELECT v FROM small_t WHERE k = 1 + i % 100 $$;
CREATE OR REPLACE FUNCTION f_plpgsql(i int) RETURNS int LANGUAGE plpgsql STABLE AS $$
DECLARE r int;
BEGIN
  SELECT v INTO r FROM small_t WHERE k = 1 + i % 100;
  RETURN r;
END $$;
"""


def cpu_ms(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_MS


def workload(cur, name, n, tiny):
    if name == "sqlfn":
        cur.execute("SELECT sum(f_sql(i)) FROM generate_series(1, %s) i", (n,))
        cur.fetchall()
    elif name == "plpgsql":
        cur.execute("SELECT sum(f_plpgsql(i)) FROM generate_series(1, %s) i", (n,))
        cur.fetchall()
    elif name == "select1":
        for _ in range(tiny):
            cur.execute("SELECT 1")
            cur.fetchall()
    elif name == "pklookup":
        for i in range(tiny):
            cur.execute("SELECT v FROM small_t WHERE k = %s", (1 + i % 100,))
            cur.fetchall()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="libpq DSN of the cluster without dxpriv")
    ap.add_argument("--noext", required=True, help="DSN: dxpriv preloaded, extension not created")
    ap.add_argument("--ext", required=True, help="DSN: dxpriv preloaded, extension created")
    ap.add_argument("--rows", type=int, default=200000)
    ap.add_argument("--tiny", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    conns = {}
    for label in ("base", "noext", "ext"):
        c = psycopg2.connect(getattr(args, label))
        c.autocommit = True
        cur = c.cursor()
        cur.execute("SET jit = off; SET max_parallel_workers_per_gather = 0")
        cur.execute(SETUP)
        cur.execute("SELECT pg_backend_pid()")
        conns[label] = (cur, cur.fetchone()[0])
    print(f"rows={args.rows} tiny={args.tiny} runs={args.runs} (backend CPU ms, median)")
    for name in ("sqlfn", "plpgsql", "select1", "pklookup"):
        times = {k: [] for k in conns}
        for _ in range(args.runs + 1):  # first round is the warm-up
            for label, (cur, pid) in conns.items():
                before = cpu_ms(pid)
                workload(cur, name, args.rows, args.tiny)
                times[label].append(cpu_ms(pid) - before)
        med = {k: statistics.median(v[1:]) for k, v in times.items()}
        print(f"{name:9s} base={med['base']:8.1f} noext={med['noext']:8.1f} ext={med['ext']:8.1f}"
              f"  noext/base={med['noext'] / med['base']:.2f} ext/base={med['ext'] / med['base']:.2f}")


if __name__ == "__main__":
    main()
