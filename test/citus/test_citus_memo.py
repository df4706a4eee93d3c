"""The analysis memo on Citus (issue 23, GROUP BY 70-value key row): where Citus is installed no
table carries the contents trigger, so the memo keys on how Citus holds the table instead of the
rows' version. A statement answered from the memo gives the same seeded answers and the same
charge as its own analysis (a new session, the local copy); a changed policy, changed rows, a
changed distribution and another role are each analysed again (or charged again)."""
import difflib
import re
import time

import citus_fixture as fx
from citus_common import citus_db, connect, execute, rows, scalar

# grouped count/sum/avg with WHERE and FILTER, an empty declared group ('none'), NULL keys and
# NULL values (rows added below), ungrouped statements
STATEMENTS = [
    "SELECT dx.count(*) FROM {t}",
    "SELECT dx.count(*), dx.sum(income), dx.avg(age) FROM {t} WHERE age > 30",
    "SELECT region, dx.count(*), dx.sum(income) FROM {t} GROUP BY region",
    "SELECT region, dx.count(*), dx.avg(income) FROM {t} WHERE age > 60 GROUP BY region",
    "SELECT sex, dx.count(*) FILTER (WHERE income > 100000), dx.sum(income) FILTER (WHERE age < 40), "
    "dx.avg(age) FROM {t} GROUP BY sex",
    "SELECT region, sex, dx.count(*), dx.sum(income) FROM {t} WHERE income < 150000 GROUP BY region, sex",
]


def _with_nulls(conn, table):
    execute(conn, f"INSERT INTO {table} VALUES (900001, 40, 'F', NULL, NULL), (900002, NULL, 'M', 'east', 5000), "
                  f"(900003, 50, NULL, NULL, 7000)")


def _hits(owner):
    return scalar(owner, "SELECT dx._analysis_memo_hits()")


def _from_memo(conn, run, tries=20):
    """Runs `run` until the memo answers it; returns its result and the number of runs. (Any catalog
    invalidation in the cluster, e.g. autovacuum's ANALYZE of a fresh table or another database's
    DDL, gives a new key, so the next statement is analysed again: a miss, never a wrong hit.)"""
    for n in range(1, tries + 1):
        h = _hits(conn)
        got = run()
        if _hits(conn) == h + 1:
            return got, n
        time.sleep(0.2)
    raise AssertionError("the statement is never answered from the memo")


def _seeded(conn, sql, seed):
    """The rows of sql under test seed `seed` (set as the superuser, run as the analyst) and the
    charge of its ledger row (epsilon, scales)."""
    execute(conn, f"RESET ROLE; SET dxpriv.test_seed = {seed}; SET ROLE {fx.ANALYST}")
    got = rows(conn, sql)
    execute(conn, "RESET ROLE")
    charge = rows(conn, "SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1")
    return got, charge


