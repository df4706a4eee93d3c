"""Red-team attacks (session 16) on what landed in session 15: the analysis memo's replay sharing its
per-point tables by pin counts (planner/shared_const_copy.cpp), count_units beside other aggregates
in one scan (dx._noisy_count_units, executor/unit_count_set.cpp) and the answer-cache key's hashed
large constants (planner/cache_key_consts.cpp). Every test fails if its attack works: a crashed
backend or a garbage answer (a freed per-point table), a unit kept more than k rows or counted more
than once, a second answer without a charge, a replay of another statement's answer."""
import json
import math

import psycopg2

from attack_fixture import ensure_analyst_role
from e2e_common import connect, execute, fresh_db, scalar

ANALYST = "redteam2_analyst"
K = 3


def rows_of(conn, sql, params=None):
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall() if cur.description else []


def _spent(admin, role, table):
    return float(scalar(admin, "SELECT coalesce(sum(spent), 0) FROM dx.budget_grants WHERE role = %s::regrole "
                               "AND relid = %s::regclass", (role, table)))


# ---------------------------------------------------------------- memo replay: pinned shared tables

POINTS = 2000  # per-point tables of 16 kB: far above the 1 kB of a shared constant
MEMO_SQL = "SELECT dx.avg(lat), dx.count(*) FILTER (WHERE lon < -100) FROM spots"


