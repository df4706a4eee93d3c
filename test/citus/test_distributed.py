"""dx aggregates on a Citus distributed table (issue 13): exact partial sums on the workers, noise
and charge once on the coordinator, every declared group, analysts run as the owner, refusals."""
import math
import re
import statistics

import psycopg2

import citus_fixture as fx
from citus_common import citus_db, connect, create_role, execute, rows, scalar

def _exact_table(conn, name, shards):
    fx.exact_table(conn, name, shards, rows=50000)


def test_noiseless_answers_equal_native_sql():
    """Exact (sensitivity 0) dx answers on a 32-shard table equal PostgreSQL's own aggregates:
    the workers' partial sums are combined without loss, every declared group comes back."""
    with citus_db() as db:
        conn = connect("coord", db)
        _exact_table(conn, "exact", 32)
        cases = [
            ("SELECT dx.count(*) FROM exact", "SELECT count(*) FROM exact"),
            ("SELECT dx.sum(income) FROM exact WHERE age > 40 AND sex = 'F'",
             "SELECT sum(income) FROM exact WHERE age > 40 AND sex = 'F'"),
            ("SELECT round(dx.avg(income)::numeric, 6) FROM exact WHERE region = 'east'",
             "SELECT round(avg(income)::numeric, 6) FROM exact WHERE region = 'east'"),
            # every point contributes: the average counts its rows with count(*)
            ("SELECT round(dx.avg(income)::numeric, 6) FROM exact", "SELECT round(avg(income)::numeric, 6) FROM exact"),
            ("SELECT sex, round(dx.avg(age)::numeric, 6) FROM exact GROUP BY sex ORDER BY 1",
             "SELECT sex, round(avg(age)::numeric, 6) FROM exact GROUP BY sex ORDER BY 1"),
            ("SELECT sex, round(dx.avg(age)::numeric, 6) FROM exact WHERE income < 50000 GROUP BY sex ORDER BY 1",
             "SELECT sex, round(avg(age)::numeric, 6) FROM exact WHERE income < 50000 GROUP BY sex ORDER BY 1"),
            ("SELECT sex, dx.count(*), dx.sum(income) FROM exact GROUP BY sex ORDER BY 1",
             "SELECT sex, count(*), sum(income) FROM exact GROUP BY sex ORDER BY 1"),
            ("SELECT age / 10 * 10 AS d, dx.count(*) FROM exact WHERE income > 100000 GROUP BY 1 ORDER BY 1",
             "SELECT g * 10, count(e.id) FROM generate_series(0, 12) g LEFT JOIN exact e "
             "ON e.age / 10 = g AND e.income > 100000 GROUP BY g ORDER BY 1"),
        ]
        for dx_sql, native_sql in cases:
            got, want = rows(conn, dx_sql), rows(conn, native_sql)
            assert [tuple(float(v) if isinstance(v, (int, float)) or hasattr(v, "as_tuple") else v for v in r)
                    for r in got] == \
                   [tuple(float(v) if isinstance(v, (int, float)) or hasattr(v, "as_tuple") else v for v in r)
                    for r in want], (dx_sql, got, want)
        # an empty declared group ('none' has no rows) is answered, as on a local table
        assert rows(conn, "SELECT region, dx.count(*) FROM exact GROUP BY region ORDER BY 1")[0] == ("east", 12500)
        assert ("none", 0) in rows(conn, "SELECT region, dx.count(*) FROM exact GROUP BY region")
        conn.close()


def test_seeded_answers_equal_the_local_table():
    """With the same test seed the distributed table and a local copy with the same rows and policy
    give identical noisy answers: the same scales and exactly the same sums."""
    with citus_db() as db:
        fx.build(db, rows=60000)
        conn = connect("coord", db)
        for q in ["SELECT dx.count(*) FROM {t}",
                  "SELECT dx.count(*), dx.sum(income), dx.avg(age) FROM {t} WHERE age > 30",
                  "SELECT region, dx.count(*), dx.avg(income) FROM {t} WHERE age > 85 GROUP BY region ORDER BY 1"]:
            answers = []
            for t in ("people", "people_local"):
                execute(conn, "SET dxpriv.test_seed = 7")
                answers.append(rows(conn, q.format(t=t)))
            if "GROUP BY" in q:  # groups may release in another order: compare the multiset of answers
                assert sorted(map(str, answers[0])) == sorted(map(str, answers[1])) or \
                       [r[0] for r in answers[0]] == [r[0] for r in answers[1]]
            else:
                assert answers[0] == answers[1], (q, answers)
        # an average withheld by post-processing (its noisy count too small) is NULL on both tables,
        # never NaN on the distributed one (issue 27): at a tiny epsilon every group's is withheld;
        # with the default epsilon groups may draw their noise in another order, so only no NaN
        for q, all_withheld in [
                ("SELECT region, dx.avg(income) FROM {t} WHERE age > 88 GROUP BY region ORDER BY 1", False),
                ("SELECT region, dx.avg(income, 0.00001) FROM {t} GROUP BY region ORDER BY 1", True),
                ("SELECT sex, dx.avg(age, 0.00001) FROM {t} WHERE region <> 'east' GROUP BY sex ORDER BY 1", True)]:
            answers = []
            for t in ("people", "people_local"):
                execute(conn, "SET dxpriv.test_seed = 7")
                answers.append(rows(conn, q.format(t=t)))
            assert not [r for r in answers[0] if isinstance(r[1], float) and math.isnan(r[1])], (q, answers)
            assert [r[0] for r in answers[0]] == [r[0] for r in answers[1]], (q, answers)
            if all_withheld:
                assert answers[0] == answers[1] and all(r[1] is None for r in answers[1]), (q, answers)
        conn.close()


