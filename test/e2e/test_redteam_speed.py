"""Red-team attacks on the speed changes of issue 23 (GROUP BY folded into one pass, replay that skips
a Gather, the one-pass transition's inline layouts, the pair tree), run as the analyst `mallory` of
attack_fixture.py.

Each check compares what the analyst's statement was charged with what the same statement costs on
the reference path (the superuser's dx.* spelling with dxpriv.group_fold = off, or the plain
statement), or asserts a refusal's SQLSTATE: a wrapper, cursor, prepared statement or parallel plan
that dropped cells from the charge, a hand-written fold state or layout that got through, or a
replay of rows that changed makes a check fail.
"""
import json

import psycopg2

from attack_fixture import analyst_conn, attack_db, protect_extra
from e2e_common import execute, scalar

# statements as the analyst writes them; spelled() gives the superuser's dx.* spelling
FOLDED = [
    "SELECT sex, count(*), avg(age) FROM people GROUP BY sex",
    "SELECT zip, sex, count(*), sum(age) FROM people GROUP BY zip, sex ORDER BY zip LIMIT 1",
    "SELECT sex, count(*) FROM people GROUP BY sex HAVING count(*) > 1e12",
    "SELECT zip, count(*) FILTER (WHERE age > 30), avg(age) FROM people WHERE sex = 'F' GROUP BY zip",
    "SELECT diagnosis, sex, sum(age), avg(age) FROM people GROUP BY diagnosis, sex",
    "SELECT sex, count(*), avg(age) FROM nully GROUP BY sex",
    "SELECT zip, diagnosis, count(*), sum(income) FROM nully GROUP BY zip, diagnosis",
    "SELECT sex, count(*), avg(age), sum(income) FROM empty_people GROUP BY sex",
    # the key aggregated too, a repeated key, a per_value key (each group its own weight)
    "SELECT age, count(*), sum(age) FROM people GROUP BY age",
    "SELECT sex, count(*) FROM people GROUP BY sex, sex",
    "SELECT diagnosis, count(*), sum(age) FROM people GROUP BY diagnosis",
    "SELECT sex, count(*), sum(income) FROM nully WHERE sex IS NULL OR age > 200 GROUP BY sex",
    "SELECT sex, count(*) FROM people GROUP BY sex ORDER BY 2 DESC FETCH FIRST 1 ROWS WITH TIES",
    "SELECT zip, count(*), avg(age) FROM parted GROUP BY zip",
    "SELECT sex, diagnosis, sum(age) FROM parted WHERE sex = 'F' OR age > 50 GROUP BY sex, diagnosis",
]
# charged like the unfolded plan, folded or not (a WHERE on the key keeps one group: not folded)
UNFOLDED_OK = ["SELECT diagnosis, avg(age) FROM people WHERE diagnosis = 'yes' GROUP BY diagnosis"]
# (wrapper, the grouped statements inside it): the wrapper pays the epsilon and delta of its inner
# statements on the unfolded path, whatever it drops (the ledger lists only the released scales)
INNER = "SELECT sex, count(*) AS n, avg(age) AS a, sum(income) AS s FROM people GROUP BY sex"
WRAPPED = [
    (f"SELECT n FROM ({INNER}) w WHERE sex = 'F'", [INNER]),
    (f"SELECT count(*) FROM ({INNER}) w WHERE a > 0", [INNER]),
    (f"WITH w AS ({INNER}) SELECT * FROM w WHERE false", [INNER]),
    (f"SELECT sex, n, sum(n) OVER () FROM ({INNER}) w", [INNER]),
    (f"SELECT x.n FROM ({INNER} ORDER BY 1 LIMIT 1) x ORDER BY 1 DESC LIMIT 1", [INNER]),
    ("SELECT sex, count(*) FROM people GROUP BY sex UNION ALL SELECT zip, count(*) FROM people GROUP BY zip",
     ["SELECT sex, count(*) FROM people GROUP BY sex", "SELECT zip, count(*) FROM people GROUP BY zip"]),
    ("SELECT age / 40 AS band, count(*) FROM people GROUP BY age / 40",
     ["SELECT age / 40 AS band, count(*) FROM people GROUP BY age / 40"]),
]
SETUP = [
    # NULLs and values outside every domain in the key columns and the aggregated ones
    "CREATE TABLE nully (LIKE people)",
    "INSERT INTO nully SELECT * FROM people WHERE id % 7 = 0",
    "INSERT INTO nully VALUES (9001, 'Out A', NULL, NULL, NULL, NULL, NULL), "
    "(9002, 'Out B', 500, 'X', '99999', 'maybe', -5), (9003, 'Out C', -3, 'F', NULL, 'yes', 9999999)",
    "SELECT dx.protect_table('nully', 1.0)",
    # a partitioned table (the fold state over an Append of its partitions)
    "CREATE TABLE parted (LIKE people) PARTITION BY LIST (sex)",
    "CREATE TABLE parted_f PARTITION OF parted FOR VALUES IN ('F')",
    "CREATE TABLE parted_rest PARTITION OF parted DEFAULT",
    "INSERT INTO parted SELECT * FROM people",
    "SELECT dx.protect_table('parted', 1.0)",
]


