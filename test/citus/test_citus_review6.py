"""Review of citusone (dx._grouped_partials, planner/distributed_stage.h): attacks on the one-stage
read of a Citus GROUP BY's grouped sums. Each test fails if its attack works: a hand-written call
that runs (views, rules, triggers, PL/pgSQL, CTE, LATERAL, beside a paid release of the same
statement), a task that differs from the analysis (prepared parameters, generic plans, temporary
objects of the analyst, a policy changed under a cached plan, a re-distributed or partitioned
table), raw sums or rows reaching the client, a charge skipped by an abort, a savepoint, a
partially fetched cursor or an error after the stage ran."""
import psycopg2

import citus_fixture as fx
from citus_common import citus_db, connect, execute, rows, scalar
from test_citus_grouped_stage import _forged_call, _norm, _plan, _refused, _staged

SQL = "SELECT region, dx.count(*), dx.sum(income) FROM {t} GROUP BY region"


def test_forged_calls_in_views_rules_triggers_plpgsql_and_beside_a_paid_release():
    """The task and parameters of a real statement (the owner's EXPLAIN) in a view, a rule, a
    trigger, PL/pgSQL (static and EXECUTE), a CTE, LATERAL and the target list, also in the same
    statement as that paid release: refused, for the analyst and the superuser; nothing returned."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = SQL.format(t="people")
        forged = _forged_call(owner, sql)
        call = forged.split(" AS x(")[0]
        execute(owner, "SET check_function_bodies = off")
        execute(owner, "CREATE TABLE sink (x int)")
        execute(owner, "CREATE TABLE sink2 (x int)")
        execute(owner, f"GRANT INSERT ON sink, sink2 TO {fx.ANALYST}")
        made = []
        for name, ddl in (
                ("forged_v", f"CREATE VIEW forged_v AS SELECT * FROM {forged}"),
                ("forged_rule", f"CREATE RULE forged_rule AS ON INSERT TO sink DO ALSO SELECT * FROM {forged}"),
                ("forged_static", f"""CREATE FUNCTION forged_static() RETURNS bigint LANGUAGE plpgsql AS $f$
                                      BEGIN RETURN (SELECT count(*) FROM {forged}); END $f$"""),
                ("forged_dynamic", f"""CREATE FUNCTION forged_dynamic() RETURNS bigint LANGUAGE plpgsql AS $f$
                                       DECLARE n bigint; BEGIN EXECUTE $q$SELECT count(*) FROM {forged}$q$ INTO n;
                                       RETURN n; END $f$"""),
                ("forged_trig", f"""CREATE FUNCTION forged_trig() RETURNS trigger LANGUAGE plpgsql AS $f$
                                    BEGIN PERFORM count(*) FROM {forged}; RETURN NEW; END $f$""")):
            try:
                execute(owner, ddl)
                made.append(name)
            except psycopg2.Error as e:  # refused when it is written: as good
                assert e.pgcode == "42501", (name, e)
        assert {"forged_static", "forged_dynamic", "forged_trig"} <= set(made), made
        execute(owner, "CREATE TRIGGER forged_t BEFORE INSERT ON sink2 FOR EACH ROW EXECUTE FUNCTION forged_trig()")
        execute(owner, f"GRANT EXECUTE ON FUNCTION forged_static(), forged_dynamic() TO {fx.ANALYST}")
        if "forged_v" in made:
            execute(owner, f"GRANT SELECT ON forged_v TO {fx.ANALYST}")
        for c in (a, owner):
            if "forged_v" in made:
                _refused(c, "SELECT * FROM forged_v", "42501", "internal dxpriv")
            _refused(c, "SELECT forged_static()", "42501", "internal dxpriv")
            _refused(c, "SELECT forged_dynamic()", "42501", "internal dxpriv")
            if "forged_rule" in made:
                _refused(c, "INSERT INTO sink VALUES (1)", "42501", "internal dxpriv")
            _refused(c, "INSERT INTO sink2 VALUES (1)", "42501", "internal dxpriv")
            _refused(c, f"SELECT {call}", "42501")
            _refused(c, f"WITH f AS MATERIALIZED (SELECT * FROM {forged}) SELECT count(*) FROM f", "42501")
            # beside the paid release whose parameters it carries, in one statement
            _refused(c, f"SELECT * FROM ({sql}) s, LATERAL (SELECT * FROM {forged}) z", "42501")
            _refused(c, f"WITH r AS ({sql}) SELECT (SELECT count(*) FROM {forged}) FROM r", "42501")
            _refused(c, f"SELECT * FROM ({sql}) s UNION ALL SELECT NULL::text, u1::float8, u2::float8 FROM {forged}", "42501")
            # a cursor over the real statement, fetched, then the call in the same transaction
            c.autocommit = False
            with c.cursor() as cur:
                cur.execute("DECLARE held CURSOR FOR " + sql)
                cur.execute("FETCH 1 FROM held")
            _refused(c, "SELECT forged_dynamic()", "42501")
            c.rollback()
            c.autocommit = True
        assert scalar(owner, "SELECT count(*) FROM sink") == 0 and scalar(owner, "SELECT count(*) FROM sink2") == 0
        assert len(rows(a, sql)) == 5
        owner.close()
        a.close()


def test_prepared_parameters_generic_plans_and_plpgsql_variables():
    """A WHERE with a parameter ($1 of PREPARE past its fifth execution, a PL/pgSQL variable; a
    forced generic plan is refused): the task
    text the function runs must not hold a parameter it cannot see nor another value than this
    execution's: the answers equal the literal statement's for two different values."""
    with citus_db() as db:
        conn = connect("coord", db)
        fx.exact_table(conn, "dist", 4, 5000)
        lit = "SELECT sex, dx.count(*), dx.sum(income) FROM dist WHERE age > {v} GROUP BY sex"
        assert _staged(conn, lit.format(v=40))
        want = {v: _norm(rows(conn, lit.format(v=v))) for v in (30, 60)}
        assert want[30] != want[60]
        execute(conn, "PREPARE p(int) AS " + lit.format(v="$1"))
        for v in (30, 60, 30, 60, 30, 60, 30):  # past the fifth execution (where a generic plan may be chosen)
            assert _norm(rows(conn, f"EXECUTE p({v})")) == want[v], v
        execute(conn, "SET plan_cache_mode = force_generic_plan")  # refused by dxpriv, never the wrong value
        _refused(conn, "EXECUTE p(60)", "0A000")
        execute(conn, "RESET plan_cache_mode")
        execute(conn, """CREATE FUNCTION by_age(lim int) RETURNS TABLE (sex text, n float8, s float8)
                          LANGUAGE plpgsql AS $f$ BEGIN RETURN QUERY
                          SELECT d.sex, dx.count(*)::float8, dx.sum(d.income)::float8 FROM dist d WHERE d.age > lim
                          GROUP BY d.sex; END $f$""")
        for v in (30, 60, 30, 60, 30, 60):  # past PL/pgSQL's fifth execution (generic plan)
            assert _norm(rows(conn, f"SELECT * FROM by_age({v})")) == want[v], v
        conn.close()


def test_policy_change_under_a_cached_plan():
    """A prepared statement planned under one domain (its task holds that domain's clamp) answers
    with the new domain after dx.set_column changes it, exactly as a fresh statement does (no
    sensitivity computed for one domain over sums clamped to another)."""
    with citus_db() as db:
        conn = connect("coord", db)
        fx.exact_table(conn, "dist", 4, 5000)
        sql = SQL.format(t="dist")
        execute(conn, "PREPARE p AS " + sql)
        before = _norm(rows(conn, "EXECUTE p"))
        assert _norm(rows(conn, sql)) == before
        execute(conn, "SELECT dx.set_column('dist'::regclass, 'income', "
                      "'{\"min\": 0, \"max\": 50000, \"step\": 100}'::jsonb, '{\"type\": \"none\"}'::jsonb)")
        fresh = _norm(rows(conn, sql))
        assert fresh != before
        assert _norm(rows(conn, "EXECUTE p")) == fresh
        assert _staged(conn, "EXECUTE p")
        conn.close()


def test_analyst_temporary_objects_do_not_redirect_the_task():
    """The task is parsed again under pg_catalog, pg_temp as the table owner: the analyst's
    temporary table, type, function and operator of the names it uses change nothing (seeded answers
    equal the plain run's, nothing of the analyst's runs)."""
    with citus_db() as db:
        fx.build(db, rows=3000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = "SELECT region, dx.count(*), dx.sum(income) FROM public.people GROUP BY region"
        assert _staged(owner, sql)
        execute(owner, "SET dxpriv.test_seed = 5")
        want = _norm(rows(owner, sql))
        execute(a, "CREATE TEMP TABLE people (id bigint, age int, sex text, region text, income int)")
        execute(a, "CREATE TYPE pg_temp.numeric AS (x int)")
        execute(a, "CREATE TYPE pg_temp.text AS (x int)")
        execute(a, "CREATE FUNCTION pg_temp.sum(numeric) RETURNS numeric LANGUAGE plpgsql AS "
                   "$$ BEGIN RAISE EXCEPTION 'temp sum ran'; END $$")
        execute(a, "CREATE FUNCTION pg_temp.evil_eq(int, int) RETURNS bool LANGUAGE plpgsql AS "
                   "$$ BEGIN RAISE EXCEPTION 'temp operator ran'; END $$")
        execute(a, "CREATE OPERATOR pg_temp.= (LEFTARG = int, RIGHTARG = int, PROCEDURE = pg_temp.evil_eq)")
        execute(a, "SET search_path = pg_temp, public, pg_catalog")
        got = rows(a, sql)
        assert len(got) == 5 and all(r[1] is not None for r in got), got
        # the owner under the same temporary objects: the same answers as before them
        execute(owner, "CREATE TEMP TABLE people (id bigint, age int, sex text, region text, income int)")
        execute(owner, "CREATE TYPE pg_temp.numeric AS (x int)")
        execute(owner, "SET search_path = pg_temp, public, pg_catalog")
        execute(owner, "SET dxpriv.test_seed = 5")
        assert _norm(rows(owner, sql)) == want
        owner.close()
        a.close()


def test_charges_survive_aborts_savepoints_partial_cursors_and_errors():
    """Every statement whose stage ran is charged once: a transaction rolled back, a savepoint rolled
    back, a cursor fetched once and closed, a statement that fails after the stage ran (division by
    zero over its released rows), two one-stage reads in one statement (UNION ALL)."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = SQL.format(t="people")
        assert _staged(owner, sql)

        def charged():
            return scalar(owner, "SELECT count(*) FROM dx.ledger")

        n0 = charged()
        a.autocommit = False
        rows(a, sql)
        a.rollback()
        assert charged() == n0 + 1, "rolled back transaction"
        execute(a, "SAVEPOINT s")
        rows(a, sql)
        execute(a, "ROLLBACK TO SAVEPOINT s")
        a.commit()
        assert charged() == n0 + 2, "rolled back savepoint"
        with a.cursor() as cur:
            cur.execute("DECLARE c CURSOR FOR " + sql)
            cur.execute("FETCH 1 FROM c")
            assert len(cur.fetchall()) == 1
            cur.execute("CLOSE c")
        a.commit()
        assert charged() == n0 + 3, "partially fetched cursor"
        with a.cursor() as cur:  # WITH HOLD: the statement runs at COMMIT, after the statement ended
            cur.execute("DECLARE h CURSOR WITH HOLD FOR " + sql)
        a.commit()
        with a.cursor() as cur:
            cur.execute("FETCH ALL FROM h")
            assert len(cur.fetchall()) == 5
            cur.execute("CLOSE h")
        a.commit()
        assert charged() == n0 + 4, "WITH HOLD cursor"
        n0 += 1
        a.autocommit = True
        try:
            rows(a, f"SELECT s.region, 1 / (length(s.region) * 0) FROM ({sql}) s")
            raise AssertionError("division by zero ran")
        except psycopg2.Error as e:
            assert e.pgcode == "22012", e
        n1 = charged()
        assert n1 in (n0 + 3, n0 + 4), n1  # refused before the release, or charged: never more
        # two one-stage reads in one statement: both run, charged
        two = f"SELECT * FROM ({SQL.format(t='people')}) x UNION ALL SELECT * FROM ({SQL.format(t='people')} ) y"
        plan = _plan(owner, two)
        assert plan.count("Function Scan on dx._grouped_partials") == 2, plan
        assert len(rows(a, two)) == 10
        assert charged() > n1
        owner.close()
        a.close()


def test_explain_shows_no_data_and_explain_analyze_stays_refused():
    """EXPLAIN is refused to the analyst (dx.explain charges nothing); the owner's EXPLAIN (VERBOSE),
    with the stage's Citus EXPLAIN appended, charges nothing and shows no sums; EXPLAIN ANALYZE is
    refused, also of a prepared statement; a refused EXPLAIN ANALYZE in a savepoint does not take the
    stage's EXPLAIN from the next EXPLAIN of that transaction."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = SQL.format(t="people")
        n0 = scalar(owner, "SELECT count(*) FROM dx.ledger")
        _refused(a, "EXPLAIN (VERBOSE) " + sql, "42501")
        rows(a, "SELECT * FROM dx.explain(%s)", (sql,))
        plan = _plan(owner, sql)
        assert "dx._grouped_partials: one Citus stage" in plan, plan
        assert "actual" not in plan and "Tasks Shown: One of 4" in plan, plan
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == n0
        for c in (a, owner):
            _refused(c, "EXPLAIN (ANALYZE) " + sql)
            execute(c, "PREPARE p AS " + sql)
            _refused(c, "EXPLAIN (ANALYZE) EXECUTE p")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == n0
        # an EXPLAIN ANALYZE refused inside a savepoint leaves the next EXPLAIN of the transaction whole
        owner.autocommit = False
        execute(owner, "SAVEPOINT s")
        _refused(owner, "EXPLAIN (ANALYZE) " + sql, "0A000")
        execute(owner, "ROLLBACK TO SAVEPOINT s")
        plan = _plan(owner, sql)
        assert "dx._grouped_partials: one Citus stage" in plan, plan
        owner.rollback()
        owner.autocommit = True
        owner.close()
        a.close()


def test_redistributed_and_partitioned_tables():
    """A prepared statement after the table's shard count changed (a new, unprotected table) is
    refused, not run on it; a
    partitioned distributed table answers as the subplan shape and native SQL do."""
    with citus_db() as db:
        conn = connect("coord", db)
        fx.exact_table(conn, "dist", 4, 5000)
        sql = SQL.format(t="dist")
        want = _norm(rows(conn, sql))
        execute(conn, "PREPARE p AS " + sql)
        assert _norm(rows(conn, "EXECUTE p")) == want
        # re-distributed: Citus builds a new table, which dxpriv does not protect; the cached plan's
        # task (which names "public.dist") must not run on it
        execute(conn, "SELECT alter_distributed_table('dist', shard_count => 3, cascade_to_colocated => false)")
        _refused(conn, "EXECUTE p", "55000", "not protected")
        execute(conn, """CREATE TABLE part (id bigint, age int, sex text, region text, income int)
                         PARTITION BY RANGE (age)""")
        execute(conn, "CREATE TABLE part_a PARTITION OF part FOR VALUES FROM (0) TO (50)")
        execute(conn, "CREATE TABLE part_b PARTITION OF part FOR VALUES FROM (50) TO (200)")
        execute(conn, "SELECT create_distributed_table('part', 'id', shard_count => 4)")
        execute(conn, f"INSERT INTO part {fx.rows_sql(5000)}")
        execute(conn, "SELECT dx.protect_table('part', 'Infinity')")
        for col, domain, metric in fx.NOISELESS:
            execute(conn, "SELECT dx.set_column('part'::regclass, %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
        execute(conn, "SELECT dx.grant_budget('postgres'::regrole, 'part', 1000)")
        psql = SQL.format(t="part")
        got = _norm(rows(conn, psql))
        execute(conn, "SET dxpriv.citus_grouped_stage = off")
        assert not _staged(conn, psql)
        assert _norm(rows(conn, psql)) == got
        execute(conn, "RESET dxpriv.citus_grouped_stage")
        assert got == want
        conn.close()


def test_row_level_security_refused_in_both_shapes():
    """A row-level security policy limiting the analyst to one region: the read runs as the table
    owner (exempt from the policy), so an answer would cover rows the policy hides. The analyst's
    statement is refused (0A000) before any charge, in the one-stage and the subplan shape (regress
    93_row_security: the local table)."""
    with citus_db() as db:
        fx.build(db, rows=10, shards=4)
        conn = connect("coord", db)
        fx.exact_table(conn, "dist", 4, 5000)
        execute(conn, f"SELECT dx.grant_budget('{fx.ANALYST}'::regrole, 'dist', 1000)")
        execute(conn, "ALTER TABLE dist ENABLE ROW LEVEL SECURITY")
        execute(conn, f"CREATE POLICY north ON dist FOR SELECT TO {fx.ANALYST} USING (region = 'north')")
        sql = "SELECT sex, dx.count(*), dx.sum(income) FROM dist GROUP BY sex"
        ledger = "SELECT count(*) FROM dx.ledger"
        before = rows(conn, ledger)
        for stage in ("on", "off"):
            execute(conn, f"ALTER ROLE {fx.ANALYST} IN DATABASE {db} SET dxpriv.citus_grouped_stage = {stage}")
            a = connect("coord", db, user=fx.ANALYST)
            try:
                rows(a, sql)
                raise AssertionError(f"answered under a row-level security policy (stage {stage})")
            except psycopg2.Error as e:
                assert e.pgcode == "0A000" and "row-level security" in str(e), e
            finally:
                a.close()
        assert rows(conn, ledger) == before
        conn.close()


def test_with_clauses_never_reach_the_owner_task():
    """A WITH clause beside the analyst's grouped release (a plain one, a data-modifying one) would be
    copied into the task run as the table owner: it is refused before anything runs."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        execute(owner, "CREATE TABLE sink (x int)")
        execute(owner, f"GRANT INSERT, SELECT ON sink TO {fx.ANALYST}")
        for sql in ("WITH c AS MATERIALIZED (SELECT 1 AS one) " + SQL.format(t="people"),
                    "WITH d AS (INSERT INTO sink VALUES (1) RETURNING x) " + SQL.format(t="people")):
            for c in (a, owner):
                _refused(c, sql, "0A000", "WITH clauses")
        assert scalar(owner, "SELECT count(*) FROM sink") == 0
        owner.close()
        a.close()


def test_rescanned_release_gives_one_answer_for_one_charge():
    """The grouped release on the inner side of a nested loop without material (rescanned once per
    outer row, the function scan rewound): every copy of a group's noisy answer is the same and the
    statement is charged once; in a scalar subquery or LATERAL with an outer reference it is refused."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = SQL.format(t="people")
        for s in ("SET enable_material = off", "SET enable_hashjoin = off", "SET enable_mergejoin = off"):
            execute(a, s)
        n0 = scalar(owner, "SELECT count(*) FROM dx.ledger")
        got = rows(a, f"SELECT i, s.* FROM generate_series(1, 4) i CROSS JOIN ({sql}) s")
        by_region = {}
        for _, region, n, total in got:
            by_region.setdefault(region, set()).add((n, total))
        assert len(got) == 20 and all(len(v) == 1 for v in by_region.values()), got
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == n0 + 1
        _refused(a, f"SELECT (SELECT count(*) FROM ({sql}) s)", "42501", "scalar or IN subquery")
        # an outer reference (LATERAL) would have to be deparsed into the task: refused
        _refused(a, "SELECT * FROM generate_series(30, 31) i, LATERAL (SELECT region, dx.count(*) FROM people "
                    "WHERE age > i GROUP BY region) s", "42501", "LATERAL")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == n0 + 1
        owner.close()
        a.close()


def test_out_of_domain_rows_and_odd_names_show_nothing():
    """Rows outside the declared domain (a region value not declared, an income above the maximum,
    NULLs) never show in an answer or an error of the one-stage read; a table and columns whose names
    need quoting, in a schema whose name needs quoting, answer as the subplan shape does."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        execute(owner, "INSERT INTO people VALUES (900001, 40, 'F', 'secret-region-7731', 123456789), "
                       "(900002, NULL, NULL, NULL, NULL), (900003, 999, 'X', 'north', -5)")
        for sql in (SQL.format(t="people"), "SELECT sex, dx.avg(income) FROM people GROUP BY sex",
                    "SELECT region, sex, dx.count(*) FROM people GROUP BY region, sex"):
            assert _staged(owner, sql)
            try:
                got = rows(a, sql)
            except psycopg2.Error as e:
                assert "secret-region-7731" not in str(e) and "123456789" not in str(e), e
                continue
            text = repr(got)
            assert "secret-region-7731" not in text and "123456789" not in text, got
        t = '"Odd ""Schema"""."My Table"'
        execute(owner, 'CREATE SCHEMA "Odd ""Schema"""')
        execute(owner, f'CREATE TABLE {t} (id bigint PRIMARY KEY, "Region Name" text, "select" int)')
        execute(owner, "SELECT create_distributed_table(%s, 'id', shard_count => 4)", (t,))
        execute(owner, f"INSERT INTO {t} SELECT g, (ARRAY['a b', 'c\"d'])[1 + g % 2], g % 100 "
                       "FROM generate_series(1, 3000) g")
        execute(owner, "SELECT dx.protect_table(%s::regclass, 'Infinity')", (t,))
        execute(owner, "SELECT dx.set_column(%s::regclass, 'Region Name', %s::jsonb, %s::jsonb)",
                (t, '{"values": ["a b", "c\\"d"]}', '{"type": "none"}'))
        execute(owner, "SELECT dx.set_column(%s::regclass, 'select', %s::jsonb, %s::jsonb)",
                (t, '{"min": 0, "max": 100}', '{"type": "none"}'))
        execute(owner, "SELECT dx.grant_budget('postgres'::regrole, %s::regclass, 1000)", (t,))
        sql = f'SELECT "Region Name", dx.count(*), dx.sum("select") FROM {t} GROUP BY "Region Name"'
        assert _staged(owner, sql)
        got = _norm(rows(owner, sql))
        native = _norm(rows(owner, f'SELECT "Region Name", count(*), sum("select") FROM {t} GROUP BY 1'))
        assert [r for r in got if r[1] != 0] == native, (got, native)
        owner.close()
        a.close()


