"""(harden) Shard contents versions after shard moves and a rebalance: dx.version_shards puts the
contents-version trigger on each shard placement (a worker-local table), and a placement's unit
profile is cached under (its OID on that worker, its contents version). A move makes a new table on
the target worker, without the trigger (it was created on the placement, not on the distributed
table, whose DDL Citus replays): the placement has no version until dx.version_shards runs again,
so its profile is built per statement, never served from an entry of the old placement. Checked:
the triggers per placement before and after each move, and exact bounded answers (noiseless table:
each unit keeps least(n, k) rows) after writes into the moved shard that make a light unit heavy,
before and after versioning again, after moving the shard back, and after rebalance_table_shards."""
from citus_common import citus_db, connect, execute, rows, scalar
from test_citus_units import check_bounded, make_person_table

T = "pmove"


def placements_with_trigger(conn):
    """Per placement of T: whether it has its dx_contents_<own OID> trigger (ENABLE ALWAYS)."""
    got = rows(conn, f"SELECT shardid, nodeport, result FROM run_command_on_placements('{T}', $$SELECT EXISTS (SELECT 1 "
                     "FROM pg_trigger WHERE tgrelid = %1$L::regclass AND tgname = 'dx_contents_' || %1$L::regclass::oid "
                     "AND tgenabled = 'A')$$) ORDER BY 1, 2")
    return {(s, p): r == "t" for s, p, r in got}


def move(conn, shard, to_port):
    node, port_ = rows(conn, "SELECT nodename, nodeport FROM citus_shards WHERE shardid = %s", (shard,))[0]
    execute(conn, "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'block_writes')",
            (shard, node, port_, node, to_port))


def make_heavy(conn, shard, first_id):
    """Gives a light unit of `shard` 4 more rows (k = 3: it becomes heavy); returns the unit."""
    person = scalar(conn, f"SELECT person FROM {T} WHERE get_shard_id_for_distribution_column(%s, person) = %s "
                          f"GROUP BY person HAVING count(*) = 1 ORDER BY person LIMIT 1", (T, shard))
    execute(conn, f"INSERT INTO {T} SELECT %s + g, person, age, region, income, flag "
                  f"FROM (SELECT * FROM {T} WHERE person = %s LIMIT 1) s, generate_series(1, 4) g", (first_id, person))
    return person


def test_moved_shard_placements_have_no_version_until_versioned_again():
    with citus_db() as db:
        conn = connect("coord", db)
        make_person_table(conn, T, "person", persons=1200)
        assert scalar(conn, f"SELECT dx.version_shards('{T}')") == 8
        before = placements_with_trigger(conn)
        assert len(before) == 8 and all(before.values()), before
        check_bounded(conn, T, 3)
        check_bounded(conn, T, 3)  # (the profiles cached per shard version)
        shard, from_port = rows(conn, "SELECT shardid, nodeport FROM citus_shards WHERE table_name = %s::regclass "
                                      "ORDER BY shardid LIMIT 1", (T,))[0]
        to_port = scalar(conn, "SELECT nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 "
                               "AND nodeport <> %s LIMIT 1", (from_port,))
        move(conn, shard, to_port)
        after = placements_with_trigger(conn)
        assert after[(shard, to_port)] is False, after  # the new placement: no trigger, no version
        assert all(v for (s, _), v in after.items() if s != shard), after
        # a light unit of the moved shard made heavy: bounded now, and after another write
        make_heavy(conn, shard, 500000)
        check_bounded(conn, T, 3)
        make_heavy(conn, shard, 510000)
        check_bounded(conn, T, 3)
        # versioned again: cached under the new placement's OID and version; a write moves the version
        assert scalar(conn, f"SELECT dx.version_shards('{T}')") == 8
        assert all(placements_with_trigger(conn).values())
        check_bounded(conn, T, 3)
        check_bounded(conn, T, 3)
        make_heavy(conn, shard, 520000)
        check_bounded(conn, T, 3)
        # back to the first worker (a new table there again; the entries of its first placement,
        # under the old OID, are never read for it)
        move(conn, shard, from_port)
        assert placements_with_trigger(conn)[(shard, from_port)] is False
        make_heavy(conn, shard, 530000)
        check_bounded(conn, T, 3)
        assert scalar(conn, f"SELECT dx.version_shards('{T}')") == 8
        check_bounded(conn, T, 3)
        # unbalanced (5 and 3 shards), then rebalanced: the moved placements have no version
        move(conn, shard, to_port)
        execute(conn, "SELECT dx.version_shards(%s)", (T,))
        check_bounded(conn, T, 3)
        execute(conn, "SELECT rebalance_table_shards(%s, shard_transfer_mode => 'block_writes')", (T,))
        moved = [k for k, v in placements_with_trigger(conn).items() if not v]
        per_node = rows(conn, "SELECT nodeport, count(*) FROM citus_shards WHERE table_name = %s::regclass GROUP BY 1 ORDER BY 1", (T,))
        assert [n for _, n in per_node] == [4, 4], per_node
        assert moved, "the rebalancer moved no shard"
        for s, _ in moved:
            make_heavy(conn, s, 540000 + 1000 * (s % 100))
        check_bounded(conn, T, 3)
        conn.close()
