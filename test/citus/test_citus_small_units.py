"""Sums of small weights as int4 on the workers (issue 23, GROUP BY 70-value key row): when every
value of a weight's per-point table is within 2^22 grid units, the workers sum dx._units4 (int4)
with PostgreSQL's sum(int4) instead of dx._units (bigint) with sum(bigint). The same exact sums:
noiseless answers equal native SQL, seeded answers equal the local copy's; wider weights keep
dx._units; dx._units4 is not executable by analysts and refuses weights beyond int4."""
import psycopg2

import citus_fixture as fx
from citus_common import citus_db, connect, execute, rows, scalar


def _task_query(conn, sql):
    plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + sql))
    return [line for line in plan.splitlines() if "Query: " in line and "FROM public." in line][0]


def _num(r):
    return tuple(round(float(v), 6) if isinstance(v, (int, float)) or hasattr(v, "as_tuple") else v for v in r)


def test_small_weights_summed_as_int4_give_the_same_answers():
    with citus_db() as db:
        fx.build(db, rows=30000, shards=8)
        conn = connect("coord", db)
        fx.exact_table(conn, "exact", 8, rows=30000)
        # noiseless: equal to native SQL (grouped, WHERE, FILTER, avg; the empty declared group 'none'
        # is answered by dx only)
        cases = [
            ("SELECT region, dx.count(*), dx.sum(income) FROM exact GROUP BY region ORDER BY 1",
             "SELECT region, count(*), sum(income) FROM exact GROUP BY region ORDER BY 1"),
            ("SELECT sex, dx.sum(income) FILTER (WHERE age > 40), round(dx.avg(income)::numeric, 6) FROM exact "
             "WHERE income < 150000 GROUP BY sex ORDER BY 1",
             "SELECT sex, sum(income) FILTER (WHERE age > 40), round(avg(income)::numeric, 6) FROM exact "
             "WHERE income < 150000 GROUP BY sex ORDER BY 1"),
            ("SELECT dx.sum(income), dx.sum(age) FROM exact WHERE age > 30",
             "SELECT sum(income), sum(age) FROM exact WHERE age > 30"),
        ]
        for dx_sql, native_sql in cases:
            assert "dx._units4(" in _task_query(conn, dx_sql), dx_sql
            got = [_num(r) for r in rows(conn, dx_sql) if r[0] != "none"]
            want = [_num(r) for r in rows(conn, native_sql)]
            assert got == want, (dx_sql, got, want)
        # seeded: the distributed table (int4 sums) and the local copy give the same noisy answers
        # (a weight whose table travels by digest, dx._weigh_cached, keeps dx._units: its table is
        # not in the plan)
        for q in ["SELECT dx.count(*), dx.sum(age) FROM {t}", "SELECT dx.avg(age) FROM {t}",
                  "SELECT dx.sum(age, 2.0) FROM {t} WHERE age < 50"]:
            assert "dx._units4(" in _task_query(conn, q.format(t="people")), q
            answers = []
            for t in ("people", "people_local"):
                execute(conn, "SET dxpriv.test_seed = 17")
                answers.append(rows(conn, q.format(t=t)))
            execute(conn, "RESET dxpriv.test_seed")
            assert answers[0] == answers[1], (q, answers)
        conn.close()


def test_wide_weights_keep_bigint_and_units4_is_not_for_analysts():
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        conn = connect("coord", db)
        # a weight of up to 10^10 grid units: summed as bigint, exactly
        execute(conn, "CREATE TABLE wide (id bigint, v bigint)")
        execute(conn, "SELECT create_distributed_table('wide', 'id', shard_count => 4)")
        execute(conn, "INSERT INTO wide SELECT g, (g % 1000)::bigint * 10000000 FROM generate_series(1, 5000) g")
        execute(conn, "SELECT dx.protect_table('wide', 'Infinity')")
        execute(conn, """SELECT dx.set_column('wide', 'v', '{"min": 0, "max": 10000000000, "step": 10000000}',
                         '{"type": "none"}')""")
        execute(conn, "SELECT dx.grant_budget('postgres', 'wide', 1000)")
        q = "SELECT dx.sum(v) FROM wide"
        task = _task_query(conn, q)
        assert "dx._units(" in task and "dx._units4(" not in task, task
        assert float(scalar(conn, q)) == float(scalar(conn, "SELECT sum(v) FROM wide"))
        # dx._units4 refuses a weight beyond int4 (it is placed only where every weight fits)
        try:
            scalar(conn, "SELECT dx._units4(3e9, 1)")
            raise AssertionError("dx._units4 accepted a weight beyond int4")
        except psycopg2.Error as e:
            assert e.pgcode == "22003", e
        assert scalar(conn, "SELECT dx._units4(2.5, 1)") == 3
        # analysts cannot call it (not executable by PUBLIC; their statements run it as the owner)
        analyst = connect("coord", db, user=fx.ANALYST)
        try:
            scalar(analyst, "SELECT dx._units4(1, 1)")
            raise AssertionError("an analyst called dx._units4")
        except psycopg2.Error as e:
            assert e.pgcode == "42501", e
        analyst.close()
        # an analyst's statement whose workers sum dx._units4 runs and is charged once
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        analyst = connect("coord", db, user=fx.ANALYST)
        got = rows(analyst, "SELECT region, dx.count(*), dx.sum(income) FROM people GROUP BY region")
        analyst.close()
        assert len(got) == 5, got
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
        conn.close()
