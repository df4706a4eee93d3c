"""Shared analysis memo (sharedmemo, src/pg/planner/shared_memo.h): a statement analysed in one
session is replayed in a new session without an analysis, keyed by the cluster's catalog
generation (src/pg/metadata/catalog_generation.h). Several concurrent sessions get the answer a
fresh analysis gives; while a DDL transaction is open nobody reads or stores; after its COMMIT
everyone sees the new definition, after a ROLLBACK the old one; a backend killed while holding a
DDL does not leave the memo off; attack tests: another role, other contents, an analyst's own
(uncommitted) DDL and a full region never serve an analysis made for something else."""
import contextlib
import json
import os
import threading
import time

import psycopg2

from attack_fixture import ensure_analyst_role
from e2e_common import connect, execute, fresh_db, scalar, us_points

ROLE_A = "sharedmemo_a"
ROLE_B = "sharedmemo_b"
POINTS = 3000  # per-point tables of 24 kB: kept as raw blobs in the shared entry
SQL = "SELECT avg(lat), count(*) FILTER (WHERE lon < -100) FROM spots"  # by an analyst
# by the owner (analysts may not call user functions on protected columns): a function it calls
OWNER_SQL = "SELECT dx.sum(sm_f(id)), dx.count(*) FROM spots"


def _setup(db):
    admin = connect(db)
    for r in (ROLE_A, ROLE_B):
        ensure_analyst_role(admin, r)
        execute(admin, "SELECT dx.add_analyst(%s::regrole)", (r,))
    pts = us_points(POINTS, 3)
    execute(admin, "CREATE TABLE spots (id int, lon float8, lat float8)")
    execute(admin, "INSERT INTO spots SELECT g %% 50, a.lons[1 + (g * 7919) %% %s], a.lats[1 + (g * 7919) %% %s] "
                   "FROM generate_series(1, 5000) g, (SELECT %s::float8[] AS lons, %s::float8[] AS lats) a",
            (POINTS, POINTS, [p[0] for p in pts], [p[1] for p in pts]))
    execute(admin, "SELECT dx.protect_table('spots', 1.0)")
    execute(admin, "SELECT dx.set_column_group('spots', ARRAY['lon', 'lat'], %s::jsonb, %s::jsonb)",
            (json.dumps({"points": [list(p) for p in pts]}), '{"type": "l2", "scale": 1}'))
    execute(admin, "SELECT dx.set_column('spots', 'id', '{\"min\": 0, \"max\": 49}', "
                   "'{\"type\": \"absolute\", \"scale\": 10}')")
    execute(admin, "CREATE FUNCTION sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x'")
    for r in (ROLE_A, ROLE_B, "postgres"):
        execute(admin, "SELECT dx.grant_budget(%s::regrole, 'spots', 1e6)", (r,))
    return admin


def _run(db, role=ROLE_A, sql=SQL, conn=None):
    """The statement in a new session (or conn) as role (None: the owner), with a fixed noise seed:
    (answer, shared hits of that session, memo hits of that session)."""
    c = conn or connect(db)
    try:
        execute(c, "SET dxpriv.test_seed = 21")
        execute(c, f"SET ROLE {role or 'postgres'}")
        with c.cursor() as cur:
            cur.execute(sql)
            answer = cur.fetchone()
        execute(c, "RESET ROLE")
        return answer, scalar(c, "SELECT dx._shared_memo_hits()"), scalar(c, "SELECT dx._analysis_memo_hits()")
    finally:
        if conn is None:
            c.close()


def _concurrent(db, n=4, role=ROLE_A, sql=SQL):
    out, errors = [None] * n, []

    def worker(i):
        try:
            out[i] = _run(db, role, sql)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    return out


def test_sessions_share_one_analysis_with_the_same_answers():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            first, shared, _ = _run(db)
            assert shared == 0 and first[0] is not None
            for answer, shared, memo in _concurrent(db, 4):
                assert shared == 1 and memo == 1, (shared, memo)
                assert answer == first  # the answer of a fresh analysis under the same seed
            # with the answer cache on: a new session's shared hit is answered from the cache, free
            spent = "SELECT spent FROM dx.budget_grants WHERE role = %s::regrole"

            def cached_session():
                c = connect(db)
                try:
                    execute(c, f"SET dxpriv.cache_lifetime = 3600; SET ROLE {ROLE_A}")
                    answer = scalar(c, SQL)
                    execute(c, "RESET ROLE")
                    return answer, scalar(c, "SELECT dx._shared_memo_hits()")
                finally:
                    c.close()

            cached, shared = cached_session()
            assert shared == 0  # (another setting: another key)
            paid = scalar(admin, spent, (ROLE_A,))
            for _ in range(3):
                assert cached_session() == (cached, 1)
            assert scalar(admin, spent, (ROLE_A,)) == paid  # answered from the answer cache
        finally:
            admin.close()


