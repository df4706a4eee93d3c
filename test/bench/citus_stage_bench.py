#!/usr/bin/env python3
"""Where a Citus GROUP BY over a 70-value key spends what native does not (issue 23, citusgrp):
wall time and CPU per node of the dx statements, of native SQL, and of native SQL in the two plan
shapes dxpriv's split can take (built-in functions only, no dx), interleaved in one run.

Usage (clusters from `KEEP=1 NO_TESTS=1 ./scripts/run-citus.sh`; its ports in DXPRIV_CITUS_COORD/_W1/_W2
and its folder, printed as "clusters kept in DIR", in DXPRIV_CITUS_WORK):
  test/bench/citus_stage_bench.py [rows] [--runs R] [--reps N] [--out CSV]
The table is citus_bench.py's g70 (k = id % 70 declared 0..69, absolute metric; income 0..200000 step
100; 32 shards). Per line: median over R rounds of the mean of N statements; CPU from /proc (utime +
stime of every process of each node, backends that ended during the statements included through
their parent's cutime/cstime), in ms per statement, at the clock tick's resolution (10 ms / N).
The shapes:
  native                 SELECT k, count(*) ... GROUP BY k: one Citus stage (grouped sums on the
                         workers, merged on the coordinator)
  native, subplan shape  the same sums as a subquery LEFT JOINed to generate_series(0, 69): Citus plans
                         the grouped sums as a distributed subplan (intermediate result) and runs the
                         rest on the coordinator; a subplan makes Citus open a coordinated transaction
                         (BEGIN ... assign_distributed_transaction_id, COMMIT on every worker connection)
  native, function shape the same join, the grouped sums read through a non-inlined SQL function: the
                         outer query is local, the function's query is one Citus stage, no subplan
  native in BEGIN/COMMIT the native statement in a transaction block (Citus opens the same coordinated
                         transaction on its worker connections)
  dx                     SELECT k, dx.count(*) ...: dxpriv's split (distributed_linear.cpp), which reads
                         the workers' sums as one Citus stage (dx._grouped_partials, the function shape:
                         planner/distributed_stage.h)
  dx, subplan shape      the same with dxpriv.citus_grouped_stage = off: the split's previous plan, the
                         sums as a subplan (then dx._collect and the releases over generate_series)
"""
import argparse
import csv
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "citus"))
from citus_common import citus_db, connect, execute  # noqa: E402

NODES = ("coord", "w1", "w2")


def shapes(aggs_native, aggs_dx, cols, function):
    """(label, sql, in a transaction block) for one aggregate list."""
    inner = f"SELECT k, {aggs_native} FROM g70 GROUP BY k"
    return [
        ("native", inner, False),
        ("native, subplan shape", f"SELECT g.g, {cols} FROM generate_series(0, 69) g LEFT JOIN ({inner}) x ON x.k = g.g", False),
        ("native, function shape", f"SELECT g.g, {cols} FROM generate_series(0, 69) g LEFT JOIN {function}() x ON x.k = g.g", False),
        ("native in BEGIN/COMMIT", inner, True),
        ("dx", f"SELECT k, {aggs_dx} FROM g70 GROUP BY k", False),
        ("dx, subplan shape", f"SELECT k, {aggs_dx} FROM g70 GROUP BY k", False),
    ]


def stage_setting(cur, name, on):
    """The subplan shape's line runs with dxpriv.citus_grouped_stage = off (set outside the timing)."""
    if name == "dx, subplan shape":
        cur.execute("SET dxpriv.citus_grouped_stage = " + ("off" if on else "DEFAULT"))


QUERY_SETS = [
    ("count", "count(*) AS c", "dx.count(*)", "x.c", "bench_count"),
    ("count, sum", "count(*) AS c, sum(income) AS s", "dx.count(*), dx.sum(income)", "x.c, x.s", "bench_count_sum"),
]


def postmaster_pids(work):
    return {n: int(open(os.path.join(work, n, "data", "postmaster.pid")).readline()) for n in NODES}


def node_cpu_ms(pm):
    """CPU of a postmaster and its children (live ones, and ended ones through cutime/cstime)."""
    tck = os.sysconf("SC_CLK_TCK")

    def fields(pid):
        return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()

    f = fields(pm)
    total = sum(int(x) for x in f[11:15])  # utime stime cutime cstime
    for child in open(f"/proc/{pm}/task/{pm}/children").read().split():
        try:
            g = fields(int(child))
            total += int(g[11]) + int(g[12])
        except OSError:
            pass
    return total * 1000.0 / tck