def test_one_ledger_row_on_the_coordinator_none_on_workers():
    with citus_db() as db:
        fx.build(db, rows=20000)
        analyst = connect("coord", db, user=fx.ANALYST)
        before = scalar(connect("coord", db), "SELECT count(*) FROM dx.ledger")
        scalar(analyst, "SELECT dx.count(*) FROM people WHERE age > 30")
        rows(analyst, "SELECT sex, dx.count(*), dx.avg(income) FROM people GROUP BY sex")
        rows(analyst, "SELECT s.sex, s.n * 100.0 / sum(s.n) OVER () FROM "
                      "(SELECT sex, dx.count(*) AS n FROM people GROUP BY sex) s")
        coord = connect("coord", db)
        assert scalar(coord, "SELECT count(*) FROM dx.ledger") - before == 3, "one ledger row per statement"
        led = rows(coord, "SELECT role::text, epsilon, array_length(scales, 1) FROM dx.ledger ORDER BY id DESC LIMIT 3")
        assert [r[0] for r in led] == [fx.ANALYST] * 3
        assert [r[2] for r in led] == [2, 6, 1]  # one scale per released cell: 2 groups x (count, avg sum+count)
        # ROLLUP: every set's groups (2 x 5 + 2 + 1 rows), one charge for the statement
        got = rows(analyst, "SELECT sex, region, dx.count(*) FROM people GROUP BY ROLLUP (sex, region)")
        assert len(got) == 13, got
        led = rows(coord, "SELECT epsilon, array_length(scales, 1) FROM dx.ledger ORDER BY id DESC LIMIT 1")
        assert led == [(0.1, 13)], led
        for w in ("w1", "w2"):
            wc = connect(w, db)
            has_dx = scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'")
            if has_dx:
                assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
            wc.close()


def test_variance_matches_the_declared_scale():
    """400 releases of a distributed count: mean near the true count, variance near the discrete
    Laplace variance of the recorded scale."""
    with citus_db() as db:
        fx.build(db, rows=5000, shards=8)
        conn = connect("coord", db)
        true = scalar(conn, "SELECT count(*) FROM people WHERE age > 50")
        execute(conn, "SET dxpriv.epsilon = 0.5")
        xs = [scalar(conn, "SELECT dx.count(*) FROM people WHERE age > 50") for _ in range(400)]
        scale = scalar(conn, "SELECT scales[1] FROM dx.ledger ORDER BY id DESC LIMIT 1")
        q = math.exp(-1 / scale)
        var = 2 * q / (1 - q) ** 2  # discrete Laplace with parameter scale
        got = statistics.pvariance(xs)
        assert abs(statistics.mean(xs) - true) < 4 * math.sqrt(var / 400), (statistics.mean(xs), true)
        # the sample variance of 400 Laplace draws has a relative standard error of sqrt(5/400) = 0.112
        # (kurtosis 6): four standard errors either side
        assert 0.55 < got / var < 1.45, (got, var, scale)
        conn.close()


def test_explain_shows_partial_aggregates_on_the_workers():
    with citus_db() as db:
        fx.build(db, rows=1000, shards=4)
        conn = connect("coord", db)
        # native partial sums: PostgreSQL's sum(bigint) of the rows' weights in grid units on every
        # shard, the state and the release on the coordinator; no per-row record, no parameters
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT dx.sum(income) FROM people WHERE age > 30"))
        task = [line for line in plan.split("\n") if "Query: " in line][0]
        assert "sum(dx._weigh_units" in task and "worker_partial_agg" not in task, task  # (_cached: by digest)
        assert "double precision[]" not in task, task  # the parameters stay on the coordinator
        coordinator = plan.split("Custom Scan")[0]
        assert "dx._release_sum(dx._state_of(pg_catalog.sum(" in coordinator, coordinator
        # a count weighs every counted row alike: the workers count the rows its conditions keep
        # (count of the lookup, NULL where a condition fails), the coordinator multiplies by the units
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT dx.count(*) FROM people WHERE age > 30"))
        task = [line for line in plan.split("\n") if "Query: " in line][0]
        assert "count(dx._weigh(" in task and "_units" not in task, task
        coordinator = plan.split("Custom Scan")[0]
        assert "dx._release_count(dx._state_of(numeric_mul(" in coordinator, coordinator
        # grouped: the workers group by the row's declared group, dx._collect gathers every group
        grouped = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT sex, dx.count(*), dx.avg(age) FROM people GROUP BY sex"))
        # (the workers' sums as one Citus stage, explained after the statement's plan, or a subplan)
        worker = re.split(r"Distributed Subplan \d+_[12]|dx\._grouped_partials: one Citus stage", grouped)[1]
        # (no point is filtered out: the average's rows are counted with count(*), its weight looked
        # up once per row)
        assert re.search(r"GROUP BY \(?dx\._weigh_int\(", worker) and "count(*)" in worker, worker
        assert "count(dx._weigh(" not in worker, worker
        filtered = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT dx.avg(age) FROM people WHERE age > 30"))
        assert "count(dx._weigh(" in filtered, filtered  # rows outside the WHERE must not be counted
        assert re.search(r"dx\._collect\((dx_native\.)?g, (dx_native\.)?u1, (dx_native\.)?n1", grouped), grouped
        assert "dx._release_avg(" in grouped
        # a plain EXPLAIN runs nothing: the coordinator's share is explained over a new connection,
        # where nothing was charged; the same statement run as SQL by hand is refused
        p1 = re.search(r"dx\._collect\((?:dx_native\.)?g, (?:dx_native\.)?u1, (?:dx_native\.)?n1, "
                       r"('[^']*'::double precision\[\])\)", grouped).group(1)
        _refused(conn, f"SELECT dx._collect(0, 1::numeric, 1::bigint, {p1})", "42501", "internal dxpriv aggregates")
        _refused(conn, f"SELECT dx._state_of(1::numeric, 1::bigint, {p1}, 0)", "42501", "internal dxpriv aggregates")
        conn.close()


