"""A Citus GROUP BY's grouped sums read as one Citus stage (citusone, planner/distributed_stage.h):
the coordinator's statement stays local and reads the workers' sums through dx._grouped_partials,
which runs the task query the split built through the sealed path. The answers, charges and noise
are the subplan shape's (dxpriv.citus_grouped_stage = off) and the local table's; the shapes that
cannot use it keep the subplan; and the function gives nobody anything: a call written by hand
(as the analyst or a superuser, in a transaction, a cursor, a prepared statement or a SQL function,
with parameters of a statement running in the same transaction) is refused, a search_path or
setting of the analyst's does not redirect the task, and the plan still depends on the table (a
renamed table invalidates it)."""
import re

import psycopg2

import citus_fixture as fx
from citus_common import citus_db, connect, create_role, execute, rows, scalar

NOISELESS = '{"type": "none"}'

STATEMENTS = [
    "SELECT region, dx.count(*) FROM {t} GROUP BY region",
    "SELECT sex, dx.count(*), dx.sum(income) FROM {t} GROUP BY sex",
    "SELECT sex, dx.avg(income) FROM {t} WHERE age > 40 GROUP BY sex",
    "SELECT sex, region, dx.count(*) FROM {t} GROUP BY sex, region",
    "SELECT region, dx.count(*) FILTER (WHERE sex = 'F'), dx.sum(income) FILTER (WHERE sex = 'M') FROM {t} GROUP BY region",
    "SELECT age, dx.count(*) FROM {t} WHERE age BETWEEN 20 AND 30 GROUP BY age HAVING dx.count(*) > 5",
    "SELECT * FROM (SELECT region, dx.count(*) AS n FROM {t} GROUP BY region) s ORDER BY n DESC, region LIMIT 2",
]


def _refused(conn, sql, code=None, text=None):
    try:
        rows(conn, sql)
    except psycopg2.Error as e:
        assert code is None or e.pgcode == code, (sql, e.pgcode, str(e))
        assert text is None or text in str(e), (sql, str(e))
        return str(e)
    raise AssertionError(f"ran: {sql}")


def _norm(rs):
    return sorted(tuple(None if v is None else (v if isinstance(v, str) else round(float(v), 6)) for v in r)
                  for r in rs)


def _plan(conn, sql):
    return "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + sql))


def _staged(conn, sql):
    return "Function Scan on dx._grouped_partials" in _plan(conn, sql)


def _forged_call(owner, sql):
    """dx._grouped_partials(...) AS x(...) as the owner's EXPLAIN VERBOSE shows it for sql."""
    plan = _plan(owner, sql)
    call = re.search(r"Function Call: (dx\._grouped_partials\(.*?'::text, '\{[^']*\}'::double precision\[\], "
                     r"(?:NULL::bytea\[\]|'[^']*'::bytea\[\])\))", plan, re.S)
    assert call, plan
    cols = re.search(r"Output: (dx_native\.[^\n]*)\n\s*Function Call", plan).group(1)
    names = [c.split(".")[1] for c in cols.split(", ")]
    types = {"g": "int", "u": "numeric", "n": "bigint"}
    coldef = ", ".join(f"{n} {'int' if n.startswith('g') else types[n[0]]}" for n in names)
    return f"{call.group(1)} AS x({coldef})"


