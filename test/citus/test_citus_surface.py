"""Attacks on the Citus surface by an analyst (issue 13): on the coordinator, every Citus function and
view that runs SQL on nodes, measures or counts shards, or carries Citus's internal aggregate states;
the settings that show shards; GRANTs that Citus copies onto shards; on a worker, direct reads of
shards (privileges) and the pg_hba.conf rejection that closes the worker's statistics.

Every attempt must be refused or return no exact row count or size of protected data. The counts
per category are printed (ATTEMPTS) for the closing note."""
import collections
import os

import psycopg2

from citus_common import HOST, citus_db, connect, create_role, execute, port, rows, scalar

ANALYST = "surface_mallory"
ROWS = 1234
ATTEMPTS = collections.Counter()
PRIV = "42501"


def _setup(db):
    create_role(ANALYST)
    c = connect("coord", db)
    execute(c, "CREATE TABLE people (id int PRIMARY KEY, age int, sex text)")
    execute(c, "SELECT create_distributed_table('people', 'id', shard_count := 4)")
    execute(c, f"INSERT INTO people SELECT i, 18 + i % 70, CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END "
               f"FROM generate_series(1, {ROWS}) i")
    execute(c, "ANALYZE people")
    execute(c, "SELECT dx.protect_table('people', 1.0)")
    execute(c, """SELECT dx.set_column('people', 'age', '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}')""")
    execute(c, """SELECT dx.set_column('people', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}')""")
    execute(c, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
    execute(c, "SELECT dx.grant_budget(%s::regrole, 'people', 1000)", (ANALYST,))
    execute(c, "CREATE TABLE pub (k int, v text)")
    execute(c, "SELECT create_distributed_table('pub', 'k')")
    execute(c, "INSERT INTO pub SELECT i, 'x' FROM generate_series(1, 10) i")
    execute(c, "GRANT SELECT ON pub TO PUBLIC")
    shards = [r[0] for r in rows(c, "SELECT shard_name(logicalrelid, shardid) FROM pg_dist_shard "
                                    "WHERE logicalrelid = 'people'::regclass ORDER BY shardid")]
    c.close()
    return shards


def refused(conn, sql, category, code=PRIV, params=None):
    """The statement fails with `code` (a privilege error with a hint unless told; None: any error)."""
    ATTEMPTS[category] += 1
    try:
        execute(conn, sql, params)
    except psycopg2.Error as e:
        if code is None:
            return e
        assert e.pgcode == code, f"{sql}: {e.pgcode} {e.pgerror}"
        if code == PRIV and "permission denied" not in (e.pgerror or ""):
            assert e.diag.message_hint, f"{sql}: no hint"
        return e
    raise AssertionError(f"not refused: {sql}")


def no_exact_number(values, exact, what):
    for v in values:
        assert v is None or v not in exact, f"{what}: {v} is an exact count or size"


def test_coordinator_functions_that_run_sql():
    with citus_db() as db:
        _setup(db)
        a = connect("coord", db, user=ANALYST)
        count_on_shard = "SELECT count(*) FROM %s"
        for sql in [
            "SELECT * FROM run_command_on_workers($$SELECT sum(n_live_tup) FROM pg_stat_user_tables$$)",
            "SELECT * FROM run_command_on_all_nodes($$SELECT 1$$)",
            "SELECT * FROM run_command_on_coordinator($$SELECT 1$$)",
            f"SELECT * FROM run_command_on_shards('people', '{count_on_shard}')",
            f"SELECT * FROM run_command_on_placements('people', '{count_on_shard}')",
            f"SELECT * FROM run_command_on_colocated_placements('people', 'people', '{count_on_shard}')",
            f"SELECT * FROM run_command_on_shards('pub', '{count_on_shard}')",  # any table
            "SELECT * FROM master_run_on_worker(ARRAY['127.0.0.1'], ARRAY[%d], ARRAY['SELECT 1'], false)" % port("w1"),
            "SELECT citus_run_local_command('SELECT 1')",
            "SELECT create_intermediate_result('r', 'SELECT count(*) FROM people')",
            "SELECT broadcast_intermediate_result('r', 'SELECT 1')",
            "SELECT * FROM worker_partition_query_result('r', 'SELECT 1', 0, 'hash', ARRAY['0'], ARRAY['1'], false)",
            "SELECT * FROM worker_last_saved_explain_analyze()",
            # run_command_on_* hidden in a subquery, a CTE and a plpgsql EXECUTE
            "SELECT (SELECT result FROM run_command_on_workers('SELECT 1') LIMIT 1)",
            "WITH r AS (SELECT * FROM run_command_on_workers('SELECT 1')) SELECT * FROM r",
            "DO $$ BEGIN PERFORM run_command_on_workers('SELECT 1'); END $$",
        ]:
            refused(a, sql, "run SQL on nodes")
        # a view the DBA granted to PUBLIC: refused by the executor's admission check
        own = connect("coord", db)
        execute(own, "CREATE VIEW node_counts AS SELECT * FROM run_command_on_workers("
                     "$$SELECT sum(n_live_tup) FROM pg_stat_user_tables$$)")
        execute(own, "CREATE VIEW people_size AS SELECT citus_table_size('people') AS s")
        execute(own, "GRANT SELECT ON node_counts, people_size TO PUBLIC")
        own.close()
        refused(a, "SELECT * FROM node_counts", "run SQL on nodes")
        ATTEMPTS["sizes (substituted)"] += 1
        assert scalar(a, "SELECT s FROM people_size") is None
        a.close()


def test_coordinator_internal_transport():
    with citus_db() as db:
        _setup(db)
        a = connect("coord", db, user=ANALYST)
        forged = "SELECT coord_combine_agg('dx._partial'::regproc, '{\"n\": 1234}'::cstring, NULL::float8)"
        for sql in [
            forged,
            "SELECT coord_combine_agg('sum(int8)'::regprocedure, '1234'::cstring, NULL::int8)",
            "SELECT worker_partial_agg('sum(int8)'::regprocedure, 1::int8)",
            "SELECT worker_partial_agg('sum(int8)'::regprocedure, k::int8) FROM pub",
            "SELECT * FROM read_intermediate_result('r', 'text') AS r(a text)",
            "SELECT * FROM read_intermediate_results(ARRAY['r'], 'text') AS r(a text)",
            "SELECT fetch_intermediate_results(ARRAY['r'], '127.0.0.1', %d)" % port("w1"),
        ]:
            refused(a, sql, "internal transport")
        a.close()


def test_coordinator_sizes_and_statistics():
    with citus_db() as db:
        _setup(db)
        own = connect("coord", db)
        exact = set()
        exact.add(ROWS)
        exact.update(r[0] for r in rows(own, "SELECT size FROM citus_shard_sizes()"))
        exact.update(scalar(own, f"SELECT {f}('people')") for f in
                     ("citus_table_size", "citus_relation_size", "citus_total_relation_size"))
        pub_size = scalar(own, "SELECT citus_table_size('pub')")
        own.close()
        a = connect("coord", db, user=ANALYST)
        # substituted: NULL for the protected table, Citus's answer for the others
        for f in ("citus_table_size", "citus_relation_size", "citus_total_relation_size"):
            ATTEMPTS["sizes (substituted)"] += 1
            assert scalar(a, f"SELECT {f}('people')") is None, f
        ATTEMPTS["sizes (substituted)"] += 1
        assert scalar(a, "SELECT citus_total_relation_size('people', fail_on_error := false)") is None
        ATTEMPTS["sizes (substituted)"] += 1
        assert scalar(a, "SELECT citus_table_size('pub')") == pub_size
        ATTEMPTS["sizes (substituted)"] += 1
        sizes = rows(a, "SELECT s.size FROM citus_shard_sizes() s JOIN pg_dist_shard d ON d.shardid = s.shard_id "
                        "WHERE d.logicalrelid = 'people'::regclass")
        assert len(sizes) == 4 and all(r[0] is None for r in sizes), sizes
        ATTEMPTS["sizes (substituted)"] += 1
        tables = dict(rows(a, "SELECT table_name::text, table_size FROM citus_tables"))
        assert tables["people"] is None and tables["pub"] is not None, tables
        ATTEMPTS["sizes (substituted)"] += 1
        shard_sizes = rows(a, "SELECT table_name::text, shard_size FROM citus_shards")
        assert all(s is None for t, s in shard_sizes if t == "people"), shard_sizes
        assert any(s is not None for t, s in shard_sizes if t == "pub"), shard_sizes
        for sql in [
            "SELECT worker_partitioned_relation_size('people')",
            "SELECT worker_partitioned_relation_total_size('people')",
            "SELECT worker_partitioned_table_size('people')",
            "SELECT citus_shard_cost_by_disk_size(shardid) FROM pg_dist_shard",
            "SELECT * FROM citus_local_disk_space_stats()",
            "SELECT * FROM get_rebalance_table_shards_plan('people', rebalance_strategy := 'by_disk_size')",
            "SELECT * FROM get_rebalance_progress()",
            "SELECT citus_update_table_statistics('people')",
            "SELECT master_update_table_statistics('people')",
            "SELECT shardid, shardlength FROM pg_dist_placement",
            "SELECT * FROM pg_dist_placement",
            "SELECT * FROM pg_dist_shard_placement",
        ]:
            refused(a, sql, "sizes (refused)")
        for sql in [
            "SELECT * FROM citus_stats",
            "SELECT * FROM citus_stat_statements",
            "SELECT * FROM citus_stat_statements()",
            "SELECT * FROM citus_query_stats()",
            "SELECT * FROM citus_stat_counters",
            "SELECT * FROM citus_stat_counters(0)",
            "SELECT * FROM citus_stat_tenants",
            "SELECT * FROM citus_stat_tenants_local",
            "SELECT * FROM citus_stat_activity",
            "SELECT * FROM citus_dist_stat_activity",
            "SELECT citus_stat_tenants_reset()",
        ]:
            refused(a, sql, "statistics")
        # metadata an analyst may read: no size or row count in it
        ATTEMPTS["metadata (allowed, no counts)"] += 1
        assert scalar(a, "SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'people'::regclass") == 4
        ATTEMPTS["metadata (allowed, no counts)"] += 1
        cols = [r[0] for r in rows(a, "SELECT shardid, shardminvalue, shardmaxvalue FROM pg_dist_shard")]
        no_exact_number(cols, {ROWS}, "pg_dist_shard")
        ATTEMPTS["metadata (allowed, no counts)"] += 1
        assert rows(a, "SELECT shardid, groupid, shardstate FROM pg_dist_placement LIMIT 1")
        a.close()


def test_coordinator_shard_visibility_settings():
    with citus_db() as db:
        _setup(db)
        a = connect("coord", db, user=ANALYST)
        for sql in [
            "SET citus.override_table_visibility = off",
            "SET LOCAL citus.override_table_visibility = off",
            "SET citus.show_shards_for_app_name_prefixes = '*'",
            "SET citus.show_shards_for_app_name_prefixes TO 'psql'",
        ]:
            refused(a, sql, "shard visibility settings")
        # set another way (set_config, ALTER ROLE ... SET of her own role): refused at the next statement
        ATTEMPTS["shard visibility settings"] += 1
        try:
            execute(a, "SELECT set_config('citus.override_table_visibility', 'off', false)")
        except psycopg2.Error as e:
            assert e.pgcode == PRIV, e.pgerror
        else:
            refused(a, "SELECT relname FROM pg_class LIMIT 1", "shard visibility settings")
            execute(a, "RESET citus.override_table_visibility")
        a.close()
        own = connect("coord", db)
        execute(own, f"ALTER ROLE {ANALYST} IN DATABASE {db} SET citus.override_table_visibility = off")
        own.close()
        a = connect("coord", db, user=ANALYST)
        refused(a, "SELECT relname FROM pg_class LIMIT 1", "shard visibility settings")
        a.close()
        own = connect("coord", db)
        execute(own, f"ALTER ROLE {ANALYST} IN DATABASE {db} RESET citus.override_table_visibility")
        own.close()
        a = connect("coord", db, user=ANALYST)
        ATTEMPTS["shard visibility settings"] += 1
        assert scalar(a, "SELECT count(*) FROM pg_class WHERE relname LIKE 'people%'") >= 1
        a.close()


def test_grants_never_reach_shards():
    with citus_db() as db:
        shards = _setup(db)
        own = connect("coord", db)
        execute(own, "DROP ROLE IF EXISTS surface_group")
        execute(own, "CREATE ROLE surface_group")
        execute(own, f"GRANT surface_group TO {ANALYST}")
        for sql in [
            f"GRANT SELECT ON people TO {ANALYST}",
            f"GRANT SELECT (age, sex) ON people TO {ANALYST}",
            "GRANT SELECT ON people TO PUBLIC",
            "GRANT SELECT ON people TO surface_group",
            f"GRANT ALL ON people TO {ANALYST}",
            f"GRANT INSERT, UPDATE ON people TO {ANALYST}",
            f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {ANALYST}",
        ]:
            refused(own, sql, "GRANT propagation")
        ATTEMPTS["GRANT propagation"] += 1
        execute(own, f"GRANT SELECT ON pub TO {ANALYST}")  # an unprotected table: allowed
        execute(own, f"REVOKE surface_group FROM {ANALYST}")
        execute(own, "DROP ROLE surface_group")
        own.close()
        # no privilege of the analyst on any shard, on any node
        for node in ("w1", "w2"):
            w = connect(node, db)
            ATTEMPTS["GRANT propagation"] += 1
            held = scalar(w, "SELECT count(*) FROM pg_class c WHERE c.relname = ANY(%s) "
                             "AND has_any_column_privilege(%s, c.oid, 'SELECT')", (shards, ANALYST))
            assert held == 0, (node, held)
            w.close()


def test_worker_direct():
    with citus_db() as db:
        shards = _setup(db)
        for node in ("w1", "w2"):
            w = connect(node, db, user=ANALYST)
            local = [s for s in shards if scalar(w, "SELECT to_regclass(%s) IS NOT NULL", (s,))]
            assert local, node
            for s in local:
                refused(w, f"SELECT count(*) FROM {s}", "worker: shard reads")
                refused(w, f"SELECT * FROM {s} LIMIT 1", "worker: shard reads")
                refused(w, f"COPY {s} TO STDOUT", "worker: shard reads")
            w.close()


def test_worker_pg_hba_rejects_analysts():
    """A worker's statistics (pg_class.reltuples, pg_stat_user_tables of shards) are the worker's own:
    dxpriv on the coordinator cannot guard them, so operators reject analysts in the workers'
    pg_hba.conf (README, Running on Citus). Shown here with a role of this test only."""
    role = "surface_direct"
    create_role(role)
    work = os.environ.get("DXPRIV_CITUS_WORK")
    hba = os.path.join(work, "w1", "data", "pg_hba.conf") if work else None
    if not hba or not os.access(hba, os.W_OK):
        print("skipped: the worker's pg_hba.conf is not writable here")
        return
    with open(hba) as f:
        original = f.read()
    try:
        with open(hba, "w") as f:
            f.write(f"host all {role} {HOST}/32 reject\n" + original)
        admin = connect("w1")
        execute(admin, "SELECT pg_reload_conf()")
        admin.close()
        ATTEMPTS["worker: pg_hba reject"] += 1
        try:
            psycopg2.connect(host=HOST, port=port("w1"), user=role, dbname="postgres").close()
        except psycopg2.OperationalError as e:
            assert "pg_hba.conf rejects connection" in str(e), e
        else:
            raise AssertionError("the worker accepted the rejected role")
    finally:
        with open(hba, "w") as f:
            f.write(original)
        admin = connect("w1")
        execute(admin, "SELECT pg_reload_conf()")
        admin.close()


def test_zz_report():
    total = sum(ATTEMPTS.values())
    for cat, n in sorted(ATTEMPTS.items()):
        print(f"  {cat}: {n}")
    print(f"  total attempts: {total} in {len(ATTEMPTS)} categories")
    assert total > 0
