"""review1 (session 16): attacks on the merged contents rows (dx.compact_contents_changes) and on
the per-backend tree shape / protected-ancestor caches (TreeShape, FoundAncestors). Each test fails
if its attack works: a stale answer replayed after the rows changed, a merge changing a version or
failing a writer."""
import threading

import psycopg2

from attack_fixture import ensure_analyst_role
from e2e_common import connect, execute, fresh_db, scalar

ROLE = "review1_analyst"
SQL = "SELECT sum(v) FROM rv_t"


def _setup(db):
    admin = connect(db)
    execute(admin, f"ALTER DATABASE {db} SET dxpriv.cache_lifetime = 3600")
    ensure_analyst_role(admin, ROLE)
    execute(admin, "SELECT dx.add_analyst(%s::regrole)", (ROLE,))
    execute(admin, "CREATE TABLE rv_t (id int, v int) PARTITION BY RANGE (id)")
    for i in range(4):
        execute(admin, f"CREATE TABLE rv_t_{i} PARTITION OF rv_t FOR VALUES FROM ({i * 100}) TO ({(i + 1) * 100})")
    execute(admin, "INSERT INTO rv_t SELECT g, g % 50 FROM generate_series(0, 399) g")
    execute(admin, "SELECT dx.protect_table('rv_t', 1.0)")
    execute(admin, "SELECT dx.set_column('rv_t', 'v', '{\"min\": 0, \"max\": 49}', "
                   "'{\"type\": \"absolute\", \"scale\": 5}')")
    execute(admin, "SELECT dx.grant_budget(%s::regrole, 'rv_t', 1e6)", (ROLE,))
    return admin


def _as_analyst(conn):
    execute(conn, f"SET ROLE {ROLE}")
    execute(conn, "SET dxpriv.epsilon = 0.5")
    v = float(scalar(conn, SQL))
    execute(conn, "RESET ROLE")
    return v


def _warm_superuser_session(db):
    """A superuser's session that answers as the analyst (SET ROLE) and replays the answer."""
    s = connect(db, autocommit=False)
    first = _as_analyst(s)
    s.commit()
    assert _as_analyst(s) == first  # replayed (same backend, nothing changed)
    s.commit()
    return s, first


def _assert_fresh(old, new, added):
    # the rows added sum to `added` (noise scale 5): a replay would give exactly `old`
    assert new != old, "the answer cached before the change was replayed"
    assert abs((new - old) - added) < 1000, (old, new, added)


def test_partition_attached_in_the_same_transaction_is_not_a_replay():
    """Own catalog changes are processed locally, never through the shared queue: the counter
    SharedInvalidMessageCounter does not move inside the transaction that changed the tree."""
    with fresh_db() as db:
        _setup(db)
        s, old = _warm_superuser_session(db)
        execute(s, "CREATE TABLE rv_t_late (id int, v int)")
        execute(s, "INSERT INTO rv_t_late SELECT g, 49 FROM generate_series(400, 499) g")
        execute(s, "ALTER TABLE rv_t ATTACH PARTITION rv_t_late FOR VALUES FROM (400) TO (500)")
        _assert_fresh(old, _as_analyst(s), 4900)
        s.rollback()
        s.close()


def test_trigger_disabled_in_the_same_transaction_is_not_a_replay():
    with fresh_db() as db:
        admin = _setup(db)
        tg = scalar(admin, "SELECT 'dx_contents_' || 'rv_t'::regclass::oid")
        s, old = _warm_superuser_session(db)
        execute(s, f"ALTER TABLE rv_t_2 DISABLE TRIGGER {tg}")
        execute(s, "UPDATE rv_t_2 SET v = 49")  # not noted: no trigger fired
        added = scalar(admin, "SELECT sum(49 - v) FROM rv_t WHERE id BETWEEN 200 AND 299")
        _assert_fresh(old, _as_analyst(s), float(added))
        s.rollback()
        s.close()


def test_column_rewritten_in_the_same_transaction_is_not_a_replay():
    """ALTER COLUMN TYPE ... USING rewrites the rows (new relfilenodes) and fires no DML trigger."""
    with fresh_db() as db:
        _setup(db)
        s, old = _warm_superuser_session(db)
        try:
            execute(s, "ALTER TABLE rv_t ALTER COLUMN v TYPE int USING (49 - v)")
        except Exception as e:  # noqa: BLE001
            # refused by dx (a protected column's type): nothing to attack
            assert getattr(e, "pgcode", None), e
            print("refused:", e)
            s.rollback()
            s.close()
            return
        _assert_fresh(old, _as_analyst(s), 400 * 49 - 2 * old)
        s.rollback()
        s.close()