def test_memo_hits_give_the_answers_and_charges_of_their_analysis():
    with citus_db() as db:
        fx.build(db, rows=30000, shards=8)
        setup = connect("coord", db)
        for t in ("people", "people_local"):
            _with_nulls(setup, t)
        setup.close()
        first = connect("coord", db)
        for i, q in enumerate(STATEMENTS):
            sql = q.format(t="people")
            before_rows = scalar(first, "SELECT count(*) FROM dx.ledger")
            hits = _hits(first)
            fresh = _seeded(first, sql, 30 + i)       # analysed (memo miss: the code path before the memo)
            assert _hits(first) == hits, sql
            again, runs = _from_memo(first, lambda: _seeded(first, sql, 30 + i))  # answered from the memo
            assert again == fresh, (sql, fresh, again)
            assert fresh[0] and fresh[1], sql
            # each statement is charged: one ledger row each
            assert scalar(first, "SELECT count(*) FROM dx.ledger") == before_rows + 1 + runs, sql
            # a new session (an empty memo) analyses it again: the same answers and charge
            other = connect("coord", db)
            assert _seeded(other, sql, 30 + i) == fresh, sql
            other.close()
            # the local copy (memoized too where Citus is installed) gives the same charge, and the
            # same answers for ungrouped statements (grouped ones may finalise groups in another order)
            local = _seeded(first, q.format(t="people_local"), 30 + i)
            again_local = _seeded(first, q.format(t="people_local"), 30 + i)
            assert local == again_local, (q, local, again_local)
            assert local[1] == fresh[1], (q, local[1], fresh[1])
            if "GROUP BY" not in q:
                assert local[0] == fresh[0], (q, local, fresh)
            else:  # the same groups
                keys = len(q.split("GROUP BY")[1].split(","))
                assert sorted(map(str, (r[:keys] for r in local[0]))) == \
                       sorted(map(str, (r[:keys] for r in fresh[0]))), (q, local, fresh)
        # the empty declared group and the NULL key come back the same way from the memo
        got = _seeded(first, STATEMENTS[2].format(t="people"), 5)[0]
        assert "none" in [r[0] for r in got], got
        assert _seeded(first, STATEMENTS[2].format(t="people"), 5)[0] == got
        # without a seed, two memo-answered statements draw different noise
        a = rows(first, STATEMENTS[1].format(t="people"))
        b = rows(first, STATEMENTS[1].format(t="people"))
        assert a != b, (a, b)
        first.close()


