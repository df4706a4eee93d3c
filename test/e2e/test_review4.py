"""review4: attacks on the shared analysis memo read in place (l2copy: a new session's replay pins
the shared entry and reads its per-point tables there; equal tables stored once; planner stand-ins
for tables over 1 kB, restored by their bytes). With a 256 kB region (restart) that many statements
of one shape wrap, every statement here has exact answers (presence public, metric none, infinite
epsilon over a 300-value enumerated column: its per-point tables are over 1 kB, so kept as blobs
in the shared entry and stood in for while planning), compared with native SQL: a statement that
read another entry's bytes (another statement's tables: same shape and sizes, other filters)
answers another number or fails. Each attack is one line of the report (printed); a pin leaked
by a session is shown by its entry surviving a wrap while the session is idle (a new session then
replays it instead of analysing again)."""
import os
import re
import threading

import psycopg
import psycopg2

from e2e_common import connect, execute, fresh_db, scalar
from test_ledger import restart_cluster as _restart

FILLERS = 18  # statements stored per wrap (each entry ~30 kB: about 540 kB in a 256 kB region)


def _sql(t):
    return (f"SELECT dx.count(*) FILTER (WHERE k < 'k{t}') AS a, dx.sum(v) FILTER (WHERE k > 'k{t}') AS b, "
            f"dx.count(*) AS c, dx.sum(v) AS d FROM st_t")


def _native(conn, t):
    with conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FILTER (WHERE k < 'k{t}'), sum(v) FILTER (WHERE k > 'k{t}'), count(*), sum(v) "
                    f"FROM st_t")
        return tuple(float(x) for x in cur.fetchone())


