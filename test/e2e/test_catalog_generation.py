"""Catalog generation (src/pg/metadata/catalog_generation.h) across statements that commit inside
themselves and catalog writes made by C code (ddlhold). Each test fails when the attack works:
* CREATE INDEX / REINDEX / DROP INDEX ... CONCURRENTLY released the in-flight count at their first
  internal commit: while they waited between their transactions, new sessions stored and shared
  analyses that their later catalog changes did not invalidate (REINDEX was not counted at all);
  a CONCURRENTLY statement that fails after its first commit must not leave sharing off;
* lo_create / lo_from_bytea / lo_unlink and pg_import_system_collations write catalogs without a
  utility statement or the executor: they now move the generation (the object access hook);
  setval writes no catalog row and a statement calling a sequence function is never memoized, so it
  does not (and need not) move it; nor do VACUUM and ANALYZE (statistics no analysis reads)."""
import threading
import time

import psycopg2

from e2e_common import connect, execute, fresh_db, scalar
from test_shared_memo import OWNER_SQL, ROLE_A, SQL, _run, _setup


def _stored(db, sql=SQL, role=ROLE_A):
    """Makes sure sql's analysis is in the shared memo now: a second new session hits it."""
    answer = _run(db, role, sql)[0]
    again, shared, _ = _run(db, role, sql)
    assert shared == 1 and again == answer, (shared, again, answer)
    return answer


