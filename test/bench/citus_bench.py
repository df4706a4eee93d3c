#!/usr/bin/env python3
"""dx vs native aggregates on a Citus distributed table (issue 13), same run, as ratios.

Usage (clusters from `KEEP=1 NO_TESTS=1 ./scripts/run-citus.sh`):
  DXPRIV_CITUS_COORD=... DXPRIV_CITUS_W1=... DXPRIV_CITUS_W2=... test/bench/citus_bench.py [rows ...]
DXPRIV_BENCH_ONLY (a regular expression): only the queries whose name it matches (re.search), e.g.
"pruned" for the pruned single-shard row; DXPRIV_BENCH_OUT: another CSV path.
Writes test/bench/results/citus_bench.csv: rows, query, native ms, dx ms (medians of 5, native and dx
timed alternately), ratio, the
bytes of the task query Citus sends to each shard (the per-point tables travel in it, or their
digest), and whether
the dx answer on a noiseless copy of the table (presence Infinity, every metric none: sensitivity 0)
equals PostgreSQL's own aggregate on it (the workers' partial sums combined without loss).
"""
import csv
import math
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "citus"))
import citus_fixture as fx  # noqa: E402
from citus_common import citus_db, connect, execute, rows  # noqa: E402

NOISELESS = [(c, d, '{"type": "none"}') for c, d, _ in fx.COLUMNS]

QUERIES = [
    ("count(*)", "SELECT count(*) FROM people", "SELECT dx.count(*) FROM people"),
    ("count WHERE age>40 AND sex='F'", "SELECT count(*) FROM people WHERE age > 40 AND sex = 'F'",
     "SELECT dx.count(*) FROM people WHERE age > 40 AND sex = 'F'"),
    ("sum(income)", "SELECT sum(income) FROM people", "SELECT dx.sum(income) FROM people"),
    ("avg(income)", "SELECT avg(income) FROM people", "SELECT dx.avg(income) FROM people"),
    ("GROUP BY region count, avg", "SELECT region, count(*), avg(income) FROM people GROUP BY region",
     "SELECT region, dx.count(*), dx.avg(income) FROM people GROUP BY region"),
    ("linear(income*income/1e6) (dense table)", "SELECT sum(income::float8 * income / 1e6) FROM people",
     "SELECT dx.linear(income::float8 * income / 1e6) FROM people"),
]


def timed(conn, sql, reps=5):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        rows(conn, sql)
        ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts)


def timed_pair(conn, native, dx, reps=5):
    """Medians of native's and dx's timings, taken alternately (native, dx, native, ...): a change of
    the machine's load during the measurement reaches both alike (one block of native timings then
    one of dx timings put the load's drift into the ratio)."""
    nat, dxt = [], []
    for _ in range(reps):
        nat.append(timed(conn, native, 1))
        dxt.append(timed(conn, dx, 1))
    return statistics.median(nat), statistics.median(dxt)


def same_answers(native, dx):
    """Row by row; numbers within 1e-12 relative (PostgreSQL sums float8 in the order rows arrive from
    the shards, so its last bits vary between runs; dx sums exactly in grid units)."""
    return len(native) == len(dx) and all(
        len(a) == len(b) and all(x == y if isinstance(x, str) else math.isclose(x, y, rel_tol=1e-12, abs_tol=1e-9)
                                 for x, y in zip(a, b))
        for a, b in zip(native, dx))


def task_bytes(conn, sql):
    plan = [r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + sql)]
    q = [line.split("Query: ", 1)[1] for line in plan if "Query: " in line and "FROM public." in line]
    return len(q[0].encode()) if q else 0