def spelled(sql):
    for f in ("count(", "sum(", "avg("):
        sql = sql.replace(f, "dx." + f)
    return sql.replace("dx.dx.", "dx.")


def copy_policy(admin, table):
    """The people policy on another table (attack_fixture's COLUMNS)."""
    from attack_fixture import COLUMNS
    for col, dom, met in COLUMNS:
        execute(admin, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (table, col, dom, met))
    execute(admin, "SELECT dx.grant_budget('mallory'::regrole, %s::regclass, 1e5)", (table,))


def last_id(admin):
    return scalar(admin, "SELECT coalesce(max(id), 0) FROM dx.ledger")


def charges(admin, since):
    with admin.cursor() as cur:
        cur.execute("SELECT mechanism, round(epsilon::numeric, 12), delta, "
                    "array(SELECT round(s::numeric, 6) FROM unnest(scales) s) FROM dx.ledger WHERE id > %s ORDER BY id",
                    (since,))
        return sorted(cur.fetchall(), key=repr)


def run(conn, statements):
    rows = None
    with conn.cursor() as cur:
        for s in statements:
            cur.execute(s)
            if cur.description:
                rows = cur.fetchall()
    return rows


def charged(admin, conn, statements):
    execute(admin, "SELECT dx.clear_cache()")
    before = last_id(admin)
    run(conn, statements)
    return charges(admin, before)


def paid(rows):
    """(epsilon, delta) summed over ledger rows."""
    return (float(sum(r[1] for r in rows)), float(sum(r[2] for r in rows)))


def reference_charge(admin, sql):
    """The superuser's dx.* spelling of sql, unfolded."""
    execute(admin, "SET dxpriv.group_fold = off")
    try:
        return charged(admin, admin, [spelled(sql)])
    finally:
        execute(admin, "RESET dxpriv.group_fold")


def fixture(admin):
    for s in SETUP:
        execute(admin, s)
    copy_policy(admin, "nully")
    copy_policy(admin, "parted")
    protect_extra(admin, "empty_people", rows=0, variant=0)
    execute(admin, "SELECT dx.grant_budget(current_user::regrole, t::regclass, 1e9) "
                   "FROM unnest(ARRAY['people', 'nully', 'empty_people', 'parted']) t")