def test_explain_analyze_of_several_levels_refused_before_the_charge():
    """EXPLAIN ANALYZE runs its statement: a one-level dx query on a distributed table is explained,
    run and charged once like the statement; one of several query levels (GROUP BY, dx.median), which
    Citus would run over a new connection where its charge is not known, is refused before any
    charge with a hint (issue 27; it used to charge, then fail on an internal refusal)."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        conn = connect("coord", db)
        for c in (conn,):  # (analysts cannot EXPLAIN a protected table at all)
            before = scalar(conn, "SELECT count(*) FROM dx.ledger")
            plan = "\n".join(r[0] for r in rows(c, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "
                                                 "SELECT dx.count(*) FROM people WHERE age > 30"))
            assert "actual rows=" in plan and "Custom Scan (Citus Adaptive)" in plan, plan
            assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
            for sql in ["SELECT sex, dx.count(*), dx.avg(age) FROM people GROUP BY sex",
                        "SELECT dx.median(age) FROM people",
                        "SELECT region, dx.count(*) FROM people GROUP BY region HAVING dx.count(*) > 0"]:
                before = scalar(conn, "SELECT count(*) FROM dx.ledger")
                for form in ("EXPLAIN ANALYZE ", "EXPLAIN (ANALYZE, VERBOSE) "):
                    try:
                        rows(c, form + sql)
                    except psycopg2.Error as e:
                        assert e.pgcode == "0A000" and "EXPLAIN ANALYZE cannot run" in str(e), (sql, str(e))
                        assert "Nothing was charged" in str(e) and "internal" not in str(e), str(e)
                    else:
                        raise AssertionError(f"not refused: {form}{sql}")
                assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before, sql
                # the plain EXPLAIN and the statement itself still work (one charge for the statement)
                assert rows(c, "EXPLAIN " + sql)
                assert rows(c, sql)
                assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1, sql
        # a statement prepared (and planned) before: refused when EXPLAIN ANALYZE executes it, too
        execute(conn, "PREPARE p_grouped AS SELECT sex, dx.count(*) FROM people GROUP BY sex")
        execute(conn, "PREPARE p_one AS SELECT dx.count(*) FROM people")
        assert rows(conn, "EXECUTE p_grouped") and rows(conn, "EXECUTE p_one")
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        try:
            rows(conn, "EXPLAIN ANALYZE EXECUTE p_grouped")
        except psycopg2.Error as e:
            assert e.pgcode == "0A000" and "EXPLAIN ANALYZE cannot run" in str(e), str(e)
        else:
            raise AssertionError("EXPLAIN ANALYZE EXECUTE p_grouped not refused")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before
        assert "actual rows=" in "\n".join(r[0] for r in rows(conn, "EXPLAIN ANALYZE EXECUTE p_one"))
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
        conn.close()


def _refused(conn, sql, sqlstate=None, text=None):
    try:
        rows(conn, sql)
    except psycopg2.Error as e:
        assert sqlstate is None or e.pgcode == sqlstate, (sql, e.pgcode, str(e))
        assert text is None or text in str(e), (sql, str(e))
        return
    raise AssertionError(f"not refused: {sql}")


def test_attacks_on_distributed_releases():
    """The analyst: no raw read, no release without a charge, no forged state, no own functions running
    as the owner, no charge skipped."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        execute(owner, "CREATE TABLE one_shard (id bigint, age int, sex text, region text, income int)")
        execute(owner, "SELECT create_distributed_table('one_shard', 'id', shard_count => 1)")
        execute(owner, "CREATE TABLE ref (id bigint, age int, sex text, region text, income int)")
        execute(owner, "SELECT create_reference_table('ref')")
        for t in ("one_shard", "ref"):
            fx.protect(owner, t)
        a = connect("coord", db, user=fx.ANALYST)
        before = scalar(owner, "SELECT count(*) FROM dx.ledger")
        _refused(a, "SELECT * FROM people", "42501")
        _refused(a, "SELECT age FROM people WHERE id = 5", "42501")
        # a table on one worker: statements of several levels run their release on the coordinator,
        # one charge each (issue 27, test_citus_single_node.py)
        rows(a, "SELECT sex, dx.count(*) FROM one_shard GROUP BY sex")
        rows(a, "SELECT dx.median(age) FROM one_shard")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before + 2
        before += 2
        # internal functions written by hand: the release, the partial aggregate, a forged state
        params = "'{4,1,0.1,1,5,1,1,1,0,0,0,1,0,0,0,1,5,0.1,0,1,0,0}'::float8[]"
        _refused(a, f"SELECT dx._release_count(NULL, {params}, 0)")
        _refused(a, f"SELECT dx._partial(1.0, 0, {params}) FROM people")
        _refused(a, "SELECT dx._release_count('\\x01'::dx._linear_partial, '{1}', 0)")
        # the native partials: a state built from the analyst's own numbers, with parameters of this
        # session's real release (read from its plan), is refused before it runs; dx._units only
        # computes a number from its arguments (no row is read)
        plan = "\n".join(r[0] for r in rows(owner, "EXPLAIN (VERBOSE) SELECT dx.sum(income) FROM people"))
        real = re.search(r"('\{4,[^']*\}'::double precision\[\])", plan).group(1)
        _refused(a, f"SELECT dx._release_sum(dx._state_of(123::numeric, NULL, {real}, 0), {real}, 0)", "42501")
        _refused(a, f"SELECT dx._state_of(sum(income)::numeric, NULL, {real}, 0) FROM people", "42501")
        _refused(a, f"SELECT dx._collect(0, income::numeric, 1::bigint, {real}) FROM people", "42501")
        _refused(a, f"SELECT dx._collect(0, 1::numeric, 1::bigint, {params})", "42501")
        assert scalar(a, "SELECT dx._units(2.5, 1)") == 3
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before  # EXPLAIN charged nothing
        # dx._units over a column is an expression like any other: evaluated on the domain points,
        # answered as a charged noisy sum
        scalar(a, "SELECT sum(dx._units(income, 1)) FROM people")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before + 1
        # the analyst's own function in post-processing would run as the owner: refused
        execute(owner, f"CREATE SCHEMA ws AUTHORIZATION {fx.ANALYST}")
        execute(a, "CREATE FUNCTION ws.f(x bigint) RETURNS bigint LANGUAGE sql AS 'SELECT x'")
        _refused(a, "SELECT ws.f(n) FROM (SELECT dx.count(*) AS n FROM people) s", "42501")
        # the statement runs as the owner: a table only the owner may read stays closed to the analyst
        execute(owner, "CREATE TABLE owner_private (k int)")
        execute(owner, "INSERT INTO owner_private VALUES (42)")
        _refused(a, "SELECT s.n, p.k FROM (SELECT dx.count(*) AS n FROM people) s, owner_private p", "42501")
        _refused(a, "SELECT n, (SELECT max(k) FROM owner_private) FROM (SELECT dx.count(*) AS n FROM people) s",
                 "42501")
        # and no other table at all, even one the analyst may read (it would be read as the owner)
        execute(owner, "CREATE TABLE shared_dim (k int)")
        execute(owner, f"GRANT SELECT ON shared_dim TO {fx.ANALYST}")
        _refused(a, "SELECT s.n, d.k FROM (SELECT dx.count(*) AS n FROM people) s, shared_dim d", "0A000")
        execute(owner, "CREATE TABLE owner_private_dist (id bigint, k int)")
        execute(owner, "SELECT create_distributed_table('owner_private_dist', 'id')")
        _refused(a, "SELECT s.n, p.k FROM (SELECT dx.count(*) AS n FROM people) s, owner_private_dist p", "42501")
        # nor do functions that change state or run SQL as the current user
        for fn in ["set_config('dxpriv.test_seed', '1', false)", "pg_read_file('/etc/hostname')",
                   "query_to_xml('SELECT * FROM owner_private', true, true, '')", "random()",
                   "current_setting('data_directory')"]:
            _refused(a, f"SELECT n, {fn} FROM (SELECT dx.count(*) AS n FROM people) s", "42501")
        # built-in computations on the answers still work
        assert scalar(a, "SELECT round(n / 10.0) * 10 > 0 FROM (SELECT dx.count(*) AS n FROM people) s")
        assert scalar(a, "SELECT to_char(now(), 'YYYY') <> '' FROM (SELECT dx.count(*) AS n FROM people) s")
        # a prepared statement is charged at every execution
        execute(a, "PREPARE p AS SELECT dx.count(*) FROM people")
        for _ in range(3):
            scalar(a, "EXECUTE p")
        # a release inside a transaction that rolls back stays charged
        a.autocommit = False
        scalar(a, "SELECT dx.sum(income) FROM people")
        a.rollback()
        a.autocommit = True
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") - before == 7
        owner.close()
        a.close()