def test_catalog_change_of_another_session_is_seen_inside_a_transaction_block():
    """A backend inside a transaction block already holds its locks: its next statement processes
    no invalidation message by itself, while its read committed snapshot sees the rows written
    since. A trigger disabled by another session, then rows written without a note: each later
    statement of the block must be a new release (before review1's fix the shape was kept, and
    before the shape cache the stale relcache trigger list let the second write replay)."""
    with fresh_db() as db:
        admin = _setup(db)
        tg = scalar(admin, "SELECT 'dx_contents_' || 'rv_t'::regclass::oid")
        a = connect(db, user=ROLE, autocommit=False)
        execute(a, "SET dxpriv.epsilon = 0.5")
        old = float(scalar(a, SQL))
        assert float(scalar(a, SQL)) == old  # replayed inside the block
        execute(admin, f"ALTER TABLE rv_t_2 DISABLE TRIGGER {tg}")
        added = float(scalar(admin, "SELECT sum(49 - v) FROM rv_t_2"))
        execute(admin, "UPDATE rv_t_2 SET v = 49")
        new = float(scalar(a, SQL))
        _assert_fresh(old, new, added)
        execute(admin, "UPDATE rv_t_2 SET v = 0")
        _assert_fresh(new, float(scalar(a, SQL)), -49 * 100)
        a.rollback()
        a.close()


def _refusal(conn, sql):
    try:
        scalar(conn, sql)
    except Exception as e:  # noqa: BLE001
        assert getattr(e, "pgcode", None), e
        conn.rollback()  # (the caller's block is lost: callers start a new one)
        return str(e)
    raise AssertionError(f"{sql} answered")


def test_ancestor_changed_in_the_same_transaction_is_looked_up_again():
    """FoundAncestors: a partition moved from one protected tree to another in one transaction is
    governed by the new parent at once (the refusal names the policy that now protects it)."""
    with fresh_db() as db:
        admin = _setup(db)
        execute(admin, "CREATE TABLE rv_u (id int, v int) PARTITION BY RANGE (id)")
        execute(admin, "SELECT dx.protect_table('rv_u', 1.0)")
        execute(admin, f"GRANT SELECT ON rv_t_1 TO {ROLE}")
        s = connect(db, autocommit=False)
        execute(s, "SAVEPOINT warm")
        for _ in range(2):  # the protected ancestor rv_t found and kept
            execute(s, f"SET ROLE {ROLE}")  # (ROLLBACK TO SAVEPOINT undoes it)
            try:
                scalar(s, "SELECT sum(v) FROM rv_t_1")
                raise AssertionError("a partition was read directly")
            except psycopg2.Error as e:
                assert '"rv_t"' in str(e), e
                execute(s, "ROLLBACK TO SAVEPOINT warm")
        execute(s, "RESET ROLE")
        execute(s, "ALTER TABLE rv_t DETACH PARTITION rv_t_1")
        execute(s, "ALTER TABLE rv_u ATTACH PARTITION rv_t_1 FOR VALUES FROM (100) TO (200)")
        execute(s, f"SET ROLE {ROLE}")
        msg = _refusal(s, "SELECT sum(v) FROM rv_t_1")
        assert '"rv_u"' in msg and '"rv_t"' not in msg, msg
        s.close()


def _sum_rows(admin, rel="rv_t"):
    cur = admin.cursor()
    cur.execute("SELECT coalesce(sum(n), 0)::bigint, count(*) FROM dx.contents_changes "
                "WHERE relid = %s::regclass::oid", (rel,))
    return cur.fetchone()


def test_merge_inside_the_reading_transaction_keeps_its_version():
    """A merge run by the transaction that then reads (as the analyst) changes no version: the
    answer replays; the sum of n stays the number of writing transactions."""
    with fresh_db() as db:
        admin = _setup(db)
        for i in range(30):
            execute(admin, f"UPDATE rv_t SET v = v WHERE id = {i}")
        total, rows = _sum_rows(admin)
        s, old = _warm_superuser_session(db)
        removed = scalar(s, "SELECT dx.compact_contents_changes('rv_t'::regclass)")
        assert removed > 0
        assert _as_analyst(s) == old  # same version inside the merging transaction
        s.commit()
        assert _as_analyst(s) == old  # and after it
        s.commit()
        assert _sum_rows(admin)[0] == total
        s.close()


def test_merge_with_savepoints_and_rollbacks_counts_every_committed_writer():
    with fresh_db() as db:
        admin = _setup(db)
        total, _ = _sum_rows(admin)
        w = connect(db, autocommit=False)
        committed = 0
        for i in range(40):
            execute(w, "SAVEPOINT s")
            execute(w, f"UPDATE rv_t SET v = v WHERE id = {i}")
            execute(w, "SELECT dx.compact_contents_changes('rv_t'::regclass)")
            if i % 3 == 0:
                execute(w, "ROLLBACK TO SAVEPOINT s")  # the note and the merge undone
                execute(w, f"UPDATE rv_t SET v = v WHERE id = {i}")  # noted again
            if i % 4 == 0:
                w.rollback()
            else:
                w.commit()
                committed += 1
        assert _sum_rows(admin)[0] == total + committed
        scalar(admin, "SELECT dx.compact_contents_changes()")
        after, rows = _sum_rows(admin)
        assert after == total + committed and rows == 1
        w.close()