def test_folded_group_by_charged_like_unfolded():
    """Every folded statement (and wrappers that drop its groups or aggregates) is charged exactly
    what the unfolded plan is charged; the statements of FOLDED are folded."""
    failures = []
    with attack_db() as (db, admin):
        fixture(admin)
        conn = analyst_conn(db)
        for sql in FOLDED:
            plan = "\n".join(r[0] for r in run(admin, ["EXPLAIN (VERBOSE, COSTS OFF) " + spelled(sql)]))
            if "_fold_state" not in plan:
                failures.append(f"not folded: {sql}")
        for sql in FOLDED + UNFOLDED_OK:
            mine = charged(admin, conn, [sql])
            ref = reference_charge(admin, sql)
            if not mine or mine != ref:
                failures.append(f"{sql}:\n    analyst {mine}\n    unfolded {ref}")
        for sql, inner in WRAPPED:
            mine = paid(charged(admin, conn, [sql]))
            ref = tuple(map(sum, zip(*(paid(reference_charge(admin, i)) for i in inner))))
            if not mine[0] or abs(mine[0] - ref[0]) > 1e-9 or abs(mine[1] - ref[1]) > 1e-15:
                failures.append(f"{sql}:\n    analyst paid {mine}\n    unfolded {ref}")
        conn.close()
    assert not failures, "\n".join(failures)


