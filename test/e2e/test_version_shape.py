"""The tree shape behind a contents version and the protected ancestors, kept per backend until an
invalidation message (ledger/contents_version.cpp TreeShape, analyst/inheritance.cpp
FoundAncestors): a warm analyst session over a partitioned table must see, at its next statement,
what another session changed in the tree: a partition attached without the version trigger, a
trigger disabled, a partition rewritten, a table attached that the analyst could read raw before,
a subscription made to write into a partition. Each must make the next statement a new, charged
release (or a refusal), never a replay of the answer cached before."""
from attack_fixture import ensure_analyst_role
from e2e_common import connect, execute, fresh_db, scalar

ROLE = "shape_analyst"
SQL = "SELECT sum(v) FROM tree_t"


def _setup(db):
    admin = connect(db)
    execute(admin, f"ALTER DATABASE {db} SET dxpriv.cache_lifetime = 3600")
    ensure_analyst_role(admin, ROLE)
    execute(admin, "SELECT dx.add_analyst(%s::regrole)", (ROLE,))
    execute(admin, "CREATE TABLE tree_t (id int, v int) PARTITION BY RANGE (id)")
    for i in range(20):
        execute(admin, f"CREATE TABLE tree_t_{i} PARTITION OF tree_t FOR VALUES FROM ({i * 100}) TO ({(i + 1) * 100})")
    execute(admin, "INSERT INTO tree_t SELECT g, g % 50 FROM generate_series(0, 1999) g")
    execute(admin, "SELECT dx.protect_table('tree_t', 1.0)")
    execute(admin, "SELECT dx.set_column('tree_t', 'v', '{\"min\": 0, \"max\": 49}', "
                   "'{\"type\": \"absolute\", \"scale\": 5}')")
    execute(admin, "SELECT dx.grant_budget(%s::regrole, 'tree_t', 1e6)", (ROLE,))
    return admin


def _spent(admin):
    return scalar(admin, "SELECT coalesce(sum(spent), 0) FROM dx.budget_grants WHERE role = %s::regrole", (ROLE,))


def _warm(db):
    a = connect(db, user=ROLE)
    execute(a, "SET dxpriv.epsilon = 0.5")
    return a


def _charged(admin, a):
    """Runs SQL as the warm analyst; True when it was charged (a new release)."""
    before = _spent(admin)
    scalar(a, SQL)
    return _spent(admin) > before


def _warm_replaying(admin, db):
    a = _warm(db)
    _charged(admin, a)
    assert not _charged(admin, a)  # warm: the shape is kept, the answer replays
    assert not _charged(admin, a)
    return a


def test_partition_attached_without_trigger_is_seen_by_a_warm_session():
    with fresh_db() as db:
        admin = _setup(db)
        a = _warm_replaying(admin, db)
        execute(admin, "CREATE TABLE tree_t_late (id int, v int)")
        execute(admin, "INSERT INTO tree_t_late SELECT g, 49 FROM generate_series(2000, 2099) g")
        execute(admin, "ALTER TABLE tree_t ATTACH PARTITION tree_t_late FOR VALUES FROM (2000) TO (2100)")
        # the new member has no version trigger: the tree has no version, every statement is charged
        assert _charged(admin, a)
        assert _charged(admin, a)
        execute(admin, "SELECT dx.protect_table('tree_t', 1.0)")  # reinstalls the missing trigger
        assert _charged(admin, a)
        assert not _charged(admin, a)
        a.close()


def test_trigger_disabled_or_partition_rewritten_is_seen_by_a_warm_session():
    with fresh_db() as db:
        admin = _setup(db)
        a = _warm_replaying(admin, db)
        tg = scalar(admin, "SELECT 'dx_contents_' || 'tree_t'::regclass::oid")
        execute(admin, f"ALTER TABLE tree_t_3 DISABLE TRIGGER {tg}")
        execute(admin, "UPDATE tree_t SET v = 0 WHERE id = 305")  # not counted: no trigger fires
        assert _charged(admin, a)
        assert _charged(admin, a)
        execute(admin, f"ALTER TABLE tree_t_3 ENABLE ALWAYS TRIGGER {tg}")
        assert _charged(admin, a)  # another trigger identity: not the answer of before the disable
        assert not _charged(admin, a)
        execute(admin, "VACUUM FULL tree_t_7")  # a new relfilenode: a new version
        assert _charged(admin, a)
        assert not _charged(admin, a)
        a.close()


def test_table_attached_under_a_protected_parent_is_refused_raw_at_once():
    with fresh_db() as db:
        admin = _setup(db)
        execute(admin, "CREATE TABLE tree_t_open (id int, v int)")
        execute(admin, "INSERT INTO tree_t_open VALUES (3000, 7)")
        execute(admin, f"GRANT SELECT ON tree_t_open TO {ROLE}")
        a = _warm_replaying(admin, db)
        assert scalar(a, "SELECT v FROM tree_t_open") == 7  # not protected yet: readable
        for i in range(3):  # warm the protected-ancestor memo on the other partitions
            scalar(a, SQL)
        execute(admin, "ALTER TABLE tree_t ATTACH PARTITION tree_t_open FOR VALUES FROM (3000) TO (3100)")
        try:
            scalar(a, "SELECT v FROM tree_t_open")
            raise AssertionError("a partition of a protected table was read raw")
        except Exception as e:  # noqa: BLE001
            assert "only through aggregates" in str(e) or "permission denied" in str(e), e
        a.close()
