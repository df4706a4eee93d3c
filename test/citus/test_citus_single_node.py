"""Tables Citus answers on one node (issue 27): reference tables, single-shard tables (distributed
with a NULL key, or in a distributed schema) and one-shard tables. One query level is planned
without Citus's router planner (the partial sums go to the shard's node, the release stays on the
coordinator that charged); statements of several levels (GROUP BY, dx.mode/median, privacy units)
run whole where the shard is when it is on the coordinator (reference tables: its placement, local
execution in the charging backend); when the one shard is on a worker, the levels that read it
become Citus subplans on the worker (native sums and counts only) and the release runs on the
coordinator (planner/distributed_route.h)."""
import psycopg2

import citus_fixture as fx
from citus_common import citus_db, connect, create_role, execute, rows, scalar

NOISELESS = [(c, d, '{"type": "none"}') for c, d, _ in fx.COLUMNS]


def _table(conn, name, how, presence="Infinity", columns=NOISELESS, unit=False):
    execute(conn, f"CREATE TABLE {name} (id bigint, person int, age int, sex text, region text, income int)")
    execute(conn, how.format(t=name))
    execute(conn, f"INSERT INTO {name} SELECT g, g % 700, 18 + (g * 37) % 73, CASE WHEN (g * 13) % 5 < 3 THEN 'F' "
                  "ELSE 'M' END, (ARRAY['north','south','east','west'])[1 + (g * 7) % 4], ((g::bigint * 7919) % 2000) * 100 "
                  "FROM generate_series(1, 3000) g")
    execute(conn, f"SELECT dx.protect_table('{name}', '{presence}')")
    for col, domain, metric in columns:
        execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (name, col, domain, metric))
    if unit:
        execute(conn, f"SELECT dx.set_privacy_unit('{name}', 'person', 10)")
    execute(conn, f"SELECT dx.grant_budget('postgres', '{name}', 100000)")
    execute(conn, f"SELECT dx.grant_budget(%s::regrole, '{name}', 1000)", (fx.ANALYST,))


KINDS = {
    "ref": "SELECT create_reference_table('{t}')",
    "single": "SELECT create_distributed_table('{t}', NULL)",
    "one_shard": "SELECT create_distributed_table('{t}', 'id', shard_count => 1)",
}
ONE_LEVEL = [
    ("SELECT dx.count(*) FROM {t}", "SELECT count(*) FROM {t}"),
    ("SELECT dx.sum(income), round(dx.avg(age)::numeric, 6) FROM {t} WHERE sex = 'F'",
     "SELECT sum(income), round(avg(age)::numeric, 6) FROM {t} WHERE sex = 'F'"),
]
SEVERAL_LEVELS = [
    ("SELECT region, dx.count(*), dx.sum(income) FROM {t} GROUP BY region ORDER BY 1",
     "SELECT r, count(v.id), coalesce(sum(v.income), 0) FROM unnest(ARRAY['east','none','north','south','west']) r "
     "LEFT JOIN {t} v ON v.region = r GROUP BY r ORDER BY 1"),
    ("SELECT s.n FROM (SELECT dx.count(*) AS n FROM {t} WHERE age > 30) s", "SELECT count(*) FROM {t} WHERE age > 30"),
]


def _norm(rs):
    return [tuple(round(float(v), 6) if not isinstance(v, str) and v is not None else v for v in r) for r in rs]


