#!/usr/bin/env python3
"""Time to a refusal (or to a plan) of l1/l2 pair searches (issue 23, l2refuse2).

For statements whose pair searches cannot prune (the bounded model over 10^5 uniform points, 8-d
points, points on a sphere, clusters, collinear points) and for the benchmark's accepted l2
statements, runs `dx.explain` as an analyst under each --limits value of dxpriv.analysis_work_limit
(a superuser SETs it, then SET ROLE to the analyst) in a new session each time, and prints the
backend CPU (from /proc/<pid>/schedstat: the server must run on this machine), the outcome and the
work the statement used (the DEBUG1 line "pair-search work N of the limit L", or the refusal's
numbers). Cluster: PGHOST/PGPORT/PGUSER of a superuser (e.g. scripts/pg-env.sh start_cluster).

  python3 test/bench/l2refuse_bench.py --points 100000 --limits 1.2e8 \
      --out test/bench/results/l2refuse2/after.csv
  python3 test/bench/l2refuse_bench.py --skip-setup --warm --limits 1.2e8 \
      --out test/bench/results/l2refuse2/after_warm.csv   # the analysis alone, policy loaded
"""

import argparse
import csv
import math
import os
import random
import re
import time

import psycopg2
import psycopg2.extras

from analysis_bench import points as places  # n distinct random points in the contiguous US box

ANALYST = "dx_bench_l2refuse"


def connect():
    c = psycopg2.connect(dbname=os.environ.get("PGDATABASE", "postgres"))
    c.autocommit = True
    return c


def uniform(n, d, seed):
    rnd = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        p = tuple(round(rnd.uniform(0, 100), 4) for _ in range(d))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def sphere(n, seed):
    rnd = random.Random(seed)
    seen, out = set(), []
    while len(out) < n:
        v = [rnd.gauss(0, 1) for _ in range(3)]
        s = math.sqrt(sum(t * t for t in v)) or 1
        p = tuple(round(50 * t / s, 6) for t in v)
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def clusters(n, seed):
    rnd = random.Random(seed)
    centres = [(rnd.uniform(0, 100), rnd.uniform(0, 100)) for _ in range(4)]
    seen, out = set(), []
    while len(out) < n:
        c = centres[len(out) % 4]
        p = (round(c[0] + rnd.gauss(0, 0.5), 6), round(c[1] + rnd.gauss(0, 0.5), 6))
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def collinear(n):
    return [(i * 0.001, i * 0.002) for i in range(n)]


def make_table(cur, name, pts, presence, rows):
    d = len(pts[0])
    cols = [f"x{i}" for i in range(d)]
    cur.execute(f"DROP TABLE IF EXISTS {name}")
    cur.execute(f"CREATE TABLE {name} (id int, {', '.join(c + ' float8' for c in cols)})")
    n = len(pts)
    arrays = [[p[i] for p in pts] for i in range(d)]
    sel = ", ".join(f"a.c{i}[1 + (g * 7919) %% {n}]" for i in range(d))
    src = ", ".join(f"%s::float8[] AS c{i}" for i in range(d))
    cur.execute(f"INSERT INTO {name} SELECT g, {sel} FROM generate_series(1, {rows}) g, (SELECT {src}) a", arrays)
    cur.execute(f"ANALYZE {name}")
    cur.execute("SELECT dx.protect_table(%s, %s)", (name, presence))
    cur.execute("SELECT dx.set_column_group(%s, %s, %s, %s)",
                (name, cols, psycopg2.extras.Json({"points": [list(p) for p in pts]}), '{"type": "l2", "scale": 1}'))
    cur.execute("SELECT dx.grant_budget(%s, %s, 1e9)", (ANALYST, name))


def setup(n, rows):
    cur = connect().cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS dxpriv")
    cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ANALYST,))
    if not cur.fetchone():
        cur.execute(f"CREATE ROLE {ANALYST} LOGIN")
        cur.execute("SELECT dx.add_analyst(%s)", (ANALYST,))
    make_table(cur, "rf_u2", uniform(n, 2, 1), "Infinity", rows)
    make_table(cur, "rf_u8", uniform(n, 8, 2), "Infinity", rows)
    make_table(cur, "rf_sph", sphere(n, 3), "Infinity", rows)
    make_table(cur, "rf_clu", clusters(n, 4), "Infinity", rows)
    make_table(cur, "rf_col", collinear(n), "Infinity", rows)
    make_table(cur, "rf_places", places(n, n), 1.0, rows)