def _wait_for_lock_wait(admin, pid, timeout=60):
    """Waits until backend pid waits for a lock (the CONCURRENTLY statement between its transactions)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if scalar(admin, "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s", (pid,)):
            return
        time.sleep(0.05)
    raise AssertionError("the concurrent statement never waited")


CONCURRENT_STATEMENTS = [
    "CREATE INDEX CONCURRENTLY cg_new ON spots (lon)",
    "REINDEX INDEX CONCURRENTLY cg_idx",
    "DROP INDEX CONCURRENTLY cg_idx",
]


def test_concurrently_statements_hold_the_generation_until_they_return():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            for statement in CONCURRENT_STATEMENTS:
                execute(admin, "DROP INDEX IF EXISTS cg_new")
                execute(admin, "CREATE INDEX IF NOT EXISTS cg_idx ON spots (id)")
                answer = _stored(db)
                # a writer's open transaction: the statement commits its first transaction, then
                # waits for it (WaitForLockers) before its later catalog changes
                blocker = connect(db, autocommit=False)
                execute(blocker, "LOCK TABLE spots IN ROW EXCLUSIVE MODE")
                runner = connect(db)
                pid = scalar(runner, "SELECT pg_backend_pid()")
                errors = []

                def run():
                    try:
                        execute(runner, statement)
                    except Exception as e:  # reported below
                        errors.append(e)

                t = threading.Thread(target=run)
                t.start()
                try:
                    _wait_for_lock_wait(admin, pid)
                    # between its transactions: nobody shares (before: the first new session stored
                    # an analysis under the moved, quiet generation and the second one was served it)
                    for _ in range(2):
                        again, shared, _ = _run(db)
                        assert shared == 0, statement
                        assert again == answer, statement  # (an analyst's answer: indexes change nothing)
                finally:
                    blocker.rollback()
                    blocker.close()
                    t.join(120)
                assert not t.is_alive() and not errors, (statement, errors)
                runner.close()
                # it returned: the generation moved at the end of its last transaction, then sharing resumes
                assert _run(db)[1] == 0, statement
                assert _run(db)[:2] == (answer, 1), statement
        finally:
            admin.close()


def test_failed_concurrently_statement_releases_the_generation():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            answer = _stored(db)
            # (spots.id repeats: the unique build fails after the statement's first commit)
            try:
                execute(admin, "CREATE UNIQUE INDEX CONCURRENTLY cg_unique ON spots (id)")
                raise AssertionError("the unique index was built")
            except psycopg2.errors.UniqueViolation:
                pass
            assert scalar(admin, "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = 'cg_unique'::regclass")
            assert _run(db)[1] == 0  # (the generation moved)
            assert _run(db)[:2] == (answer, 1)  # and nothing is left in flight
            # a cancelled one, while it waits between its transactions
            blocker = connect(db, autocommit=False)
            execute(blocker, "LOCK TABLE spots IN ROW EXCLUSIVE MODE")
            runner = connect(db)
            pid = scalar(runner, "SELECT pg_backend_pid()")
            errors = []
            t = threading.Thread(target=lambda: _capture(errors, runner, "CREATE INDEX CONCURRENTLY cg_c ON spots (lat)"))
            t.start()
            _wait_for_lock_wait(admin, pid)
            assert _run(db)[1] == 0
            assert scalar(admin, "SELECT pg_cancel_backend(%s)", (pid,))
            t.join(60)
            blocker.rollback()
            blocker.close()
            assert len(errors) == 1 and isinstance(errors[0], psycopg2.errors.QueryCanceled), errors
            assert _run(db)[1] == 0
            assert _run(db)[:2] == (answer, 1)
            runner.close()
        finally:
            admin.close()


def test_refused_utility_statement_leaves_nothing_in_flight():
    # an analyst's DDL refused by dxpriv before it runs (CREATE FUNCTION with check_function_bodies
    # off): the transaction's count is given back by its abort, also while the session stays open
    with fresh_db() as db:
        admin = _setup(db)
        try:
            execute(admin, f"GRANT CREATE ON SCHEMA public TO {ROLE_A}")
            answer = _stored(db)
            c = connect(db)
            try:
                execute(c, f"SET ROLE {ROLE_A}")
                execute(c, "SET check_function_bodies = off")
                try:
                    execute(c, "CREATE FUNCTION cg_refused() RETURNS int LANGUAGE sql AS 'SELECT 1'")
                    raise AssertionError("the analyst's function was created")
                except psycopg2.errors.InsufficientPrivilege:
                    pass
                assert _run(db)[1] == 0  # (the generation moved at the abort)
                assert _run(db)[:2] == (answer, 1)  # nothing left in flight by the open session
            finally:
                c.close()
        finally:
            admin.close()


def _capture(errors, conn, sql):
    try:
        execute(conn, sql)
    except Exception as e:  # reported by the caller
        errors.append(e)


C_LEVEL_WRITES = [
    "SELECT lo_create(0)",
    "SELECT lo_from_bytea(0, 'ddlhold')",
    "SELECT lo_unlink((SELECT max(oid) FROM pg_largeobject_metadata))",
    "SELECT pg_import_system_collations('cg_coll')",
]


def test_catalog_writes_by_c_code_move_the_generation():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            execute(admin, "CREATE SCHEMA cg_coll")
            for statement in C_LEVEL_WRITES:
                answer = _stored(db, OWNER_SQL, None)
                execute(admin, statement)
                again, shared, _ = _run(db, None, OWNER_SQL)
                assert shared == 0, statement
                assert again == answer, statement
            assert scalar(admin, "SELECT count(*) FROM pg_collation WHERE collnamespace = 'cg_coll'::regnamespace") > 0
            # in an open transaction: nobody shares until it ends
            answer = _stored(db, OWNER_SQL, None)
            tx = connect(db, autocommit=False)
            try:
                execute(tx, "SELECT lo_create(0)")
                assert _run(db, None, OWNER_SQL)[1] == 0
                assert _run(db, None, OWNER_SQL)[1] == 0
            finally:
                tx.rollback()
                tx.close()
            assert _run(db, None, OWNER_SQL)[1] == 0
            assert _run(db, None, OWNER_SQL)[:2] == (answer, 1)
        finally:
            admin.close()


def test_sequence_and_statistics_writes_do_not_move_the_generation():
    # setval / nextval change a sequence's own row, no catalog: a memoized statement cannot read a
    # sequence (one protected table, no mutable function); VACUUM and ANALYZE write statistics no
    # analysis reads: sharing continues after each (VACUUM FULL, a relation swap, moves it)
    with fresh_db() as db:
        admin = _setup(db)
        try:
            execute(admin, "CREATE SEQUENCE cg_seq")
            answer = _stored(db)
            for statement in ["SELECT setval('cg_seq', 42), nextval('cg_seq')", "VACUUM spots", "ANALYZE spots"]:
                assert _run(db)[:2] == (answer, 1), statement
                execute(admin, statement)
                assert _run(db)[:2] == (answer, 1), statement
            execute(admin, "VACUUM FULL spots")
            assert _run(db)[1] == 0
            assert _run(db)[:2] == (answer, 1)
        finally:
            admin.close()