# issue 27 rows: privacy units (distributed by the unit: bounded on the workers; by id: through an
# intermediate result), a join with a reference table grouped by its public column, a single-shard
# table on a worker (several query levels); issue 23's goal
# rows: a pruned single-shard query (goal <= 2x native) and GROUP BY a 70-value key (goal <= 1.2x).
EXTRA = [
    ("units co-located: count, sum (k=3)", "SELECT count(*), sum(income) FROM visits_by_unit",
     "SELECT dx.count(*), dx.sum(income) FROM visits_by_unit", None),
    ("units not co-located: count, sum (k=3)", "SELECT count(*), sum(income) FROM visits_by_id",
     "SELECT dx.count(*), dx.sum(income) FROM visits_by_id", None),
    ("units co-located: GROUP BY region count(DISTINCT person)",
     "SELECT region, count(DISTINCT person) FROM visits_by_unit GROUP BY region",
     "SELECT region, dx.count(DISTINCT person) FROM visits_by_unit GROUP BY region", None),
    ("reference-table join GROUP BY zone", "SELECT z.zone, count(*), sum(p.income) FROM people p JOIN zones z "
     "ON z.region = p.region GROUP BY z.zone",
     "SELECT z.zone, dx.count(*), dx.sum(p.income) FROM people p JOIN zones z ON z.region = p.region GROUP BY z.zone",
     "exact"),
    # (a sum WHERE id = 5 analyses id x income: over 2,000,000 combinations at these sizes, refused)
    ("pruned single shard: count WHERE id = 5 (goal <= 2x)", "SELECT count(*) FROM keyed WHERE id = 5",
     "SELECT dx.count(*) FROM keyed WHERE id = 5", "keyed"),
    # issue 27: a single-shard table whose shard is on a worker, several query levels (the levels that
    # read it run on the worker as a Citus subplan, the release on the coordinator); noiseless table
    ("single-shard table on a worker: GROUP BY region count, sum",
     "SELECT region, count(*), sum(income) FROM single_w GROUP BY region",
     "SELECT region, dx.count(*), dx.sum(income) FROM single_w GROUP BY region", "single_w"),
    ("single-shard table on a worker: median(age)",
     "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY age) FROM single_w",
     "SELECT dx.median(age) FROM single_w", None),
    ("single-shard table on a worker, privacy unit: count, sum (k=3)", "SELECT count(*), sum(income) FROM single_wu",
     "SELECT dx.count(*), dx.sum(income) FROM single_wu", None),
    ("GROUP BY a 70-value key: count (goal <= 1.2x)", "SELECT k, count(*) FROM g70 GROUP BY k",
     "SELECT k, dx.count(*) FROM g70 GROUP BY k", "g70"),
    ("GROUP BY a 70-value key: count, sum (goal <= 1.2x)", "SELECT k, count(*), sum(income) FROM g70 GROUP BY k",
     "SELECT k, dx.count(*), dx.sum(income) FROM g70 GROUP BY k", "g70"),
]