def test_large_point_tables_travel_once_per_worker_by_digest():
    """A dense per-point table (a non-affine expression over a 100001-point domain, 800 KB) is not
    repeated in the 32 shard task queries: it is stored once per worker under its SHA-256 and the
    tasks name the digest. The answer is exact (noiseless table); a tampered cache entry is refused."""
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE wide (id bigint, score int)")
        execute(conn, "SELECT create_distributed_table('wide', 'id', shard_count => 32)")
        execute(conn, "INSERT INTO wide SELECT g, g % 100001 FROM generate_series(1, 100000) g")
        execute(conn, "SELECT dx.protect_table('wide', 'Infinity')")
        execute(conn, """SELECT dx.set_column('wide', 'score', '{"min": 0, "max": 100000}', '{"type": "none"}')""")
        execute(conn, "SELECT dx.grant_budget('postgres', 'wide', 1000)")
        q = "SELECT dx.linear(score::float8 * score / 1e6) FROM wide"
        plan = [r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + q)]
        task = [line.split("Query: ", 1)[1] for line in plan if "Query: " in line][0]
        # (the sum's lookup and its grid units in one call: dx._weigh_units_cached)
        assert re.search(r"dx\._weigh(_units)?_cached\(", task) and len(task) < 2000, (len(task), task)
        want = scalar(conn, "SELECT sum(score::float8 * score / 1e6) FROM wide")
        assert math.isclose(scalar(conn, q), want, rel_tol=1e-12)
        for w in ("w1", "w2"):
            wc = connect(w, db)
            assert scalar(wc, "SELECT count(*) FROM dx._point_table_cache WHERE length(bytes) > 100000") == 1
            # a table is stored only under its own digest
            assert scalar(wc, "SELECT dx._store_point_table(sha256('x'), 'y')") is False
            execute(wc, "UPDATE dx._point_table_cache SET bytes = bytes || '\\x00'::bytea WHERE length(bytes) > 100000")
            wc.close()
        # this session stored the table less than an hour ago and does not store it again: the
        # tampered row is read, and refused
        try:
            scalar(conn, q)
            raise AssertionError("a tampered cached table was used")
        except psycopg2.Error as e:
            assert "does not match its digest" in str(e), str(e)
        # a new session stores it again: the verified bytes replace the tampered ones; the
        # shipment reports its progress (issue 28) once the interval has passed
        fresh = connect("coord", db)
        execute(fresh, "SET dxpriv.progress_interval = 0.001")
        assert math.isclose(scalar(fresh, q), want, rel_tol=1e-12)
        assert any("dxpriv Citus shipment: per-point tables stored on the workers, 1 of 1" in n
                   for n in fresh.notices), fresh.notices
        fresh.close()
        # eviction: tables not stored for a day go when another table is stored; a session that
        # needs one again stores it again
        for w in ("w1", "w2"):
            wc = connect(w, db)
            execute(wc, "UPDATE dx._point_table_cache SET stored_at = now() - interval '2 days'")
            wc.close()
        other = connect("coord", db)
        q3 = "SELECT dx.linear(score::float8 * score * score / 1e12) FROM wide"
        assert math.isclose(scalar(other, q3), scalar(other, "SELECT sum(score::float8 * score * score / 1e12) FROM wide"),
                            rel_tol=1e-12)
        for w in ("w1", "w2"):
            wc = connect(w, db)
            assert scalar(wc, "SELECT count(*) FROM dx._point_table_cache WHERE stored_at < now() - interval '1 day'") == 0
            assert scalar(wc, "SELECT count(*) FROM dx._point_table_cache") == 1
            wc.close()
        other.close()
        again = connect("coord", db)
        assert math.isclose(scalar(again, q), want, rel_tol=1e-12)
        again.close()
        conn.close()


def test_analyst_cannot_store_point_tables():
    with citus_db() as db:
        fx.build(db, rows=100, shards=4)
        a = connect("coord", db, user=fx.ANALYST)
        _refused(a, "SELECT dx._store_point_table(sha256('x'), 'x')", "42501")
        a.close()