def test_one_stage_answers_equal_the_subplan_shape_and_the_local_table():
    """Noiseless policy: every grouped statement answers the same with the one-stage read, with the
    subplan shape and on the local copy; with a test seed the noisy answers are equal in both shapes
    and each statement is charged the same (one ledger row, the same epsilon)."""
    with citus_db() as db:
        conn = connect("coord", db)
        fx.exact_table(conn, "dist", 8, 20000)
        execute(conn, "CREATE TABLE loc (id bigint PRIMARY KEY, age int, sex text, region text, income int)")
        execute(conn, f"INSERT INTO loc {fx.rows_sql(20000)}")
        execute(conn, "SELECT dx.protect_table('loc', 'Infinity')")
        for col, domain, metric in fx.NOISELESS:
            execute(conn, "SELECT dx.set_column('loc', %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
        execute(conn, "SELECT dx.grant_budget('postgres'::regrole, 'loc', 1000)")
        for q in STATEMENTS:
            assert _staged(conn, q.format(t="dist")), q
            one = _norm(rows(conn, q.format(t="dist")))
            execute(conn, "SET dxpriv.citus_grouped_stage = off")
            assert not _staged(conn, q.format(t="dist")), q
            sub = _norm(rows(conn, q.format(t="dist")))
            execute(conn, "RESET dxpriv.citus_grouped_stage")
            local = _norm(rows(conn, q.format(t="loc")))
            assert one and one == sub == local, (q, one[:4], sub[:4], local[:4])
        conn.close()
    with citus_db() as db:
        fx.build(db, rows=5000, shards=8)
        conn = connect("coord", db)
        for q in STATEMENTS[:5]:
            sql = q.format(t="people")
            before = rows(conn, "SELECT count(*), coalesce(sum(epsilon), 0) FROM dx.ledger")[0]
            execute(conn, "SET dxpriv.test_seed = 7")
            one = _norm(rows(conn, sql))
            mid = rows(conn, "SELECT count(*), coalesce(sum(epsilon), 0) FROM dx.ledger")[0]
            execute(conn, "SET dxpriv.citus_grouped_stage = off")
            execute(conn, "SET dxpriv.test_seed = 7")
            sub = _norm(rows(conn, sql))
            execute(conn, "RESET dxpriv.citus_grouped_stage")
            after = rows(conn, "SELECT count(*), coalesce(sum(epsilon), 0) FROM dx.ledger")[0]
            assert one == sub, (q, one[:4], sub[:4])
            assert mid[0] - before[0] == after[0] - mid[0] == 1, (q, before, mid, after)
            assert abs((mid[1] - before[1]) - (after[1] - mid[1])) < 1e-12, (q, before, mid, after)
        conn.close()


def test_shapes_without_one_stage_keep_the_subplan():
    """A reference table, a one-shard table, a single-shard (NULL distribution key) table and a
    privacy unit's bounded rows keep the subplan shape (and their routing); their answers are charged
    and released as before."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        execute(owner, "CREATE TABLE ref (id bigint, age int, sex text, region text, income int)")
        execute(owner, "SELECT create_reference_table('ref')")
        execute(owner, "CREATE TABLE one_shard (id bigint, age int, sex text, region text, income int)")
        execute(owner, "SELECT create_distributed_table('one_shard', 'id', shard_count => 1)")
        execute(owner, "CREATE TABLE single (id bigint, age int, sex text, region text, income int)")
        execute(owner, "SELECT create_distributed_table('single', NULL)")
        for t in ("ref", "one_shard", "single"):
            execute(owner, f"INSERT INTO {t} {fx.rows_sql(500)}")
            fx.protect(owner, t)
        a = connect("coord", db, user=fx.ANALYST)
        for t in ("ref", "one_shard", "single"):
            sql = f"SELECT region, dx.count(*) FROM {t} GROUP BY region"
            assert not _staged(owner, sql), t
            before = scalar(owner, "SELECT count(*) FROM dx.ledger")
            assert len(rows(a, sql)) == 5, t
            assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before + 1, t
        assert _staged(owner, "SELECT region, dx.count(*) FROM people GROUP BY region")
        execute(owner, "SELECT dx.set_privacy_unit('people', 'id', 2)")
        sql = "SELECT region, dx.count(*) FROM people GROUP BY region"
        assert not _staged(owner, sql)
        assert len(rows(a, sql)) == 5
        owner.close()
        a.close()


def test_forged_calls_are_refused():
    """dx._grouped_partials written by hand, with the task and parameters of a real statement (read
    from the owner's EXPLAIN): refused for the analyst and for a superuser, alone, in a transaction
    right after that statement was charged, while a cursor over it is open (its charge running), as a
    prepared statement and inside SQL functions (inlined or not); no row comes back."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = "SELECT region, dx.count(*), dx.sum(income) FROM people GROUP BY region"
        forged = _forged_call(owner, sql)
        for c in (a, owner):
            _refused(c, f"SELECT * FROM {forged}", "42501", "internal dxpriv")
            _refused(c, f"SELECT count(*) FROM {forged}", "42501", "internal dxpriv")
            _refused(c, f"PREPARE forged AS SELECT * FROM {forged}", "42501", "internal dxpriv")
        # with the parameters of a statement charged in the same transaction (a prepared statement's
        # plan keeps its charge ids: EXPLAIN EXECUTE shows them), also while a cursor over it is open
        execute(owner, "PREPARE real AS " + sql)
        paid = _forged_call(owner, "EXECUTE real")
        owner.autocommit = False
        assert len(rows(owner, "EXECUTE real")) == 5
        _refused(owner, f"SELECT * FROM {paid}", "42501", "internal dxpriv")
        owner.rollback()
        assert len(rows(owner, "EXECUTE real")) == 5
        with owner.cursor() as cur:
            cur.execute("DECLARE held CURSOR FOR " + sql)
            cur.execute("FETCH 1 FROM held")
        _refused(owner, f"SELECT * FROM {paid}", "42501", "internal dxpriv")
        owner.rollback()
        owner.autocommit = True
        a.autocommit = False
        with a.cursor() as cur:
            cur.execute("DECLARE held CURSOR FOR " + sql)
            cur.execute("FETCH 1 FROM held")
        _refused(a, f"SELECT * FROM {paid}", "42501", "internal dxpriv")
        a.rollback()
        a.autocommit = True
        # SQL functions (the superuser's, bodies not checked at creation): inlined or not, refused
        execute(owner, "SET check_function_bodies = off")
        execute(owner, f"CREATE FUNCTION forged_set() RETURNS SETOF record LANGUAGE sql AS $f$ SELECT * FROM {forged} $f$")
        execute(owner, f"CREATE FUNCTION forged_count() RETURNS bigint LANGUAGE sql AS $f$ SELECT count(*) FROM {forged} $f$")
        call = forged.split(" AS x(")[0]
        execute(owner, f"CREATE FUNCTION forged_scalar() RETURNS record LANGUAGE sql AS $f$ SELECT {call} $f$")
        _refused(owner, "SELECT * FROM forged_set() AS y(g1 text, u1 numeric, n1 bigint, u2 numeric, n2 bigint)", "42501")
        _refused(owner, "SELECT forged_count()", "42501")
        _refused(owner, "SELECT forged_scalar()")
        execute(owner, f"GRANT EXECUTE ON FUNCTION forged_count() TO {fx.ANALYST}")
        _refused(a, "SELECT forged_count()", "42501")
        # the real statement still runs, for both
        assert len(rows(a, sql)) == 5 and len(rows(owner, sql)) == 5
        owner.close()
        a.close()


def test_analyst_settings_privileges_and_charges():
    """The analyst's statement reads the stage as the table owner: a search_path naming the analyst's
    own sum() and tables, formatting settings and Citus settings change nothing (seeded answers equal
    the plain run's); in a transaction, a cursor and a prepared statement every execution is charged
    once."""
    with citus_db() as db:
        fx.build(db, rows=3000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        sql = "SELECT region, dx.count(*), dx.sum(income) FROM people GROUP BY region"
        assert _staged(owner, sql)
        execute(owner, f"CREATE SCHEMA evil AUTHORIZATION {fx.ANALYST}")
        execute(a, "CREATE FUNCTION evil.sum(bigint) RETURNS numeric LANGUAGE plpgsql AS "
                   "$$ BEGIN RAISE EXCEPTION 'evil sum ran'; END $$")
        execute(a, "CREATE FUNCTION evil.count() RETURNS bigint LANGUAGE plpgsql AS "
                   "$$ BEGIN RAISE EXCEPTION 'evil count ran'; END $$")
        execute(a, "CREATE TABLE evil.people (id bigint, age int, sex text, region text, income int)")
        execute(owner, "SET dxpriv.test_seed = 11")
        want = _norm(rows(owner, sql))
        execute(owner, "SET dxpriv.test_seed = 11")
        execute(owner, "SET search_path = evil, public")
        execute(owner, "SET DateStyle = 'SQL'")
        execute(owner, "SET citus.max_intermediate_result_size = '1kB'")
        assert _norm(rows(owner, sql.replace("FROM people", "FROM public.people"))) == want
        execute(owner, "RESET ALL")
        for s in ("SET search_path = evil, public, pg_catalog", "SET extra_float_digits = -15", "SET DateStyle = 'SQL'",
                  "SET citus.max_intermediate_result_size = '1kB'", "SET citus.enable_binary_protocol = off"):
            execute(a, s)
        got = rows(a, sql.replace("FROM people", "FROM public.people"))
        assert len(got) == 5 and all(r[1] is not None for r in got), got
        execute(a, "RESET ALL")
        # charges: a transaction, a cursor and a prepared statement executed twice
        before = scalar(owner, "SELECT count(*) FROM dx.ledger")
        a.autocommit = False
        rows(a, sql)
        with a.cursor() as cur:
            cur.execute("DECLARE c CURSOR FOR " + sql)
            cur.execute("FETCH ALL FROM c")
            assert len(cur.fetchall()) == 5
        a.commit()
        a.autocommit = True
        execute(a, "PREPARE p AS " + sql)
        assert len(rows(a, "EXECUTE p")) == 5 and len(rows(a, "EXECUTE p")) == 5
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before + 4
        owner.close()
        a.close()


def test_plan_depends_on_the_table():
    """The stage's table stays in the plan's dependencies: a prepared statement re-plans after the
    table is renamed (its task names the new name) and after a column is dropped; a digest table's
    shipment travels with the stage (a dense per-point table, exact answers)."""
    with citus_db() as db:
        conn = connect("coord", db)
        fx.exact_table(conn, "dist", 4, 5000)
        sql = "SELECT region, dx.count(*), dx.sum(income) FROM dist GROUP BY region"
        want = _norm(rows(conn, sql))
        execute(conn, "PREPARE p AS " + sql)
        assert _norm(rows(conn, "EXECUTE p")) == want
        # renamed: the cached plan is invalidated and the statement analysed again from its text,
        # which names a table that is gone (a plan kept would run its task on "public.dist")
        execute(conn, "ALTER TABLE dist RENAME TO dist2")
        err = _refused(conn, "EXECUTE p", "42P01")
        assert 'relation "dist" does not exist' in err, err
        execute(conn, "ALTER TABLE dist2 RENAME TO dist")
        assert _norm(rows(conn, "EXECUTE p")) == want
        assert "FROM public.dist\n" in _plan(conn, "EXECUTE p")
        execute(conn, "ALTER TABLE dist ADD COLUMN z int")
        assert _norm(rows(conn, "EXECUTE p")) == want
        execute(conn, "ALTER TABLE dist RENAME TO dist2")
        # a dense per-point table (non-affine sum over 100001 points) travels by digest with the stage
        dense = "SELECT region, dx.linear(income::float8 * income / 1e6) FROM dist2 GROUP BY region"
        plan = _plan(conn, dense)
        assert "Function Scan on dx._grouped_partials" in plan and "_cached(" in plan, plan[:2000]
        native = _norm(rows(conn, "SELECT region, sum(income::float8 * income / 1e6) FROM dist2 GROUP BY region"))
        got = [r for r in _norm(rows(conn, dense)) if r[0] != "none"]
        assert [r[0] for r in got] == [r[0] for r in native]
        for g, n in zip(got, native):
            assert abs(g[1] - n[1]) <= 1e-6 * max(1.0, abs(n[1])), (g, n)
        conn.close()
