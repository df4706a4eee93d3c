"""Grouped Citus releases whose group index is a lookup of plain integer columns (issue 23, GROUP BY a
70-value key): the workers group by the columns themselves (PostgreSQL's GROUP BY k, as native SQL)
and the coordinator maps each grouped row to its output group with the same lookup
(planner/distributed_raw_keys.cpp). The answers equal the local table's (noiseless policy: exact),
values outside the domain and NULL keys land in the same groups, the charge is the local table's,
and the new shape gives the analyst nothing: no hand-written collect, no forged state, no group
dropped on the coordinator that is not charged."""
import re

import psycopg2

from citus_common import citus_db, connect, execute, rows, scalar

ANALYST = "rawkeys_analyst"
NOISELESS = '{"type": "none"}'


def _refused(conn, sql, code=None):
    try:
        rows(conn, sql)
    except psycopg2.Error as e:
        assert code is None or e.pgcode == code, (sql, e.pgcode, str(e))
        return str(e)
    raise AssertionError(f"ran: {sql}")


def _table(conn, name, distributed, presence, metric):
    execute(conn, f"CREATE TABLE {name} (id bigint, k int, j smallint, b bigint, income int)")
    if distributed:
        execute(conn, f"SELECT create_distributed_table('{name}', 'id', shard_count => 8)")
    # k: 0..69 (and -3, 75, NULL: outside the domain, clamped as the lookup does), j: 0..4, b: bigint
    execute(conn, f"""INSERT INTO {name} SELECT g, CASE WHEN g % 97 = 0 THEN -3 WHEN g % 89 = 0 THEN 75
                      WHEN g % 83 = 0 THEN NULL ELSE (g % 70)::int END, (g % 5)::smallint, g % 7,
                      CASE WHEN g % 79 = 0 THEN NULL ELSE ((g::bigint * 7919) % 2000) * 100 END
                      FROM generate_series(1, 20000) g""")
    execute(conn, f"SELECT dx.protect_table('{name}', {presence})")
    m = metric if presence != "'Infinity'" else NOISELESS
    execute(conn, f"""SELECT dx.set_column('{name}', 'income', '{{"min": 0, "max": 200000, "step": 1000}}', '{NOISELESS}')""")
    execute(conn, f"""SELECT dx.set_column('{name}', 'k', '{{"min": 0, "max": 69}}', '{m}')""")
    execute(conn, f"""SELECT dx.set_column('{name}', 'j', '{{"min": 0, "max": 4}}', '{m}')""")
    execute(conn, f"""SELECT dx.set_column('{name}', 'b', '{{"min": 0, "max": 12, "step": 2}}', '{m}')""")
    execute(conn, f"SELECT dx.grant_budget('postgres'::regrole, '{name}', 1e6)")


STATEMENTS = [
    "SELECT k, dx.count(*) FROM {t} GROUP BY k",
    "SELECT k, dx.count(*), dx.sum(income) FROM {t} GROUP BY k",
    "SELECT k, dx.avg(income) FROM {t} WHERE income > 50000 GROUP BY k",
    "SELECT k, j, dx.count(*) FROM {t} GROUP BY k, j",
    "SELECT j, dx.count(*) FILTER (WHERE k < 10), dx.sum(income) FILTER (WHERE k > 60) FROM {t} GROUP BY j",
    "SELECT b, dx.count(*), dx.sum(income) FROM {t} GROUP BY b",  # step 2: grouped by the index, as before
    "SELECT k, dx.count(*) FROM {t} WHERE k BETWEEN 5 AND 9 GROUP BY k HAVING dx.count(*) > 10",
]


def _norm(rs):
    return sorted(tuple(None if v is None else (v if isinstance(v, str) else round(float(v), 6)) for v in r)
                  for r in rs)


