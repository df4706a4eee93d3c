"""Red-team attacks (session 16) on per-shard unit bounding (citusunit: dx._unit_keep_shard, shard
profiles cached per shard contents version, dx.version_shards): a shard split after its profile was
cached (new shards without the version trigger, rows moved to new OIDs and ctids), TRUNCATE and new
rows written at the old ctids, shards with two placements, a unit's rows rewritten by UPDATE. Every
table is noiseless, so a released answer IS the bounded one: each test fails if a unit keeps more
than k rows or counts more than once (a stale profile)."""
from citus_common import citus_db, connect, execute, rows, scalar
from test_citus_units import check_bounded, make_person_table


def _per_shard(conn, table):
    """The statement is bounded per shard on the workers (the attack's path, not the window's)."""
    plan = "\n".join(r[0] for r in rows(conn, f"EXPLAIN (VERBOSE) SELECT dx.count(*) FROM {table}"))
    assert "_unit_keep_shard" in plan, plan


def _split_first_shard(conn, table):
    """Splits the table's first shard at the middle of its hash range, the halves on both workers;
    returns the new shards' ids."""
    shard, lo, hi = rows(conn, "SELECT shardid, shardminvalue::bigint, shardmaxvalue::bigint FROM pg_dist_shard "
                               "WHERE logicalrelid = %s::regclass ORDER BY shardid LIMIT 1", (table,))[0]
    nodes = [r[0] for r in rows(conn, "SELECT nodeid FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 "
                                      "ORDER BY nodeid")]
    execute(conn, "SELECT citus_split_shard_by_split_points(%s, ARRAY[%s], ARRAY[%s, %s], 'block_writes')",
            (shard, str((lo + hi) // 2), nodes[0], nodes[-1]))
    before = {r[0] for r in rows(conn, "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = %s::regclass", (table,))}
    assert shard not in before
    return before


def test_split_shards_keep_k_before_and_after_versioning():
    """A shard split after its profile was cached per version: its rows move to two new shards (new
    OIDs, new ctids, no version trigger). Answers stay exact (each unit whole in one new shard, its
    profile built per statement); a heavy unit written into a new shard keeps k rows; after
    dx.version_shards the new shards are versioned (every placement) and still exact after writes."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_person_table(conn, "ps", "person", persons=900, shards=4)
        assert scalar(conn, "SELECT dx.version_shards('ps')") == 4
        check_bounded(conn, "ps", 3)
        check_bounded(conn, "ps", 3)  # (profiles cached per shard version)
        _split_first_shard(conn, "ps")
        assert scalar(conn, "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'ps'::regclass") == 5
        _per_shard(conn, "ps")
        check_bounded(conn, "ps", 3)
        # a heavy unit in every shard, the new ones included (no version: a stale profile would keep them all)
        execute(conn, "INSERT INTO ps SELECT 500000 + g, p, 30, 'north', 1000, true "
                      "FROM generate_series(1, 9) g, generate_series(100001, 100040) p")
        check_bounded(conn, "ps", 3)
        execute(conn, "DELETE FROM ps WHERE person % 5 = 0")
        check_bounded(conn, "ps", 3)
        assert scalar(conn, "SELECT dx.version_shards('ps')") == 5
        check_bounded(conn, "ps", 3)
        execute(conn, "INSERT INTO ps SELECT 600000 + g, p, 31, 'south', 2000, false "
                      "FROM generate_series(1, 7) g, generate_series(200001, 200040) p")
        check_bounded(conn, "ps", 3)
        conn.close()


def test_truncate_and_rows_at_the_old_ctids_keep_k():
    """A versioned shard's profile is cached; TRUNCATE then new rows (other units, heavy ones, written
    at the same ctids the old rows had), and an UPDATE that rewrites every row of a unit (new ctids,
    the old ones dead): each a new version, so each answer is of the new rows, each unit k rows."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_person_table(conn, "pt", "person", persons=600, shards=4)
        assert scalar(conn, "SELECT dx.version_shards('pt')") == 4
        _per_shard(conn, "pt")
        check_bounded(conn, "pt", 3)
        execute(conn, "TRUNCATE pt")
        execute(conn, "INSERT INTO pt SELECT g, 1 + g % 50, 18 + g % 50, 'east', 100 * (g % 50), g % 2 = 0 "
                      "FROM generate_series(1, 2000) g")  # 50 units of 40 rows each
        check_bounded(conn, "pt", 3)
        assert int(float(scalar(conn, "SELECT dx.count(*) FROM pt"))) == 150
        execute(conn, "UPDATE pt SET income = income + 100 WHERE person = 7")
        check_bounded(conn, "pt", 3)
        execute(conn, "VACUUM pt")
        execute(conn, "INSERT INTO pt SELECT 10000 + g, 1000 + g % 3, 40, 'west', 300, true FROM generate_series(1, 60) g")
        check_bounded(conn, "pt", 3)
        conn.close()


def test_two_placements_per_shard_keep_k():
    """Shards with two placements (replication factor 2): dx.version_shards versions both; a write
    reaches both; whichever placement a task reads, each unit keeps k rows."""
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SET citus.shard_replication_factor = 2")
        make_person_table(conn, "pr", "person", persons=600, shards=4)
        execute(conn, "RESET citus.shard_replication_factor")
        assert scalar(conn, "SELECT count(*) FROM pg_dist_placement p JOIN pg_dist_shard s USING (shardid) "
                            "WHERE s.logicalrelid = 'pr'::regclass") == 8
        assert scalar(conn, "SELECT dx.version_shards('pr')") == 8
        _per_shard(conn, "pr")
        for policy in ("round-robin", "greedy", "first-replica"):
            execute(conn, f"SET citus.task_assignment_policy = '{policy}'")
            check_bounded(conn, "pr", 3)
        execute(conn, "INSERT INTO pr SELECT 700000 + g, p, 33, 'north', 900, true "
                      "FROM generate_series(1, 8) g, generate_series(300001, 300020) p")
        for policy in ("round-robin", "greedy", "first-replica"):
            execute(conn, f"SET citus.task_assignment_policy = '{policy}'")
            check_bounded(conn, "pr", 3)
        conn.close()