def test_open_ddl_transaction_stops_sharing_until_its_end():
    with fresh_db() as db:
        admin = _setup(db)
        old_session = connect(db)
        try:
            old, _, _ = _run(db, None, OWNER_SQL, conn=old_session)
            assert _run(db, None, OWNER_SQL)[1] == 1
            ddl = connect(db, autocommit=False)
            with ddl.cursor() as cur:  # not committed yet
                cur.execute("CREATE OR REPLACE FUNCTION sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE "
                            "AS 'SELECT x + 1'")
            for answer, shared, _ in _concurrent(db, 3, None, OWNER_SQL):  # nobody reads (nor stores) while it is open
                assert shared == 0 and answer == old
            for role, sql in ((None, OWNER_SQL), (ROLE_A, SQL), (None, OWNER_SQL)):
                assert _run(db, role, sql)[1] == 0
            ddl.commit()
            ddl.close()
            new, shared, _ = _run(db, None, OWNER_SQL)  # a fresh analysis with the new definition
            assert shared == 0 and new != old and new[0] != old[0]
            for answer, shared, _ in _concurrent(db, 3, None, OWNER_SQL):
                assert shared == 1 and answer == new
            assert _run(db, None, OWNER_SQL, conn=old_session)[0] == new  # an older session sees it too
            # a rolled-back DDL: a fresh analysis after it (the generation moved), the same definition
            ddl = connect(db, autocommit=False)
            with ddl.cursor() as cur:
                cur.execute("CREATE OR REPLACE FUNCTION sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE "
                            "AS 'SELECT x + 2'")
            assert _run(db, None, OWNER_SQL) == (new, 0, 0)
            ddl.rollback()
            ddl.close()
            assert _run(db, None, OWNER_SQL) == (new, 0, 0)
            assert _run(db, None, OWNER_SQL) == (new, 1, 1)
        finally:
            old_session.close()
            admin.close()


def test_killed_ddl_backend_does_not_stop_sharing():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            ddl = connect(db, autocommit=False)
            with ddl.cursor() as cur:
                cur.execute("CREATE TABLE sm_other (x int)")
                cur.execute("SELECT pg_backend_pid()")
                pid = cur.fetchone()[0]
            assert _run(db)[1] == 0 and _run(db)[1] == 0  # in flight: nothing stored, nothing read
            assert scalar(admin, "SELECT pg_terminate_backend(%s)", (pid,))
            deadline = time.time() + 30
            while scalar(admin, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)) > 0:
                assert time.time() < deadline
                time.sleep(0.1)
            try:
                ddl.close()
            except psycopg2.Error:
                pass
            assert _run(db)[1] == 0  # stores again
            assert _run(db)[1] == 1  # and is read again
        finally:
            admin.close()


def test_attack_other_role_other_contents_own_ddl():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            first, _, _ = _run(db, ROLE_A)
            assert _run(db, ROLE_A)[1] == 1
            # another role: never role A's analysis
            assert _run(db, ROLE_B)[1] == 0
            # other contents (a new contents version): a new analysis, never the old one
            execute(admin, "INSERT INTO spots SELECT 1, lon, lat FROM spots LIMIT 10")
            assert _run(db, ROLE_A)[1] == 0
            assert _run(db, ROLE_A)[1] == 1
            # an analyst's own uncommitted DDL, then the statement in the same transaction (seeing its
            # own catalog): nothing read or stored by anyone while it is open; after its ROLLBACK a
            # fresh analysis gives the answers of before
            execute(admin, "CREATE SCHEMA sm_a AUTHORIZATION " + ROLE_A)
            base = _run(db, ROLE_A)[0]
            assert _run(db, ROLE_A) == (base, 1, 1)
            a = connect(db, user=ROLE_A, autocommit=False)
            with a.cursor() as cur:
                cur.execute("CREATE TABLE sm_a.spots (id int, lon float8, lat float8)")
                cur.execute("SET LOCAL search_path = sm_a, public")
                cur.execute("SELECT count(*) FROM spots")  # (its own table now: a plain count)
                cur.execute("SET LOCAL search_path = public")
                cur.execute(SQL)
                cur.fetchone()
            for role in (ROLE_A, ROLE_B, None):
                assert _run(db, role, SQL if role else OWNER_SQL)[1] == 0
            a.rollback()
            a.close()
            assert _run(db, ROLE_A) == (base, 0, 0)
            assert _run(db, ROLE_A) == (base, 1, 1)
            # a policy change (of another column): a new analysis, never the old one
            execute(admin, "SELECT dx.set_column('spots', 'id', '{\"min\": 0, \"max\": 59}', "
                           "'{\"type\": \"absolute\", \"scale\": 10}')")
            assert _run(db, ROLE_A)[1] == 0
        finally:
            admin.close()