def build(conn, n):
    execute(conn, "CREATE TABLE g70 (id bigint, k int, income int)")
    execute(conn, "SELECT create_distributed_table('g70', 'id', shard_count => 32)")
    execute(conn, f"INSERT INTO g70 SELECT g, (g % 70)::int, ((g::bigint * 7919) % 2000) * 100 FROM generate_series(1, {n}) g")
    execute(conn, "SELECT dx.protect_table('g70', 1.0)")
    execute(conn, """SELECT dx.set_column('g70', 'income', '{"min": 0, "max": 200000, "step": 100}', '{"type": "none"}')""")
    execute(conn, """SELECT dx.set_column('g70', 'k', '{"min": 0, "max": 69}', '{"type": "absolute", "scale": 10}')""")
    execute(conn, "SELECT dx.grant_budget('postgres', 'g70', 1000000)")
    # the function shape's grouped sums (VOLATILE: never inlined, so the outer query stays local)
    execute(conn, "CREATE FUNCTION bench_count() RETURNS TABLE(k int, c bigint) LANGUAGE sql VOLATILE "
                  "AS $$ SELECT k, count(*) FROM public.g70 GROUP BY k $$")
    execute(conn, "CREATE FUNCTION bench_count_sum() RETURNS TABLE(k int, c bigint, s bigint) LANGUAGE sql VOLATILE "
                  "AS $$ SELECT k, count(*), sum(income) FROM public.g70 GROUP BY k $$")
    execute(conn, "ANALYZE g70")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rows", nargs="?", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--reps", type=int, default=4)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results", "citus_stage_bench.csv"))
    a = ap.parse_args()
    pms = postmaster_pids(os.environ["DXPRIV_CITUS_WORK"])
    with citus_db() as db, open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rows", "aggregates", "shape", "wall_ms", "cpu_coord_ms", "cpu_w1_ms", "cpu_w2_ms", "cpu_total_ms",
                    "wall_ratio", "cpu_total_ratio", "load"])
        conn = connect("coord", db)
        build(conn, a.rows)
        execute(conn, "SET dxpriv.epsilon = 1")
        cur = conn.cursor()

        def run(sql, tx):
            if tx:
                cur.execute("BEGIN")
            cur.execute(sql)
            cur.fetchall()
            if tx:
                cur.execute("COMMIT")

        for label, aggs_native, aggs_dx, cols, function in QUERY_SETS:
            lines = shapes(aggs_native, aggs_dx, cols, function)
            for name, sql, tx in lines:  # warm-up (the dx statement's first analysis, connections)
                stage_setting(cur, name, True)
                run(sql, tx)
                run(sql, tx)
                stage_setting(cur, name, False)
            res = {name: [] for name, _, _ in lines}
            for _ in range(a.runs):
                for name, sql, tx in lines:
                    stage_setting(cur, name, True)
                    c0 = {n: node_cpu_ms(pm) for n, pm in pms.items()}
                    t0 = time.perf_counter()
                    for _ in range(a.reps):
                        run(sql, tx)
                    wall = (time.perf_counter() - t0) * 1000 / a.reps
                    c1 = {n: node_cpu_ms(pm) for n, pm in pms.items()}
                    stage_setting(cur, name, False)
                    res[name].append([wall] + [(c1[n] - c0[n]) / a.reps for n in NODES])
            med = {name: [statistics.median(x[i] for x in v) for i in range(4)] for name, v in res.items()}
            base = med["native"]
            for name, _, _ in lines:
                m = med[name]
                total = sum(m[1:])
                w.writerow([a.rows, label, name, f"{m[0]:.1f}", f"{m[1]:.1f}", f"{m[2]:.1f}", f"{m[3]:.1f}", f"{total:.1f}",
                            f"{m[0] / base[0]:.2f}", f"{total / sum(base[1:]):.2f}", f"{os.getloadavg()[0]:.1f}"])
                print(f"{label:10s} {name:24s} wall {m[0]:6.1f} ms ({m[0] / base[0]:.2f}) | CPU coord {m[1]:5.1f} "
                      f"w1 {m[2]:5.1f} w2 {m[3]:5.1f} total {total:6.1f} ms ({total / sum(base[1:]):.2f})", flush=True)
        conn.close()
    print("wrote", a.out)


if __name__ == "__main__":
    main()
