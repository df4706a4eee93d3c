"""The per-backend cache of the extension's objects (metadata/extension_objects.cpp) never answers
from a stale state: protection, CREATE/DROP EXTENSION in another session or in the same one are
seen by the next statement, and a warm cache never lets an analyst read a protected table natively."""
import psycopg2

from attack_fixture import ANALYST, analyst_conn, attack_db, build, create_people, ledger_rows, tag
from e2e_common import connect, execute, scalar

PRIV = "42501"


def _refused(conn, sql, states=(PRIV, "0A000")):
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            rows = cur.fetchall()
    except psycopg2.Error as e:
        assert e.pgcode in states, (sql, e.pgcode, str(e))
        return
    raise AssertionError(f"answered natively: {sql} -> {rows[:3]}")


def test_protect_in_other_session_refuses_warm_analyst():
    with attack_db() as (db, admin):
        execute(admin, "CREATE TABLE late (id int PRIMARY KEY, name text NOT NULL, age int, sex text, zip text,"
                       " diagnosis text, income int)")
        execute(admin, "INSERT INTO late SELECT i, 'P' || i, 30, 'F', '10001', 'no', 100 FROM generate_series(1, 50) i")
        execute(admin, "GRANT SELECT ON late TO PUBLIC")
        b = analyst_conn(db)
        try:
            # B's cache is warm: a dx statement and native reads of the (still public) table
            assert scalar(b, "SELECT dx.count(*) FROM people") is not None
            assert scalar(b, "SELECT count(*) FROM late") == 50
            assert scalar(b, "SELECT name FROM late WHERE id = 5") == "P5"
            # session A protects it; B's next raw read must be refused
            execute(admin, "SELECT dx.protect_table('late', 1.0)")
            _refused(b, "SELECT name FROM late WHERE id = 5")
            _refused(b, "SELECT * FROM late")
            # inside a function B defines (a statement inside a SQL function, the cached path)
            _refused(b, f"CREATE FUNCTION {ANALYST}_ws.peek(i int) RETURNS text LANGUAGE sql STABLE "
                        f"AS $$ SELECT name FROM public.late WHERE id = i $$; SELECT {ANALYST}_ws.peek(5)")
            # unprotect in A: B sees it too (native read answered again)
            execute(admin, "SELECT dx.unprotect_table('late')")
            execute(admin, "GRANT SELECT ON late TO PUBLIC")  # protection revoked it
            assert scalar(b, "SELECT name FROM late WHERE id = 5") == "P5"
            # and protect once more: refused again
            execute(admin, "SELECT dx.protect_table('late', 1.0)")
            _refused(b, "SELECT count(name) FROM late")
        finally:
            b.close()


def test_protect_inside_plpgsql_loop_of_warm_session():
    """B runs a PL/pgSQL function (its inner statement's plan is cached) before and after A protects."""
    with attack_db() as (db, admin):
        execute(admin, "CREATE TABLE late2 (id int PRIMARY KEY, name text)")
        execute(admin, "INSERT INTO late2 SELECT i, 'Q' || i FROM generate_series(1, 20) i")
        execute(admin, "GRANT SELECT ON late2 TO PUBLIC")
        execute(admin, """CREATE FUNCTION public.peek2(i int) RETURNS text LANGUAGE plpgsql STABLE AS $$
            DECLARE r text; BEGIN SELECT name INTO r FROM public.late2 WHERE id = i; RETURN r; END $$""")
        b = analyst_conn(db)
        try:
            assert scalar(b, "SELECT string_agg(public.peek2(i), ',') FROM generate_series(1, 3) i") == "Q1,Q2,Q3"
            execute(admin, "SELECT dx.protect_table('late2', 1.0)")
            _refused(b, "SELECT string_agg(public.peek2(i), ',') FROM generate_series(1, 3) i")
        finally:
            b.close()