SIXTEEN = ", ".join([f"sum(x{i})" for i in range(8)] + [f"sum(x{i} * x{i + 1})" for i in range(7)] + ["sum(x0 * x7)"])
STATEMENTS = [
    ("2 sums, uniform 2-d, bounded", "SELECT sum(x0), sum(x1) FROM rf_u2"),
    ("5 sums, uniform 2-d, bounded", "SELECT sum(x0), sum(x1), sum(x0 * x1), sum(x0 * x0), sum(x1 * x1) FROM rf_u2"),
    ("sum(x1), uniform 8-d, bounded", "SELECT sum(x1) FROM rf_u8"),
    ("16 sums, uniform 8-d, bounded", f"SELECT {SIXTEEN} FROM rf_u8"),
    ("3 sums, sphere, bounded", "SELECT sum(x0), sum(x1), sum(x2) FROM rf_sph"),
    ("2 sums, clusters, bounded", "SELECT sum(x0), sum(x1) FROM rf_clu"),
    ("2 sums, collinear, bounded", "SELECT sum(x0), sum(x1) FROM rf_col"),
    ("avg(x1), uniform 2-d, bounded", "SELECT avg(x1) FROM rf_u2"),
    ("bench: avg(lat)", "SELECT avg(x1) FROM rf_places"),
    ("bench: avg + FILTERed count", "SELECT avg(x1), count(*) FILTER (WHERE x0 < -100) FROM rf_places"),
    ("bench: 5 aggregates", "SELECT count(*), count(*) FILTER (WHERE x1 > 40), sum(x1), avg(x0), "
                            "count(*) FILTER (WHERE x0 < -100) FROM rf_places"),
]


def cpu_ns(pid):
    with open(f"/proc/{pid}/schedstat") as f:
        return int(f.read().split()[0])


WARM = False


def run(sql, limit):
    c = connect()
    cur = c.cursor()
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    cur.execute("SET dxpriv.analysis_work_limit = %s", (limit,))
    cur.execute("SET dxpriv.epsilon = 0.1")
    cur.execute("SET client_min_messages = debug1")
    cur.execute(f"SET ROLE {ANALYST}")
    if WARM:  # the policy loaded by a first statement on the table: the analysis alone is timed
        table = sql.split(" FROM ")[1].split()[0]
        cur.execute("SELECT * FROM dx.explain(%s)", (f"SELECT count(*) FROM {table}",))
        cur.fetchall()
    c.notices.clear()
    q = "SELECT * FROM dx.explain(%s)" % psycopg2.extensions.adapt(sql).getquoted().decode()
    cpu0, t0 = cpu_ns(pid), time.perf_counter()
    outcome, work = "planned", ""
    try:
        cur.execute(q)
        cur.fetchall()
    except psycopg2.Error as e:
        outcome = "refused"
        work = str(e).splitlines()[0]
    wall = (time.perf_counter() - t0) * 1000
    cpu = (cpu_ns(pid) - cpu0) / 1e6
    for n in c.notices:
        m = re.search(r"pair-search work (\S+) of the limit", n)
        if m and outcome == "planned":
            work = m.group(1)
    c.close()
    return wall, cpu, outcome, work


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=100000)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--limits", default="2e8")
    ap.add_argument("--only", help="only the statements whose label contains this text")
    ap.add_argument("--skip-setup", action="store_true")
    ap.add_argument("--warm", action="store_true",
                    help="load the table's policy in the session first (an untimed dx.explain of a count)")
    ap.add_argument("--out")
    a = ap.parse_args()
    global WARM
    WARM = a.warm
    if not a.skip_setup:
        setup(a.points, a.rows)
    with open("/proc/loadavg") as f:
        print("load average at start:", " ".join(f.read().split()[:3]))
    out = []
    for limit in a.limits.split(","):
        for label, sql in STATEMENTS:
            if a.only and a.only not in label:
                continue
            wall, cpu, outcome, work = run(sql, float(limit))
            print(f"{limit:>6} | {label:<32} | {cpu:8.0f} ms CPU | {wall:8.0f} ms wall | {outcome} | {work[:300]}",
                  flush=True)
            out.append((limit, label, round(cpu, 1), round(wall, 1), outcome, work))
    if a.out:
        os.makedirs(os.path.dirname(a.out), exist_ok=True)
        with open(a.out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["limit", "statement", "cpu_ms", "wall_ms", "outcome", "work_or_message"])
            w.writerows(out)


if __name__ == "__main__":
    main()
