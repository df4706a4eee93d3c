"""The budget ledger is a guarantee: no refund, no overspending, durable across crashes.

Every refund attempt (ROLLBACK, ROLLBACK TO SAVEPOINT, an error after the aggregate, a statement
timeout, a cancel, a client disconnect mid-result, SIGKILL of the backend, SIGKILL of the
postmaster) is scripted; afterwards dx.budgets shows the charge and dx.ledger holds the row.
Queries carry a unique tag in a comment, so each answered query can be matched to its ledger row
(the ledger stores the statement text).
"""
import contextlib
import itertools
import json
import os
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid

import psycopg2

from e2e_common import connect, execute, scalar

ANALYST = "ledger_e2e_analyst"
_counter = itertools.count()


# ---------------------------------------------------------------- helpers

def wait_for_server(timeout=60.0):
    """Waits until the cluster accepts connections again (after a crash restart)."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            conn = connect()
            scalar(conn, "SELECT 1")
            conn.close()
            return
        except psycopg2.Error as e:
            last = e
            time.sleep(0.2)
    raise AssertionError(f"server did not come back: {last}")


def wait_for_crash_restart(survivor, timeout=30.0):
    """Waits until the postmaster has terminated `survivor` (an open connection) in its crash
    restart: before that, a new connection may still be accepted by the old generation of the
    server and be cut off a moment later."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            scalar(survivor, "SELECT 1")
        except psycopg2.Error:
            return
        time.sleep(0.05)
    raise AssertionError("the postmaster did not restart its backends after the SIGKILL")


@contextlib.contextmanager
def ledger_db():
    """A fresh database with dxpriv; dropped afterwards even if the server restarted meanwhile."""
    name = f"ledger_{os.getpid()}_{next(_counter)}"
    admin = connect()
    execute(admin, f"CREATE DATABASE {name}")
    # identical queries would replay cached answers free of charge: these tests exercise charging
    execute(admin, f"ALTER DATABASE {name} SET dxpriv.cache_lifetime = 0")
    admin.close()
    conn = connect(name)
    execute(conn, "CREATE EXTENSION dxpriv")
    execute(conn, f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ANALYST}') THEN
            CREATE ROLE {ANALYST} LOGIN;
        END IF; END $$""")
    conn.close()
    try:
        yield name
    finally:
        wait_for_server()
        admin = connect()
        execute(admin, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


def protect(conn, table="people", rows=1000, budget=1.0, role="postgres", refresh=None, delta=0.0):
    execute(conn, f"CREATE TABLE {table} (age int, sex text)")
    execute(conn, f"INSERT INTO {table} SELECT 18 + i % 60, CASE WHEN i % 2 = 0 THEN 'M' ELSE 'F' END "
                  f"FROM generate_series(1, {rows}) AS i")
    execute(conn, f"SELECT dx.protect_table('{table}')")
    execute(conn, f"""SELECT dx.set_column('{table}', 'age', '{{"min": 0, "max": 120}}', '{{"type": "absolute", "scale": 10}}')""")
    execute(conn, f"""SELECT dx.set_column('{table}', 'sex', '{{"values": ["M", "F"]}}', '{{"type": "discrete", "weight": 1}}')""")
    execute(conn, f"GRANT SELECT ON {table} TO {ANALYST}")
    if budget is not None:
        execute(conn, "SELECT dx.grant_budget(%s::regrole, %s::regclass, %s, %s::interval, %s)",
                (role, table, budget, refresh, delta))


def slow_table(conn, rows=300_000):
    """A protected table for SLOW_QUERY, which can be interrupted after it was charged."""
    execute(conn, "CREATE TABLE big (v int)")
    execute(conn, f"INSERT INTO big SELECT i % 100 FROM generate_series(1, {rows}) AS i")
    execute(conn, "SELECT dx.protect_table('big')")
    execute(conn, """SELECT dx.set_column('big', 'v', '{"min": 0, "max": 99}', '{"type": "discrete", "weight": 1}')""")
    execute(conn, "SELECT dx.grant_budget('postgres', 'big', 100)")


# Slow after the charge (epsilon 0.1): pg_sleep runs in the projection over the released row.
# (A per-row expensive WHERE no longer slows a dx query: WHERE is evaluated on domain points only.)
SLOW_QUERY = "SELECT dx.count(*), pg_sleep(3) FROM big"


def tag():
    return "t" + uuid.uuid4().hex


def spent(conn, table="people", role="postgres"):
    return scalar(conn, "SELECT spent FROM dx.budgets WHERE role = %s::regrole AND \"table\" = %s::regclass", (role, table))


def ledger_rows(conn, tag_text):
    return scalar(conn, "SELECT count(*) FROM dx.ledger WHERE strpos(query, %s) > 0", (tag_text,))


def wait_for_ledger_row(conn, tag_text, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if ledger_rows(conn, tag_text) > 0:
            return
        time.sleep(0.01)
    raise AssertionError("the charge never reached the ledger")


def assert_charged(conn, tag_text, table, eps, role="postgres"):
    """The statement tagged tag_text left exactly one ledger row of eps and the budget shows it."""
    row = None
    with conn.cursor() as cur:
        cur.execute("SELECT count(*), sum(epsilon) FROM dx.ledger WHERE strpos(query, %s) > 0 AND relid = %s::regclass "
                    "AND role = %s::regrole", (tag_text, table, role))
        row = cur.fetchone()
    assert row[0] == 1, f"expected one ledger row for {tag_text}, found {row[0]}"
    assert abs(row[1] - eps) < 1e-12, row
    total = scalar(conn, "SELECT sum(epsilon) FROM dx.ledger WHERE relid = %s::regclass AND role = %s::regrole", (table, role))
    assert abs(spent(conn, table, role) - total) < 1e-9, (spent(conn, table, role), total)


def backend_pid(conn):
    return scalar(conn, "SELECT pg_backend_pid()")


def ledger_worker_pid(conn):
    """Pid of the ledger worker serving the connection's database, or None."""
    return scalar(conn, "SELECT max(pid) FROM pg_stat_activity WHERE backend_type = 'dxpriv ledger' "
                        "AND datname = current_database()")