def test_distribution_key_predicates_prune_shards():
    """`distribution column = constant` on a declared column whose point holds only that value stays
    in the query, so Citus reads one shard; the release stays on the coordinator, the answer is the
    full scan's. A clamping end, an undeclared-value label, wrappers and GROUP BY are not pruned."""
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE keyed (id bigint, region text, income int)")
        execute(conn, "SELECT create_distributed_table('keyed', 'id', shard_count => 8)")
        execute(conn, "INSERT INTO keyed SELECT g % 500 + 1, (ARRAY['north','south','east','west'])[1 + g % 4], g / 10 * 10 FROM generate_series(1, 4000) g")
        execute(conn, "CREATE TABLE by_region (id bigint, region text, income int)")
        execute(conn, "SELECT create_distributed_table('by_region', 'region', shard_count => 8)")
        execute(conn, "INSERT INTO by_region SELECT * FROM keyed")
        for t in ("keyed", "by_region"):
            execute(conn, f"SELECT dx.protect_table('{t}', 'Infinity')")
            execute(conn, f"""SELECT dx.set_column('{t}', 'id', '{{"min": 1, "max": 500}}', '{{"type": "none"}}')""")
            execute(conn, f"""SELECT dx.set_column('{t}', 'region', '{{"values": ["north", "south", "east", "west"]}}', '{{"type": "none"}}')""")
            execute(conn, f"""SELECT dx.set_column('{t}', 'income', '{{"min": 0, "max": 4000, "step": 10}}', '{{"type": "none"}}')""")
            execute(conn, f"SELECT dx.grant_budget('postgres', '{t}', 1000)")

        def tasks(sql):
            plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + sql))
            return sum(int(m) for m in re.findall(r"Task Count: (\d+)", plan.split("Distributed Subplan")[0])), plan

        for dx_sql, native_sql, pruned in [
            ("SELECT dx.count(*) FROM keyed WHERE id = 7", "SELECT count(*) FROM keyed WHERE id = 7", True),
            ("SELECT dx.sum(income) FROM keyed WHERE id = 7 AND region = 'east'",
             "SELECT sum(income) FROM keyed WHERE id = 7 AND region = 'east'", True),
            ("SELECT round(dx.avg(income)::numeric, 6) FROM keyed WHERE 42 = id",
             "SELECT round(avg(income)::numeric, 6) FROM keyed WHERE 42 = id", True),
            ("SELECT dx.count(*) FROM by_region WHERE region = 'south'", "SELECT count(*) FROM by_region WHERE region = 'south'", True),
            # point 0 of an enumerated domain also holds undeclared values and NULL; a range's ends clamp
            ("SELECT dx.count(*) FROM by_region WHERE region = 'north'", "SELECT count(*) FROM by_region WHERE region = 'north'", False),
            ("SELECT dx.count(*) FROM keyed WHERE id = 1", "SELECT count(*) FROM keyed WHERE id = 1", False),
            ("SELECT dx.count(*) FROM keyed WHERE id = 500", "SELECT count(*) FROM keyed WHERE id = 500", False),
            ("SELECT dx.count(*) FROM keyed WHERE id > 7", "SELECT count(*) FROM keyed WHERE id > 7", False),
            # wrappers and GROUP BY are planned through subqueries: no pruning, same answers
            ("SELECT * FROM (SELECT dx.count(*) AS n FROM keyed WHERE id = 7) s", "SELECT count(*) FROM keyed WHERE id = 7", False),
            ("SELECT region, dx.count(*) FROM keyed WHERE id = 7 GROUP BY region ORDER BY 1",
             "SELECT r, count(k.id) FROM unnest(ARRAY['east','north','south','west']) r LEFT JOIN keyed k "
             "ON k.region = r AND k.id = 7 GROUP BY r ORDER BY 1", False),
        ]:
            n, plan = tasks(dx_sql)
            assert (n == 1) == pruned, (dx_sql, n, plan)
            if pruned:
                assert "dx._release_" in plan.split("Custom Scan")[0], plan  # released on the coordinator
            got = [tuple(float(v) if not isinstance(v, str) else v for v in r) for r in rows(conn, dx_sql)]
            want = [tuple(float(v) if not isinstance(v, str) else v for v in r) for r in rows(conn, native_sql)]
            assert got == want, (dx_sql, got, want)
        # a bound parameter is pruned at each execution with its value
        execute(conn, "PREPARE p(bigint) AS SELECT dx.count(*) FROM keyed WHERE id = $1")
        assert [scalar(conn, f"EXECUTE p({k})") for k in (7, 8, 1)] == \
               [scalar(conn, f"SELECT count(*) FROM keyed WHERE id = {k}") for k in (7, 8, 1)]
        # an analyst's pruned query: one ledger row, charged before the answer
        create_role(fx.ANALYST)
        execute(conn, f"SELECT dx.add_analyst('{fx.ANALYST}')")
        execute(conn, f"SELECT dx.grant_budget('{fx.ANALYST}', 'keyed', 10)")
        a = connect("coord", db, user=fx.ANALYST)
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        assert scalar(a, "SELECT dx.count(*) FROM keyed WHERE id = 7") == scalar(conn, "SELECT count(*) FROM keyed WHERE id = 7")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
        a.close()
        conn.close()