def test_a_merge_holding_its_lock_never_blocks_a_writer_or_another_merger():
    """A writing transaction that merged holds the merge lock (and the deleted rows) until it
    ends; another merger skips the table and writers are not blocked (statement_timeout 3 s)."""
    with fresh_db() as db:
        admin = _setup(db)
        for i in range(10):
            execute(admin, f"UPDATE rv_t SET v = v WHERE id = {i}")
        total, _ = _sum_rows(admin)
        w = connect(db, autocommit=False)
        execute(w, "UPDATE rv_t SET v = v WHERE id = 399")
        assert scalar(w, "SELECT dx.compact_contents_changes('rv_t'::regclass)") > 0
        other = connect(db)
        execute(other, "SET statement_timeout = '3s'")
        assert scalar(other, "SELECT dx.compact_contents_changes('rv_t'::regclass)") >= 0
        assert scalar(other, "SELECT dx.compact_contents_changes()") >= 0
        for i in range(5):  # writers, some merging themselves (called directly here)
            execute(other, "BEGIN")
            execute(other, f"UPDATE rv_t SET v = v WHERE id = {i}")
            scalar(other, "SELECT dx.compact_contents_changes('rv_t'::regclass)")
            execute(other, "COMMIT")
        w.commit()
        assert _sum_rows(admin)[0] == total + 1 + 5
        w.close()
        other.close()


def test_an_analyst_holding_an_advisory_lock_does_not_stop_the_merges():
    """Before review1 the merger took pg_try_advisory_xact_lock(('dxcc' << 32) | relid) and skipped
    the table when it failed: any role (an analyst) could hold that key for its whole session and
    stop every merge of the table, whose rows (and every cacheable statement's version scan) then
    grew by one per writing transaction."""
    with fresh_db() as db:
        admin = _setup(db)
        a = connect(db, user=ROLE)
        key = "(x'64786363'::bigint << 32) | 'rv_t'::regclass::oid::bigint"
        scalar(a, f"SELECT pg_advisory_lock({key})")
        scalar(a, f"SELECT pg_advisory_lock(('rv_t'::regclass::oid)::bigint)")
        for i in range(20):
            execute(admin, f"UPDATE rv_t SET v = v WHERE id = {i}")
        total, rows = _sum_rows(admin)
        assert rows >= 2  # (the last writer's row and at least one before it: a merge in the trigger keeps its own)
        assert scalar(admin, "SELECT dx.compact_contents_changes('rv_t'::regclass)") == rows - 1
        assert tuple(_sum_rows(admin)) == (total, 1)
        a.close()


def test_an_analyst_cannot_merge():
    with fresh_db() as db:
        _setup(db)
        a = connect(db, user=ROLE)
        try:
            scalar(a, "SELECT dx.compact_contents_changes()")
            raise AssertionError("an analyst ran dx.compact_contents_changes")
        except AssertionError:
            raise
        except Exception as e:  # noqa: BLE001
            assert e.pgcode == "42501", e
        a.close()


def test_concurrent_writers_and_mergers_every_isolation_level():
    """Writers in read committed (merging at random in the trigger), repeatable read and
    serializable, and DBA mergers, all at once: no writer fails, the count is exact."""
    with fresh_db() as db:
        admin = _setup(db)
        total, _ = _sum_rows(admin)
        errors = []
        done = []

        def writer(level, k):
            c = connect(db, autocommit=False)
            try:
                for i in range(60):
                    execute(c, f"SET TRANSACTION ISOLATION LEVEL {level}")
                    execute(c, f"UPDATE rv_t_{k} SET v = v WHERE id = {k * 100 + i % 100}")
                    if level == "READ COMMITTED" and i % 7 == 0:
                        scalar(c, "SELECT dx.compact_contents_changes('rv_t'::regclass)")
                    c.commit()
                    done.append(1)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            finally:
                c.close()

        def merger():
            c = connect(db)
            try:
                for _ in range(60):
                    scalar(c, "SELECT dx.compact_contents_changes()")
            except Exception as e:  # noqa: BLE001
                errors.append(e)
            finally:
                c.close()

        threads = [threading.Thread(target=writer, args=(lvl, k)) for k, lvl in
                   enumerate(["READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE", "READ COMMITTED"])]
        threads += [threading.Thread(target=merger) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        assert _sum_rows(admin)[0] == total + len(done) == total + 240
