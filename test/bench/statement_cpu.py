#!/usr/bin/env python3
"""Backend CPU time per statement (utime + stime of the backend, /proc, 10 ms ticks) of four statements
sent one by one by one client: SELECT 1, a primary-key lookup, a native aggregate calling a user
function, and the same user function in a dx.sum answered from the analysis memo and the answer
cache (ddlhold: what the plan-dependency walk and the object access hook add per statement).
Usage: PATH=<pg bin with dxpriv installed>:$PATH /usr/bin/python3 test/bench/statement_cpu.py --port P [--label L]
       [--rounds 5]. Starts a throwaway cluster on port P (scripts/pg-env.sh), prints
       label,workload,median_us,all rounds; compare two builds by running it once per build."""
import argparse
import os
import statistics
import subprocess
import sys

import psycopg2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
WORKLOADS = {"select1": ("SELECT 1", 20000), "pklookup": ("SELECT v FROM t WHERE id = 42", 20000),
             "native_agg": ("SELECT count(*), sum(f(v)) FROM t", 10000),
             "dx_replay": ("SELECT dx.sum(f(v)) FROM t", 5000)}
SETUP = ["CREATE EXTENSION dxpriv", "CREATE TABLE t (id int PRIMARY KEY, v int)",
         "INSERT INTO t SELECT g, g % 100 FROM generate_series(1, 100) g", "SELECT dx.protect_table('t')",
         "SELECT dx.set_column('t', 'v', '{\"min\": 0, \"max\": 99}', '{\"type\": \"absolute\", \"scale\": 10}')",
         "SELECT dx.grant_budget('postgres', 't', 1e12)",
         "CREATE FUNCTION f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x'"]


def ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def measure(host, port, label, rounds):
    c = psycopg2.connect(host=host, port=port, user="postgres", dbname="postgres")
    c.autocommit = True
    cur = c.cursor()
    for s in SETUP:
        cur.execute(s)
    cur.execute("SET dxpriv.cache_lifetime = 3600")
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    res = {w: [] for w in WORKLOADS}
    for _ in range(rounds):
        for w, (sql, n) in WORKLOADS.items():
            for _ in range(200):
                cur.execute(sql)
                cur.fetchall()
            t0 = ticks(pid)
            for _ in range(n):
                cur.execute(sql)
                cur.fetchall()
            res[w].append((ticks(pid) - t0) * 10000.0 / n)
    for w in WORKLOADS:
        print(f"{label},{w},{statistics.median(res[w]):.1f},{' '.join(f'{x:.1f}' for x in res[w])}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--label", default="build")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args()
    script = f"""set -euo pipefail; . '{ROOT}/scripts/pg-env.sh'; work=$(owned_tmpdir statement-cpu)
trap 'stop_cluster "$work"; rm -rf "$work"' EXIT
start_cluster "$work" {a.port}
/usr/bin/python3 '{os.path.abspath(__file__)}' --inner "$work" --port {a.port} --label '{a.label}' --rounds {a.rounds}"""
    sys.exit(subprocess.call(["bash", "-c", script]))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        measure(sys.argv[2], int(sys.argv[4]), sys.argv[6], int(sys.argv[8]))
    else:
        main()