def _spots(admin):
    import random
    rnd = random.Random(7)
    seen, pts = set(), []
    while len(pts) < POINTS:
        p = (round(rnd.uniform(-124.7, -67.0), 3), round(rnd.uniform(25.1, 49.4), 3))
        if p not in seen:
            seen.add(p)
            pts.append(p)
    execute(admin, "CREATE TABLE spots (id int, lon float8, lat float8)")
    execute(admin, "INSERT INTO spots SELECT g, a.lons[1 + (g * 7919) %% %s], a.lats[1 + (g * 7919) %% %s] "
                   "FROM generate_series(1, 10000) g, (SELECT %s::float8[] AS lons, %s::float8[] AS lats) a",
            (POINTS, POINTS, [p[0] for p in pts], [p[1] for p in pts]))
    execute(admin, "SELECT dx.protect_table('spots', 1.0)")
    execute(admin, "SELECT dx.set_column_group('spots', ARRAY['lon', 'lat'], %s::jsonb, %s::jsonb)",
            (json.dumps({"points": [list(p) for p in pts]}), '{"type": "l2", "scale": 1}'))
    ensure_analyst_role(admin, ANALYST)
    execute(admin, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
    execute(admin, "SELECT dx.grant_budget(%s::regrole, 'spots', 1e9)", (ANALYST,))


def _plausible(row, what):
    """A memo replay's answer read from live tables: the average latitude inside the declared box
    (noise at epsilon 1 over 10^4 rows is far below the margin), a finite count."""
    avg, count = float(row[0]), float(row[1])
    assert math.isfinite(avg) and 20 < avg < 55, (what, row)
    assert math.isfinite(count) and -1000 < count < 11000, (what, row)


def _evict(cur, tag, n=70):
    """n new analyses (distinct statements): the memo keeps 64, so an older entry is dropped."""
    for i in range(n):
        cur.execute(f"SELECT dx.count(*) FROM spots WHERE lat > {20 + i / 7:.3f} /* {tag} */")
        cur.fetchall()


def test_memo_replays_under_cursors_savepoints_functions_and_errors_survive_eviction():
    """The memo entry's per-point tables are shared (not copied) by each replay. Replays kept past the
    entry's eviction: a SQL function called as a PL/pgSQL simple expression (its cached tree and plan,
    a memo hit, run again after 70 other analyses in the same transaction), a statement cancelled in
    the middle (statement_timeout), DISCARD ALL; and, as regression tests (not memo hits today: a
    utility statement's query, a named statement's copy), a WITH HOLD cursor fetched after the
    eviction, a cursor declared before and run after it, a cursor rolled back to a savepoint, a named
    prepared statement, PL/pgSQL's cached plan. The backend never crashes and every answer is read
    from live tables (plausible)."""
    with fresh_db() as db:
        admin = connect(db)
        _spots(admin)
        execute(admin, "CREATE FUNCTION public.memo_plpgsql(n int) RETURNS float8 LANGUAGE plpgsql AS $$ "
                       "DECLARE a float8; c float8; t float8 := 0; BEGIN FOR i IN 1..n LOOP "
                       "SELECT dx.avg(lat), dx.count(*) FILTER (WHERE lon < -100) INTO a, c FROM spots; "
                       "IF a IS NULL OR a < 20 OR a > 55 THEN RAISE EXCEPTION 'implausible %', a; END IF; t := t + a; "
                       "FOR j IN 1..70 LOOP EXECUTE format('SELECT dx.count(*) FROM spots WHERE lat > %s', 20 + j + i * 0.01) INTO c; "
                       "END LOOP; END LOOP; RETURN t / n; END $$")
        execute(admin, "CREATE FUNCTION public.memo_sql() RETURNS TABLE (a float8, c float8) LANGUAGE sql AS $$ "
                       "SELECT dx.avg(lat), dx.count(*) FILTER (WHERE lon < -100) FROM spots $$")
        # a SQL function called as a PL/pgSQL simple expression: its cache (the replayed tree, its plan)
        # lives until the end of the transaction and runs again after 70 evictions in between
        execute(admin, "CREATE FUNCTION public.memo_scalar() RETURNS float8 LANGUAGE sql AS $$ "
                       "SELECT dx.avg(lat) FROM spots $$")
        execute(admin, "CREATE FUNCTION public.memo_loop(n int) RETURNS float8[] LANGUAGE plpgsql AS $$ "
                       "DECLARE v float8; out float8[] := '{}'; c float8; BEGIN FOR i IN 1..n LOOP v := public.memo_scalar(); "
                       "out := out || v; FOR j IN 1..70 LOOP EXECUTE format('SELECT dx.count(*) FROM spots WHERE lat > %s', "
                       "20 + j + i * 0.01) INTO c; END LOOP; END LOOP; RETURN out; END $$")
        execute(admin, f"GRANT EXECUTE ON FUNCTION public.memo_plpgsql(int), public.memo_sql(), public.memo_scalar(), "
                       f"public.memo_loop(int) TO {ANALYST}")
        execute(admin, f"GRANT EXECUTE ON FUNCTION dx._analysis_memo_hits() TO {ANALYST}")  # (a counter, for the test)
        a = connect(db, user=ANALYST, autocommit=False)
        try:
            cur = a.cursor()
            cur.execute("SET dxpriv.epsilon = 1")
            cur.execute(MEMO_SQL)  # analysed and stored in the memo
            _plausible(cur.fetchone(), "first")
            a.commit()
            hits = int(scalar(a, "SELECT dx._analysis_memo_hits()"))
            # a WITH HOLD cursor: a memo hit, committed, its entry evicted, then fetched
            cur.execute(f"DECLARE held CURSOR WITH HOLD FOR {MEMO_SQL}")
            a.commit()
            _evict(cur, "held")
            a.commit()
            cur.execute("FETCH ALL FROM held")
            _plausible(cur.fetchone(), "with hold")
            cur.execute("CLOSE held")
            a.commit()
            # a cursor declared (a memo hit) and first executed after the entry's eviction
            cur.execute(MEMO_SQL)  # (stored again)
            cur.fetchall()
            cur.execute(f"DECLARE later CURSOR FOR {MEMO_SQL}")
            _evict(cur, "later")
            cur.execute("FETCH ALL FROM later")
            _plausible(cur.fetchone(), "cursor after eviction")
            a.commit()
            # a cursor rolled back to a savepoint after the eviction, then the statement again
            cur.execute(MEMO_SQL)
            cur.fetchall()
            cur.execute("SAVEPOINT s")
            cur.execute(f"DECLARE gone CURSOR FOR {MEMO_SQL}")
            cur.execute("FETCH 1 FROM gone")
            cur.fetchall()
            _evict(cur, "savepoint")
            cur.execute("ROLLBACK TO SAVEPOINT s")
            cur.execute(MEMO_SQL)
            _plausible(cur.fetchone(), "after rollback to savepoint")
            a.commit()
            # a named prepared statement (a memo hit), executed before and after the eviction
            cur.execute(MEMO_SQL)
            cur.fetchall()
            cur.execute(f"PREPARE named AS {MEMO_SQL}")
            for tag in ("prepared 1", "prepared 2"):
                cur.execute("EXECUTE named")
                _plausible(cur.fetchone(), tag)
                _evict(cur, tag)
                a.commit()
            cur.execute("DEALLOCATE named")
            # PL/pgSQL's cached plan and a SQL function, each replayed with evictions between the calls
            avg = float(scalar(a, "SELECT public.memo_plpgsql(3)"))
            assert 20 < avg < 55, avg
            for tag in ("sql function 1", "sql function 2"):
                cur.execute("SELECT * FROM public.memo_sql()")
                _plausible(cur.fetchone(), tag)
                _evict(cur, tag)
            a.commit()
            # the SQL function's tree shares the memo entry's tables; the entry is evicted between its calls
            cur.execute("SELECT dx.avg(lat) FROM spots")  # (stored: the function's statement hits it)
            cur.fetchall()
            before = int(scalar(a, "SELECT dx._analysis_memo_hits()"))
            avgs = [float(v) for v in scalar(a, "SELECT public.memo_loop(3)")]
            assert len(avgs) == 3 and all(20 < v < 55 for v in avgs), avgs
            assert int(scalar(a, "SELECT dx._analysis_memo_hits()")) > before
            a.commit()
            # cancelled in the middle of execution, then the statement again
            cur.execute("SET statement_timeout = '2ms'")
            for _ in range(5):
                try:
                    cur.execute(MEMO_SQL)
                    cur.fetchall()
                    a.commit()
                except psycopg2.errors.QueryCanceled:
                    a.rollback()
            cur.execute("RESET statement_timeout")
            cur.execute(MEMO_SQL)
            _plausible(cur.fetchone(), "after a cancel")
            a.commit()
            a.autocommit = True
            cur.execute("DISCARD ALL")
            cur.execute("SET dxpriv.epsilon = 1")
            cur.execute(MEMO_SQL)
            _plausible(cur.fetchone(), "after discard all")
            assert int(scalar(a, "SELECT dx._analysis_memo_hits()")) > hits
            assert scalar(a, "SELECT 1") == 1
        finally:
            a.close()
            admin.close()


# ---------------------------------------------------------------- count_units beside other aggregates

PARALLEL8 = ["SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0", "SET min_parallel_table_scan_size = 0",
             "SET max_parallel_workers_per_gather = 8"]
SETTINGS = {"serial": [], "parallel8": PARALLEL8,
            "workers_only": PARALLEL8 + ["SET parallel_leader_participation = off"],
            "forced": PARALLEL8 + ["SET force_parallel_mode = on"],
            # a partial state per partition (12), combined unserialized, or serialized by the workers
            "partitionwise": ["SET enable_partitionwise_aggregate = on"],
            "partitionwise_parallel": PARALLEL8 + ["SET enable_partitionwise_aggregate = on"]}


def under(conn, settings, sql):
    try:
        for s in settings:
            execute(conn, s)
        return rows_of(conn, sql)
    finally:
        execute(conn, "RESET ALL")


def _protect_units(admin, table, unit="person", column="ward", values=("a", "b", "c", "x")):
    execute(admin, f"SELECT dx.protect_table('{table}', 'Infinity')")
    execute(admin, f"SELECT dx.set_column('{table}', '{column}', %s::jsonb, '{{\"type\": \"none\"}}')",
            (json.dumps({"values": list(values)}),))
    execute(admin, f"SELECT dx.set_column('{table}', 'age', '{{\"min\": 0, \"max\": 120}}', '{{\"type\": \"none\"}}')")
    execute(admin, f"SELECT dx.set_privacy_unit('{table}', '{unit}', {K})")
    execute(admin, f"SELECT dx.grant_budget('{ANALYST}'::regrole, '{table}', 1e9)")
    execute(admin, f"SELECT dx.grant_budget(current_user::regrole, '{table}', 1e9)")
    execute(admin, f"GRANT SELECT ON {table} TO {ANALYST}")


def _exact(admin, table, where="true"):
    """(rows kept by the rule, units) over the rows satisfying `where` when every row of a unit does
    or none does: sum over units of least(k, rows), and the units (every NULL unit is one)."""
    return tuple(int(v) for v in rows_of(admin, f"SELECT coalesce(sum(least(n, {K})), 0), count(*) FROM "
                                                f"(SELECT count(*) AS n FROM {table} WHERE {where} GROUP BY person) s")[0])


UNIT_ROWS = """SELECT 1, 'x', 40, i FROM generate_series(1, 3000) i
    UNION ALL SELECT NULL::int, 'x', 40, i FROM generate_series(1, 7) i
    UNION ALL SELECT p, (ARRAY['a','b','c'])[1 + (p + i) % 3], CASE WHEN p % 2 = 0 THEN 20 ELSE 60 END, p * 7 + i
    FROM generate_series(2, 6000) p, generate_series(1, 1 + p % 6) i"""


def test_count_units_mixed_scan_many_workers_partitions_and_filters():
    """dx._noisy_count_units merges up to 8 sorted parts, then merges them into one before more
    (kMaxParts): partitionwise aggregation gives a partial state per partition (12; under Gather,
    serialized by the workers), 8 planned workers and the leader up to 9. Serial, 8 workers, workers
    alone and forced parallel, on a plain table and on a partitioned one whose units spread over
    partitions (one unit: one hash however many workers and partitions read its rows), with NULL
    units and a FILTER on a column constant per unit: count(*) keeps least(n, k) rows per unit and
    count_units counts each unit once."""
    with fresh_db() as db:
        admin = connect(db)
        ensure_analyst_role(admin, ANALYST)
        execute(admin, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
        execute(admin, "CREATE TABLE uv (person int, ward text, age int, visit int)")
        execute(admin, f"INSERT INTO uv {UNIT_ROWS}")
        execute(admin, "ALTER TABLE uv SET (parallel_workers = 8)")
        execute(admin, "CREATE TABLE upart (person int, ward text, age int, visit int) PARTITION BY HASH (visit)")
        for i in range(12):
            execute(admin, f"CREATE TABLE upart_{i} PARTITION OF upart FOR VALUES WITH (MODULUS 12, REMAINDER {i})")
        execute(admin, f"INSERT INTO upart {UNIT_ROWS}")
        spread = scalar(admin, "SELECT count(*) FROM (SELECT person FROM upart GROUP BY person "
                               "HAVING count(DISTINCT tableoid) > 1) s")
        assert spread > 1000, spread
        for t in ("uv", "upart"):
            _protect_units(admin, t)
            execute(admin, f"ANALYZE {t}")
        plan = "\n".join(r[0] for r in under(admin, PARALLEL8, "EXPLAIN (VERBOSE) SELECT dx.count(*), "
                                                               "dx.count_units(person) FROM uv"))
        assert "_noisy_count_units" in plan and "Workers Planned: 8" in plan, plan
        # (more than 8 partial states: the combine merges its parts once before taking more)
        plan = "\n".join(r[0] for r in under(admin, SETTINGS["partitionwise_parallel"], "EXPLAIN (ANALYZE, VERBOSE) "
                                                "SELECT dx.count(*), dx.count_units(person) FROM upart"))
        assert "_noisy_count_units" in plan and plan.count("Partial Aggregate") == 12, plan
        analyst = connect(db, user=ANALYST)
        try:
            for t in ("uv", "upart"):
                rows_all, units_all = _exact(admin, t)
                rows_old, units_old = _exact(admin, t, "age > 50")
                for label, settings in SETTINGS.items():
                    got = under(analyst, settings, f"SELECT dx.count(*), dx.count_units(person) FROM {t}")
                    assert [tuple(map(int, r)) for r in got] == [(rows_all, units_all)], (t, label, got)
                    got = under(analyst, settings, f"SELECT dx.count_units(person) FILTER (WHERE age > 50), "
                                                   f"dx.sum(age) FILTER (WHERE age > 50), dx.count(DISTINCT person) FROM {t}")
                    assert [tuple(map(int, r)) for r in got] == [(units_old, 60 * rows_old, units_all)], (t, label, got)
        finally:
            analyst.close()
            admin.close()


# ---------------------------------------------------------------- answer cache: hashed large constants

def test_large_constants_differing_in_one_point_are_not_one_cache_key():
    """The answer-cache key stands in a 64-bit hash (and the length) for every constant over 1 kB
    (the per-point tables). Two statements whose tables differ in one point's weight only, the same
    length (an IN list of 400 declared values, one value swapped), are two releases, each charged:
    the second is not served the first's answer. The same statement again is replayed free."""
    with fresh_db() as db:
        admin = connect(db)
        execute(admin, "ALTER DATABASE " + db + " SET dxpriv.cache_lifetime = 3600")
        ensure_analyst_role(admin, ANALYST)
        execute(admin, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
        execute(admin, "CREATE TABLE codes (code int, v int)")
        execute(admin, "INSERT INTO codes SELECT g % 1000, g % 7 FROM generate_series(1, 20000) g")
        execute(admin, "INSERT INTO codes SELECT 799, 0 FROM generate_series(1, 50) g")  # (another answer)
        execute(admin, "SELECT dx.protect_table('codes', 'Infinity')")
        execute(admin, "SELECT dx.set_column('codes', 'code', '{\"min\": 0, \"max\": 999}', '{\"type\": \"none\"}')")
        execute(admin, f"SELECT dx.grant_budget('{ANALYST}'::regrole, 'codes', 1e9)")
        a = connect(db, user=ANALYST)
        try:
            execute(a, "SET dxpriv.epsilon = 0.5")
            first = list(range(0, 800, 2))
            second = first[:-1] + [799]  # one point moved: the same number of points, one other weight
            sql = "SELECT dx.count(*) FROM codes WHERE code IN ({})"
            one = int(scalar(a, sql.format(", ".join(map(str, first)))))
            paid = _spent(admin, ANALYST, "codes")
            assert one == 20 * len(first) and paid > 0, (one, paid)
            assert int(scalar(a, sql.format(", ".join(map(str, first))))) == one
            assert _spent(admin, ANALYST, "codes") == paid  # replayed free
            want = int(scalar(admin, "SELECT count(*) FROM codes WHERE code = ANY(%s)", (second,)))
            two = int(scalar(a, sql.format(", ".join(map(str, second)))))
            assert two == want and _spent(admin, ANALYST, "codes") > paid, (two, want)
        finally:
            a.close()
            admin.close()