def test_folded_group_by_cursor_prepared_parallel():
    """A cursor fetching one row, a prepared statement with other parameters, and a parallel plan
    each pay the full allocation of the plain statement."""
    base = "SELECT zip, sex, count(*), sum(age), avg(age) FROM people WHERE age > {} GROUP BY zip, sex"
    with attack_db() as (db, admin):
        fixture(admin)
        conn = analyst_conn(db)
        plain = {v: charged(admin, conn, [base.format(v)]) for v in (10, 50)}
        assert plain[10] and plain[50]
        cur = charged(admin, conn, ["BEGIN", f"DECLARE c CURSOR FOR {base.format(10)}", "FETCH 1 FROM c",
                                    "CLOSE c", "COMMIT"])
        assert cur == plain[10], f"cursor {cur} != {plain[10]}"
        run(conn, [f"PREPARE p(int) AS {base.format('$1')}"])
        for v in (10, 50, 10):
            got = charged(admin, conn, [f"EXECUTE p({v})"])
            assert got == plain[v], f"EXECUTE p({v}) {got} != {plain[v]}"
        # a generic plan would fold one analysis for every parameter: refused
        run(conn, ["SET plan_cache_mode = force_generic_plan"])
        try:
            run(conn, ["EXECUTE p(10)"])
            raise AssertionError("generic plan of a dx statement accepted")
        except psycopg2.Error as e:
            assert e.pgcode == "0A000", e.pgcode
        run(conn, ["RESET plan_cache_mode",
                   "SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                   "SET min_parallel_table_scan_size = 0", "SET max_parallel_workers_per_gather = 2"])
        got = charged(admin, conn, [base.format(10)])
        assert got == plain[10], f"parallel {got} != {plain[10]}"
        conn.close()


HAND_WRITTEN = [
    # a forged state / slices / layout, through every wrapper an analyst can write
    "CREATE FUNCTION f_fold() RETURNS SETOF bytea LANGUAGE sql AS $$ SELECT dx._fold_slices(NULL, '{1,2,-1,0}') $$",
    "CREATE VIEW v_fold AS SELECT dx._fold_count(s) FROM dx._fold_slices(NULL, '{1,2,-1,0}') s",
    "DO $$ BEGIN PERFORM dx._fold_state('', true, 0, true, 1); END $$",
    "PREPARE fp AS SELECT dx._fold_count(s) FROM (VALUES ('\\x01'::bytea)) t(s)",
    "SELECT dx._fold_sum(s) FROM ROWS FROM (dx._fold_slices(NULL, '{2,1,2,-1,1}')) s",
    "SELECT (SELECT dx._fold_avg(s) FROM dx._fold_slices(NULL, '{1,2,-1,0}') s)",
    "SELECT dx._fold_state('Q0:120:1;', true, 0, true, age) FROM people",
    "SELECT dx._fold_state('q0:1e300:1e-300;', true, 0, true, zip::int) FROM zips",
    # inline range layouts that widen the domain, or are malformed (lo > hi, step 0, negative, NaN)
    "SELECT dx._onepass_sum('q120:0:1;', true, 0, true, age) FROM people",
    "SELECT dx._onepass_sum('q0:120:0;', true, 0, true, v) FROM (VALUES (1)) t(v)",
    "SELECT dx._onepass_sum('q0:120:-1;', true, 0, true, v) FROM (VALUES (32767::int2)) t(v)",
    "SELECT dx._onepass_count('qnan:nan:nan;', true, 0, true, v) FROM (VALUES (-2147483648)) t(v)",
    "SELECT dx._onepass_avg('q-9.3e18:9.3e18:1;', true, 0, true, v) FROM (VALUES (2147483647)) t(v)",
    "SELECT count(*) FROM people WHERE dx._unit_rank(tableoid, ctid) < 0",
]


def test_internal_fold_and_layout_calls_refused():
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        spent_before = scalar(admin, "SELECT sum(spent) FROM dx.budget_grants")
        for sql in HAND_WRITTEN:
            try:
                run(conn, [sql])
                raise AssertionError(f"accepted: {sql}")
            except psycopg2.Error as e:
                assert e.pgcode in ("42501", "0A000"), f"{sql}: {e.pgcode} {e.diag.message_primary}"
        assert scalar(admin, "SELECT sum(spent) FROM dx.budget_grants") == spent_before
        # dx._unit_rows reads kept rows only by the random handle of a state of the same statement:
        # a guessed handle next to a protected statement's bounding reads nothing
        for sql in ["SELECT * FROM dx._unit_rows(1, 0, 0, -1, NULL::int)",
                    "SELECT u FROM zips z, LATERAL dx._unit_rows(-4679894146231469796, 0, 0, -1, NULL::text) u"]:
            try:
                got = run(conn, [sql])
                raise AssertionError(f"accepted: {sql} -> {got}")
            except psycopg2.Error as e:
                assert e.pgcode in ("XX000", "42501", "0A000") and e.diag.message_hint, f"{sql}: {e.pgcode}"
        # the support function of dx._unit_rows takes and returns `internal`: SQL cannot call it
        try:
            run(conn, ["SELECT dx._unit_rows_support(NULL::internal)"])
            raise AssertionError("dx._unit_rows_support called")
        except psycopg2.Error as e:
            assert e.pgcode in ("42846", "42883", "42501"), e.pgcode
        conn.close()


def test_replay_after_rows_change_parallel_and_public_join():
    """A replayed answer (the Gather of its plan emptied) is never the answer of rows that changed:
    after an UPDATE of the protected table, or of a public table it joins, the statement is released
    and charged again."""
    with attack_db() as (db, admin):
        execute(admin, "SELECT dx.set_public('zips')")
        conn = analyst_conn(db)
        run(conn, ["SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                   "SET min_parallel_table_scan_size = 0", "SET max_parallel_workers_per_gather = 2"])
        execute(admin, "SELECT dx.clear_cache()")
        for sql, change in [
                ("SELECT sex, count(*), sum(age) FROM people GROUP BY sex",
                 "UPDATE people SET age = 120 - age WHERE id < 1000"),
                ("SELECT count(*), avg(age) FROM people", "DELETE FROM people WHERE id < 500"),
                ("SELECT z.city, count(*) FROM people p JOIN zips z ON p.zip = z.zip GROUP BY z.city",
                 "UPDATE zips SET city = 'Nowhere' WHERE zip = '10001'")]:
            before = last_id(admin)
            first = run(conn, [sql])
            assert charges(admin, before), f"first run not charged: {sql}"
            before = last_id(admin)
            again = run(conn, [sql])
            replayed = not charges(admin, before)
            if replayed:
                assert sorted(again) == sorted(first), "a replay returned another answer"
            execute(admin, change)
            before = last_id(admin)
            after = run(conn, [sql])
            assert charges(admin, before), f"replayed after {change}: {sql}"
            if "city" in sql:
                assert "Nowhere" in {r[0] for r in after}, after
        conn.close()


def _points_table(admin, name, pts, metric):
    d = len(pts[0])
    execute(admin, f"CREATE TABLE {name} (id int, {', '.join(f'c{i} float8' for i in range(d))})")
    with admin.cursor() as cur:
        cur.executemany(f"INSERT INTO {name} VALUES ({', '.join(['%s'] * (d + 1))})",
                        [(i,) + tuple(pts[i % len(pts)]) for i in range(len(pts) + 200)])
    execute(admin, f"SELECT dx.protect_table('{name}')")
    execute(admin, f"SELECT dx.set_column_group('{name}', %s, %s::jsonb, %s::jsonb)",
            ("{" + ",".join(f"c{i}" for i in range(d)) + "}", json.dumps({"points": pts}), json.dumps(metric)))
    execute(admin, f"SELECT dx.grant_budget('mallory'::regrole, '{name}', 1000)")


def _explained(admin, sql, exhaustive):
    execute(admin, f"SET dxpriv.exhaustive_analysis = {exhaustive}")
    execute(admin, "SET ROLE mallory")
    try:
        with admin.cursor() as cur:
            cur.execute("SELECT cell, aggregate, component, epsilon, noise_scale FROM dx.explain(%s) "
                        "ORDER BY 1, 2, 3", (sql,))
            return cur.fetchall()
    except psycopg2.Error as e:
        return f"{e.pgcode} {e.diag.message_primary}"
    finally:
        execute(admin, "RESET ROLE")
        execute(admin, "RESET dxpriv.exhaustive_analysis")


def test_pair_tree_equals_exhaustive_on_crafted_domains():
    """Points domains built to trip a k-d tree's bounds (huge coordinates up to the 1e150 limit,
    clusters of near-duplicates 1e-11 apart, a 3-D grid of ties, l1/l2/linf, a metric scale large
    enough that the pair term and not the presence floor decides) give dx.explain rows identical
    to the all-pairs scan (dxpriv.exhaustive_analysis = on)."""
    import random
    rnd = random.Random(23)
    base = [[round(rnd.uniform(-100, 100), 6), round(rnd.uniform(-100, 100), 6)] for _ in range(2000)]
    near = base + [[1.0, round(1.0 + k * 1e-11, 12)] for k in range(1, 50)] + \
        [[round(50.0 + k * 1e-10, 11), 50.0] for k in range(1, 52)]
    huge = base + [[1e150, 0], [-1e150, 5], [1e150, 1e150], [1e149, -1e150], [0, 1e140], [2e149, 9e149],
                   [3e149, 1e-3], [7, 1e150]] + [[k * 1e148, -k * 1e147] for k in range(2, 100)]
    grid = [[x, y, z] for x in range(13) for y in range(13) for z in range(13)]
    tables = [("pt_near_l2", near, "l2", 1e6), ("pt_near_l1", near, "l1", 1), ("pt_near_linf", near, "linf", 1e3),
              ("pt_huge_l2", huge, "l2", 1e150), ("pt_huge_l1", huge, "l1", 1e148), ("pt_grid_l2", grid, "l2", 100)]
    queries = ["SELECT sum(c1) FROM {t}", "SELECT avg(c0) FROM {t}",
               "SELECT sum(CASE WHEN c1 > 1.0000000000049 AND c1 < 1.0000000000101 THEN 1 ELSE 0 END), count(*) FROM {t}",
               "SELECT sum(least(greatest(c0, 0), 1e149)) FROM {t} WHERE c1 > 0",
               "SELECT sum(CASE WHEN c0 > 1e148 THEN 1 ELSE 0 END), count(*) FROM {t}",
               "SELECT sum(least(greatest(c1 / 1e140, -1), 1)) FROM {t}"]
    failures = []
    with attack_db() as (db, admin):
        for name, pts, metric, scale in tables:
            _points_table(admin, name, pts, {"type": metric, "scale": scale})
            qs = queries + (["SELECT sum(c0 * c1 - c2) FROM {t}"] if name == "pt_grid_l2" else [])
            for q in qs:
                sql = q.format(t=name)
                tree, scan = _explained(admin, sql, "off"), _explained(admin, sql, "on")
                if tree != scan:
                    failures.append(f"{sql}:\n    tree {tree}\n    scan {scan}")
    assert not failures, "\n".join(failures)


def test_one_pass_extreme_stored_values():
    """Stored values the one-pass transition's inline paths must clamp without an error or a crash
    (a numeric of 1000 digits, +-1e400, numeric and float4/real NaN and infinities, float4 extremes):
    every statement is answered and charged, and the session goes on."""
    with attack_db() as (db, admin):
        for s in [
                "CREATE TABLE nb (id int, v numeric, f float4, r real)",
                "INSERT INTO nb SELECT i, (i % 200) / 2.0, i % 100, i % 100 FROM generate_series(1, 1000) i",
                "INSERT INTO nb VALUES (2001, 1e400, 'NaN', 'Infinity'), (2002, -1e400, '-Infinity', '-Infinity'), "
                "(2003, 'NaN', 'Infinity', 'NaN'), (2004, 'Infinity', 3.4e38, 1), (2005, '-Infinity', -3.4e38, 1), "
                "(2006, repeat('9', 1000)::numeric, 1e-45, NULL)",
                "SELECT dx.protect_table('nb')",
                "SELECT dx.set_column('nb', 'v', '{\"min\": 0, \"max\": 100, \"step\": 0.5}', "
                "'{\"type\": \"absolute\", \"scale\": 10}')",
                "SELECT dx.set_column('nb', 'f', '{\"min\": -10, \"max\": 100, \"step\": 0.25}', '{\"type\": \"none\"}')",
                "SELECT dx.set_column('nb', 'r', '{\"min\": 0, \"max\": 100}', '{\"type\": \"none\"}')",
                "SELECT dx.grant_budget('mallory'::regrole, 'nb', 1000)"]:
            execute(admin, s)
        conn = analyst_conn(db)
        for sql in ["SELECT sum(v), avg(v), count(*) FROM nb", "SELECT sum(f), avg(r) FROM nb WHERE r > 5",
                    "SELECT count(*) FROM nb WHERE v > 50", "SELECT f > 0 AS pos, count(*), sum(v) FROM nb GROUP BY 1"]:
            got = charged(admin, conn, [sql])
            assert got and all(float(r[1]) > 0 for r in got), f"{sql}: {got}"
        assert run(conn, ["SELECT 1"]) == [(1,)]
        conn.close()


def test_rescanned_folded_group_by_draws_its_noise_once():
    """A folded GROUP BY on the inner side of a nested loop (rescanned once per outer row, no
    Material, no Memoize) must release one noisy value per cell, charged once: differing values
    would be independent draws to average away."""
    inner = "SELECT sex, count(*) AS n, avg(age) AS a, sum(age) AS s FROM people GROUP BY sex"
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        plain = paid(charged(admin, conn, [inner]))
        run(conn, ["SET enable_material = off", "SET enable_hashjoin = off", "SET enable_mergejoin = off",
                   "SET enable_memoize = off"])
        outers = ["SELECT g, w.sex, w.n, w.a, w.s FROM generate_series(1, 6) g CROSS JOIN ({}) w",
                  # (the nullable side of a nested loop is its inner side: the fold is rescanned per row of g)
                  "SELECT g, w.sex, w.n, w.a, w.s FROM generate_series(1, 6) g LEFT JOIN ({}) w ON w.n > g - 1e9",
                  "SELECT g, w.sex, w.n, w.a, w.s FROM (VALUES (1), (2), (3)) v(g), ({}) w WHERE w.a > -g"]
        # serial, then the whole plan in one parallel worker (its final functions released there)
        parallel = [[], ["SET force_parallel_mode = on", "SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0",
                         "SET min_parallel_table_scan_size = 0"]]
        for settings, outer in [(p, o) for p in parallel for o in outers]:
            run(conn, settings)
            sql = outer.format(inner)
            execute(admin, "SELECT dx.clear_cache()")
            before = last_id(admin)
            got = run(conn, [sql])
            assert paid(charges(admin, before)) == plain, sql
            per_cell = {}
            for r in got:
                per_cell.setdefault(r[1], set()).add(tuple(r[2:]))
            assert per_cell and all(len(v) == 1 for v in per_cell.values()), f"{sql}: {per_cell}"
        conn.close()