def _row(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return tuple(float(x) for x in cur.fetchone())


_next_filler = iter(range(10 ** 6))


def _wrap(db):
    """Stores FILLERS new statements of _sql's shape (their own tables, the same sizes) from one
    session: the ring wraps about twice, so every entry that is not pinned is overwritten."""
    c = connect(db)
    try:
        for _ in range(FILLERS):
            t = 1000 + next(_next_filler)  # ('k1000' and up: thresholds between the values)
            _row(c, _sql(t))
    finally:
        c.close()


def rows(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def _shared_hits(conn):
    return scalar(conn, "SELECT dx._shared_memo_hits()")


def _fresh_session_hit(db, t):
    """A new session runs _sql(t): (its answer, whether it was replayed from the shared memo)."""
    c = connect(db)
    try:
        got = _row(c, _sql(t))
        return got, _shared_hits(c) == 1
    finally:
        c.close()


def _setup(db):
    admin = connect(db)
    execute(admin, "CREATE TABLE st_t (k text, v int)")
    execute(admin, "INSERT INTO st_t SELECT 'k' || (i % 300), (i * 7) % 1000 FROM generate_series(1, 30000) AS i")
    execute(admin, "ANALYZE st_t")
    execute(admin, "SELECT dx.protect_table('st_t', 'Infinity')")
    execute(admin, "SELECT dx.set_column('st_t', 'k', jsonb_build_object('values', (SELECT jsonb_agg('k' || i ORDER BY i) "
                   "FROM generate_series(0, 299) AS i)), '{\"type\": \"none\"}')")
    execute(admin, "SELECT dx.set_column('st_t', 'v', '{\"min\": 0, \"max\": 999}', '{\"type\": \"none\"}')")
    execute(admin, "SELECT dx.grant_budget(current_user::regrole, 'st_t', 1e12)")
    return admin


def _pq(db):
    return psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user="postgres", dbname=db,
                           autocommit=True)


def test_review4_attacks_on_the_memo_read_in_place():
    """Every attack in one cluster restart (a 1 MB region, pg_stat_statements preloaded before
    dxpriv when available); one report line per attack."""
    c = connect()
    execute(c, "ALTER SYSTEM SET dxpriv.shared_memo_memory = '256kB'")
    # pg_stat_statements loaded before dxpriv: its planner hook is the one dxpriv's calls (it plans
    # the query holding the stand-ins), its post-parse hook sees every replay
    pgss = scalar(c, "SELECT count(*) FROM pg_available_extensions WHERE name = 'pg_stat_statements'") == 1
    if pgss:
        execute(c, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements', 'dxpriv'")
    c.close()
    _restart()
    if pgss:
        c = connect()
        assert "pg_stat_statements" in scalar(c, "SHOW shared_preload_libraries")
        execute(c, "ALTER SYSTEM SET pg_stat_statements.track_planning = on")  # (known once loaded)
        execute(c, "ALTER SYSTEM SET pg_stat_statements.track = 'all'")
        scalar(c, "SELECT pg_reload_conf()")
        c.close()
    results, failures = [], []
    try:
        with fresh_db() as db:
            admin = _setup(db)
            T = 150
            want = _native(admin, T)

            def stored(t=T):
                """_sql(t) analysed and stored by a fresh session (then replayed by the next)."""
                got, _ = _fresh_session_hit(db, t)
                assert got == _native(admin, t), (got, _native(admin, t))
                got, hit = _fresh_session_hit(db, t)
                assert hit and got == _native(admin, t), (got, hit)

            def not_pinned(t=T):
                """With every session of the attack idle or gone: a wrap overwrites _sql(t)'s entry."""
                _wrap(db)
                got, hit = _fresh_session_hit(db, t)
                assert got == _native(admin, t), got
                assert not hit, "a pin was left: the entry survived a wrap with its session idle"

            def call(conn, sql):
                with conn.cursor() as cur:
                    cur.execute(sql)
                    r = cur.fetchone()
                    return tuple(float(x) for x in (r[0] if len(r) == 1 else r))

            def stored_call(sql):
                """sql (a call returning _sql(T)'s answers) analysed and stored by a fresh session."""
                c1 = connect(db)
                try:
                    execute(c1, "BEGIN")
                    assert call(c1, sql) == want
                    execute(c1, "COMMIT")
                finally:
                    c1.close()

            def not_pinned_call(sql):
                """With the attack's sessions idle: after a wrap, a new session's call analyses again."""
                _wrap(db)
                c1 = connect(db)
                try:
                    assert call(c1, sql) == want
                    assert _shared_hits(c1) == 0, "a pin was left: the entry survived a wrap"
                finally:
                    c1.close()

            def attack(name, fn):
                try:
                    fn()
                    results.append(f"ok    {name}")
                except Exception as e:  # reported below: every attack runs
                    results.append(f"FAIL  {name}: {type(e).__name__}: {e}")
                    failures.append(name)

            # the region wraps: an unpinned entry is overwritten (else the attacks below prove nothing)
            def sanity():
                stored()
                not_pinned()
            attack("sanity: an unpinned entry is overwritten by a wrap", sanity)

            def prepare_execute():
                stored()
                s = connect(db)
                try:
                    execute(s, f"PREPARE p AS {_sql(T)}")
                    assert _shared_hits(s) == 1
                    _wrap(db)
                    assert _row(s, "EXECUTE p") == want
                    _wrap(db)
                    assert _row(s, "EXECUTE p") == want
                    execute(s, "DEALLOCATE p")
                    not_pinned()
                finally:
                    s.close()
            attack("PREPARE in a new session (replayed), ring wrapped twice, EXECUTE: exact; DEALLOCATE: no pin", prepare_execute)

            def plpgsql():
                execute(admin, f"""CREATE OR REPLACE FUNCTION r4_static() RETURNS float8[] LANGUAGE plpgsql AS $$
                    DECLARE a float8; b float8; c float8; d float8;
                    BEGIN {_sql(T).replace(' AS a', '').replace(' AS b', '').replace(' AS c', '').replace(' AS d', '')
                           .replace(' FROM st_t', ' INTO a, b, c, d FROM st_t')};
                    RETURN ARRAY[a, b, c, d]; END $$""")
                execute(admin, f"""CREATE OR REPLACE FUNCTION r4_dynamic() RETURNS float8[] LANGUAGE plpgsql AS $$
                    DECLARE r record;
                    BEGIN EXECUTE $q${_sql(T)}$q$ INTO r; RETURN ARRAY[r.a, r.b, r.c, r.d]; END $$""")
                execute(admin, f"CREATE OR REPLACE FUNCTION r4_sql() RETURNS TABLE (a float8, b float8, c float8, d float8) "
                               f"LANGUAGE sql AS $q${_sql(T)}$q$")
                for fn in ("r4_static()", "r4_dynamic()"):
                    stored_call(f"SELECT {fn}")  # (their own keys: SPI's statement text)
                    s = connect(db)
                    try:
                        assert tuple(scalar(s, f"SELECT {fn}")) == want, fn
                        assert _shared_hits(s) == 1, fn
                        _wrap(db)
                        assert tuple(scalar(s, f"SELECT {fn}")) == want, fn
                        # in one transaction: the function's plan kept while others wrap the ring
                        execute(s, "BEGIN")
                        assert tuple(scalar(s, f"SELECT {fn}")) == want, fn
                        _wrap(db)
                        assert tuple(scalar(s, f"SELECT {fn}")) == want, fn
                        execute(s, "COMMIT")
                        not_pinned_call(f"SELECT {fn}")
                    finally:
                        s.close()
                stored_call("SELECT * FROM r4_sql()")
                s = connect(db)
                try:
                    assert _row(s, "SELECT * FROM r4_sql()") == want
                    hit = _shared_hits(s) == 1
                    _wrap(db)
                    assert _row(s, "SELECT * FROM r4_sql()") == want
                    not_pinned_call("SELECT * FROM r4_sql()")
                    print(f"    (SQL function replayed from the shared memo: {hit})")
                finally:
                    s.close()
            attack("PL/pgSQL static (SPI saved plan) and EXECUTE (one-shot), SQL function: exact across wraps; no pin", plpgsql)

            def cursors():
                # DECLARE: a utility statement, never taken from the memo (its query analysed afresh)
                stored()
                s = connect(db)
                try:
                    execute(s, "BEGIN")
                    execute(s, f"DECLARE h CURSOR WITH HOLD FOR {_sql(T)}")
                    execute(s, "COMMIT")
                    _wrap(db)
                    assert _row(s, "FETCH ALL FROM h") == want
                    execute(s, "CLOSE h")
                    execute(s, "BEGIN")
                    execute(s, f"DECLARE n CURSOR FOR {_sql(T)}")
                    _wrap(db)
                    assert _row(s, "FETCH ALL FROM n") == want
                    execute(s, "COMMIT")
                    not_pinned()
                finally:
                    s.close()
                # a PL/pgSQL cursor over the static statement (replayed from the shared entry), its
                # portal fetched by later statements while the ring wraps
                execute(admin, f"""CREATE OR REPLACE FUNCTION r4_open() RETURNS refcursor LANGUAGE plpgsql AS $$
                    DECLARE rc refcursor := 'rc';
                    BEGIN OPEN rc FOR {_sql(T)}; RETURN rc; END $$""")
                c1 = connect(db)
                try:
                    execute(c1, "BEGIN")
                    execute(c1, "SELECT r4_open()")
                    assert _row(c1, "FETCH ALL FROM rc") == want
                    execute(c1, "COMMIT")
                finally:
                    c1.close()
                s = connect(db)
                try:
                    execute(s, "BEGIN")
                    execute(s, "SELECT r4_open()")
                    assert _shared_hits(s) == 1  # (replayed from the shared entry)
                    _wrap(db)
                    assert _row(s, "FETCH ALL FROM rc") == want
                    execute(s, "COMMIT")
                    # the same cursor, aborted with its portal open
                    execute(s, "BEGIN")
                    execute(s, "SELECT r4_open()")
                    try:
                        execute(s, "SELECT 1 / 0")
                        raise AssertionError("no error")
                    except psycopg2.Error as e:
                        assert e.pgcode == "22012", e.pgcode
                    _wrap(db)  # (s in an aborted transaction, its portal not dropped yet)
                    execute(s, "ROLLBACK")
                    execute(s, "BEGIN")
                    execute(s, "SELECT r4_open()")
                    assert _row(s, "FETCH ALL FROM rc") == want
                    execute(s, "COMMIT")
                finally:
                    s.close()
                _wrap(db)
                c1 = connect(db)
                try:
                    execute(c1, "BEGIN")
                    execute(c1, "SELECT r4_open()")
                    assert _shared_hits(c1) == 0, "a pin was left: the entry survived a wrap"
                    assert _row(c1, "FETCH ALL FROM rc") == want
                    execute(c1, "COMMIT")
                finally:
                    c1.close()
            attack("cursor WITH HOLD fetched after a wrap, cursor fetched across a wrap, portal in an aborted "
                   "transaction: exact; no pin", cursors)

            def subtransactions():
                stored()
                s = connect(db)
                try:
                    execute(s, "BEGIN")
                    execute(s, "SAVEPOINT a")
                    assert _row(s, _sql(T)) == want
                    assert _shared_hits(s) == 1
                    execute(s, "ROLLBACK TO SAVEPOINT a")
                    _wrap(db)
                    assert _row(s, _sql(T)) == want  # (re-pinned, or analysed again)
                    execute(s, "SAVEPOINT b")
                    try:
                        execute(s, f"SELECT 1 / (a - a) FROM ({_sql(T)}) q")  # replayed? (a subquery: analysed)
                    except psycopg2.Error:
                        pass
                    execute(s, "ROLLBACK TO SAVEPOINT b")
                    execute(s, "COMMIT")
                    not_pinned()
                finally:
                    s.close()
            attack("replay in a subtransaction rolled back, ring wrapped, statement again: exact; no pin", subtransactions)

            def extended_protocol():
                stored()
                p = _pq(db)
                try:
                    res = p.pgconn.prepare(b"named1", _sql(T).encode())
                    assert res.status == psycopg.pq.ExecStatus.COMMAND_OK, res.error_message
                    res = p.pgconn.prepare(b"", _sql(T).encode())  # unnamed, kept across transactions
                    assert res.status == psycopg.pq.ExecStatus.COMMAND_OK, res.error_message
                    # a transaction through named statements (a simple query replaces the unnamed one)
                    for name, sql in ((b"b", b"BEGIN"), (b"c", b"COMMIT")):
                        assert p.pgconn.prepare(name, sql).status == psycopg.pq.ExecStatus.COMMAND_OK
                    assert p.pgconn.exec_prepared(b"b", []).status == psycopg.pq.ExecStatus.COMMAND_OK
                    assert p.pgconn.exec_prepared(b"c", []).status == psycopg.pq.ExecStatus.COMMAND_OK
                    _wrap(db)
                    for name in (b"named1", b""):
                        res = p.pgconn.exec_prepared(name, [])
                        assert res.status == psycopg.pq.ExecStatus.TUPLES_OK, res.error_message
                        got = tuple(float(res.get_value(0, i)) for i in range(4))
                        assert got == want, (name, got)
                    _wrap(db)
                    res = p.pgconn.exec_prepared(b"named1", [])
                    assert tuple(float(res.get_value(0, i)) for i in range(4)) == want
                    # DISCARD ALL (simple protocol: also replaces the unnamed statement) drops them both
                    assert p.pgconn.exec_(b"DISCARD ALL").status == psycopg.pq.ExecStatus.COMMAND_OK
                    not_pinned()
                finally:
                    p.close()
            attack("extended protocol named + unnamed statements across transactions and two wraps: exact; "
                   "DISCARD ALL: no pin", extended_protocol)

            def idle_unnamed_pins_only_one():
                # an unnamed statement keeps its pin while idle (by design) and only that one
                stored()
                p = _pq(db)
                try:
                    assert p.pgconn.prepare(b"", _sql(T).encode()).status == psycopg.pq.ExecStatus.COMMAND_OK
                    _wrap(db)
                    got, hit = _fresh_session_hit(db, T)
                    assert got == want and hit  # still pinned by p
                    res = p.pgconn.exec_prepared(b"", [])
                    assert tuple(float(res.get_value(0, i)) for i in range(4)) == want
                    assert p.pgconn.prepare(b"", b"SELECT 1").status == psycopg.pq.ExecStatus.COMMAND_OK
                    not_pinned()
                finally:
                    p.close()
            attack("idle unnamed statement: pinned while it lives, unpinned when replaced", idle_unnamed_pins_only_one)

            def idle_pins_hold_at_most_half():
                # eight idle sessions, each holding an unnamed statement replayed from its own entry
                # (~30 kB each: 240 kB of the 256 kB region if all were pinned, so no new entry would
                # fit): pins stop at half the region, the others read a copy; new statements are
                # still stored and shared, and every idle statement still answers exactly
                sessions, ts = [], [400 + i for i in range(8)]
                try:
                    for t in ts:
                        stored(t)
                        p = _pq(db)
                        sessions.append(p)
                        assert p.pgconn.prepare(b"", _sql(t).encode()).status == psycopg.pq.ExecStatus.COMMAND_OK
                    _wrap(db)
                    stored(T + 7)  # (asserts that a second new session replays it from the shared memo)
                    for p, t in zip(sessions, ts):
                        res = p.pgconn.exec_prepared(b"", [])
                        assert res.status == psycopg.pq.ExecStatus.TUPLES_OK, res.error_message
                        assert tuple(float(res.get_value(0, i)) for i in range(4)) == _native(admin, t)
                    for p in sessions:  # every idle statement was a replay of the shared memo
                        res = p.pgconn.exec_(b"SELECT dx._shared_memo_hits()")
                        assert int(res.get_value(0, 0)) >= 1, res.get_value(0, 0)
                finally:
                    for p in sessions:
                        p.close()
                not_pinned()
            attack("eight idle unnamed statements pin at most half the region (the rest read a copy): "
                   "new statements still shared, every answer exact", idle_pins_hold_at_most_half)

            def parallel():
                par = ("SET parallel_setup_cost = 0; SET parallel_tuple_cost = 0; "
                       "SET min_parallel_table_scan_size = 0; SET max_parallel_workers_per_gather = 2; "
                       "SET force_parallel_mode = {}")
                for mode in ("off", "regress"):
                    c1 = connect(db)
                    try:
                        execute(c1, par.format(mode))
                        assert _row(c1, _sql(T)) == want, mode
                    finally:
                        c1.close()
                    s = connect(db)
                    try:
                        execute(s, par.format(mode))
                        assert _row(s, _sql(T)) == want, mode
                        assert _shared_hits(s) == 1, mode
                        plan = "\n".join(r[0] for r in rows(s, f"EXPLAIN {_sql(T)}"))
                        assert "Gather" in plan, plan
                        _wrap(db)
                        assert _row(s, _sql(T)) == want, mode
                    finally:
                        s.close()
            attack("parallel plans (partial aggregates in workers, force_parallel_mode) replayed in place: exact", parallel)

            def stand_in_never_shown():
                # a stand-in is a 44-byte varlena starting with its magic (pg/stand_in.h: 'constvalue 44
                # [ -80 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 -1 -1 -1 -1 ...'); none may reach a plan anyone sees
                # (its nonce would let a constant be 'restored' to a table)
                c1 = connect(db)  # (stored under these settings: part of the key)
                try:
                    execute(c1, "SET client_min_messages = log; SET debug_print_plan = on; SET debug_pretty_print = off")
                    assert _row(c1, _sql(T)) == want
                finally:
                    c1.close()
                s = _pq(db)
                notices = []
                s.add_notice_handler(lambda d: notices.append((d.message_primary or "") + "\n" + (d.message_detail or "")))
                try:
                    s.execute("SET client_min_messages = log")
                    s.execute("SET debug_print_plan = on")
                    s.execute("SET debug_pretty_print = off")
                    got = tuple(float(x) for x in s.execute(_sql(T)).fetchone())
                    assert got == want
                    assert s.execute("SELECT dx._shared_memo_hits()").fetchone()[0] == 1
                    assert len(s.execute(f"SELECT * FROM dx.explain($q${_sql(T)}$q$)").fetchall()) == 4
                    plan_text = s.execute(f"EXPLAIN (VERBOSE) {_sql(T)}").fetchall()
                    s.execute("LOAD 'auto_explain'")
                    s.execute("SET auto_explain.log_min_duration = 0; SET auto_explain.log_verbose = on")
                    got = tuple(float(x) for x in s.execute(_sql(T)).fetchone())
                    assert got == want
                finally:
                    s.close()
                dumps = [n for n in notices if "constvalue" in n or "Query Text" in n or "Aggregate" in n]
                assert any(":constvalue" in n for n in dumps), notices[:3]  # (the plan was printed)
                for n in dumps:
                    # (format_node_dump breaks its lines at any space)
                    assert not re.search(r"\s+".join(":constvalue 44 \\[ -80 0 0 0 1 0 0 0 0 0 0 0 0 0 0 0 -1 -1 -1 -1".split()), n), \
                        "a stand-in in a printed plan"
                # the restored tables are in the plan (over 1 kB each)
                assert any(re.search(r":constvalue (\d{4,}) \[", n) for n in dumps)
                text = "\n".join(r[0] for r in plan_text)
                assert "k299" in text, text[:500]  # EXPLAIN VERBOSE shows the domain (restored)
            attack("debug_print_plan / EXPLAIN VERBOSE / auto_explain / dx.explain of a replay read in place: no stand-in shown, "
                   "exact", stand_in_never_shown)

            def typed_equal_tables():
                # tables of equal bytes under other types and typmods (stored once, stood in for once)
                q = ("SELECT dx.sum(v) AS a, dx.sum(v::int8) AS b, dx.sum(v::numeric(12, 2)) AS c, "
                     "dx.sum(v::float8) AS d FROM st_t")
                nat = _row(admin, "SELECT sum(v), sum(v::int8), sum(v::numeric(12, 2)), sum(v::float8) FROM st_t")
                c1 = connect(db)
                try:
                    assert _row(c1, q) == nat
                finally:
                    c1.close()
                c2 = connect(db)
                try:
                    assert _row(c2, q) == nat and _shared_hits(c2) == 1
                finally:
                    c2.close()
            attack("equal tables of other types/typmods in one statement (dedup, one stand-in class): exact",
                   typed_equal_tables)

            def grouped_and_partitionwise():
                # a statement grouped by the 300-value column (its group keys' tables over 1 kB beside
                # the aggregates'), and one over a partitioned table planned with partitionwise
                # aggregation (an Agg per partition under an Append), each replayed in place by a new
                # session and again after a wrap, against native SQL
                execute(admin, "CREATE TABLE st_g (k text, v int)")
                execute(admin, "INSERT INTO st_g SELECT 'k' || (i % 300), (i * 7) % 10 FROM generate_series(1, 30000) AS i")
                execute(admin, "CREATE TABLE st_p (k text, v int) PARTITION BY LIST (v)")
                execute(admin, "CREATE TABLE st_p0 PARTITION OF st_p FOR VALUES IN (0, 1, 2, 3, 4)")
                execute(admin, "CREATE TABLE st_p1 PARTITION OF st_p DEFAULT")
                execute(admin, "INSERT INTO st_p SELECT k, v FROM st_g")
                for t in ("st_g", "st_p"):
                    execute(admin, f"ANALYZE {t}")
                    execute(admin, f"SELECT dx.protect_table('{t}', 'Infinity')")
                    execute(admin, f"SELECT dx.set_column('{t}', 'k', jsonb_build_object('values', (SELECT jsonb_agg('k' || i "
                                   f"ORDER BY i) FROM generate_series(0, 299) AS i)), '{{\"type\": \"none\"}}')")
                    execute(admin, f"SELECT dx.set_column('{t}', 'v', '{{\"min\": 0, \"max\": 9}}', '{{\"type\": \"none\"}}')")
                    execute(admin, f"SELECT dx.grant_budget(current_user::regrole, '{t}', 1e12)")
                cases = [
                    ("", "SELECT k, dx.count(*) FILTER (WHERE v < 5), dx.count(*), dx.sum(v) FROM st_g GROUP BY k",
                     "SELECT k, count(*) FILTER (WHERE v < 5), count(*), sum(v) FROM st_g GROUP BY k"),
                    ("SET enable_partitionwise_aggregate = on",
                     "SELECT v, dx.count(*) FILTER (WHERE k < 'k150'), dx.count(*), dx.sum(v) FROM st_p GROUP BY v",
                     "SELECT v, count(*) FILTER (WHERE k < 'k150'), count(*), sum(v) FROM st_p GROUP BY v"),
                    ("SET enable_partitionwise_aggregate = on",
                     "SELECT dx.count(*) FILTER (WHERE k < 'k150'), dx.count(*), dx.sum(v) FROM st_p",
                     "SELECT count(*) FILTER (WHERE k < 'k150'), count(*), sum(v) FROM st_p"),
                ]

                def answers(conn, sql):
                    return sorted(tuple(x if isinstance(x, str) else float(x) for x in r) for r in rows(conn, sql))

                for setting, dx_sql, native_sql in cases:
                    nat = answers(admin, native_sql)
                    for _ in range(2):  # stored, then replayed
                        c1 = connect(db)
                        try:
                            if setting:
                                execute(c1, setting)
                            assert answers(c1, dx_sql) == nat, dx_sql
                        finally:
                            c1.close()
                    s = connect(db)
                    try:
                        if setting:
                            execute(s, setting)
                        assert answers(s, dx_sql) == nat, dx_sql
                        assert _shared_hits(s) == 1, dx_sql
                        _wrap(db)
                        assert answers(s, dx_sql) == nat, dx_sql
                    finally:
                        s.close()
            attack("GROUP BY a 300-value column, partitionwise aggregation (Aggs under an Append), replayed in "
                   "place and after a wrap: exact", grouped_and_partitionwise)

            def pg_stat_statements():
                if not pgss:
                    print("    (pg_stat_statements not available: not loaded)")
                    return
                execute(admin, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
                stored()
                s = connect(db)
                try:
                    assert _row(s, _sql(T)) == want and _shared_hits(s) == 1
                    calls, plans = rows(s, "SELECT sum(calls), sum(plans) FROM pg_stat_statements WHERE query LIKE "
                                           "'SELECT dx.count(*) FILTER (WHERE k < $1)%'")[0]
                    assert calls and calls >= 3 and plans and plans >= 3, (calls, plans)
                finally:
                    s.close()
            attack("pg_stat_statements (preloaded before dxpriv: plans the query holding stand-ins) around every "
                   "attack: exact; its counts kept", pg_stat_statements)

            def concurrent_readers():
                stored()
                stop, errors, answers = threading.Event(), [], []

                def reader():
                    try:
                        while not stop.is_set():
                            answers.append(_fresh_session_hit(db, T))
                    except Exception as ex:  # reported below
                        errors.append(ex)

                threads = [threading.Thread(target=reader) for _ in range(2)]
                for t in threads:
                    t.start()
                try:
                    _wrap(db)
                finally:
                    stop.set()
                    for t in threads:
                        t.join()
                assert not errors, errors
                assert answers and all(a[0] == want for a in answers), [a for a in answers if a[0] != want][:3]
                not_pinned()
            attack("two sessions replaying in place while the ring wraps: every answer exact; no pin left",
                   concurrent_readers)
            admin.close()
    finally:
        print("\n".join("    " + r for r in results), flush=True)
        c = connect()
        execute(c, "ALTER SYSTEM RESET dxpriv.shared_memo_memory")
        if pgss:
            execute(c, "ALTER SYSTEM RESET pg_stat_statements.track_planning")
            execute(c, "ALTER SYSTEM RESET pg_stat_statements.track")
            execute(c, "ALTER SYSTEM RESET shared_preload_libraries")  # (postgresql.conf's: dxpriv)
        c.close()
        _restart()
    assert not failures, failures