def test_raw_keys_answer_like_the_local_table():
    """Noiseless policy: every statement's answers on the distributed table equal the local copy's
    (the same groups, empty declared ones included, the same clamped values); the workers' task
    query groups by the integer columns (no lookup per row for the group) where the step is 1."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True, "'Infinity'", NOISELESS)
        _table(conn, "loc", False, "'Infinity'", NOISELESS)
        for q in STATEMENTS:
            d, l = _norm(rows(conn, q.format(t="dist"))), _norm(rows(conn, q.format(t="loc")))
            assert d == l, (q, d[:5], l[:5])
            assert d, q
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + STATEMENTS[1].format(t="dist")))
        task = [line for line in plan.split("\n") if "Query: " in line and "FROM public.dist" in line][0]
        assert "_weigh_int" not in task and re.search(r"GROUP BY (dist\.)?k\b", task), task
        assert "sum(dx._weigh_units(" in task, task  # the sum's weights are still looked up per row, in one call
        assert re.search(r"dx\._collect\(dx\._weigh_int\(", plan), plan
        two = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + STATEMENTS[3].format(t="dist")))
        task = [line for line in two.split("\n") if "Query: " in line and "FROM public.dist" in line][0]
        assert "_weigh_int" not in task and re.search(r"GROUP BY (dist\.)?k, (dist\.)?j\b", task), task
        step2 = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + STATEMENTS[5].format(t="dist")))
        task = [line for line in step2.split("\n") if "Query: " in line and "FROM public.dist" in line][0]
        assert "GROUP BY (dx._weigh_int(" in task or "GROUP BY dx._weigh_int(" in task, task
        conn.close()


def test_raw_keys_charge_like_the_local_table_and_in_full():
    """A noisy policy: each statement is one ledger row with the local copy's charge (epsilon, scales);
    statements that keep only some groups on the coordinator (an outer WHERE, LIMIT, HAVING) are
    charged as the whole grouped release; seeded answers repeat."""
    with citus_db() as db:
        conn = connect("coord", db)
        metric = '{"type": "absolute", "scale": 10}'
        _table(conn, "dist", True, "1.0", metric)
        _table(conn, "loc", False, "1.0", metric)
        last = "SELECT epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1"
        for i, q in enumerate(STATEMENTS):
            n = scalar(conn, "SELECT count(*) FROM dx.ledger")
            execute(conn, f"SET dxpriv.test_seed = {40 + i}")
            a = rows(conn, q.format(t="dist"))
            ca = rows(conn, last)
            execute(conn, f"SET dxpriv.test_seed = {40 + i}")
            b = rows(conn, q.format(t="dist"))
            assert a == b, q
            execute(conn, "RESET dxpriv.test_seed")
            rows(conn, q.format(t="loc"))
            assert rows(conn, last) == ca, (q, ca, rows(conn, last))
            assert scalar(conn, "SELECT count(*) FROM dx.ledger") == n + 3, q
        full = "SELECT k, dx.count(*), dx.sum(income) FROM dist GROUP BY k"
        rows(conn, full)
        charge = rows(conn, last)
        for dropping in ("SELECT * FROM (SELECT k, dx.count(*) AS c, dx.sum(income) AS s FROM dist GROUP BY k) x WHERE k = 3",
                         "SELECT k, dx.count(*), dx.sum(income) FROM dist GROUP BY k ORDER BY k LIMIT 1",
                         "SELECT k, dx.count(*), dx.sum(income) FROM dist GROUP BY k HAVING k = 3"):
            n = scalar(conn, "SELECT count(*) FROM dx.ledger")
            got = rows(conn, dropping)
            assert len(got) <= 1, (dropping, got)
            assert scalar(conn, "SELECT count(*) FROM dx.ledger") == n + 1, dropping
            assert rows(conn, last) == charge, (dropping, rows(conn, last), charge)
        conn.close()


def test_raw_keys_attacks():
    """The analyst cannot run the coordinator's share by hand (dx._collect over the raw key lookup,
    over the analyst's own grouped numbers), cannot release a forged state, and cannot call the
    lookup on stored rows; nothing of this is charged or answered."""
    with citus_db() as db:
        owner = connect("coord", db)
        _table(owner, "dist", True, "1.0", '{"type": "absolute", "scale": 10}')
        for n in ("coord", "w1", "w2"):
            c = connect(n)
            if not scalar(c, "SELECT count(*) FROM pg_roles WHERE rolname = %s", (ANALYST,)):
                execute(c, f"SET citus.enable_ddl_propagation = off; CREATE ROLE {ANALYST} LOGIN")
            c.close()
        execute(owner, f"SELECT dx.add_analyst('{ANALYST}'::regrole)")
        execute(owner, f"SELECT dx.grant_budget('{ANALYST}'::regrole, 'dist', 100)")
        plan = "\n".join(r[0] for r in rows(owner, "EXPLAIN (VERBOSE) SELECT k, dx.count(*), dx.sum(income) FROM dist GROUP BY k"))
        # (the sums read as one Citus stage, dx_native, or through a subplan, intermediate_result)
        collect = re.search(r"dx\._collect\((dx\._weigh_int\('[^']*'::bytea, 'r'::text), (?:intermediate_result|dx_native)\.g1"
                            r"(, [^)]*\)), (?:intermediate_result|dx_native)\.u1, (?:intermediate_result|dx_native)\.n1, "
                            r"('\{[^']*\}'::double precision\[\])\)", plan)
        assert collect, plan
        lookup = collect.group(1) + ", k" + collect.group(2)
        params = collect.group(3)
        fused = re.search(r"dx\._weigh_units\(('[^']*'::bytea, 'r'::text, '1'::double precision), income(, [^)]*\))", plan)
        assert fused, plan
        a = connect("coord", db, user=ANALYST)
        before = scalar(owner, "SELECT count(*) FROM dx.ledger")
        # the workers' fused lookup on stored rows: refused (it would show each row's weight)
        _refused(a, f"SELECT dx._weigh_units({fused.group(1)}, income{fused.group(2)} FROM dist")
        # the coordinator's share written by hand over the table or over the analyst's own numbers
        _refused(a, f"SELECT dx._collect({lookup.replace(', k,', ', x.k,')}, x.n::numeric, x.n, {params}) "
                    f"FROM (SELECT k, count(*) AS n FROM dist GROUP BY k) x", "42501")
        _refused(a, f"SELECT dx._collect({lookup.replace(', k,', ', x.k,')}, x.n::numeric, x.n, {params}) "
                    f"FROM (SELECT 3 AS k, 1000::bigint AS n) x", "42501")
        # the lookup itself on stored rows (it would show each row's group)
        _refused(a, f"SELECT {lookup} FROM dist")
        # a forged state for the release (state bytes of the analyst's choosing, the real parameters)
        _refused(a, f"SELECT dx._release_count('\\x0102'::bytea::dx._linear_partial, {params}, 3)")
        _refused(a, f"SELECT dx._release_count(dx._state_of(1000::numeric, NULL, {params}, 3), {params}, 3)", "42501")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before
        # inside a plain sum it is an expression like any other: evaluated on the domain points and
        # answered as a charged noisy sum (one ledger row), as sum(dx._units(income, 1))
        rows(a, f"SELECT sum(dx._weigh_units({fused.group(1)}, income{fused.group(2)}) FROM dist")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before + 1
        before += 1
        # the statement itself, by the analyst: one charge
        assert len(rows(a, "SELECT k, dx.count(*), dx.sum(income) FROM dist GROUP BY k")) == 70
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before + 1
        a.close()
        owner.close()