def test_memo_does_not_outlive_policy_rows_distribution_or_role():
    """Attacks on the memo's key: after a change of the policy the statement is analysed again (its
    new scale is charged); changed rows give new exact answers (nothing replayed); a local table
    distributed between two statements is analysed again and answers correctly; another role does
    not get the owner's analysis."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)  # (the analyst role)
        owner = connect("coord", db)
        # exact: a local table first (distributed below), protected noiselessly (answers = native SQL)
        execute(owner, "CREATE TABLE exact (id bigint PRIMARY KEY, age int, sex text, region text, income int)")
        execute(owner, f"INSERT INTO exact {fx.rows_sql(20000)}")
        execute(owner, "SELECT dx.protect_table('exact', 'Infinity')")
        for col, domain, metric in fx.NOISELESS:
            execute(owner, "SELECT dx.set_column('exact', %s, %s::jsonb, %s::jsonb)", (col, domain, metric))
        execute(owner, "SELECT dx.grant_budget('postgres'::regrole, 'exact', 1000)")
        q = "SELECT region, dx.count(*), dx.sum(income) FROM exact GROUP BY region ORDER BY 1"
        native = "SELECT region, count(*), sum(income) FROM exact GROUP BY region ORDER BY 1"

        def same_as_native():
            got = [r for r in rows(owner, q) if r[0] != "none"]
            want = rows(owner, native)
            assert [(r[0], int(r[1]), float(r[2])) for r in got] == \
                   [(r[0], int(r[1]), float(r[2])) for r in want], (got, want)

        same_as_native()
        _from_memo(owner, same_as_native)  # a local table where Citus is installed: memoized too
        # distributed now (same table): Citus's metadata and the catalog change, analysed again
        execute(owner, "SELECT create_distributed_table('exact', 'id', shard_count => 8)")
        hits = _hits(owner)
        same_as_native()
        assert _hits(owner) == hits, "a distributed table reused the local table's analysis"
        _from_memo(owner, same_as_native)
        # changed rows: the memo's analysis, the new rows' answers (the analysis reads no row)
        execute(owner, "INSERT INTO exact VALUES (700001, 30, 'F', 'east', 12300), (700002, 31, 'M', 'west', 100)")
        _from_memo(owner, same_as_native)
        # changed policy: the presence distance goes from 1 to 2, the next statement's charge has
        # the new scales
        execute(owner, "SELECT dx.protect_table('exact', 1.0)")
        scales = "SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1"
        rows(owner, q)
        s1 = scalar(owner, scales)
        _from_memo(owner, lambda: rows(owner, q))
        assert scalar(owner, scales) == s1
        execute(owner, "SELECT dx.protect_table('exact', 2.0)")
        hits = _hits(owner)
        rows(owner, q)
        assert _hits(owner) == hits, "a changed policy reused the memo"
        s2 = scalar(owner, scales)
        assert s1 != s2 and min(s1) > 0 and min(s2) > 0, (s1, s2)
        # another role: the analyst's statement is her own analysis (not the owner's memo entry)
        execute(owner, f"SELECT dx.grant_budget('{fx.ANALYST}'::regrole, 'exact', 100)")
        def as_analyst():
            execute(owner, f"SET ROLE {fx.ANALYST}")
            rows(owner, q)
            execute(owner, "RESET ROLE")

        hits = _hits(owner)
        as_analyst()
        assert _hits(owner) == hits, "the analyst's statement reused the owner's analysis"
        assert scalar(owner, "SELECT role::text FROM dx.ledger ORDER BY id DESC LIMIT 1") == fx.ANALYST
        _from_memo(owner, as_analyst)  # her own entry, the second time
        owner.close()


def test_memo_follows_settings_search_path_domains_and_recreated_tables():
    """Red-team attacks on the key (issue 23): after a memo hit, each change below must give the
    scales a fresh session computes (never the memoized analysis' scales): a setting that changes
    the allocation (dxpriv.epsilon), a column's domain, another table of the same name reached
    through search_path, a table dropped and created again under the same name with another
    domain, and a table's shards split differently (same name, other shard count)."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        for s in ("s1", "s2"):
            execute(owner, f"CREATE SCHEMA {s}")
            execute(owner, f"CREATE TABLE {s}.t (id bigint PRIMARY KEY, age int, sex text, region text, income int)")
            execute(owner, f"INSERT INTO {s}.t {fx.rows_sql(3000)}")
            execute(owner, f"SELECT create_distributed_table('{s}.t', 'id', shard_count => 4)")
            fx.protect(owner, f"{s}.t")
            execute(owner, f"SELECT dx.grant_budget('postgres'::regrole, '{s}.t', 1e6)")
        # s2.t: a wider income domain (other scales for the sums)
        execute(owner, "SELECT dx.set_column('s2.t', 'income', '{\"min\": 0, \"max\": 400000, \"step\": 100}', "
                       "'{\"type\": \"absolute\", \"scale\": 1000}')")
        q = "SELECT region, dx.count(*), dx.sum(income) FROM t GROUP BY region"
        last_scales = "SELECT scales FROM dx.ledger ORDER BY id DESC LIMIT 1"

        def scales_of(conn, path="s1"):
            execute(conn, f"SET search_path = {path}, public")
            rows(conn, q)
            return scalar(owner, last_scales)

        def fresh(path="s1", setup=()):
            c = connect("coord", db)
            for s in setup:
                execute(c, s)
            got = scales_of(c, path)
            c.close()
            return got

        def memoized():
            execute(owner, "SET search_path = s1, public")
            _from_memo(owner, lambda: rows(owner, q))
            return scalar(owner, last_scales)

        base = memoized()
        assert base == fresh(), "a memo hit gave other scales than its analysis"
        # a setting that changes the allocation
        execute(owner, "SET dxpriv.epsilon = 0.7")
        got = scales_of(owner)
        want = fresh(setup=["SET dxpriv.epsilon = 0.7"])
        execute(owner, "RESET dxpriv.epsilon")
        assert got == want and got != base, ("epsilon", base, got, want)
        # the same text resolving to another table through search_path
        memoized()
        got, want = scales_of(owner, "s2"), fresh("s2")
        assert got == want and got != base, ("search_path", base, got, want)
        # a column's domain changed
        memoized()
        execute(owner, "SELECT dx.set_column('s1.t', 'income', '{\"min\": 0, \"max\": 300000, \"step\": 100}', "
                       "'{\"type\": \"absolute\", \"scale\": 1000}')")
        got, want = scales_of(owner), fresh()
        assert got == want and got != base, ("domain", base, got, want)
        # dropped and created again under the same name, other domain and shard count
        base = memoized()
        execute(owner, "DROP TABLE s1.t")
        execute(owner, "CREATE TABLE s1.t (id bigint PRIMARY KEY, age int, sex text, region text, income int)")
        execute(owner, f"INSERT INTO s1.t {fx.rows_sql(3000)}")
        execute(owner, "SELECT create_distributed_table('s1.t', 'id', shard_count => 6)")
        fx.protect(owner, "s1.t")
        execute(owner, "SELECT dx.set_column('s1.t', 'income', '{\"min\": 0, \"max\": 100000, \"step\": 100}', "
                       "'{\"type\": \"absolute\", \"scale\": 500}')")
        execute(owner, "SELECT dx.grant_budget('postgres'::regrole, 's1.t', 1e6)")
        got, want = scales_of(owner), fresh()
        assert got == want and got != base, ("re-created", base, got, want)
        owner.close()


def _plan(conn, sql):
    """The plan text with the per-statement random ids of the noise parameters masked."""
    text = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE, COSTS OFF) " + sql))
    return re.sub(r"\b\d(\.\d+)?e\+\d+\b|\b\d{12,}\b", "<id>", text)