def test_mode_quantile_median_count_candidates_on_the_workers():
    """dx.mode, dx.quantile and dx.median on a distributed table: the workers count rows per candidate
    (PostgreSQL's grouped count; per output group and candidate with GROUP BY), the coordinator draws
    once per group for the charged statement, every declared group answered. Exact on a noiseless
    table, the seeded draw equals the local table's, one ledger row per statement, also beside linear
    aggregates (issue 27); hand-written dx._em_collect is refused."""
    with citus_db() as db:
        fx.build(db, rows=20000)
        conn = connect("coord", db)
        _exact_table(conn, "exact", 16)
        # noiseless: the utility sensitivity is 0, the mechanism returns a candidate of maximal utility
        # (the exact quantile; when it falls between two values, either of them)
        def near(dx_sql, col, p, where=""):
            got = scalar(conn, dx_sql)
            lo, hi = rows(conn, f"SELECT percentile_disc({p} - 0.0005) WITHIN GROUP (ORDER BY {col}), "
                                f"percentile_disc({p} + 0.0005) WITHIN GROUP (ORDER BY {col}) FROM exact {where}")[0]
            assert lo <= got <= hi, (dx_sql, got, lo, hi)

        near("SELECT dx.median(age) FROM exact", "age", 0.5)
        near("SELECT dx.quantile(income, 0.9) FROM exact WHERE sex = 'F'", "income", 0.9, "WHERE sex = 'F'")
        assert scalar(conn, "SELECT dx.mode(sex) FROM exact") == \
               scalar(conn, "SELECT mode() WITHIN GROUP (ORDER BY sex) FROM exact")
        # two of them in one statement
        got = rows(conn, "SELECT dx.median(age), dx.mode(sex) FROM exact WHERE age > 30")
        lo, hi = rows(conn, "SELECT percentile_disc(0.4995) WITHIN GROUP (ORDER BY age), "
                            "percentile_disc(0.5005) WITHIN GROUP (ORDER BY age) FROM exact WHERE age > 30")[0]
        assert lo <= got[0][0] <= hi and got[0][1] == "F", got
        # grouped: every declared group is answered ('none' has no rows), the others exactly
        got = rows(conn, "SELECT region, dx.median(age), dx.mode(sex) FROM exact GROUP BY region ORDER BY 1")
        assert [r[0] for r in got] == ["east", "none", "north", "south", "west"], got
        for region, median, mode in got:
            if region == "none":
                assert median is not None and mode in ("F", "M"), got
                continue
            where = f"WHERE region = '{region}'"
            lo, hi = rows(conn, f"SELECT percentile_disc(0.4995) WITHIN GROUP (ORDER BY age), "
                                f"percentile_disc(0.5005) WITHIN GROUP (ORDER BY age) FROM exact {where}")[0]
            assert lo <= median <= hi, (region, median, lo, hi)
            assert mode == scalar(conn, f"SELECT mode() WITHIN GROUP (ORDER BY sex) FROM exact {where}"), got
        got = rows(conn, "SELECT sex, dx.quantile(income, 0.9) FROM exact WHERE age > 30 GROUP BY sex "
                         "HAVING dx.quantile(income, 0.9) > 0 ORDER BY 1 LIMIT 1")
        assert len(got) == 1 and got[0][0] == "F", got
        # the grouped workers' share: PostgreSQL's count per (group, candidate); the draw on the coordinator
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT region, dx.mode(sex) FROM people GROUP BY region"))
        task = [line for line in plan.split("\n") if "Query: " in line][0]
        assert "count(*)" in task and "GROUP BY" in task and "_em_" not in task, task
        assert "dx._em_collect(" in plan, plan
        # the same seed gives the same draw as on the local copy with the same rows and policy
        for q in ["SELECT dx.median(age) FROM {t}", "SELECT dx.mode(region) FROM {t} WHERE age > 40",
                  "SELECT dx.quantile(income, 0.25), dx.median(age) FROM {t}"]:
            answers = []
            for t in ("people", "people_local"):
                execute(conn, "SET dxpriv.test_seed = 11")
                answers.append(rows(conn, q.format(t=t)))
            assert answers[0] == answers[1], (q, answers)
        execute(conn, "RESET dxpriv.test_seed")
        # an analyst: one ledger row per statement, on the coordinator
        a = connect("coord", db, user=fx.ANALYST)
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        scalar(a, "SELECT dx.median(age) FROM people")
        rows(a, "SELECT dx.mode(sex), dx.quantile(age, 0.1) FROM people WHERE income > 1000")
        got = rows(a, "SELECT sex, dx.median(age) FROM people GROUP BY sex")
        assert len(got) == 2 and all(r[1] is not None for r in got), got
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") - before == 3
        assert scalar(conn, "SELECT array_length(scales, 1) FROM dx.ledger ORDER BY id DESC LIMIT 1") == 2
        assert scalar(conn, "SELECT mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1") == "exponential"
        # beside count/sum/avg in one statement (issue 27): the linear releases come from one more
        # subquery joined on the group; one ledger row; seeded answers equal the local table's
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        got = rows(a, "SELECT region, dx.count(*), dx.median(age), dx.avg(income) FROM people GROUP BY region ORDER BY 1")
        assert [r[0] for r in got] == ["east", "none", "north", "south", "west"], got
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
        # (the distributed plan draws the linear noise first: equal draws when they come first locally too)
        for q in ["SELECT dx.count(*), dx.sum(income), dx.median(age), dx.mode(region) FROM {t} WHERE age > 30",
                  "SELECT dx.avg(age), dx.quantile(income, 0.25) FROM {t}"]:
            answers = []
            for t in ("people", "people_local"):
                execute(conn, "SET dxpriv.test_seed = 12")
                answers.append(rows(conn, q.format(t=t)))
            assert answers[0] == answers[1], (q, answers)
        execute(conn, "RESET dxpriv.test_seed")
        got = rows(conn, "SELECT dx.count(*), dx.sum(income), dx.median(age) FROM exact WHERE age > 30")
        want = rows(conn, "SELECT count(*), sum(income) FROM exact WHERE age > 30")
        assert [float(v) for v in got[0][:2]] == [float(v) for v in want[0]], (got, want)
        got = rows(conn, "SELECT region, dx.count(*), dx.sum(income), dx.mode(sex) FROM exact GROUP BY region ORDER BY 1")
        want = dict((r, (float(n), float(t))) for r, n, t in
                    rows(conn, "SELECT region, count(*), sum(income) FROM exact GROUP BY region"))
        for region, n, total, mode in got:
            assert (float(n), float(total)) == want.get(region, (0.0, 0.0)), (region, got, want)
            if region != "none":
                assert mode == scalar(conn, f"SELECT mode() WITHIN GROUP (ORDER BY sex) FROM exact WHERE region = '{region}'")
        # refused, nothing charged
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        params = "'{4,1,1,1,5,0,120,1,0,0,0,1,0,0,0,1,5,1,0,1,1,0}'::float8[]"
        _refused(a, f"SELECT dx._em_collect(1, 0, {params}, 5::bigint)", "42501")
        _refused(a, f"SELECT dx._em_collect(age, 0, {params}, 1::bigint) FROM people", "42501")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before
        a.close()
        conn.close()