def test_full_region_evicts_oldest_and_never_serves_a_wrong_entry():
    """With a 128 kB region (restart): entries over a quarter (32 kB) are not stored; many small
    statements evict the oldest; every answer still equals a fresh analysis's."""
    from test_ledger import restart_cluster
    restart = restart_cluster
    c = connect()
    for bad in ("-1", "'lots'", "'5TB'"):  # bad values: refused with 22023, nothing written
        try:
            execute(c, f"ALTER SYSTEM SET dxpriv.shared_memo_memory = {bad}")
            raise AssertionError(bad)
        except psycopg2.Error as e:
            assert e.pgcode == "22023", (bad, e.pgcode, e.pgerror)
    execute(c, "ALTER SYSTEM SET dxpriv.shared_memo_memory = '128kB'")
    c.close()
    restart()
    try:
        with fresh_db() as db:
            admin = _setup(db)
            try:
                assert scalar(admin, "SHOW dxpriv.shared_memo_memory") == "128kB"
                # 3000-point tables of 24 kB each: over a quarter of the region, never stored
                assert _run(db)[1] == 0 and _run(db)[1] == 0
                small = [f"SELECT sum(id) FROM spots WHERE id > {i}" for i in range(60)]
                firsts = [_run(db, sql=s)[0] for s in small]
                replays = [_run(db, sql=s) for s in reversed(small)]  # the newest first
                hits = [r[1] for r in replays]
                assert 0 < sum(hits) < len(small), hits  # the newest are read, the oldest were evicted
                assert hits == sorted(hits, reverse=True), hits  # (a run of hits, then analyses)
                assert [r[0] for r in replays] == list(reversed(firsts))
                assert _run(db, sql=small[0])[1] == 1  # stored again by its replay
            finally:
                admin.close()
    finally:
        c = connect()
        execute(c, "ALTER SYSTEM RESET dxpriv.shared_memo_memory")
        c.close()
        restart()


