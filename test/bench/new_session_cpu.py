#!/usr/bin/env python3
"""Backend CPU of a new session's first dx statement (issue 23, the answer-cache lines' "new session").

Opens --sessions sessions one after the other, each as --user (default analysis_bench.py's analyst)
on PGHOST/PGPORT (default 127.0.0.1:5432): SET dxpriv.epsilon, SELECT pg_backend_pid(), then the
statement, whose backend CPU time (/proc/<pid>/schedstat: the server must run on this machine) and
wall time are kept. Prints the medians. Run it twice against two builds of dxpriv.so on one cluster
(install, restart, --warm sessions first) for an A/B; run it with a plain table's statement for
PostgreSQL's own cold start.

  PGPORT=55530 python3 test/bench/new_session_cpu.py --sessions 300 \\
      "SELECT count(*), count(*) FILTER (WHERE lat > 40), sum(lat), avg(lon), count(*) FILTER (WHERE lon < -100) FROM cities"
"""
import argparse
import os
import statistics
import time

import psycopg2

from analysis_bench import ANALYST, backend_cpu_ns


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("statement")
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--warm", type=int, default=20, help="sessions run first and not counted")
    ap.add_argument("--user", default=ANALYST)
    ap.add_argument("--epsilon", default="0.1")
    a = ap.parse_args()
    cpus, walls = [], []
    for i in range(a.warm + a.sessions):
        conn = psycopg2.connect(host=os.environ.get("PGHOST", "127.0.0.1"), port=int(os.environ.get("PGPORT", "5432")),
                                dbname=os.environ.get("PGDATABASE", "postgres"), user=a.user)
        conn.autocommit = True
        cur = conn.cursor()
        cur.execute("SET dxpriv.epsilon = %s", (a.epsilon,))
        cur.execute("SELECT pg_backend_pid()")
        pid = cur.fetchone()[0]
        c0, t0 = backend_cpu_ns(pid), time.perf_counter()
        cur.execute(a.statement)
        cur.fetchall()
        if i >= a.warm:
            walls.append((time.perf_counter() - t0) * 1000.0)
            cpus.append((backend_cpu_ns(pid) - c0) / 1e6)
        conn.close()
    print(f"cpu median {statistics.median(cpus):.3f} ms  wall median {statistics.median(walls):.3f} ms  "
          f"({a.sessions} sessions as {a.user})")


if __name__ == "__main__":
    main()