def test_joins_with_public_tables():
    """A distributed table joined with a public table: the public rows are read at analysis and folded
    into the per-point tables, the workers read only the distributed table; count, sum and the
    average over the joined pairs equal native SQL on a noiseless table, inner and LEFT joins,
    grouped by declared columns or by public columns (of a plain or a reference table)."""
    with citus_db() as db:
        conn = connect("coord", db)
        _exact_table(conn, "exact", 16)
        execute(conn, "CREATE TABLE zones (region text, zone text, factor int)")
        execute(conn, "INSERT INTO zones VALUES ('north', 'cold', 2), ('north', 'polar', 3), ('south', 'warm', 1), "
                      "('west', 'mild', 1)")
        execute(conn, "SELECT dx.set_public('zones')")
        cases = [
            ("SELECT dx.count(*) FROM exact e JOIN zones z ON z.region = e.region",
             "SELECT count(*) FROM exact e JOIN zones z ON z.region = e.region"),
            ("SELECT dx.sum(e.income) FROM exact e JOIN zones z ON z.region = e.region WHERE z.factor > 1 AND e.age > 30",
             "SELECT sum(e.income) FROM exact e JOIN zones z ON z.region = e.region WHERE z.factor > 1 AND e.age > 30"),
            ("SELECT round(dx.avg(e.income)::numeric, 6) FROM exact e LEFT JOIN zones z ON z.region = e.region",
             "SELECT round(avg(e.income)::numeric, 6) FROM exact e LEFT JOIN zones z ON z.region = e.region"),
            ("SELECT e.sex, dx.count(*), round(dx.avg(e.age)::numeric, 6) FROM exact e JOIN zones z "
             "ON z.region = e.region GROUP BY e.sex ORDER BY 1",
             "SELECT e.sex, count(*), round(avg(e.age)::numeric, 6) FROM exact e JOIN zones z "
             "ON z.region = e.region GROUP BY e.sex ORDER BY 1"),
        ]
        for dx_sql, native_sql in cases:
            got = [tuple(float(v) if not isinstance(v, str) else v for v in r) for r in rows(conn, dx_sql)]
            want = [tuple(float(v) if not isinstance(v, str) else v for v in r) for r in rows(conn, native_sql)]
            assert got == want, (dx_sql, got, want)
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + cases[2][0]))
        task = [line for line in plan.split("\n") if "Query: " in line][0]
        assert "zones" not in task and "sum(dx._units(" in task, task  # the workers read the protected table only
        # grouped by public columns (issue 27), the dimension a plain or a reference table: each row is
        # read once per group of its point (a cross join with the slots on the workers), every group
        # comes from one state on the coordinator
        execute(conn, "CREATE TABLE zones_ref AS SELECT * FROM zones")
        execute(conn, "SELECT create_reference_table('zones_ref')")
        execute(conn, "SELECT dx.set_public('zones_ref')")
        for z in ("zones", "zones_ref"):
            for dx_sql, native_sql in [
                (f"SELECT z.zone, dx.count(*), dx.sum(e.income), round(dx.avg(e.income)::numeric, 6) FROM exact e "
                 f"JOIN {z} z ON z.region = e.region WHERE e.age > 30 GROUP BY z.zone ORDER BY 1",
                 f"SELECT z.zone, count(*), sum(e.income), round(avg(e.income)::numeric, 6) FROM exact e "
                 f"JOIN {z} z ON z.region = e.region WHERE e.age > 30 GROUP BY z.zone ORDER BY 1"),
                (f"SELECT z.zone, e.sex, dx.count(*) FROM exact e LEFT JOIN {z} z ON z.region = e.region "
                 f"GROUP BY 1, 2 ORDER BY 1, 2",
                 f"SELECT z.zone, e.sex, count(*) FROM exact e LEFT JOIN {z} z ON z.region = e.region "
                 f"GROUP BY 1, 2 ORDER BY 1, 2"),
            ]:
                got = [tuple(float(v) if not isinstance(v, str) and v is not None else v for v in r)
                       for r in rows(conn, dx_sql)]
                want = [tuple(float(v) if not isinstance(v, str) and v is not None else v for v in r)
                        for r in rows(conn, native_sql)]
                assert got == want, (dx_sql, got, want)
        # an analyst: one ledger row per statement
        fx.build(db, rows=2000, shards=4)
        a = connect("coord", db, user=fx.ANALYST)
        execute(conn, f"GRANT SELECT ON zones TO {fx.ANALYST}")
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        scalar(a, "SELECT dx.avg(p.income) FROM people p JOIN zones z ON z.region = p.region")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
        execute(conn, f"GRANT SELECT ON zones_ref TO {fx.ANALYST}")
        got = rows(a, "SELECT z.zone, dx.count(*) FROM people p JOIN zones_ref z ON z.region = p.region GROUP BY 1")
        assert sorted(r[0] for r in got) == ["cold", "mild", "polar", "warm"], got
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 2
        assert rows(conn, "SELECT array_length(scales, 1) FROM dx.ledger ORDER BY id DESC LIMIT 1") == [(4,)]
        # ROLLUP over the join (issue 24; Citus itself refuses ROLLUP on a distributed table): one
        # release, one ledger row, every set's answers labelled, totals that add up
        got = rows(a, "SELECT z.zone, p.sex, GROUPING(z.zone, p.sex), dx.count(*) FROM people p "
                      "JOIN zones_ref z ON z.region = p.region GROUP BY ROLLUP (z.zone, p.sex)")
        assert len(got) == 4 * 2 + 4 + 1, got
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 3
        labels = rows(a, "SELECT count(*), count(DISTINCT group_key) FROM dx.last_release()")
        assert labels == [(13, 13)], labels
        by_set = {}
        for _, _, g, n in got:
            by_set[g] = by_set.get(g, 0) + n
        assert len(set(by_set.values())) == 1, by_set  # consistent: every set adds up to the total
        a.close()
        # noiseless: each set of the ROLLUP equals native SQL's GROUP BY of that set
        got = rows(conn, "SELECT z.zone, e.sex, GROUPING(z.zone, e.sex), dx.count(*), dx.sum(e.income) FROM exact e "
                         "JOIN zones z ON z.region = e.region GROUP BY ROLLUP (z.zone, e.sex) ORDER BY 3, 1, 2")
        want = rows(conn, "SELECT z.zone, e.sex, 0, count(*), sum(e.income) FROM exact e JOIN zones z "
                          "ON z.region = e.region GROUP BY 1, 2 UNION ALL SELECT z.zone, NULL, 1, count(*), "
                          "sum(e.income) FROM exact e JOIN zones z ON z.region = e.region GROUP BY 1 UNION ALL "
                          "SELECT NULL, NULL, 3, count(*), sum(e.income) FROM exact e JOIN zones z "
                          "ON z.region = e.region ORDER BY 3, 1, 2")
        norm = lambda rs: [tuple(float(v) if isinstance(v, (int, float)) or hasattr(v, "as_tuple") else v for v in r)
                           for r in rs]
        assert norm(got) == norm(want), (got, want)
        conn.close()