def test_session_warm_before_create_extension_citus_plans_like_a_fresh_one():
    """Whether Citus is installed is cached per backend (metadata/citus_tables.cpp) and cleared by
    pg_class changes: a session that ran dx statements before CREATE EXTENSION citus (in the same
    session) plans and answers a distributed table's statement exactly as a fresh session does."""
    from citus_common import HOST, port
    import os
    name = f"citus_late_{os.getpid()}"
    nodes = ("coord", "w1", "w2")
    for n in nodes:
        admin = connect(n)
        execute(admin, f"CREATE DATABASE {name}")
        execute(admin, f"ALTER DATABASE {name} SET dxpriv.cache_lifetime = 0")
        admin.close()
    for w in ("w1", "w2"):  # the workers hold citus and dxpriv before they are added
        c = connect(w, name)
        execute(c, "CREATE EXTENSION citus")
        execute(c, "CREATE EXTENSION dxpriv")
        c.close()
    s = connect("coord", name)
    try:
        execute(s, "CREATE EXTENSION dxpriv")
        execute(s, "CREATE TABLE warm (id bigint PRIMARY KEY, v int)")
        execute(s, "INSERT INTO warm SELECT g, g FROM generate_series(1, 100) g")
        execute(s, "SELECT dx.protect_table('warm', 'Infinity')")
        execute(s, "SELECT dx.grant_budget('postgres'::regrole, 'warm', 1000)")
        assert scalar(s, "SELECT dx.count(*) FROM warm") == 100  # the cache now says: no Citus
        execute(s, "CREATE EXTENSION citus")
        execute(s, "SELECT citus_set_coordinator_host(%s, %s)", (HOST, port("coord")))
        for w in ("w1", "w2"):
            execute(s, "SELECT citus_add_node(%s, %s)", (HOST, port(w)))
        fx.exact_table(s, "late", 8, 5000)
        sql = "SELECT dx.count(*), dx.sum(income) FROM late WHERE age > 30"
        native = rows(s, "SELECT count(*), sum(income) FROM late WHERE age > 30")[0]
        warm_plan, warm = _plan(s, sql), rows(s, sql)[0]
        fresh = connect("coord", name)
        try:
            fresh_plan, fresh_rows = _plan(fresh, sql), rows(fresh, sql)[0]
        finally:
            fresh.close()
        assert "Citus" in fresh_plan, fresh_plan
        assert warm_plan == fresh_plan, '\n'.join(difflib.unified_diff(warm_plan.split('\n'), fresh_plan.split('\n'), lineterm=''))
        assert float(warm[0]) == float(fresh_rows[0]) == native[0]
        assert float(warm[1]) == float(fresh_rows[1]) == float(native[1])
    finally:
        s.close()
        for n in nodes:
            admin = connect(n)
            execute(admin, f"DROP DATABASE {name} WITH (FORCE)")
            admin.close()