def as_cluster_owner(cmd):
    """Runs a shell command as the cluster owner (postgres when we are root)."""
    bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
    path = f"{bindir}:{os.environ.get('PATH', '')}"
    if os.getuid() == 0:
        return subprocess.run(["su", "postgres", "-s", "/bin/bash", "-c", f"export PATH='{path}'; {cmd}"],
                              capture_output=True, text=True)
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=dict(os.environ, PATH=path))


def restart_cluster():
    """Restarts the e2e cluster (pg_ctl as the cluster owner, after ALTER SYSTEM of a server-start
    setting) and waits until it accepts connections again."""
    datadir = os.environ["DXPRIV_E2E_DATADIR"]
    log = os.path.join(os.path.dirname(datadir), "server.log")
    out = as_cluster_owner(f"pg_ctl -D '{datadir}' -l '{log}' -m fast -w restart")
    assert out.returncode == 0, out.stdout + out.stderr
    wait_for_server()


# ---------------------------------------------------------------- refund attempts

def test_rollback_does_not_refund():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn)
        t = tag()
        tx = connect(db, autocommit=False)
        execute(tx, f"SELECT dx.count(*) FROM people /* {t} */")
        tx.rollback()
        assert abs(spent(conn) - 0.1) < 1e-12
        assert_charged(conn, t, "people", 0.1)


def test_rollback_to_savepoint_does_not_refund():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn)
        t = tag()
        tx = connect(db, autocommit=False)
        execute(tx, "SAVEPOINT s")
        execute(tx, f"SELECT dx.count(*) FROM people /* {t} */")
        execute(tx, "ROLLBACK TO SAVEPOINT s")
        tx.commit()
        assert_charged(conn, t, "people", 0.1)


def test_error_after_the_aggregate_does_not_refund():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn)
        # in the same statement: the error is raised after the aggregate has been computed
        t1 = tag()
        try:
            execute(conn, f"SELECT dx.count(*) FROM people HAVING dx.count(*) / 0 > 1 /* {t1} */")
            raise AssertionError("division by zero expected")
        except psycopg2.Error as e:
            assert e.pgcode == "22012", e.pgcode
        assert_charged(conn, t1, "people", 0.1)  # the HAVING repeat is the same release: one charge
        # in the same query string (one implicit transaction), after the answer was sent
        t2 = tag()
        try:
            execute(conn, f"SELECT dx.count(*) FROM people /* {t2} */; SELECT 1 / 0")
            raise AssertionError("division by zero expected")
        except psycopg2.Error as e:
            assert e.pgcode == "22012", e.pgcode
        assert_charged(conn, t2, "people", 0.1)
        # later in the same transaction, which then rolls back
        t3 = tag()
        tx = connect(db, autocommit=False)
        execute(tx, f"SELECT dx.count(*) FROM people /* {t3} */")
        try:
            execute(tx, "SELECT 1 / 0")
        except psycopg2.Error:
            tx.rollback()
        assert_charged(conn, t3, "people", 0.1)
        assert abs(spent(conn) - 0.3) < 1e-12  # 0.1 + 0.1 + 0.1


def test_statement_timeout_does_not_refund():
    with ledger_db() as db:
        conn = connect(db)
        slow_table(conn)
        t = tag()
        execute(conn, "SET max_parallel_workers_per_gather = 0")
        execute(conn, "SET statement_timeout = '300ms'")
        try:
            execute(conn, f"{SLOW_QUERY} /* {t} */")
            raise AssertionError("statement_timeout expected")
        except psycopg2.Error as e:
            assert e.pgcode == "57014", e.pgcode
        execute(conn, "RESET statement_timeout")
        assert_charged(conn, t, "big", 0.1)


def _run_in_thread(db, sql, setup=(), user="postgres"):
    """Runs sql in a thread; returns (thread, result dict with pid, error code or rows)."""
    conn = connect(db, user=user)
    for s in setup:
        execute(conn, s)
    result = {"pid": backend_pid(conn)}

    def run():
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
                result["rows"] = cur.fetchall()
        except psycopg2.Error as e:
            result["error"] = e.pgcode
        except Exception as e:  # connection killed
            result["error"] = repr(e)
        finally:
            try:
                conn.close()
            except Exception:
                pass

    th = threading.Thread(target=run)
    th.start()
    return th, result


