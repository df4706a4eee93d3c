"""Attacks on the catalog generation's in-flight count (review3 of ddlhold's work,
src/pg/metadata/catalog_generation.h). A count that is never given back turns the shared analysis
memo off for the whole cluster: every test makes a DDL take the count and then end in a way that
could leave it held (errors inside utilities and nested utilities, savepoints, DO blocks,
procedures committing between DDLs, event triggers running or failing DDL, EXPLAIN ANALYZE of a
CREATE TABLE AS, statement/lock timeouts, a CONCURRENTLY statement cancelled by statement_timeout or
terminated while it waits between its transactions, an analyst's refused statements) and fails
when sharing does not resume afterwards (a second new session must be served the stored
analysis)."""
import threading

import psycopg2

from e2e_common import connect, execute, fresh_db, scalar
from test_catalog_generation import _stored, _wait_for_lock_wait
from test_shared_memo import ROLE_A, _run, _setup


def _resumes(db, answer, what):
    """Nothing is left in flight: after at most one new generation, a new session is served the
    analysis another new session stored."""
    _run(db)
    again, shared, _ = _run(db)
    assert (again, shared) == (answer, 1), (what, again, shared, answer)


def _fails(conn, sql, params=None):
    try:
        execute(conn, sql, params)
    except psycopg2.Error as e:
        if not conn.autocommit:
            conn.rollback()
        return e
    raise AssertionError(f"did not fail: {sql}")


def test_errors_inside_utilities_leave_nothing_in_flight():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            answer = _stored(db)
            c = connect(db)
            # (the session stays open between the attacks: only the transaction ends release)
            execute(c, "BEGIN; SAVEPOINT s; CREATE TABLE r3_a (x int); ROLLBACK TO SAVEPOINT s")
            assert _run(db)[1] == 0  # the count is held by the open transaction
            execute(c, "COMMIT")
            _resumes(db, answer, "savepoint")
            _fails(c, "DO $$ BEGIN CREATE TABLE r3_b (x int); RAISE EXCEPTION 'r3'; END $$")
            _resumes(db, answer, "DO block error")
            execute(c, "DO $$ BEGIN BEGIN CREATE TABLE r3_c (x int); PERFORM 1 / 0; "
                       "EXCEPTION WHEN division_by_zero THEN NULL; END; END $$")
            _resumes(db, answer, "DO block error caught")
            execute(c, "CREATE FUNCTION r3_ddl() RETURNS int LANGUAGE plpgsql AS "
                       "$$ BEGIN CREATE TABLE r3_d (x int); RETURN 1 / 0; END $$")
            _fails(c, "SELECT r3_ddl()")
            _resumes(db, answer, "DDL in a function, then an error")
            # nested utilities: EXPLAIN ANALYZE of CREATE TABLE AS, failing and succeeding
            _fails(c, "EXPLAIN ANALYZE CREATE TABLE r3_e AS SELECT 1 / 0 AS x")
            _resumes(db, answer, "EXPLAIN ANALYZE CREATE TABLE AS, failed")
            execute(c, "EXPLAIN ANALYZE CREATE TABLE r3_f AS SELECT 1 AS x")
            _resumes(db, answer, "EXPLAIN ANALYZE CREATE TABLE AS")
            # a procedure committing between DDLs, failing after its commit
            execute(c, "CREATE PROCEDURE r3_proc() LANGUAGE plpgsql AS $$ BEGIN CREATE TABLE r3_g (x int); "
                       "COMMIT; CREATE TABLE r3_h (x int); PERFORM 1 / 0; END $$")
            _fails(c, "CALL r3_proc()")
            assert scalar(c, "SELECT count(*) FROM pg_class WHERE relname IN ('r3_g', 'r3_h')") == 1
            _resumes(db, answer, "procedure failing after a COMMIT")
            # event triggers: one running DDL of its own at ddl_command_end, then one failing
            execute(admin, "CREATE FUNCTION r3_evt() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN "
                           "IF to_regclass('r3_evt_made') IS NULL THEN CREATE TABLE r3_evt_made (x int); END IF; END $$")
            execute(admin, "CREATE EVENT TRIGGER r3_evt ON ddl_command_end WHEN TAG IN ('CREATE VIEW') "
                           "EXECUTE FUNCTION r3_evt()")
            execute(c, "CREATE VIEW r3_v AS SELECT 1 AS x")
            _resumes(db, answer, "event trigger running DDL")
            execute(admin, "CREATE OR REPLACE FUNCTION r3_evt() RETURNS event_trigger LANGUAGE plpgsql AS "
                           "$$ BEGIN CREATE TABLE r3_evt_more (x int); RAISE EXCEPTION 'r3 event'; END $$")
            _fails(c, "CREATE VIEW r3_w AS SELECT 1 AS x")
            _resumes(db, answer, "event trigger failing")
            execute(admin, "DROP EVENT TRIGGER r3_evt")
            # statement_timeout and lock_timeout on a DDL waiting for a lock
            blocker = connect(db, autocommit=False)
            execute(blocker, "LOCK TABLE r3_f IN ACCESS SHARE MODE")
            for setting in ("statement_timeout", "lock_timeout"):
                execute(c, f"SET {setting} = '300ms'")
                e = _fails(c, "ALTER TABLE r3_f ADD COLUMN y int")
                assert isinstance(e, (psycopg2.errors.QueryCanceled, psycopg2.errors.LockNotAvailable)), e
                execute(c, f"RESET {setting}")
                _resumes(db, answer, setting)
            blocker.rollback()
            blocker.close()
            c.close()
        finally:
            admin.close()