@contextlib.contextmanager
def _db_surviving_a_crash():
    """fresh_db, dropped through a new connection (the first one does not survive a crash restart)."""
    with fresh_db() as db:
        pass  # (the name is free again: created and dropped)
    admin = connect()
    try:
        execute(admin, f"CREATE DATABASE {db}")
        execute(admin, f"ALTER DATABASE {db} SET dxpriv.cache_lifetime = 0")
    finally:
        admin.close()
    try:
        c = connect(db)
        execute(c, "CREATE EXTENSION dxpriv")
        c.close()
        yield db
    finally:
        admin = connect()
        execute(admin, f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
        admin.close()


def scalar_row(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()


def _filler(k):
    """Another statement of SQL's shape (its own tables of the same size), by an analyst."""
    return f"SELECT avg(lat), count(*) FILTER (WHERE lon < -{101 + k}) FROM spots"


_FILLERS = iter(range(10 ** 6))


def _wrap(db, fillers=20):
    """Stores twenty new entries of SQL's size (about 2.5 MB in all) in a 1 MB region: the ring
    wraps twice, so every entry that is not pinned is overwritten."""
    for _ in range(fillers):
        assert _run(db, sql=_filler(next(_FILLERS)))[1] == 0


def test_pinned_entries_survive_the_ring_and_pins_go_with_their_statements():
    """l2copy: a replay reads the shared entry's per-point tables in place under a pin (no copy).
    With a 1 MB region (restart): an idle session whose unnamed extended-protocol statement was
    parsed from the entry keeps it pinned while twenty other analyses wrap the ring around it (an
    unpinned control entry is overwritten), new sessions still read it, and the statement then
    answers exactly as a fresh analysis does (no garbage); three sessions at a time reading it while
    the ring wraps answer as a fresh analysis does. The pin goes with the statement: when
    the statement is replaced, when a replayed statement fails (no budget) or is cancelled
    mid-scan, and when the backend is terminated, the entry's space is reused by the next wrap (a
    new session analyses again): no pin blocks the ring. Killed with SIGKILL: the postmaster
    reinitialises shared memory and the next sessions share again."""
    import psycopg
    import signal
    from test_ledger import as_cluster_owner, restart_cluster, wait_for_server
    restart = restart_cluster
    c = connect()
    execute(c, "ALTER SYSTEM SET dxpriv.shared_memo_memory = '1MB'")
    c.close()
    restart()
    try:
        with _db_surviving_a_crash() as db:
            admin = _setup(db)
            try:
                first, shared, _ = _run(db)  # analysed and stored
                assert shared == 0
                # an idle session holding an unnamed statement parsed from the shared entry
                p = psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user="postgres",
                                    dbname=db, autocommit=True)
                p.execute("SET dxpriv.test_seed = 21")
                p.execute(f"SET ROLE {ROLE_A}")
                res = p.pgconn.prepare(b"", SQL.encode())  # Parse only: the replay, nothing executed
                assert res.status == psycopg.pq.ExecStatus.COMMAND_OK, res.error_message
                control = "SELECT avg(lat), count(*) FILTER (WHERE lon < -99.5) FROM spots"
                _run(db, sql=control)
                assert _run(db, sql=control)[1] == 1
                _wrap(db)
                assert _run(db, sql=control)[1] == 0  # an unpinned entry: overwritten by the wrap
                assert _run(db) == (first, 1, 1)  # the pinned one: still there, read by new sessions
                res = p.pgconn.exec_prepared(b"", [])  # Bind + Execute of the statement parsed before
                assert res.status == psycopg.pq.ExecStatus.TUPLES_OK, res.error_message
                got = (float(res.get_value(0, 0)), float(res.get_value(0, 1)))
                assert got == (float(first[0]), float(first[1]))  # what a fresh analysis answers
                p.execute("RESET ROLE")  # (a new unnamed statement: the one above, and its pin, go)
                assert p.execute("SELECT dx._shared_memo_hits()").fetchone()[0] == 1  # (it was a shared hit)
                p.close()
                # the statement replaced (the query above): its pin went; the next wrap reuses the space
                _wrap(db)
                assert _run(db)[1] == 0  # analysed again (and stored again)
                # attack: a session's memo entry taken from the shared one is not pinned between its
                # statements; when the ring gives its space to other statements' entries (same shape,
                # other tables), its next statement is analysed again, never read from those bytes
                def two_statements(wrap_between):
                    s2 = connect(db)
                    try:
                        execute(s2, "SET dxpriv.test_seed = 21")
                        execute(s2, f"SET ROLE {ROLE_A}")
                        answers = [scalar_row(s2, SQL)]
                        if wrap_between:
                            _wrap(db)
                        answers.append(scalar_row(s2, SQL))
                        execute(s2, "RESET ROLE")
                        return answers, scalar(s2, "SELECT dx._shared_memo_hits()"), \
                            scalar(s2, "SELECT dx._analysis_memo_hits()")
                    finally:
                        s2.close()

                kept, shared, memo = two_statements(False)
                assert (shared, memo) == (1, 2) and kept[0] == first  # (the second: re-pinned, a memo hit)
                moved, shared, memo = two_statements(True)
                assert (shared, memo) == (1, 1)  # the second: its entry went, analysed again
                assert moved == kept  # the answers of the same statements over their own tables
                # three sessions at a time reading the entry in place while the ring wraps: every
                # answer is a fresh analysis's (read in place, or analysed again once overwritten)
                stop, errors, answers = threading.Event(), [], []

                def reader():
                    try:
                        while not stop.is_set():
                            answers.append(_run(db))
                    except Exception as ex:  # reported below
                        errors.append(ex)

                readers = [threading.Thread(target=reader) for _ in range(3)]
                for t in readers:
                    t.start()
                try:
                    _wrap(db)
                finally:
                    stop.set()
                    for t in readers:
                        t.join()
                assert not errors, errors
                assert answers and all(a[0] == first for a in answers), answers
                assert any(a[1] == 1 for a in answers), answers
                # a replayed statement that fails after its replay: no budget (charged at ExecutorStart)
                assert _run(db, ROLE_B)[1] == 0
                execute(admin, "SELECT dx.revoke_budget(%s::regrole, 'spots')", (ROLE_B,))
                e = connect(db)
                execute(e, "SET dxpriv.test_seed = 21")
                execute(e, f"SET ROLE {ROLE_B}")
                try:
                    execute(e, SQL)
                    raise AssertionError("answered without a budget")
                except psycopg2.Error as err:
                    assert err.pgcode == "53000", (err.pgcode, err.pgerror)  # (budget exhausted)
                execute(e, "RESET ROLE")
                assert scalar(e, "SELECT dx._shared_memo_hits()") == 1  # (replayed, then refused)
                _wrap(db)  # e stays open and idle
                e.close()
                execute(admin, "SELECT dx.grant_budget(%s::regrole, 'spots', 1e6)", (ROLE_B,))
                assert _run(db, ROLE_B)[1] == 0  # ROLE_B's entry was overwritten: its pin had gone
                # a replayed statement cancelled mid-scan (2M rows)
                execute(admin, "CREATE TABLE spots_big AS SELECT s.* FROM spots s, generate_series(1, 400)")
                execute(admin, "SELECT dx.protect_table('spots_big', 1.0)")
                pts = us_points(POINTS, 3)
                execute(admin, "SELECT dx.set_column_group('spots_big', ARRAY['lon', 'lat'], %s::jsonb, %s::jsonb)",
                        (json.dumps({"points": [list(q) for q in pts]}), '{"type": "l2", "scale": 1}'))
                execute(admin, "SELECT dx.grant_budget(%s::regrole, 'spots_big', 1e6)", (ROLE_A,))
                big = SQL.replace("spots", "spots_big")
                assert _run(db, sql=big)[1] == 0
                k = connect(db)
                pid = scalar(k, "SELECT pg_backend_pid()")
                execute(k, "SET dxpriv.test_seed = 21")
                execute(k, f"SET ROLE {ROLE_A}")
                timer = threading.Timer(0.08, lambda: scalar(admin, "SELECT pg_cancel_backend(%s)", (pid,)))
                timer.start()
                try:
                    execute(k, big)
                    cancelled = False
                except psycopg2.Error as err:
                    assert err.pgcode == "57014", err.pgerror
                    cancelled = True
                timer.join()
                execute(k, "RESET ROLE")
                assert scalar(k, "SELECT dx._shared_memo_hits()") == 1  # replayed (then cancelled while scanning)
                _wrap(db)  # k stays open and idle
                assert _run(db, sql=big)[1] == 0  # overwritten: the cancelled statement's pin had gone
                k.close()
                # a backend terminated while it holds a pin (its unnamed statement): released at its exit
                t = psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user="postgres",
                                    dbname=db, autocommit=True)
                tpid = t.execute("SELECT pg_backend_pid()").fetchone()[0]
                t.execute("SET dxpriv.test_seed = 21")
                t.execute(f"SET ROLE {ROLE_A}")
                assert t.pgconn.prepare(b"", SQL.encode()).status == psycopg.pq.ExecStatus.COMMAND_OK
                assert scalar(admin, "SELECT pg_terminate_backend(%s)", (tpid,))
                deadline = time.time() + 30
                while scalar(admin, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (tpid,)) > 0:
                    assert time.time() < deadline
                    time.sleep(0.1)
                _wrap(db)
                assert _run(db)[1] == 0  # overwritten: the terminated backend's pin had gone
                # SIGKILL while holding a pin: the postmaster resets shared memory (the ring with it)
                s = psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user="postgres",
                                    dbname=db, autocommit=True)
                spid = s.execute("SELECT pg_backend_pid()").fetchone()[0]
                s.execute("SET dxpriv.test_seed = 21")
                s.execute(f"SET ROLE {ROLE_A}")
                assert s.pgconn.prepare(b"", SQL.encode()).status == psycopg.pq.ExecStatus.COMMAND_OK
                admin.close()
                sentinel = connect(db)
                as_cluster_owner(f"kill -9 {spid}")
                try:
                    s.close()
                except psycopg.Error:
                    pass
                deadline = time.time() + 30
                try:  # (the crash restart terminates every backend: until then the old server answers)
                    while True:
                        scalar(sentinel, "SELECT 1")
                        assert time.time() < deadline
                        time.sleep(0.1)
                except psycopg2.Error:
                    pass
                wait_for_server()
                deadline = time.time() + 60
                while True:
                    try:
                        admin = connect(db)
                        break
                    except psycopg2.Error:
                        assert time.time() < deadline
                        time.sleep(0.5)
                assert _run(db) == (first, 0, 0)  # (the ring is new: analysed, the same answer)
                assert _run(db) == (first, 1, 1)
                print(f"    (cancelled mid-scan: {cancelled})")
            finally:
                admin.close()
    finally:
        c = connect()
        execute(c, "ALTER SYSTEM RESET dxpriv.shared_memo_memory")
        c.close()
        restart()