def test_cancel_after_the_charge_does_not_refund():
    with ledger_db() as db:
        conn = connect(db)
        slow_table(conn)
        t = tag()
        th, result = _run_in_thread(db, f"{SLOW_QUERY} /* {t} */", setup=["SET max_parallel_workers_per_gather = 0"])
        wait_for_ledger_row(conn, t)
        assert scalar(conn, "SELECT pg_cancel_backend(%s)", (result["pid"],))
        th.join(30)
        assert result.get("error") == "57014", result
        assert_charged(conn, t, "big", 0.1)


def test_cancel_while_the_worker_charges_keeps_the_charge():
    # The worker has taken the request and waits for a budget row locked by an open transaction;
    # the analyst cancels. The charge still commits (no answer is released): it is never lost.
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=5.0)
        dba = connect(db, autocommit=False)
        execute(dba, "SELECT dx.grant_budget('postgres', 'people', 6)")  # holds the row lock
        session = connect(db)
        pid = backend_pid(session)
        result = {}

        def run(key, sql):
            try:
                result[key] = scalar(session, sql)
            except psycopg2.Error as e:
                result[key] = e.pgcode

        t1, t2 = tag(), tag()
        th = threading.Thread(target=run, args=("first", f"SELECT dx.count(*) FROM people /* {t1} */"))
        th.start()
        deadline = time.time() + 10
        while scalar(conn, "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)) != "Extension":
            assert time.time() < deadline, "the query never waited for the ledger"
            time.sleep(0.01)
        time.sleep(0.2)
        assert scalar(conn, "SELECT pg_cancel_backend(%s)", (pid,))
        th.join(10)
        assert result.get("first") == "57014", result
        assert ledger_rows(conn, t1) == 0  # not committed yet: the worker still waits for the row
        # the same session queries again: it waits until the worker is done with the abandoned request
        th = threading.Thread(target=run, args=("second", f"SELECT dx.count(*) FROM people /* {t2} */"))
        th.start()
        time.sleep(0.2)
        dba.commit()
        th.join(10)
        assert isinstance(result.get("second"), int), result
        assert_charged(conn, t1, "people", 0.1)
        assert_charged(conn, t2, "people", 0.1)
        assert abs(spent(conn) - 0.2) < 1e-12


def _raw_query_then_close(db, user, sql, before_close):
    """Speaks the wire protocol over TCP with a tiny receive window: sends sql, reads the first
    data row, calls before_close(backend pid) while the server is still sending, closes the socket.
    Returns the backend pid."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 2048)  # before connect: small window
    sock.connect(("127.0.0.1", int(os.environ["PGPORT"])))
    params = b"user\0" + user.encode() + b"\0database\0" + db.encode() + b"\0\0"
    body = struct.pack("!I", 196608) + params
    sock.sendall(struct.pack("!I", len(body) + 4) + body)
    buf = b""

    def message():
        nonlocal buf
        while len(buf) < 5 or len(buf) < 1 + struct.unpack("!I", buf[1:5])[0]:
            chunk = sock.recv(512)
            if not chunk:
                raise AssertionError("server closed the connection")
            buf += chunk
        n = struct.unpack("!I", buf[1:5])[0]
        kind, payload, buf = buf[0:1], buf[5:1 + n], buf[1 + n:]
        return kind, payload

    pid = None
    while True:
        kind, payload = message()
        if kind == b"E":
            raise AssertionError(payload)
        if kind == b"R":
            assert struct.unpack("!I", payload[:4])[0] == 0, "trust authentication expected"
        if kind == b"K":
            pid = struct.unpack("!I", payload[:4])[0]
        if kind == b"Z":
            break
    q = sql.encode() + b"\0"
    sock.sendall(b"Q" + struct.pack("!I", len(q) + 4) + q)
    while True:
        kind, payload = message()
        if kind == b"E":
            raise AssertionError(payload)
        if kind == b"D":
            break
    before_close(pid)
    sock.close()  # mid-result: thousands of rows are still unread
    return pid


def test_client_disconnect_mid_result_does_not_refund():
    with ledger_db() as db:
        conn = connect(db)
        # 4000 groups of about 2 kB each (a long declared label): megabytes the client never reads
        label = "x" * 2000
        execute(conn, "CREATE TABLE wide (k int, label text)")
        execute(conn, "INSERT INTO wide SELECT i, %s FROM generate_series(1, 4000) AS i", (label,))
        execute(conn, "SELECT dx.protect_table('wide')")
        # metric none: only presence edges, which keeps the 4000-cell allocation small enough
        execute(conn, """SELECT dx.set_column('wide', 'k', '{"min": 1, "max": 4000}', '{"type": "none"}')""")
        execute(conn, "SELECT dx.set_column('wide', 'label', %s, '{\"type\": \"none\"}')",
                (json.dumps({"values": [label]}),))
        execute(conn, "SELECT dx.grant_budget('postgres', 'wide', 10)")
        t = tag()

        def server_still_sending(pid):
            deadline = time.time() + 10
            while scalar(conn, "SELECT wait_event FROM pg_stat_activity WHERE pid = %s", (pid,)) != "ClientWrite":
                assert time.time() < deadline, "the server finished sending before the disconnect"
                time.sleep(0.01)

        pid = _raw_query_then_close(db, "postgres", f"SELECT k, label, dx.count(*) FROM wide GROUP BY k, label /* {t} */",
                                    server_still_sending)
        deadline = time.time() + 10
        while scalar(conn, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)) > 0:
            assert time.time() < deadline, "the backend did not notice the disconnect"
            time.sleep(0.05)
        assert_charged(conn, t, "wide", 0.1)
        # 4000 scales do not fit in the request slot: they travelled through a DSM segment
        assert scalar(conn, "SELECT array_length(scales, 1) FROM dx.ledger WHERE strpos(query, %s) > 0", (t,)) == 4000


def test_sigkill_of_the_backend_does_not_refund():
    with ledger_db() as db:
        conn = connect(db)
        slow_table(conn)
        conn.close()
        t = tag()
        th, result = _run_in_thread(db, f"{SLOW_QUERY} /* {t} */", setup=["SET max_parallel_workers_per_gather = 0"])
        watcher = connect(db)
        wait_for_ledger_row(watcher, t)
        os.kill(result["pid"], signal.SIGKILL)  # the postmaster then restarts every backend
        th.join(30)
        assert "error" in result and "rows" not in result, result
        wait_for_crash_restart(watcher)
        wait_for_server()
        conn = connect(db)
        assert_charged(conn, t, "big", 0.1)
        # charging works again after the crash restart (a new ledger worker is started)
        execute(conn, "SELECT dx.count(*) FROM big")
        assert abs(spent(conn, "big") - 0.2) < 1e-12


# ---------------------------------------------------------------- atomic check-and-charge

def test_race_of_32_clients_never_overspends():
    rounds = 5
    with ledger_db() as db:
        admin = connect(db)
        for r in range(rounds):
            table = f"race{r}"
            protect(admin, table=table, budget=1.0, role=ANALYST)  # admits 10 queries at 0.1
            conns = [connect(db, user=ANALYST) for _ in range(32)]
            barrier = threading.Barrier(32)
            outcome = {}

            def client(i):
                t = f"race{r}c{i}x"
                barrier.wait()
                try:
                    scalar(conns[i], f"SELECT dx.count(*) FROM {table} /* {t} */")
                    outcome[t] = "ok"
                except psycopg2.Error as e:
                    outcome[t] = e.pgcode

            threads = [threading.Thread(target=client, args=(i,)) for i in range(32)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            for c in conns:
                c.close()
            answered = sorted(t for t, o in outcome.items() if o == "ok")
            refused = [t for t, o in outcome.items() if o != "ok"]
            assert all(outcome[t] == "53000" for t in refused), outcome
            assert len(answered) == 10, (r, len(answered), outcome)
            total = spent(admin, table, ANALYST)
            assert total <= 1.0 + 1e-9, total
            with admin.cursor() as cur:
                cur.execute("SELECT substring(query FROM 'race[0-9]+c[0-9]+x') FROM dx.ledger WHERE relid = %s::regclass",
                            (table,))
                charged = sorted(row[0] for row in cur.fetchall())
            assert charged == answered, (charged, answered)
            assert abs(scalar(admin, "SELECT sum(epsilon) FROM dx.ledger WHERE relid = %s::regclass", (table,)) - total) < 1e-9


# ---------------------------------------------------------------- fail closed

def test_ledger_write_failure_fails_closed():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn)
        execute(conn, "ALTER TABLE dx.ledger ADD CONSTRAINT e2e_block CHECK (epsilon < 0) NOT VALID")
        try:
            scalar(conn, "SELECT dx.count(*) FROM people")
            raise AssertionError("the query must fail when the ledger cannot be written")
        except psycopg2.Error as e:
            assert e.pgcode == "58000", (e.pgcode, str(e))
            assert "ledger" in str(e)
        assert spent(conn) == 0  # the budget update was rolled back with the failed ledger row
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == 0
        execute(conn, "ALTER TABLE dx.ledger DROP CONSTRAINT e2e_block")
        scalar(conn, "SELECT dx.count(*) FROM people")
        assert abs(spent(conn) - 0.1) < 1e-12


def test_unresponsive_worker_fails_closed_and_charges_nothing():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn)
        scalar(conn, "SELECT dx.count(*) FROM people")  # starts the worker
        worker = ledger_worker_pid(conn)
        assert worker
        execute(conn, "SET dxpriv.ledger_timeout = '500ms'")
        os.kill(worker, signal.SIGSTOP)
        try:
            th, result = _run_in_thread(db, "SELECT dx.count(*) FROM people", setup=["SET dxpriv.ledger_timeout = '500ms'"])
            th.join(5)
        finally:
            os.kill(worker, signal.SIGCONT)
        th.join(10)
        assert result.get("error") == "58000", result
        time.sleep(0.3)
        assert abs(spent(conn) - 0.1) < 1e-12  # withdrawn before the worker saw it
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == 1


def test_dead_worker_is_restarted():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn)
        scalar(conn, "SELECT dx.count(*) FROM people")
        worker = ledger_worker_pid(conn)
        assert scalar(conn, "SELECT pg_terminate_backend(%s)", (worker,))
        deadline = time.time() + 10
        while ledger_worker_pid(conn) == worker:
            assert time.time() < deadline
            time.sleep(0.05)
        scalar(conn, "SELECT dx.count(*) FROM people")
        assert ledger_worker_pid(conn) not in (None, worker)
        assert abs(spent(conn) - 0.2) < 1e-12


def test_drop_database_without_force_while_a_worker_serves_it():
    name = f"ledger_drop_{os.getpid()}"
    admin = connect()
    execute(admin, f"CREATE DATABASE {name}")
    conn = connect(name)
    execute(conn, "CREATE EXTENSION dxpriv")
    protect(conn)
    scalar(conn, "SELECT dx.count(*) FROM people")
    assert ledger_worker_pid(conn)
    conn.close()
    time.sleep(0.2)
    execute(admin, f"DROP DATABASE {name}")  # the ledger worker leaves on request
    admin.close()


# ---------------------------------------------------------------- append-only

def test_ledger_is_append_only():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, role=ANALYST)
        analyst = connect(db, user=ANALYST)
        scalar(analyst, "SELECT dx.count(*) FROM people")
        for sql in ("DELETE FROM dx.ledger", "UPDATE dx.ledger SET epsilon = 0", "TRUNCATE dx.ledger",
                    "UPDATE dx.budget_grants SET spent = 0", "INSERT INTO dx.ledger (role, relid, fingerprint, mechanism, "
                    "epsilon, scales) VALUES ('postgres', 'people', 'x', 'x', 1, '{}')"):
            try:
                execute(analyst, sql)
                raise AssertionError(f"analyst ran {sql}")
            except psycopg2.Error as e:
                assert e.pgcode == "42501", (sql, e.pgcode)
        # not even a superuser changes or removes ledger rows
        for sql in ("DELETE FROM dx.ledger", "UPDATE dx.ledger SET epsilon = 0", "TRUNCATE dx.ledger"):
            try:
                execute(conn, sql)
                raise AssertionError(f"superuser ran {sql}")
            except psycopg2.Error as e:
                assert e.pgcode == "42501", (sql, e.pgcode)
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == 1
        assert abs(spent(conn, role=ANALYST) - 0.1) < 1e-12


# ---------------------------------------------------------------- refresh periods and caps

def test_budget_refresh_period():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=0.2, refresh="2 seconds")
        with conn.cursor() as cur:
            cur.execute("SELECT refresh, period_start, period_end FROM dx.budgets")
            refresh, start1, end1 = cur.fetchone()
        assert refresh.total_seconds() == 2 and (end1 - start1).total_seconds() == 2
        scalar(conn, "SELECT dx.count(*) FROM people")
        scalar(conn, "SELECT dx.count(*) FROM people")
        try:
            scalar(conn, "SELECT dx.count(*) FROM people")
            raise AssertionError("budget of the period is spent")
        except psycopg2.Error as e:
            assert e.pgcode == "53000"
        # wait for the next period (server time)
        while scalar(conn, "SELECT now() < %s", (end1,)):
            time.sleep(0.1)
        time.sleep(0.05)
        with conn.cursor() as cur:
            cur.execute("SELECT spent, remaining, period_start FROM dx.budgets")
            s, rem, start2 = cur.fetchone()
        assert s == 0 and abs(rem - 0.2) < 1e-12 and start2 >= end1, (s, rem, start2, end1)
        scalar(conn, "SELECT dx.count(*) FROM people")
        with conn.cursor() as cur:
            cur.execute("SELECT spent, period_start FROM dx.budgets")
            s, start3 = cur.fetchone()
            assert abs(s - 0.1) < 1e-12 and start3 == start2
            # the ledger keeps the history, each row with the period it was charged to
            cur.execute("SELECT period_start, count(*), sum(epsilon) FROM dx.ledger GROUP BY 1 ORDER BY 1")
            periods = cur.fetchall()
        assert [p[1] for p in periods] == [2, 1], periods
        assert periods[0][0] == start1 and periods[1][0] == start2
        # periods are anchored at the grant: the k-th starts at anchor + k * refresh
        assert (start2 - start1).total_seconds() % 2 == 0
        # a plain re-grant keeps the period and what it spent; dropping the refresh keeps spending
        execute(conn, "SELECT dx.grant_budget('postgres', 'people', 0.2)")
        with conn.cursor() as cur:
            cur.execute("SELECT spent, refresh, period_end FROM dx.budgets")
            s, refresh, end = cur.fetchone()
        assert refresh is None and end is None and abs(s - 0.1) < 1e-12


def test_refresh_interval_validation():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=None)
        for bad in ("0 seconds", "-1 day", "0.5 seconds", "1 month -40 days"):
            try:
                execute(conn, "SELECT dx.grant_budget('postgres', 'people', 1, %s::interval)", (bad,))
                raise AssertionError(bad)
            except psycopg2.Error as e:
                assert e.pgcode == "22023", (bad, e.pgcode)
        execute(conn, "SELECT dx.grant_budget('postgres', 'people', 1, '1 month')")
        assert scalar(conn, "SELECT period_end - period_start = interval '1 month' FROM dx.budgets")
        # calendar periods: the k-th starts at anchor + k months (Jan 31, Feb 29, Mar 31, Apr 30, ...)
        assert str(scalar(conn, "SELECT (dx._period('2024-01-31 00:00+00', '1 month', '2024-04-15 00:00+00')).period_start "
                                "AT TIME ZONE 'UTC'")) == "2024-03-31 00:00:00"
        assert str(scalar(conn, "SELECT (dx._period('2024-01-31 00:00+00', '1 month', '2024-03-30 00:00+00')).period_start "
                                "AT TIME ZONE 'UTC'")) == "2024-02-29 00:00:00"
        assert str(scalar(conn, "SELECT (dx._period('2024-01-31 00:00+00', '1 day', '2023-01-01 00:00+00')).period_start "
                                "AT TIME ZONE 'UTC'")) == "2024-01-31 00:00:00"


def test_per_query_cap():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=5.0)
        execute(conn, "SELECT dx.set_query_cap('people', 0.3)")
        assert scalar(conn, "SELECT per_query_cap FROM dx.budgets") == 0.3
        for sql in ("SELECT dx.count(age, 0.5) FROM people", "SELECT dx.count(age, 0.2), dx.count(sex, 0.2) FROM people"):
            try:
                scalar(conn, sql)
                raise AssertionError("above the cap")
            except psycopg2.Error as e:
                assert e.pgcode == "22023", e.pgcode
                assert "cap" in str(e)
        assert spent(conn) == 0 and scalar(conn, "SELECT count(*) FROM dx.ledger") == 0
        scalar(conn, "SELECT dx.count(age, 0.3) FROM people")
        assert abs(spent(conn) - 0.3) < 1e-12
        execute(conn, "SELECT dx.set_query_cap('people', NULL)")
        scalar(conn, "SELECT dx.count(age, 0.5) FROM people")
        assert abs(spent(conn) - 0.8) < 1e-12
        for bad in ("0", "-1", "'NaN'", "'Infinity'"):
            try:
                execute(conn, f"SELECT dx.set_query_cap('people', {bad})")
                raise AssertionError(bad)
            except psycopg2.Error as e:
                assert e.pgcode == "22023"
        # only the table owner (or a superuser) sets the cap
        analyst = connect(db, user=ANALYST)
        try:
            execute(analyst, "SELECT dx.set_query_cap('people', 10)")
            raise AssertionError("analyst set a cap")
        except psycopg2.Error as e:
            assert e.pgcode == "42501"


# ---------------------------------------------------------------- delta budgets

def delta_budget(conn, table="people", role="postgres"):
    """(delta_granted, delta_spent, delta_remaining, per_query_delta) of dx.budgets."""
    with conn.cursor() as cur:
        cur.execute("SELECT delta_granted, delta_spent, delta_remaining, per_query_delta FROM dx.budgets "
                    "WHERE role = %s::regrole AND \"table\" = %s::regclass", (role, table))
        return cur.fetchone()


def same(actual, expected):
    """Tuples of floats equal up to rounding (delta arithmetic is in binary floating point)."""
    return len(actual) == len(expected) and all(abs(a - e) <= 1e-9 * abs(e) + 1e-18 for a, e in zip(actual, expected))


def ledger_delta(conn, tag_text):
    return scalar(conn, "SELECT delta FROM dx.ledger WHERE strpos(query, %s) > 0", (tag_text,))


def charged_count(conn, delta):
    """Runs a tagged dx.count(*) on people; checks it was charged 0.1 and spent `delta`."""
    t = tag()
    scalar(conn, f"SELECT dx.count(*) FROM people /* {t} */")
    assert_charged(conn, t, "people", 0.1)
    assert ledger_delta(conn, t) == delta
    return t


def test_pure_epsilon_queries_spend_no_delta():
    """A query that spends no delta charges its epsilon whatever the delta budget: none granted, or
    one already spent beyond its grant. Its ledger row records delta 0."""
    with ledger_db() as db:
        conn = connect(db)
        protect(conn)  # no delta argument: delta budget 0, table delta 0
        assert delta_budget(conn) == (0, 0, 0, 0)
        charged_count(conn, 0)
        # the table allows (epsilon, delta) noise, but Laplace noise (the default) spends no delta
        execute(conn, "SELECT dx.set_delta('people', 1e-6)")
        charged_count(conn, 0)
        # a delta budget spent beyond its grant (as after a lowered re-grant) refuses nothing that spends no delta
        execute(conn, "UPDATE dx.budget_grants SET delta_spent = 1e-5")
        assert delta_budget(conn) == (0, 1e-5, 0, 1e-6)
        charged_count(conn, 0)
        assert delta_budget(conn) == (0, 1e-5, 0, 1e-6)
        assert abs(spent(conn) - 0.3) < 1e-12
        assert scalar(conn, "SELECT count(*) FROM dx.ledger WHERE delta <> 0") == 0


def test_exhausted_delta_budget_refuses_and_charges_nothing():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=10.0, delta=2e-6)
        execute(conn, "SELECT dx.set_delta('people', 1e-6)")
        execute(conn, "SET dxpriv.noise = 'gaussian'")
        for _ in range(2):
            charged_count(conn, 1e-6)
        assert delta_budget(conn) == (2e-6, 2e-6, 0, 1e-6)
        t = tag()
        try:
            scalar(conn, f"SELECT dx.count(*) FROM people /* {t} */")
            raise AssertionError("the delta budget is spent")
        except psycopg2.Error as e:
            assert e.pgcode == "53000", e.pgcode
            assert e.diag.message_primary == 'delta budget of role "postgres" on table "people" is exhausted', e.pgerror
            assert e.diag.message_detail == "The query needs delta 1e-06; 0 remains.", e.diag.message_detail
            assert "dxpriv.noise = 'laplace'" in e.diag.message_hint and "delta =>" in e.diag.message_hint
        # nothing was charged: neither epsilon nor delta, and no ledger row
        assert ledger_rows(conn, t) == 0
        assert abs(spent(conn) - 0.2) < 1e-12
        assert delta_budget(conn) == (2e-6, 2e-6, 0, 1e-6)
        # the epsilon budget is not what refused: pure-epsilon noise still answers, spending no delta
        execute(conn, "SET dxpriv.noise = 'laplace'")
        charged_count(conn, 0)
        # a larger delta budget lets (epsilon, delta) queries run again; nothing spent is refunded
        execute(conn, "SELECT dx.grant_budget('postgres', 'people', 10, delta => 3e-6)")
        assert same(delta_budget(conn), (3e-6, 2e-6, 1e-6, 1e-6)), delta_budget(conn)
        execute(conn, "SET dxpriv.noise = 'gaussian'")
        t = tag()
        scalar(conn, f"SELECT dx.count(*) FROM people /* {t} */")
        assert_charged(conn, t, "people", 0.1)
        assert same([scalar(conn, "SELECT sum(delta) FROM dx.ledger")], [3e-6])


def test_delta_budget_refreshes_with_the_period():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=10.0, refresh="3 seconds", delta=1e-6)
        execute(conn, "SELECT dx.set_delta('people', 1e-6)")
        execute(conn, "SET dxpriv.noise = 'gaussian'")
        end1 = scalar(conn, "SELECT period_end FROM dx.budgets")
        scalar(conn, "SELECT dx.count(*) FROM people")
        try:
            scalar(conn, "SELECT dx.count(*) FROM people")
            raise AssertionError("the delta budget of the period is spent")
        except psycopg2.Error as e:
            assert e.pgcode == "53000" and "delta budget" in e.diag.message_primary, e.pgerror
        assert delta_budget(conn) == (1e-6, 1e-6, 0, 1e-6)
        while scalar(conn, "SELECT now() < %s", (end1,)):
            time.sleep(0.1)
        time.sleep(0.05)
        # the view shows the new period at once; the stored row is reset at its first charge
        assert delta_budget(conn) == (1e-6, 0, 1e-6, 1e-6)
        assert scalar(conn, "SELECT delta_spent FROM dx.budget_grants") == 1e-6
        # a charge without delta resets the period's delta spending too
        execute(conn, "SET dxpriv.noise = 'laplace'")
        scalar(conn, "SELECT dx.count(*) FROM people")
        with conn.cursor() as cur:
            cur.execute("SELECT spent, delta_spent, period_start >= %s FROM dx.budget_grants", (end1,))
            s, ds, new_period = cur.fetchone()
        assert abs(s - 0.1) < 1e-12 and ds == 0 and new_period, (s, ds, new_period)
        execute(conn, "SET dxpriv.noise = 'gaussian'")
        scalar(conn, "SELECT dx.count(*) FROM people")
        assert delta_budget(conn) == (1e-6, 1e-6, 0, 1e-6)
        with conn.cursor() as cur:
            cur.execute("SELECT period_start, count(*), sum(epsilon), sum(delta) FROM dx.ledger GROUP BY 1 ORDER BY 1")
            periods = cur.fetchall()
        assert [(p[1], p[3]) for p in periods] == [(1, 1e-6), (2, 1e-6)], periods


# ---------------------------------------------------------------- crash of the whole server

def test_postmaster_sigkill_during_charging_workload():
    datadir = os.environ["DXPRIV_E2E_DATADIR"]
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=1e6, rows=200)
        conn.close()
        answered = []
        lock = threading.Lock()
        stop = threading.Event()

        def client(i):
            try:
                c = connect(db)
            except psycopg2.Error:
                return
            n = 0
            while not stop.is_set():
                t = f"crash{i}n{n}x"
                n += 1
                try:
                    scalar(c, f"SELECT dx.count(*) FROM people /* {t} */")
                    with lock:
                        answered.append(t)
                except Exception:
                    break
            try:
                c.close()
            except Exception:
                pass

        threads = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for th in threads:
            th.start()
        time.sleep(1.5)
        with open(os.path.join(datadir, "postmaster.pid")) as f:
            postmaster = int(f.readline())
        os.kill(postmaster, signal.SIGKILL)
        time.sleep(0.5)
        stop.set()
        for th in threads:
            th.join(30)
        assert len(answered) > 50, len(answered)
        # restart once the orphaned processes have left the shared memory
        log = os.path.join(os.path.dirname(datadir), "server.log")
        deadline = time.time() + 60
        while True:
            out = as_cluster_owner(f"pg_ctl -D '{datadir}' -l '{log}' -w start")
            if out.returncode == 0:
                break
            assert time.time() < deadline, out.stdout + out.stderr
            time.sleep(1)
        wait_for_server()
        conn = connect(db)
        with conn.cursor() as cur:
            cur.execute("SELECT substring(query FROM 'crash[0-9]+n[0-9]+x') FROM dx.ledger")
            charged = {row[0] for row in cur.fetchall()}
        missing = [t for t in answered if t not in charged]
        assert not missing, f"answered without a charge: {missing[:5]}"
        # at most one charge per client was in flight (charged, answer never received)
        assert len(charged) - len(answered) <= 8, (len(charged), len(answered))
        total = scalar(conn, "SELECT sum(epsilon) FROM dx.ledger")
        assert abs(spent(conn) - total) < 1e-6, (spent(conn), total)
        # and charging still works
        scalar(conn, "SELECT dx.count(*) FROM people")


# ---------------------------------------------------------------- dump and restore

def test_pg_dump_and_restore_keep_policies_budgets_and_ledger():
    with ledger_db() as db:
        conn = connect(db)
        protect(conn, budget=2.0, refresh="1 day", delta=5e-6)
        protect(conn, table="other", budget=1.0, role=ANALYST)
        execute(conn, "SELECT dx.set_query_cap('people', 0.5)")
        execute(conn, "SELECT dx.set_delta('people', 1e-6)")
        execute(conn, "SET dxpriv.noise = 'gaussian'")  # spends epsilon 0.1 and delta 1e-6
        scalar(conn, "SELECT dx.count(*) FROM people")
        execute(conn, "RESET dxpriv.noise")
        # a long non-ASCII statement: the ledger keeps its first 4096 bytes, cut between characters
        scalar(conn, "SELECT dx.count(age, 0.2) FROM people /* xy" + "é" * 3000 + " */")
        assert scalar(conn, "SELECT octet_length(query) FROM dx.ledger ORDER BY id DESC LIMIT 1") == 4095
        scalar(connect(db, user=ANALYST), "SELECT dx.count(*) FROM other")
        queries = {
            "tables": "SELECT relid::text, presence, per_query_cap, delta FROM dx.protected_tables ORDER BY 1",
            "columns": "SELECT relid::text, column_name, domain, metric FROM dx.protected_columns ORDER BY 1, 2",
            "budgets": "SELECT role::text, relid::text, granted, spent, delta_granted, delta_spent, refresh, "
                       "refresh_anchor, period_start, period_end FROM dx.budget_grants ORDER BY 1, 2",
            "ledger": "SELECT id, at, role::text, relid::text, fingerprint, query, mechanism, epsilon, delta, scales, pid, "
                      "session_role::text, period_start FROM dx.ledger ORDER BY id",
        }

        def snapshot(c):
            out = {}
            for k, q in queries.items():
                with c.cursor() as cur:
                    cur.execute(q)
                    out[k] = cur.fetchall()
            return out

        before = snapshot(conn)
        assert len(before["ledger"]) == 3
        assert [row[8] for row in before["ledger"]] == [1e-6, 0, 0]  # the delta column
        assert before["tables"][1][3] == 1e-6 and before["budgets"][1][4:6] == (5e-6, 1e-6), before
        restored = db + "_restored"
        with tempfile.TemporaryDirectory() as d:
            dump = os.path.join(d, "db.dump")
            env = dict(os.environ, PGUSER="postgres")
            out = subprocess.run(["pg_dump", "-Fc", "-d", db, "-f", dump], capture_output=True, text=True, env=env)
            assert out.returncode == 0, out.stderr
            admin = connect()
            execute(admin, f"DROP DATABASE IF EXISTS {restored}")
            execute(admin, f"CREATE DATABASE {restored} TEMPLATE template0")
            try:
                out = subprocess.run(["pg_restore", "--exit-on-error", "-d", restored, dump], capture_output=True,
                                     text=True, env=env)
                assert out.returncode == 0, out.stderr
                rconn = connect(restored)
                after = snapshot(rconn)
                for k in queries:
                    assert after[k] == before[k], (k, before[k], after[k])
                # the restored catalog is live: the budget continues where it was, the ledger grows
                scalar(rconn, "SELECT dx.count(*) FROM people")
                assert abs(spent(rconn) - 0.4) < 1e-12
                assert scalar(rconn, "SELECT max(id) FROM dx.ledger") == 4
                # and so is the delta budget
                execute(rconn, "SET dxpriv.noise = 'gaussian'")
                scalar(rconn, "SELECT dx.count(*) FROM people")
                assert same(delta_budget(rconn), (5e-6, 2e-6, 3e-6, 1e-6)), delta_budget(rconn)
                execute(rconn, "RESET dxpriv.noise")
                try:
                    scalar(rconn, "SELECT dx.count(age, 0.6) FROM people")
                    raise AssertionError("the restored per-query cap must hold")
                except psycopg2.Error as e:
                    assert e.pgcode == "22023"
                try:
                    execute(rconn, "DELETE FROM dx.ledger")
                    raise AssertionError("the restored ledger must stay append-only")
                except psycopg2.Error as e:
                    assert e.pgcode == "42501"
                rconn.close()
            finally:
                execute(admin, f"DROP DATABASE IF EXISTS {restored} WITH (FORCE)")
                admin.close()
