"""A statement replayed over a large declared domain (replayfast): an analysis-memo hit shares the
memo's per-point tables instead of copying them (planner/shared_const_copy.cpp), and a final call
without rows decodes no table (executor/one_pass.cpp). These tests check that the answer cache and the
memo keep their freshness rules with that sharing (a changed policy, another role, another database
are new, charged releases; the same statement by the same role is replayed free, with the same
answer), that a statement still reads the memo's tables after its entry was evicted inside the same
transaction (a cursor fetched after 70 other analyses), and that a statement with no row still
releases."""
import math

from attack_fixture import ensure_analyst_role
from e2e_common import connect, execute, fresh_db, scalar, us_points

ROLE_A = "replayfast_a"
ROLE_B = "replayfast_b"
POINTS = 3000  # per-point tables of 24 kB: well above the 1 kB of a shared constant
SQL = "SELECT avg(lat), count(*) FILTER (WHERE lon < -100) FROM spots"


def _setup(db, seed=1):
    admin = connect(db)
    execute(admin, f"ALTER DATABASE {db} SET dxpriv.cache_lifetime = 3600")  # the answer cache on
    for r in (ROLE_A, ROLE_B):
        ensure_analyst_role(admin, r)
        execute(admin, "SELECT dx.add_analyst(%s::regrole)", (r,))
    pts = us_points(POINTS, seed)
    execute(admin, "CREATE TABLE spots (id int, lon float8, lat float8)")
    execute(admin, "INSERT INTO spots SELECT g, a.lons[1 + (g * 7919) %% %s], a.lats[1 + (g * 7919) %% %s] "
                   "FROM generate_series(1, 20000) g, (SELECT %s::float8[] AS lons, %s::float8[] AS lats) a",
            (POINTS, POINTS, [p[0] for p in pts], [p[1] for p in pts]))
    execute(admin, "SELECT dx.protect_table('spots', 1.0)")
    _declare(admin, pts)
    for r in (ROLE_A, ROLE_B):
        execute(admin, "SELECT dx.grant_budget(%s::regrole, 'spots', 1e6)", (r,))
    return admin, pts


def _declare(admin, pts):
    import json
    execute(admin, "SELECT dx.set_column_group('spots', ARRAY['lon', 'lat'], %s::jsonb, %s::jsonb)",
            (json.dumps({"points": [list(p) for p in pts]}), '{"type": "l2", "scale": 1}'))


def _analyst(db, role):
    c = connect(db, user=role)
    execute(c, "SET dxpriv.epsilon = 0.5")
    return c


def _spent(admin, role):
    return scalar(admin, "SELECT coalesce(sum(spent), 0) FROM dx.budget_grants WHERE role = %s::regrole", (role,))


def _row(conn, sql=SQL):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()


def test_replay_same_answer_free_and_fresh_after_policy_role_database():
    with fresh_db() as db:
        admin, pts = _setup(db)
        a = _analyst(db, ROLE_A)
        try:
            first = _row(a)
            paid = _spent(admin, ROLE_A)
            assert paid > 0 and first[0] is not None
            for _ in range(3):  # memo hit + answer-cache replay: the same answer, nothing charged
                assert _row(a) == first
            assert _spent(admin, ROLE_A) == paid
            # another role: its own release, charged to it (never the first role's answer replayed free)
            b = _analyst(db, ROLE_B)
            try:
                _row(b)
                assert _spent(admin, ROLE_B) > 0
                assert _spent(admin, ROLE_A) == paid
            finally:
                b.close()
            # the policy changed (the same points, one moved): a new analysis and a new, charged release
            moved = list(pts)
            moved[0] = (moved[0][0] + 0.5, moved[0][1])
            _declare(admin, moved)
            _row(a)
            assert _spent(admin, ROLE_A) > paid
            again = _spent(admin, ROLE_A)
            assert _row(a) is not None and _spent(admin, ROLE_A) == again  # replayed under the new policy
        finally:
            a.close()
            admin.close()
        # another database with the same table, policy and role: charged there, not replayed
        with fresh_db() as db2:
            admin2, _ = _setup(db2)
            a2 = _analyst(db2, ROLE_A)
            try:
                _row(a2)
                assert _spent(admin2, ROLE_A) > 0
            finally:
                a2.close()
                admin2.close()


def test_shared_tables_outlive_memo_eviction():
    """An unnamed prepared statement (extended protocol) parsed as a memo hit holds a tree whose
    per-point tables are the memo entry's; 70 named statements parsed after it (each a new analysis
    stored in the memo, which keeps 64) evict that entry; executing the unnamed statement afterwards
    (its plan built from that tree, transactions later) still reads the tables, and the answers
    are plausible (a freed table would be garbage or a crash)."""
    import os
    import psycopg
    from psycopg import pq
    with fresh_db() as db:
        admin, _ = _setup(db)
        admin.close()
        c = psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user="postgres", dbname=db,
                            autocommit=True)
        try:
            pg = c.pgconn

            def simple(sql):
                r = pg.exec_(sql.encode())
                assert r.status in (pq.ExecStatus.TUPLES_OK, pq.ExecStatus.COMMAND_OK), r.error_message
                return r

            simple("SET dxpriv.cache_lifetime = 0")  # rows read: the final calls use the tables
            simple("SET dxpriv.epsilon = 0.5")
            simple("SELECT dx.grant_budget(current_user::regrole, 'spots', 1e6)")
            dx_sql = b"SELECT dx.avg(lat), dx.count(*) FILTER (WHERE lon < -100) FROM spots"
            for _ in range(2):  # analysed and stored, then (a new unnamed Parse) the memo's
                r = pg.prepare(b"", dx_sql)
                assert r.status == pq.ExecStatus.COMMAND_OK, r.error_message
                if _ == 0:
                    r = pg.exec_prepared(b"", [])
                    assert r.status == pq.ExecStatus.TUPLES_OK, r.error_message
                    hits = int(simple("SELECT dx._analysis_memo_hits()").get_value(0, 0))  # (drops the unnamed)
            for i in range(70):
                r = pg.prepare(f"s{i}".encode(), f"SELECT dx.count(*) FROM spots WHERE lat > {30 + i / 10}".encode())
                assert r.status == pq.ExecStatus.COMMAND_OK, r.error_message
            answers = []
            for _ in range(2):
                r = pg.exec_prepared(b"", [])
                assert r.status == pq.ExecStatus.TUPLES_OK, r.error_message
                answers.append((float(r.get_value(0, 0)), float(r.get_value(0, 1))))
            assert int(simple("SELECT dx._analysis_memo_hits()").get_value(0, 0)) == hits + 1
            true_avg = float(simple("SELECT avg(lat) FROM spots").get_value(0, 0))
            for avg, count in answers:
                assert math.isfinite(avg) and abs(avg - true_avg) < 5, (avg, true_avg)
                assert math.isfinite(count) and count >= 0
            assert simple("SELECT 1").get_value(0, 0) == b"1"
        finally:
            c.close()


def test_statement_without_rows_releases():
    """No row reaches the aggregates (the final call decodes its parameters only): still one
    released, charged answer per aggregate, and its replay is the same answer."""
    with fresh_db() as db:
        admin, _ = _setup(db)
        a = _analyst(db, ROLE_A)
        try:
            sql = "SELECT count(*), sum(lat), avg(lon) FROM spots WHERE lat > 1000"
            first = _row(a, sql)
            assert all(v is not None for v in first[:2]), first
            paid = _spent(admin, ROLE_A)
            assert paid > 0
            assert _row(a, sql) == first and _spent(admin, ROLE_A) == paid
        finally:
            a.close()
            admin.close()