def test_single_node_tables_noiseless_equal_native_and_one_ledger_row():
    create_role(fx.ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SELECT dx.add_analyst(%s::regrole)", (fx.ANALYST,))
        for kind, how in KINDS.items():
            _table(conn, kind, how)
        execute(conn, "SET citus.enable_schema_based_sharding = on")
        execute(conn, "CREATE SCHEMA tenant")
        execute(conn, "RESET citus.enable_schema_based_sharding")
        _table(conn, "tenant.t", "SELECT 1")
        a = connect("coord", db, user=fx.ANALYST)
        execute(conn, "GRANT USAGE ON SCHEMA tenant TO %s" % fx.ANALYST)
        for t in list(KINDS) + ["tenant.t"]:
            assert scalar(conn, "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = %s::regclass", (t,)) == 1
            for dx_sql, native in ONE_LEVEL + (SEVERAL_LEVELS if t == "ref" else []):
                got, want = _norm(rows(conn, dx_sql.format(t=t))), _norm(rows(conn, native.format(t=t)))
                assert got == want, (t, dx_sql, got, want)
            before = scalar(conn, "SELECT count(*) FROM dx.ledger")
            scalar(a, f"SELECT dx.count(*) FROM {t} WHERE age > 40")
            assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1, t
            if t != "ref":  # the one shard is on a worker: several levels answered, one charge each
                for dx_sql, native in SEVERAL_LEVELS:
                    got, want = _norm(rows(conn, dx_sql.format(t=t))), _norm(rows(conn, native.format(t=t)))
                    assert got == want, (t, dx_sql, got, want)
                    n = scalar(conn, "SELECT count(*) FROM dx.ledger")
                    rows(a, dx_sql.format(t=t))
                    assert scalar(conn, "SELECT count(*) FROM dx.ledger") == n + 1, (t, dx_sql)
        # without Citus's local execution the reference table's statement would reach the coordinator
        # through a new connection, where the release refuses after the charge: refused before it
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        execute(conn, "SET citus.enable_local_execution = off")
        try:
            rows(conn, SEVERAL_LEVELS[0][0].format(t="ref"))
            raise AssertionError("not refused without local execution")
        except psycopg2.Error as e:
            assert e.pgcode == "0A000" and "enable_local_execution" in e.pgerror, e.pgerror
        execute(conn, "RESET citus.enable_local_execution")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before
        # the shard moved to the coordinator: several levels run there
        shard = scalar(conn, "SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'single'::regclass")
        node = rows(conn, "SELECT nodename, nodeport FROM citus_shards WHERE shardid = %s", (shard,))[0]
        execute(conn, "SELECT citus_set_node_property(%s, %s, 'shouldhaveshards', true)",
                ("127.0.0.1", scalar(conn, "SELECT nodeport FROM pg_dist_node WHERE groupid = 0")))
        execute(conn, "SELECT citus_move_shard_placement(%s, %s, %s, '127.0.0.1', "
                      "(SELECT nodeport FROM pg_dist_node WHERE groupid = 0), 'block_writes')", (shard, node[0], node[1]))
        for dx_sql, native in SEVERAL_LEVELS:
            got, want = _norm(rows(a, dx_sql.format(t="single"))), _norm(rows(conn, native.format(t="single")))
            assert got == want, (dx_sql, got, want)
        a.close()
        conn.close()


def test_reference_table_seeded_equal_local_units_and_worker_attacks():
    """A reference table with a privacy unit: seeded answers equal the local table's; the release runs
    on the coordinator (one ledger row there, none on the workers); on a worker the analyst reads no
    placement and releases nothing."""
    create_role(fx.ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SELECT dx.add_analyst(%s::regrole)", (fx.ANALYST,))
        _table(conn, "ref", KINDS["ref"], presence="1.0", columns=fx.COLUMNS, unit=True)
        _table(conn, "loc", "SELECT 1", presence="1.0", columns=fx.COLUMNS, unit=True)
        for q in ("SELECT dx.count(*), dx.sum(income) FROM {t} WHERE age > 30",
                  "SELECT dx.count(DISTINCT person) FROM {t}"):
            got = []
            for t in ("ref", "loc"):
                execute(conn, "SET dxpriv.test_seed = 9")
                got.append(rows(conn, q.format(t=t)))
            assert got[0] == got[1], (q, got)
        a = connect("coord", db, user=fx.ANALYST)
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        rows(a, "SELECT region, dx.count(*) FROM ref GROUP BY region")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
        for bad in ("SELECT * FROM ref", "SELECT age FROM ref WHERE id = 5"):
            try:
                rows(a, bad)
                raise AssertionError(f"not refused: {bad}")
            except psycopg2.Error as e:
                assert e.pgcode == "42501", e.pgerror
        shard = scalar(conn, "SELECT shard_name FROM citus_shards WHERE table_name = 'ref'::regclass LIMIT 1")
        for node in ("w1", "w2"):
            w = connect(node, db, user=fx.ANALYST)
            for bad in (f"SELECT count(*) FROM {shard}", f"SELECT * FROM {shard} LIMIT 1",
                        f"SELECT dx.count(*) FROM {shard}", f"SELECT sum(dx._units(1.0, 1.0)) FROM {shard}"):
                try:
                    rows(w, bad)
                    raise AssertionError(f"not refused on {node}: {bad}")
                except psycopg2.Error:
                    pass
            w.close()
            wc = connect(node, db)
            if scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'"):
                assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
            wc.close()
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
        a.close()
        conn.close()


# Statements of several levels on a single-shard table whose shard is on a worker (issue 27).
ROUTED_SEEDED = [
    "SELECT region, dx.count(*), dx.sum(income) FROM {t} GROUP BY region ORDER BY 1",
    "SELECT region, dx.count(*) FROM {t} GROUP BY region HAVING dx.count(*) > 10 ORDER BY 1 LIMIT 3",
    "SELECT dx.median(age) FROM {t} WHERE sex = 'F'",
    "SELECT dx.count(*), dx.median(age), dx.mode(region) FROM {t}",
    "SELECT region, dx.count(*), dx.median(age), dx.avg(income) FROM {t} GROUP BY region ORDER BY 1",
    "SELECT s.n FROM (SELECT dx.count(*) AS n FROM {t} WHERE age > 30) s",
    "WITH c AS (SELECT dx.sum(income) AS s FROM {t}) SELECT s FROM c",
    "SELECT region, n, sum(n) OVER () FROM (SELECT region, dx.count(*) AS n FROM {t} GROUP BY region) s ORDER BY 1",
    "SELECT sex, region, dx.count(*) FROM {t} GROUP BY ROLLUP (sex, region) ORDER BY 1, 2",
]
ROUTED_UNITS = [
    "SELECT dx.count(*), dx.sum(income) FROM {t} WHERE age > 30",
    "SELECT dx.count(DISTINCT person) FROM {t}",
    "SELECT region, dx.count(*), dx.count(DISTINCT person) FROM {t} GROUP BY region ORDER BY 1",
]
ROUTED_EXACT = [
    ("SELECT sex, region, dx.count(*), dx.sum(income) FROM {t} GROUP BY sex, region ORDER BY 1, 2",
     "SELECT s, r, count(v.id), coalesce(sum(v.income), 0) FROM unnest(ARRAY['F','M']) s CROSS JOIN "
     "unnest(ARRAY['east','none','north','south','west']) r LEFT JOIN {t} v ON v.region = r AND v.sex = s "
     "GROUP BY s, r ORDER BY 1, 2"),
    ("WITH c AS (SELECT dx.sum(income) AS s, round(dx.avg(age)::numeric, 6) AS a FROM {t} WHERE age > 40) "
     "SELECT s, a FROM c", "SELECT sum(income), round(avg(age)::numeric, 6) FROM {t} WHERE age > 40"),
    ("SELECT dx.count(*) FROM {t} WHERE sex = 'M' HAVING dx.count(*) > 0", "SELECT count(*) FROM {t} WHERE sex = 'M'"),
    ("SELECT dx.count(DISTINCT person) FROM {t} WHERE age > 50", "SELECT count(DISTINCT person) FROM {t} WHERE age > 50"),
]


def _on_worker(conn, t):
    port = scalar(conn, "SELECT nodeport FROM citus_shards WHERE table_name = %s::regclass", (t,))
    return port != scalar(conn, "SELECT nodeport FROM pg_dist_node WHERE groupid = 0")


def test_single_shard_on_a_worker_several_levels_release_on_the_coordinator():
    """GROUP BY, dx.median/mode, privacy units, wrappers on a single-shard table whose shard is on a
    worker: noiseless answers equal native SQL, seeded answers equal the local table's, one ledger row
    per statement on the coordinator and none on the workers; the worker's task queries hold only
    native sums and counts (no release, no state); on the worker, releases with the real parameters
    and forged states are refused."""
    import re
    create_role(fx.ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SELECT dx.add_analyst(%s::regrole)", (fx.ANALYST,))
        _table(conn, "exact1", KINDS["single"])
        _table(conn, "exactu", KINDS["single"], unit=True)
        _table(conn, "noisy", KINDS["single"], presence="1.0", columns=fx.COLUMNS)
        _table(conn, "noisy_local", "SELECT 1", presence="1.0", columns=fx.COLUMNS)
        _table(conn, "units", KINDS["single"], presence="1.0", columns=fx.COLUMNS, unit=True)
        _table(conn, "units_local", "SELECT 1", presence="1.0", columns=fx.COLUMNS, unit=True)
        _table(conn, "noisy_multi", "SELECT create_distributed_table('{t}', 'id', shard_count => 4)", presence="1.0",
               columns=fx.COLUMNS)
        _table(conn, "units_multi", "SELECT create_distributed_table('{t}', 'person', shard_count => 4)",
               presence="1.0", columns=fx.COLUMNS, unit=True)
        for t in ("exact1", "exactu", "noisy", "units"):
            assert _on_worker(conn, t), t
        for dx_sql, native in ROUTED_EXACT:
            t = "exactu" if "person" in dx_sql else "exact1"
            got, want = _norm(rows(conn, dx_sql.format(t=t))), _norm(rows(conn, native.format(t=t)))
            assert got == want, (dx_sql, got, want)
        # seeded: equal to the local table; grouped statements draw their groups' noise in the order a
        # distributed plan evaluates them (as on every Citus table): equal to a 4-shard copy, and to the
        # local table's groups
        for qs, t, local, multi in ((ROUTED_SEEDED, "noisy", "noisy_local", "noisy_multi"),
                                    (ROUTED_UNITS, "units", "units_local", "units_multi")):
            for q in qs:
                got = []
                for table in (t, local, multi):
                    execute(conn, "SET dxpriv.test_seed = 21")
                    got.append(rows(conn, q.format(t=table)))
                execute(conn, "RESET dxpriv.test_seed")
                if "GROUP BY" in q:
                    assert got[0] == got[2], (q, got)
                    if "HAVING" not in q:
                        assert [r[0] for r in got[0]] == [r[0] for r in got[1]], (q, got)
                else:
                    assert got[0] == got[1], (q, got)
        # the analyst: one ledger row per statement on the coordinator, none on the workers
        a = connect("coord", db, user=fx.ANALYST)
        for q, t in [(q, "noisy") for q in ROUTED_SEEDED] + [(q, "units") for q in ROUTED_UNITS]:
            before = scalar(conn, "SELECT count(*) FROM dx.ledger")
            rows(a, q.format(t=t))
            assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1, q
        # the worker's tasks compute native sums and counts; every release and state is on the coordinator
        w_port = scalar(conn, "SELECT nodeport FROM citus_shards WHERE table_name = 'noisy'::regclass")
        for q, t in [(q, "noisy") for q in ROUTED_SEEDED[:5]] + [(q, "units") for q in ROUTED_UNITS]:
            plan = [r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + q.format(t=t))]
            tasks = [(plan[i], plan[i + 1]) for i in range(len(plan) - 1) if "Query: " in plan[i]]
            assert any(f"port={w_port}" in node for _, node in tasks), (q, plan)
            for query, node in tasks:
                if f"port={w_port}" in node:
                    for f in ("_release_", "_state_of", "_collect", "_em_collect"):
                        assert f not in query, (q, query)
            if t == "units":  # a privacy unit's bounding runs on the worker too: it returns sums, not rows
                assert any("row_number()" in query and ("sum(" in query or "count(" in query)
                           for query, node in tasks if f"port={w_port}" in node), (q, plan)
        # EXPLAIN ANALYZE stays refused before the charge; without local execution too
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        for bad, setting in ((f"EXPLAIN ANALYZE {ROUTED_SEEDED[0].format(t='noisy')}", None),
                             (ROUTED_SEEDED[0].format(t="noisy"), "SET citus.enable_local_execution = off")):
            if setting:
                execute(conn, setting)
            try:
                rows(conn, bad)
                raise AssertionError(f"not refused: {bad}")
            except psycopg2.Error as e:
                assert e.pgcode == "0A000", e.pgerror
            execute(conn, "RESET citus.enable_local_execution")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before
        # on the worker: the analyst reads no placement; a release with the real parameters and a forged
        # state, or the exponential mechanism's collection, is refused (nothing was charged there)
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + ROUTED_SEEDED[3].format(t="noisy")))
        real = re.findall(r"('\{4,[^']*\}'::double precision\[\])", plan)
        assert real, plan
        shard = scalar(conn, "SELECT shard_name FROM citus_shards WHERE table_name = 'noisy'::regclass")
        w_node = "w1" if w_port == fx_port("w1") else "w2"
        w = connect(w_node, db, user=fx.ANALYST)
        for bad in (f"SELECT count(*) FROM {shard}", f"SELECT dx.count(*) FROM {shard}"):
            try:
                rows(w, bad)
                raise AssertionError(f"not refused on the worker: {bad}")
            except psycopg2.Error:
                pass
        w.close()
        wo = connect(w_node, db)
        for p in real:
            for bad in (f"SELECT dx._release_count(dx._state_of(123::numeric, 5::bigint, {p}, 0), {p}, 0)",
                        f"SELECT dx._em_collect(1, 0, {p}, 5::bigint)",
                        f"SELECT dx._em_collect(x.c, 0, {p}, x.n) FROM (SELECT 1 AS c, count(*) AS n FROM {shard}) x"):
                try:
                    rows(wo, bad)
                    raise AssertionError(f"not refused on the worker: {bad}")
                except psycopg2.Error as e:
                    assert e.pgcode == "42501", e.pgerror
        assert scalar(wo, "SELECT count(*) FROM dx.ledger") == 0
        wo.close()
        other = connect("w2" if w_node == "w1" else "w1", db)
        assert scalar(other, "SELECT count(*) FROM dx.ledger") == 0
        other.close()
        a.close()
        conn.close()


def fx_port(node):
    from citus_common import port
    return port(node)