def test_releases_sessions_and_attribute_privacy_on_distributed_tables():
    """MWEM and SmallDB releases, a median-mechanism session and an APGM attribute release read a
    distributed table through the coordinator: with the same test seed each equals the local
    table's, each is one ledger row on the coordinator (none on the workers); a privacy unit on a
    distributed table bounds each unit's rows (issue 27)."""
    with citus_db() as db:
        fx.build(db, rows=5000, shards=8)
        conn = connect("coord", db)
        got = {}
        for t in ("people", "people_local"):
            before = scalar(conn, "SELECT count(*) FROM dx.ledger")
            execute(conn, "SET dxpriv.test_seed = 11")
            execute(conn, f"SELECT dx.release_mwem('{t}', ARRAY['sex', 'region'], 'marginals:2', 1.0, '{t}_mwem')")
            execute(conn, "SET dxpriv.test_seed = 12")
            execute(conn, f"SELECT dx.release_smalldb('{t}', ARRAY['sex'], 'marginals:1', 1.0, '{t}_small', 5)")
            execute(conn, "SET dxpriv.test_seed = 13")
            session = scalar(conn, f"SELECT dx.median_session_open('{t}', ARRAY['sex', 'region'], 'marginals:1', 0.5)")
            answers = [rows(conn, "SELECT answer, hard FROM dx.median_session_query(%s, %s)", (session, q))[0]
                       for q in (1, 2, 3)]
            got[t] = (rows(conn, f"SELECT * FROM {t}_mwem ORDER BY 1, 2"),
                      rows(conn, f"SELECT * FROM {t}_small ORDER BY 1"), answers)
            charged = rows(conn, "SELECT mechanism FROM dx.ledger ORDER BY id OFFSET %s", (before,))
            assert [m for (m,) in charged][:2] == ["mwem", "smalldb"], charged
        assert got["people"] == got["people_local"], got
        # attribute privacy needs a public row count: a separate pair of tables
        for t in ("staff", "staff_local"):
            execute(conn, f"CREATE TABLE {t} (id bigint, salary int, female int)")
        execute(conn, "SELECT create_distributed_table('staff', 'id', shard_count => 8)")
        for t in ("staff", "staff_local"):
            execute(conn, f"INSERT INTO {t} SELECT g, 20 + (g * 37) % 150, (g * 13) % 2 FROM generate_series(1, 3000) g")
            execute(conn, f"SELECT dx.protect_table('{t}', 'Infinity')")
            execute(conn, f"""SELECT dx.set_column('{t}', 'salary', '{{"min": 0, "max": 200}}', '{{"type": "absolute", "scale": 10}}')""")
            execute(conn, f"""SELECT dx.protect_attribute('{t}', 'female', 0.2, '{{"family": "gaussian",
                "attributes": ["salary", "female"], "covariance": [[400, 5], [5, 0.25]]}}')""")
            execute(conn, f"SELECT dx.grant_budget('postgres', '{t}', 100)")
            execute(conn, f"SELECT dx.grant_attribute_budget('postgres', '{t}', 100, 0.01)")
        attr = {}
        for t in ("staff", "staff_local"):
            execute(conn, "SET dxpriv.test_seed = 21")
            before = scalar(conn, "SELECT count(*) FROM dx.ledger")
            attr[t] = scalar(conn, f"SELECT dx.attr_avg(salary) FROM {t}")
            budgets = rows(conn, "SELECT budget FROM dx.ledger ORDER BY id OFFSET %s", (before,))
            assert sorted(b for (b,) in budgets) == ["attribute", "d_x"], budgets
        assert attr["staff"] == attr["staff_local"], attr
        for w in ("w1", "w2"):
            wc = connect(w, db)
            if scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'"):
                assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
            wc.close()
        # privacy units (issue 27): declared on a distributed table, or declared before the table was
        # distributed, each query is bounded per unit and charged once on the coordinator
        execute(conn, "ALTER TABLE people ADD COLUMN person int DEFAULT 1")
        execute(conn, "SELECT dx.set_privacy_unit('people', 'person', 3)")
        execute(conn, "CREATE TABLE later (id bigint, sex text, person int)")
        execute(conn, "INSERT INTO later SELECT g, 'F', g % 10 FROM generate_series(1, 100) g")
        execute(conn, "SELECT dx.protect_table('later', 'Infinity')")
        execute(conn, """SELECT dx.set_column('later', 'sex', '{"values": ["F", "M"]}', '{"type": "none"}')""")
        execute(conn, "SELECT dx.set_privacy_unit('later', 'person', 3)")
        execute(conn, "SELECT create_distributed_table('later', 'id', shard_count => 4)")
        execute(conn, "SELECT dx.grant_budget(%s::regrole, 'later', 100)", (fx.ANALYST,))
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        analyst = connect("coord", db, user=fx.ANALYST)
        assert float(scalar(analyst, "SELECT dx.count(*) FROM later")) == 30.0  # 10 units x 3 rows
        assert rows(analyst, "SELECT sex, dx.count_units(person) FROM later GROUP BY sex ORDER BY 1") == [("F", 10), ("M", 0)]
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 2


def test_session_output_settings_cannot_move_the_domain():
    """Citus deparses the workers' statements with the session's settings. At extra_float_digits =
    -15 (one significant digit) a lookup's domain constants would reach the workers rounded (lo 15
    as 2e+01, step 150 as 2e+02): rows mapped on another domain than the one the analysis calibrated
    (other answers; with a real metric, sensitivities exceeded and errors that depend on the rows).
    dx statements are planned with exact floats, whatever the analyst sets."""
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE floaty (id bigint PRIMARY KEY, age int, sex text, region text, income int)")
        execute(conn, "SELECT create_distributed_table('floaty', 'id', shard_count => 4)")
        execute(conn, f"INSERT INTO floaty {fx.rows_sql(10000)}")
        execute(conn, "SELECT dx.protect_table('floaty', 'Infinity')")
        execute(conn, """SELECT dx.set_column('floaty', 'age', '{"min": 15, "max": 120}', '{"type": "none"}')""")
        execute(conn, """SELECT dx.set_column('floaty', 'income', '{"min": 0, "max": 240000, "step": 150}',
                         '{"type": "none"}')""")
        create_role(fx.ANALYST)
        execute(conn, f"SELECT dx.add_analyst('{fx.ANALYST}')")
        execute(conn, f"SELECT dx.grant_budget('{fx.ANALYST}', 'floaty', 100)")
        cases = [
            ("SELECT dx.count(*) FROM floaty WHERE age < 30", "SELECT count(*) FROM floaty WHERE age < 30"),
            ("SELECT round(dx.sum(age)::numeric) FROM floaty WHERE age < 30",
             "SELECT sum(age) FROM floaty WHERE age < 30"),
            # income in steps of 150 from 0: the rows' multiples of 100 lie on 0, 150, 300, ...
            ("SELECT dx.count(*) FROM floaty WHERE income BETWEEN 1000 AND 2000",
             "SELECT count(*) FROM floaty WHERE round(income / 150.0) * 150 BETWEEN 1000 AND 2000"),
        ]
        a = connect("coord", db, user=fx.ANALYST)
        want = [float(scalar(conn, native)) for _, native in cases]
        assert [float(scalar(a, q)) for q, _ in cases] == want
        execute(a, "SET extra_float_digits = -15")
        assert [float(scalar(a, q)) for q, _ in cases] == want
        # with standard_conforming_strings off, the backslashes of string constants (the per-point
        # table's bytea, enumerated labels) were doubled for workers that read standard strings
        execute(a, "RESET extra_float_digits")
        execute(a, "SET standard_conforming_strings = off")
        assert [float(scalar(a, q)) for q, _ in cases] == want
        a.close()
        conn.close()