def test_concurrently_statement_cancelled_or_terminated_leaves_nothing_in_flight():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            answer = _stored(db)
            for how in ("statement_timeout", "terminate"):
                blocker = connect(db, autocommit=False)
                execute(blocker, "LOCK TABLE spots IN ROW EXCLUSIVE MODE")
                runner = connect(db)
                pid = scalar(runner, "SELECT pg_backend_pid()")
                if how == "statement_timeout":
                    execute(runner, "SET statement_timeout = '3s'")
                errors = []

                def run():
                    try:
                        execute(runner, "CREATE INDEX CONCURRENTLY r3_idx ON spots (lat)")
                    except Exception as e:  # checked below
                        errors.append(e)

                t = threading.Thread(target=run)
                t.start()
                _wait_for_lock_wait(admin, pid)
                assert _run(db)[1] == 0, how  # held between its transactions
                if how == "terminate":
                    assert scalar(admin, "SELECT pg_terminate_backend(%s)", (pid,))
                t.join(60)
                blocker.rollback()
                blocker.close()
                assert not t.is_alive() and len(errors) == 1, (how, errors)
                assert isinstance(errors[0], psycopg2.errors.QueryCanceled if how == "statement_timeout"
                                  else psycopg2.OperationalError), (how, errors)
                _resumes(db, answer, how)
                if how == "statement_timeout":
                    runner.close()
                execute(admin, "DROP INDEX IF EXISTS r3_idx")
        finally:
            admin.close()


def test_analyst_refused_statements_leave_nothing_in_flight():
    # an analyst's statements that dxpriv or PostgreSQL refuses, in a session that stays open
    with fresh_db() as db:
        admin = _setup(db)
        try:
            answer = _stored(db)
            c = connect(db)
            execute(c, f"SET ROLE {ROLE_A}")
            for sql in ("CREATE TEMP TABLE r3_x AS SELECT lat FROM spots",
                        "EXPLAIN ANALYZE CREATE TEMP TABLE r3_y AS SELECT avg(lat) FROM spots",
                        "CREATE TABLE public.r3_z (x int)",
                        "ALTER TABLE spots ADD COLUMN r3 int",
                        "DROP TABLE spots"):
                _fails(c, sql)
                _resumes(db, answer, sql)
            c.close()
        finally:
            admin.close()