def test_drop_and_create_extension_seen_by_both_sessions():
    with attack_db() as (db, admin):
        b = analyst_conn(db)
        try:
            assert scalar(b, "SELECT dx.count(*) FROM people") is not None  # warm cache in B
            assert scalar(admin, "SELECT count(*) FROM zips") == 10          # warm cache in A
            execute(admin, "DROP EXTENSION dxpriv CASCADE")
            # the same session, right after: no stale OIDs, native statements work
            assert scalar(admin, "SELECT count(*) FROM zips") == 10
            execute(admin, "CREATE EXTENSION dxpriv")
            execute(admin, "DROP TABLE people, zips")
            execute(admin, f"DROP SCHEMA {ANALYST}_ws CASCADE")
            build(admin)  # protects people again, re-adds the analyst
            # A (same session as the DROP/CREATE) and B (another session with a warm cache) both see
            # the new extension: dx queries are answered, raw reads refused
            assert scalar(admin, "SELECT count(*) FROM zips") == 10
            _refused(b, "SELECT name FROM people WHERE id = 5")
            assert scalar(b, "SELECT dx.count(*) FROM people") is not None
        finally:
            b.close()


def test_analysis_memo_not_replayed_across_drop_create_extension():
    """The analysis memo (planner/analysis_memo.cpp) keys on the catalog invalidation count: an
    identical statement in a long-lived session, before and after DROP/CREATE EXTENSION and a new
    protection, is analysed again against the new extension's objects and charged in the new
    ledger, never replayed with the old function OIDs; the same in the session that ran the DDL."""
    with attack_db() as (db, admin):
        b = analyst_conn(db)
        try:
            sql = "SELECT dx.count(*), dx.sum(income) FROM people WHERE age > 30"
            m1 = tag()
            for _ in range(2):  # the second one is a memo (and answer cache) hit
                with b.cursor() as cur:
                    cur.execute(f"{m1} {sql}")
                    assert cur.fetchone()[0] is not None
            assert len(ledger_rows(admin, m1)) >= 1
            execute(admin, "DROP EXTENSION dxpriv CASCADE")
            execute(admin, "CREATE EXTENSION dxpriv")
            execute(admin, "DROP TABLE people, zips")
            execute(admin, f"DROP SCHEMA {ANALYST}_ws CASCADE")
            build(admin)
            m2 = tag()
            for conn in (b, admin):  # the analyst's long-lived session, and the one that ran the DDL
                if conn is admin:
                    execute(admin, f"SELECT dx.grant_budget(current_user::regrole, 'people', 10.0)")
                with conn.cursor() as cur:
                    cur.execute(f"{m2} {sql}")
                    row = cur.fetchone()
                    assert row[0] is not None and row[1] is not None
            # both were charged in the new extension's ledger (a replay of the old analysis would
            # carry charge ids and functions of the dropped extension)
            assert len(ledger_rows(admin, m2)) == 2, ledger_rows(admin, m2)
            _refused(b, "SELECT name FROM people WHERE id = 5")
        finally:
            b.close()


def test_create_extension_in_same_session_then_protect():
    """A session that warmed its (negative) cache before CREATE EXTENSION sees the extension at once."""
    admin = connect()
    name = "e2e_hookcache_create"
    execute(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    execute(admin, f"CREATE DATABASE {name}")
    try:
        s = connect(name)
        try:
            assert scalar(s, "SELECT 1") == 1  # no extension: the cache says so
            execute(s, "CREATE EXTENSION dxpriv")
            execute(s, "CREATE TABLE t (id int PRIMARY KEY, v int)")
            execute(s, "INSERT INTO t SELECT i, i FROM generate_series(1, 100) i")
            execute(s, "SELECT dx.protect_table('t', 1.0)")
            # the same session sees the extension it just created: dx.count is rewritten and answered
            execute(s, "SELECT dx.grant_budget('postgres'::regrole, 't', 10.0)")
            assert scalar(s, "SELECT dx.count(*) FROM t") is not None
            # the superuser may still read natively; an analyst in a fresh session may not
            execute(s, "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'mallory')"
                       " THEN CREATE ROLE mallory LOGIN; END IF; END $$")
            execute(s, "GRANT SELECT ON t TO mallory")
            execute(s, "SELECT dx.add_analyst('mallory'::regrole)")
            m = connect(name, user="mallory")
            try:
                _refused(m, "SELECT v FROM t WHERE id = 3")
            finally:
                m.close()
        finally:
            s.close()
    finally:
        execute(admin, f"DROP DATABASE {name} WITH (FORCE)")
        admin.close()
