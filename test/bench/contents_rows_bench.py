#!/usr/bin/env python3
"""Contents-version rows (dx.contents_changes) against the cost of a cached dx statement.

Every cacheable dx statement reads the contents version of its table: the sum of n over the table's
rows in dx.contents_changes that its snapshot sees (an index scan). Before the merge the table kept
one row per writing transaction, so a table written by 10^6 transactions made every statement,
even one answered from the answer cache, scan 10^6 rows. This measures, on the cluster of
PGHOST/PGPORT (superuser PGUSER):

  writes   W writing transactions (one UPDATE each) through the contents trigger, which merges the
           ended transactions' rows in one transaction of 64: the rows left, and the median time of
           the cached statement `SELECT avg(v) FROM bench_cc` by an analyst afterwards;
  kept     the same statement when the table holds R rows, one per transaction (what the extension
           kept before the merge after R writing transactions; inserted directly), for each R;
  merged   the same when those R transactions are one row (n = R), as a merge leaves them (the kept
           rows' xids are synthetic, so the merge itself is exercised by the writes, not here);
  partitions  a cached `SELECT avg(v)` over a table of P partitions (backend CPU per statement from
           /proc/<pid>/schedstat, median of --runs) next to the owner's native `EXPLAIN` of the same
           statement (planning only: what any statement over P partitions pays).

  python3 test/bench/contents_rows_bench.py --writes 20000 --rows 100000 1000000 --partitions 100 \\
      --out test/bench/results/contents_rows.csv
"""
import argparse
import csv
import statistics
import time

import psycopg2

ANALYST = "dx_bench_cc"


def connect(user=None):
    kw = {"dbname": "postgres"}
    if user:
        kw["user"] = user
    c = psycopg2.connect(**kw)
    c.autocommit = True
    return c


def cached_ms(analyst, runs):
    cur = analyst.cursor()
    cur.execute("SELECT avg(v) FROM bench_cc")  # the release (charged once), then replays
    cur.fetchall()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        cur.execute("SELECT avg(v) FROM bench_cc")
        cur.fetchall()
        out.append((time.perf_counter() - t0) * 1000.0)
    return statistics.median(out)


def backend_cpu_ms(conn, sql, runs):
    cur = conn.cursor()
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    cur.execute(sql)
    cur.fetchall()
    out = []
    for _ in range(runs):
        with open(f"/proc/{pid}/schedstat") as f:
            c0 = int(f.read().split()[0])
        cur.execute(sql)
        cur.fetchall()
        with open(f"/proc/{pid}/schedstat") as f:
            out.append((int(f.read().split()[0]) - c0) / 1e6)
    return statistics.median(out)


def partitions(owner, analyst, p, runs):
    cur = owner.cursor()
    cur.execute("DROP TABLE IF EXISTS bench_cc_parts")
    cur.execute("CREATE TABLE bench_cc_parts (id int, v int) PARTITION BY RANGE (id)")
    for i in range(p):
        cur.execute(f"CREATE TABLE bench_cc_parts_{i} PARTITION OF bench_cc_parts FOR VALUES FROM ({i * 1000}) TO ({(i + 1) * 1000})")
    cur.execute("INSERT INTO bench_cc_parts SELECT g, g %% 1000 FROM generate_series(0, %s) g", (p * 1000 - 1,))
    cur.execute("SELECT dx.protect_table('bench_cc_parts', 1.0)")
    cur.execute("SELECT dx.set_column('bench_cc_parts', 'v', '{\"min\": 0, \"max\": 999, \"step\": 1}', "
                "'{\"type\": \"absolute\", \"scale\": 100}')")
    cur.execute("SELECT dx.grant_budget(%s, 'bench_cc_parts', 1e9)", (ANALYST,))
    sql = "SELECT avg(v) FROM bench_cc_parts"
    return backend_cpu_ms(analyst, sql, runs), backend_cpu_ms(owner, "EXPLAIN " + sql, runs)


def rows(owner):
    cur = owner.cursor()
    cur.execute("SELECT count(*), coalesce(sum(n), 0) FROM dx.contents_changes WHERE relid = 'bench_cc'::regclass")
    return cur.fetchone()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writes", type=int, default=20000)
    ap.add_argument("--rows", type=int, nargs="*", default=[100000, 1000000])
    ap.add_argument("--runs", type=int, default=21)
    ap.add_argument("--partitions", type=int, default=100)
    ap.add_argument("--out", default="test/bench/results/contents_rows.csv")
    a = ap.parse_args()
    owner = connect()
    cur = owner.cursor()
    cur.execute("CREATE EXTENSION IF NOT EXISTS dxpriv")
    cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ANALYST,))
    if not cur.fetchone():
        cur.execute(f"CREATE ROLE {ANALYST} LOGIN")
        cur.execute("SELECT dx.add_analyst(%s)", (ANALYST,))
    cur.execute("DROP TABLE IF EXISTS bench_cc")
    cur.execute("CREATE TABLE bench_cc (id int PRIMARY KEY, v int)")
    cur.execute("INSERT INTO bench_cc SELECT g, g % 1000 FROM generate_series(1, 100000) g")
    cur.execute("SELECT dx.protect_table('bench_cc', 1.0)")
    cur.execute("SELECT dx.set_column('bench_cc', 'v', '{\"min\": 0, \"max\": 999, \"step\": 1}', "
                "'{\"type\": \"absolute\", \"scale\": 100}')")
    cur.execute("SELECT dx.grant_budget(%s, 'bench_cc', 1e9)", (ANALYST,))
    analyst = connect(ANALYST)
    analyst.cursor().execute("SET dxpriv.epsilon = 0.1")
    results = []
    t0 = time.perf_counter()
    for i in range(a.writes):
        cur.execute("UPDATE bench_cc SET v = (v + 1) %% 1000 WHERE id = %s", (1 + i % 100000,))
    write_s = time.perf_counter() - t0
    n, total = rows(owner)
    results.append(("writes", a.writes, n, total, round(cached_ms(analyst, a.runs), 3), round(write_s * 1e6 / a.writes, 1)))
    for r in a.rows:
        # r rows, one per transaction (synthetic xids far above the real ones)
        cur.execute("DELETE FROM dx.contents_changes WHERE relid = 'bench_cc'::regclass")
        cur.execute("INSERT INTO dx.contents_changes (relid, xid) SELECT 'bench_cc'::regclass, "
                    "(1000000000 + g)::text::xid8 FROM generate_series(1, %s) g", (r,))
        cur.execute("VACUUM ANALYZE dx.contents_changes")
        n, total = rows(owner)
        results.append(("kept", r, n, total, round(cached_ms(analyst, a.runs), 3), None))
        cur.execute("DELETE FROM dx.contents_changes WHERE relid = 'bench_cc'::regclass")
        cur.execute("INSERT INTO dx.contents_changes (relid, xid, n) VALUES ('bench_cc'::regclass, "
                    "'1000000000'::xid8, %s)", (r,))
        cur.execute("VACUUM ANALYZE dx.contents_changes")
        n, total = rows(owner)
        results.append(("merged", r, n, total, round(cached_ms(analyst, a.runs), 3), None))
    cached, native_plan = partitions(owner, analyst, a.partitions, a.runs)
    results.append(("partitions_cached_cpu", a.partitions, None, None, round(cached, 3), None))
    results.append(("partitions_native_explain_cpu", a.partitions, None, None, round(native_plan, 3), None))
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["case", "transactions_or_partitions", "rows", "sum_n", "statement_ms", "write_us"])
        w.writerows(results)
    for r in results:
        print(r)


if __name__ == "__main__":
    main()