def build_extra(conn, n):
    """The tables of EXTRA: units tables (person p holds 1 + p % 5 rows), zones (a reference table),
    keyed (id declared, metric none: prunable) and g70 (k = id % 70); noiseless twins *_exact where
    the dx answer is compared with native SQL."""
    persons = n // 3
    for t, by in (("visits_by_unit", "person"), ("visits_by_id", "id")):
        execute(conn, f"CREATE TABLE {t} (id bigint, person int, age int, region text, income int)")
        execute(conn, f"SELECT create_distributed_table('{t}', '{by}', shard_count => 32)")
        execute(conn, f"""INSERT INTO {t} SELECT row_number() OVER (), p, 18 + (p * 37 + k) % 73,
            (ARRAY['north','south','east','west'])[1 + (p * 7 + k) % 4], ((p::bigint * 7919 + k) % 2000) * 100
            FROM generate_series(1, {persons}) p, generate_series(1, 5) k WHERE k <= 1 + p % 5""")
        execute(conn, f"SELECT dx.protect_table('{t}', 1.0)")
        for col, domain, metric in fx.COLUMNS:
            if col != "sex":
                execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (t, col, domain, metric))
        execute(conn, f"SELECT dx.grant_budget('postgres', '{t}', 100000)")
        execute(conn, f"SELECT dx.set_privacy_unit('{t}', 'person', 3)")
        if by == "person":  # (citusunit) per-shard unit profiles cached per shard version
            execute(conn, f"SELECT dx.version_shards('{t}')")
    execute(conn, "CREATE TABLE zones (region text, zone text)")
    execute(conn, "INSERT INTO zones VALUES ('north', 'cold'), ('north', 'polar'), ('south', 'warm'), ('west', 'mild')")
    execute(conn, "SELECT create_reference_table('zones')")
    execute(conn, "SELECT dx.set_public('zones')")
    for t, sql in (("keyed", "SELECT id, income FROM people"), ("g70", "SELECT id, (id % 70)::int AS k, income FROM people")):
        execute(conn, f"CREATE TABLE {t} AS {sql}")
        execute(conn, f"SELECT create_distributed_table('{t}', 'id', shard_count => 32)")
        execute(conn, f"SELECT dx.protect_table('{t}', 1.0)")
        execute(conn, f"""SELECT dx.set_column('{t}', 'income', '{{"min": 0, "max": 200000, "step": 100}}', '{{"type": "none"}}')""")
        execute(conn, f"SELECT dx.grant_budget('postgres', '{t}', 100000)")
    # (a declared range holds at most 1,000,000 points)
    execute(conn, f"""SELECT dx.set_column('keyed', 'id', '{{"min": 0, "max": {min(n + 1, 999999)}}}', '{{"type": "none"}}')""")
    execute(conn, """SELECT dx.set_column('g70', 'k', '{"min": 0, "max": 69}', '{"type": "absolute", "scale": 10}')""")
    # single_w: one shard (a NULL distribution key) placed on a worker, noiseless (presence Infinity,
    # every metric none): its dx answers equal native SQL
    execute(conn, "CREATE TABLE single_w AS SELECT id, age, region, income FROM people")
    execute(conn, "SELECT create_distributed_table('single_w', NULL)")
    execute(conn, "SELECT dx.protect_table('single_w', 'Infinity')")
    for col, domain, metric in NOISELESS:
        if col != "sex":
            execute(conn, "SELECT dx.set_column('single_w', %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
    execute(conn, "SELECT dx.grant_budget('postgres', 'single_w', 100000)")
    # single_wu: the rows of visits_by_id (a privacy unit, k = 3) in one shard on a worker
    execute(conn, "CREATE TABLE single_wu AS SELECT * FROM visits_by_id")
    execute(conn, "SELECT create_distributed_table('single_wu', NULL)")
    execute(conn, "SELECT dx.protect_table('single_wu', 1.0)")
    for col, domain, metric in fx.COLUMNS:
        if col != "sex":
            execute(conn, "SELECT dx.set_column('single_wu', %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
    execute(conn, "SELECT dx.grant_budget('postgres', 'single_wu', 100000)")
    execute(conn, "SELECT dx.set_privacy_unit('single_wu', 'person', 3)")
    for t in ("visits_by_unit", "visits_by_id", "keyed", "g70", "single_w", "single_wu"):
        execute(conn, f"ANALYZE {t}")


def main(sizes):
    out = os.environ.get("DXPRIV_BENCH_OUT") or os.path.join(os.path.dirname(__file__), "results", "citus_bench.csv")
    only = re.compile(os.environ.get("DXPRIV_BENCH_ONLY", ""))
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["rows", "shards", "query", "native_ms", "dx_ms", "ratio", "task_query_bytes", "noiseless_equal"])
        for n in sizes:
            with citus_db() as db:
                fx.build(db, rows=n, shards=32)
                conn = connect("coord", db)
                execute(conn, "CREATE TABLE exact AS SELECT * FROM people")
                execute(conn, "SELECT create_distributed_table('exact', 'id', shard_count => 32)")
                execute(conn, "SELECT dx.protect_table('exact', 'Infinity')")
                for col, domain, metric in NOISELESS:
                    execute(conn, "SELECT dx.set_column('exact', %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
                execute(conn, "SELECT dx.grant_budget('postgres', 'exact', 1000)")
                execute(conn, "ANALYZE people")
                execute(conn, "SET dxpriv.epsilon = 1")
                for name, native, dx in QUERIES:
                    if not only.search(name):
                        continue
                    timed(conn, native, 1)
                    timed(conn, dx, 1)  # warm caches and connections
                    nat, dxt = timed_pair(conn, native, dx)
                    exact = [tuple(round(float(v), 6) if not isinstance(v, str) else v for v in r)
                             for r in sorted(rows(conn, native.replace("people", "exact")), key=str)]
                    # the empty declared group ('none') is answered too (its average withheld: NULL)
                    noiseless = [tuple(round(float(v), 6) if not isinstance(v, str) else v for v in r)
                                 for r in sorted(rows(conn, dx.replace("people", "exact")), key=str)
                                 if "GROUP BY" not in name or r[0] != "none"]
                    equal = same_answers(exact, noiseless)
                    w.writerow([n, 32, name, f"{nat:.1f}", f"{dxt:.1f}", f"{dxt / nat:.2f}", task_bytes(conn, dx), equal])
                    f.flush()
                    print(n, name, f"native {nat:.1f} ms, dx {dxt:.1f} ms, ratio {dxt / nat:.2f}, "
                          f"noiseless equal {equal}", flush=True)
                build_extra(conn, n)
                for name, native, dx, exact_on in EXTRA:
                    if not only.search(name):
                        continue
                    timed(conn, native, 1)
                    timed(conn, dx, 1)
                    nat, dxt = timed_pair(conn, native, dx)
                    equal = ""
                    if exact_on == "single_w":  # itself noiseless; dx answers the empty group 'none' too
                        want = sorted(rows(conn, native), key=str)
                        got = sorted((r for r in rows(conn, dx) if r[0] != "none"), key=str)
                        equal = same_answers([tuple(float(v) if not isinstance(v, str) else v for v in r) for r in want],
                                             [tuple(float(v) if not isinstance(v, str) else v for v in r) for r in got])
                    if exact_on == "exact":  # the noiseless copy of people
                        want = sorted(rows(conn, native.replace("people", "exact")), key=str)
                        got = sorted(rows(conn, dx.replace("people", "exact")), key=str)
                        equal = same_answers([tuple(float(v) if not isinstance(v, str) else v for v in r) for r in want],
                                             [tuple(float(v) if not isinstance(v, str) else v for v in r) for r in got])
                    w.writerow([n, 32, name, f"{nat:.1f}", f"{dxt:.1f}", f"{dxt / nat:.2f}", task_bytes(conn, dx), equal])
                    f.flush()
                    print(n, name, f"native {nat:.1f} ms, dx {dxt:.1f} ms, ratio {dxt / nat:.2f}", flush=True)
                conn.close()
    print("wrote", out)


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000000, 4000000])
