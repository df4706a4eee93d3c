"""review7 (session 18): attacks on newsess's analyst context read in C (dx_catalog_oids) that need
two sessions. Each test fails if its attack works: a role added as an analyst by another session
keeps reading raw rows in a backend whose analyst cache was read under an older snapshot."""
import psycopg2

from e2e_common import connect, execute, fresh_db

LATE = "review7_late"
READERS = "review7_readers"


def _setup(db):
    admin = connect(db)
    execute(admin, f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{LATE}') THEN CREATE ROLE {LATE}; END IF; END $$""")
    execute(admin, "CREATE TABLE r7_t (v int)")
    execute(admin, "INSERT INTO r7_t SELECT g % 100 FROM generate_series(1, 1000) g")
    execute(admin, "SELECT dx.protect_table('r7_t')")
    execute(admin, "SELECT dx.set_column('r7_t', 'v', '{\"min\": 0, \"max\": 99}', "
                   "'{\"type\": \"absolute\", \"scale\": 10}')")
    # a reader the DBA lets read the rows through a group (dx.add_analyst revokes the role's own
    # grants, not its groups'), until it becomes an analyst
    execute(admin, f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{READERS}') THEN CREATE ROLE {READERS}; END IF; END $$""")
    execute(admin, f"GRANT SELECT ON r7_t TO {READERS}")
    execute(admin, f"GRANT {READERS} TO {LATE}")
    return admin


def _raw_read(conn):
    """True when the role's SELECT of a raw row succeeded; False when dxpriv refused it to an
    analyst (any other error fails the test)."""
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT v FROM r7_t LIMIT 1")
            cur.fetchall()
        return True
    except psycopg2.Error as e:
        conn.rollback()
        assert "analysts can read protected table" in str(e), str(e)
        return False


def _added_after_snapshot(isolation):
    """The analyst cache is read again when dx.analysts is invalidated; it was read under the
    statement's (REPEATABLE READ: the transaction's) snapshot, taken before another session's
    dx.add_analyst committed, and kept as current: the new analyst read raw rows in every later
    transaction of that backend."""
    with fresh_db() as db:
        admin = _setup(db)
        a = connect(db, autocommit=False)
        a.set_session(isolation_level=isolation)
        execute(a, f"SET ROLE {LATE}")
        assert _raw_read(a)  # not an analyst yet: the DBA's grant holds (and the cache is loaded)
        a.commit()
        execute(a, "SELECT 1")  # (REPEATABLE READ: the transaction's snapshot)
        if isolation == "READ COMMITTED":
            # the statement's snapshot is taken before the lock whose acquisition reads the
            # invalidation; a pending invalidation cannot be staged from Python, so hold one:
            # the add commits after this statement's snapshot only under REPEATABLE READ
            a.commit()
            execute(admin, "SELECT dx.add_analyst(%s::regrole)", (LATE,))
            execute(a, f"SET ROLE {LATE}")
            assert not _raw_read(a), "an analyst read a raw row"
            a.rollback()
        else:
            execute(admin, "SELECT dx.add_analyst(%s::regrole)", (LATE,))
            execute(a, f"SET ROLE {LATE}")
            _raw_read(a)  # (inside the old snapshot: either answer is consistent with it)
            a.rollback()
            for _ in range(2):
                execute(a, f"SET ROLE {LATE}")
                assert not _raw_read(a), "an analyst read a raw row in a later transaction"
                a.rollback()
        a.close()
        execute(admin, "SELECT dx.remove_analyst(%s::regrole)", (LATE,))
        admin.close()


def test_analyst_added_after_a_repeatable_read_snapshot():
    _added_after_snapshot("REPEATABLE READ")


def test_analyst_added_between_read_committed_transactions():
    _added_after_snapshot("READ COMMITTED")


def test_analyst_added_after_a_serializable_snapshot():
    # (SERIALIZABLE keeps one snapshot per transaction too, plus SSI's predicate locks: the analyst
    # cache's read under a fresh snapshot must not be kept from inside it either)
    _added_after_snapshot("SERIALIZABLE")
