"""dx.contents_changes merged under concurrency (dx.compact_contents_changes and the writers'
trigger): a merge never changes the contents version any snapshot sees. An analyst's repeatable-read
transaction that released a statement before another session merged (and wrote) replays it after,
free; a new session sees the write (charged once) and then replays; writers under every isolation
level keep committing while others merge (the trigger merges only under read committed, so no
writer fails on rows another merger deleted); many concurrent writers leave few rows and the exact
count of writing transactions."""
import threading

from attack_fixture import ensure_analyst_role
from e2e_common import connect, execute, fresh_db, scalar

ROLE = "compact_analyst"
SQL = "SELECT sum(v) FROM merged_t"


# dx.protect_table's own transaction: its ALTER TABLE ... ENABLE ALWAYS TRIGGER counts as a write
# of the table (the dx_tree_change event trigger)
SETUP_WRITES = 1


def _setup(db):
    admin = connect(db)
    execute(admin, f"ALTER DATABASE {db} SET dxpriv.cache_lifetime = 3600")
    ensure_analyst_role(admin, ROLE)
    execute(admin, "SELECT dx.add_analyst(%s::regrole)", (ROLE,))
    execute(admin, "CREATE TABLE merged_t (id int PRIMARY KEY, v int)")
    execute(admin, "INSERT INTO merged_t SELECT g, g % 50 FROM generate_series(1, 2000) g")
    execute(admin, "SELECT dx.protect_table('merged_t', 1.0)")
    execute(admin, "SELECT dx.set_column('merged_t', 'v', '{\"min\": 0, \"max\": 49}', "
                   "'{\"type\": \"absolute\", \"scale\": 5}')")
    execute(admin, "SELECT dx.grant_budget(%s::regrole, 'merged_t', 1e6)", (ROLE,))
    return admin


def _spent(admin):
    return scalar(admin, "SELECT coalesce(sum(spent), 0) FROM dx.budget_grants WHERE role = %s::regrole", (ROLE,))


def _rows(admin):
    return scalar(admin, "SELECT count(*) FROM dx.contents_changes WHERE relid = 'merged_t'::regclass"), \
        scalar(admin, "SELECT sum(n) FROM dx.contents_changes WHERE relid = 'merged_t'::regclass")


def _writes(db, count, isolation="read committed", first_id=1):
    """count writing transactions, each updating one row of its own (ids first_id, first_id + 1, ...)."""
    c = connect(db)
    c.autocommit = False
    with c.cursor() as cur:
        for i in range(count):
            cur.execute(f"SET TRANSACTION ISOLATION LEVEL {isolation}")
            cur.execute("UPDATE merged_t SET v = (v + 1) %% 50 WHERE id = %s", (first_id + i % 400,))
            c.commit()
    c.close()


def test_old_snapshot_replays_across_a_merge_and_a_new_one_sees_the_write():
    with fresh_db() as db:
        admin = _setup(db)
        _writes(db, 30)
        a = connect(db, user=ROLE)
        a.autocommit = False
        a.set_session(isolation_level="REPEATABLE READ")
        with a.cursor() as cur:
            cur.execute("SET LOCAL dxpriv.epsilon = 0.5")
            cur.execute(SQL)
            first = cur.fetchone()[0]
        paid = _spent(admin)
        assert paid > 0
        # another session writes once more and merges every ended transaction's row
        _writes(db, 1)
        assert _rows(admin)[0] >= 2  # (the writers' trigger may have merged some already)
        scalar(admin, "SELECT dx.compact_contents_changes('merged_t'::regclass)")
        assert _rows(admin) == (1, 31 + SETUP_WRITES)
        with a.cursor() as cur:  # the old snapshot: same version, replayed, not charged
            cur.execute(SQL)
            assert cur.fetchone()[0] == first
        assert _spent(admin) == paid
        a.commit()
        b = connect(db, user=ROLE)
        execute(b, "SET dxpriv.epsilon = 0.5")
        with b.cursor() as cur:  # a new snapshot sees the write: a new release, charged once
            cur.execute(SQL)
            second = cur.fetchone()[0]
        after_write = _spent(admin)
        assert after_write > paid
        with b.cursor() as cur:
            cur.execute(SQL)
            assert cur.fetchone()[0] == second
        assert _spent(admin) == after_write
        a.close()
        b.close()


def test_concurrent_writers_and_mergers_never_fail_and_keep_the_count():
    with fresh_db() as db:
        admin = _setup(db)
        errors = []

        def run(count, isolation, first_id):
            try:
                _writes(db, count, isolation, first_id)
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(f"{isolation}: {e}")

        def merge(times):
            c = connect(db)
            try:
                for _ in range(times):
                    scalar(c, "SELECT dx.compact_contents_changes()")
            except Exception as e:  # noqa: BLE001
                errors.append(f"merge: {e}")
            c.close()

        threads = [threading.Thread(target=run, args=(600, "read committed", 1)),
                   threading.Thread(target=run, args=(600, "read committed", 401)),
                   threading.Thread(target=run, args=(300, "repeatable read", 801)),
                   threading.Thread(target=run, args=(300, "serializable", 1201)),
                   threading.Thread(target=merge, args=(40,))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], errors[:3]
        rows, transactions = _rows(admin)
        assert transactions == 1800 + SETUP_WRITES
        assert rows < 1800
        scalar(admin, "SELECT dx.compact_contents_changes()")
        assert _rows(admin) == (1, 1800 + SETUP_WRITES)