def test_auto_explain_for_the_analyst_shows_no_stage_row_counts():
    """auto_explain loaded for the analyst by the DBA (log_analyze, nested statements): the analyst
    cannot bring the logged plans (the function scan's actual rows: the non-empty groups) to the
    client: under client_min_messages = log the statement is refused; at notice it answers."""
    with citus_db() as db:
        fx.build(db, rows=1000, shards=4)
        owner = connect("coord", db)
        for s in ("session_preload_libraries = 'auto_explain'", "auto_explain.log_min_duration = 0",
                  "auto_explain.log_analyze = on", "auto_explain.log_nested_statements = on"):
            execute(owner, f"ALTER ROLE {fx.ANALYST} IN DATABASE {db} SET {s}")  # (dropped with the database)
        a = connect("coord", db, user=fx.ANALYST)
        sql = SQL.format(t="people")
        execute(a, "SET client_min_messages = log")
        _refused(a, sql, "42501", "client_min_messages")
        execute(a, "RESET client_min_messages")
        assert len(rows(a, sql)) == 5
        assert not any("actual" in n or "Function Scan" in n for n in a.notices), a.notices
        a.close()
        owner.close()


def test_stage_beside_a_citus_scan_of_the_same_table():
    """A grouped release read as one stage in the same statement as an ungrouped release of the same
    table (which Citus plans as a distributed scan): the answers equal the subplan shape's and native
    SQL's, one ledger row."""
    with citus_db() as db:
        conn = connect("coord", db)
        fx.exact_table(conn, "dist", 4, 5000)
        sql = ("SELECT * FROM (SELECT region, dx.count(*) AS n FROM dist GROUP BY region) s "
               "UNION ALL SELECT 'all', dx.count(*) FROM dist")
        plan = _plan(conn, sql)
        assert "Function Scan on dx._grouped_partials" in plan and "Custom Scan (Citus" in plan, plan
        n0 = scalar(conn, "SELECT count(*) FROM dx.ledger")
        got = _norm(rows(conn, sql))
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == n0 + 1
        native = _norm(rows(conn, "SELECT region, count(*) FROM dist GROUP BY region UNION ALL "
                                  "SELECT 'all', count(*) FROM dist"))
        assert [r for r in got if r[1] != 0] == native, (got, native)
        execute(conn, "SET dxpriv.citus_grouped_stage = off")
        assert _norm(rows(conn, sql)) == got
        conn.close()


def test_budget_revoked_under_a_cached_plan():
    """The analyst's prepared grouped statement (one stage) after the owner revokes the analyst's
    budget: refused (budget exhausted), nothing charged; granted again, it answers."""
    with citus_db() as db:
        fx.build(db, rows=1000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = SQL.format(t="people")
        assert _staged(owner, sql)
        execute(a, "PREPARE p AS " + sql)
        assert len(rows(a, "EXECUTE p")) == 5
        execute(owner, f"SELECT dx.revoke_budget('{fx.ANALYST}'::regrole, 'people'::regclass)")
        n0 = scalar(owner, "SELECT count(*) FROM dx.ledger")
        _refused(a, "EXECUTE p", "53000", "exhausted")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == n0
        execute(owner, f"SELECT dx.grant_budget('{fx.ANALYST}'::regrole, 'people'::regclass, 10)")
        assert len(rows(a, "EXECUTE p")) == 5
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == n0 + 1
        owner.close()
        a.close()
