#!/usr/bin/env python3
"""ResetPlanCache cost of plan dependencies (review3): what a backend pays when a function its
cached dx statements' analyses evaluated is redefined, against PostgreSQL's own plan-cache reset
(GRANT on a schema) and an unrelated function's redefinition, in the same run.

On the cluster named by PGHOST/PGPORT (dxpriv preloaded), in a fresh database: one backend keeps
20 prepared dx statements (one calls the kept function f) and 200 prepared primary-key lookups;
another session redefines f, grants on a schema, or redefines g; the first runs all 220 statements
right after each. Prints medians of 5 of each, and the time of 20 rounds of "redefine f, run all".
Usage: python3 test/bench/plan_reset_bench.py   (run from the repository root)
"""
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_common import connect, execute, fresh_db  # noqa: E402


def main():
    with fresh_db() as db:
        b = connect(db)
        execute(b, "CREATE TABLE t (g int, v int); INSERT INTO t SELECT i % 3, i % 100 FROM generate_series(1, 3000) i")
        execute(b, "SELECT dx.protect_table('t')")
        execute(b, """SELECT dx.set_column('t', 'v', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}')""")
        execute(b, "SELECT dx.grant_budget(current_user::regrole, 't', 1e12)")
        execute(b, "CREATE TABLE plain (id int primary key, x int); INSERT INTO plain SELECT i, i FROM generate_series(1, 1000) i")
        execute(b, "CREATE FUNCTION f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x'")
        execute(b, "CREATE FUNCTION g(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x'")
        execute(b, "DO $$ BEGIN CREATE ROLE r3_bench_role; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
        a = connect(db)
        execute(a, "SET dxpriv.cache_lifetime = 0")
        ndx, nplain = 20, 200
        execute(a, "PREPARE d0 AS SELECT dx.sum(f(v), 1.0) FROM t")
        for i in range(1, ndx):
            execute(a, f"PREPARE d{i} AS SELECT dx.sum(v, 1.0) FROM t WHERE v < {i + 10}")
        for i in range(nplain):
            execute(a, f"PREPARE p{i} AS SELECT x + {i} FROM plain WHERE id = $1")
        def run_all():
            t0 = time.perf_counter()
            with a.cursor() as cur:
                for i in range(ndx):
                    cur.execute(f"EXECUTE d{i}"); cur.fetchall()
                tdx = time.perf_counter()
                for i in range(nplain):
                    cur.execute(f"EXECUTE p{i}(%s)", (i + 1,)); cur.fetchall()
            t1 = time.perf_counter()
            return (tdx - t0) * 1000, (t1 - tdx) * 1000
        for _ in range(7): run_all()  # warm (generic plans for the plain ones after 5 uses)
        res = {k: [] for k in ("steady", "kept function redefined", "native schema grant", "unrelated function redefined")}
        for rep in range(5):
            res["steady"].append(run_all())
            execute(b, f"CREATE OR REPLACE FUNCTION f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + {rep % 2}'")
            res["kept function redefined"].append(run_all())
            for _ in range(6): run_all()
            execute(b, "GRANT USAGE ON SCHEMA public TO r3_bench_role" if rep % 2 == 0 else "REVOKE USAGE ON SCHEMA public FROM r3_bench_role")
            res["native schema grant"].append(run_all())
            for _ in range(6): run_all()
            execute(b, f"CREATE OR REPLACE FUNCTION g(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + {rep % 2}'")
            res["unrelated function redefined"].append(run_all())
            for _ in range(6): run_all()
        for k, v in res.items():
            print(f"{k:32s} 20 dx statements: median {statistics.median(x[0] for x in v):8.1f} ms   200 plain: median {statistics.median(x[1] for x in v):7.1f} ms")
        # a function redefined in a loop by another session while A keeps executing
        loop = []
        for rep in range(3):
            t0 = time.perf_counter()
            for k in range(20):
                execute(b, f"CREATE OR REPLACE FUNCTION f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + {k % 2}'")
                run_all()
            loop.append((time.perf_counter() - t0) * 1000 / 20)
        print("redefine f + run all, per round (ms):", [round(x, 1) for x in loop])
        a.close()
        execute(b, "DROP OWNED BY r3_bench_role")
        b.close()
    c = connect()
    execute(c, "DROP ROLE IF EXISTS r3_bench_role")
    c.close()


if __name__ == "__main__":
    main()
