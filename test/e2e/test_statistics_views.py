"""Statistics are data (issue 21, class 5): with pg_stat_statements loaded (most production
servers) an analyst must not read the row counts of the owner's raw queries on a protected table,
nor the buffer counters of her own dx statements (the page count the size functions hide); with
auto_explain at a level sent to clients, no plan of a protected table reaches her.

These tests start their own cluster (shared_preload_libraries = 'dxpriv,pg_stat_statements'), next
to the suite's cluster, and stop it at the end.
"""
import contextlib
import os
import shutil
import socket
import subprocess
import tempfile

import psycopg2

ANALYST = "stats_e2e_analyst"


def _as_cluster_owner(cmd):
    bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
    path = f"{bindir}:{os.environ.get('PATH', '')}"
    if os.getuid() == 0:
        return subprocess.run(["su", "postgres", "-s", "/bin/bash", "-c", f"export PATH='{path}'; {cmd}"],
                              capture_output=True, text=True, check=True)
    return subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PATH=path))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def stats_cluster():
    """A throwaway cluster with pg_stat_statements preloaded; yields a connect(user) function."""
    work = tempfile.mkdtemp(prefix="dxpriv-stats-")
    os.chmod(work, 0o755)
    if os.getuid() == 0:
        shutil.chown(work, "postgres", "postgres")
    port = _free_port()
    _as_cluster_owner(f"initdb -D '{work}/data' -A trust -U postgres --no-sync >'{work}/initdb.log' 2>&1")
    with open(f"{work}/data/postgresql.conf", "a") as conf:
        conf.write(f"shared_preload_libraries = 'dxpriv,pg_stat_statements'\nport = {port}\n"
                   f"listen_addresses = '127.0.0.1'\nunix_socket_directories = '{work}'\nfsync = off\n")
    _as_cluster_owner(f"pg_ctl -D '{work}/data' -l '{work}/server.log' -w start >/dev/null")

    def connect(user="postgres"):
        conn = psycopg2.connect(host=work, port=port, user=user, dbname="postgres")
        conn.autocommit = True
        return conn

    try:
        admin = connect()
        with admin.cursor() as cur:
            cur.execute("CREATE EXTENSION dxpriv")
            cur.execute("CREATE EXTENSION pg_stat_statements")
            cur.execute("ALTER DATABASE postgres SET dxpriv.cache_lifetime = 0")
            cur.execute("CREATE TABLE people (id int PRIMARY KEY, sex text, age int)")
            cur.execute("INSERT INTO people SELECT i, CASE WHEN i % 2 = 0 THEN 'M' ELSE 'F' END, i % 90 "
                        "FROM generate_series(1, 4321) AS i")
            cur.execute("SELECT dx.protect_table('people')")
            cur.execute("""SELECT dx.set_column('people', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete"}')""")
            cur.execute("""SELECT dx.set_column('people', 'age', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}')""")
            cur.execute(f"CREATE ROLE {ANALYST} LOGIN")
            cur.execute(f"SELECT dx.add_analyst('{ANALYST}')")
            cur.execute(f"SELECT dx.grant_budget('{ANALYST}', 'people', 100)")
        admin.close()
        yield connect
    finally:
        try:
            _as_cluster_owner(f"pg_ctl -D '{work}/data' -m fast -w stop >/dev/null")
        finally:
            shutil.rmtree(work, ignore_errors=True)


def _refused(conn, sql):
    """The SQLSTATE of sql (which must fail) and its message."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            rows = cur.fetchall()
    except psycopg2.Error as e:
        return e.pgcode, e.pgerror
    raise AssertionError(f"{sql!r} was answered for an analyst: {rows[:5]}")


def test_pg_stat_statements_is_refused_to_analysts():
    with stats_cluster() as connect:
        owner = connect()
        with owner.cursor() as cur:
            # the owner's raw query: pg_stat_statements records its exact row count
            cur.execute("SELECT * FROM people WHERE age > 50")
            exact = cur.rowcount
            cur.execute("CREATE VIEW stmt_stats AS SELECT userid, rows, shared_blks_hit FROM pg_stat_statements")
            cur.execute("GRANT SELECT ON stmt_stats TO PUBLIC")
        analyst = connect(ANALYST)
        with analyst.cursor() as cur:
            cur.execute("SELECT count(*) FROM people WHERE age > 10")   # her own dx statement
            cur.fetchall()
        for sql in ["SELECT userid::regrole, rows FROM pg_stat_statements",
                    "SELECT query, rows, shared_blks_hit FROM pg_stat_statements WHERE query LIKE '%people%'",
                    "SELECT rows FROM public.pg_stat_statements(true)",
                    "SELECT rows FROM pg_stat_statements(false)",
                    "SELECT * FROM pg_stat_statements_info",
                    "SELECT * FROM stmt_stats",                      # a DBA's view granted to PUBLIC
                    "SELECT max(rows) FROM (SELECT * FROM pg_stat_statements) s",
                    "WITH s AS (SELECT rows FROM pg_stat_statements) SELECT * FROM s"]:
            code, message = _refused(analyst, sql)
            assert code == "42501", (sql, code, message)
            assert "pg_stat_statements" in message, message
        # the module's settings are the superuser's
        code, _ = _refused(analyst, "SET pg_stat_statements.track = 'none'")
        assert code == "42501", code
        # the owner (not an analyst) still reads them: the row count there is exact
        with owner.cursor() as cur:
            cur.execute("SELECT max(rows) FROM pg_stat_statements WHERE query LIKE 'SELECT * FROM people WHERE age >%'")
            assert cur.fetchone()[0] == exact
        analyst.close()
        owner.close()


def test_auto_explain_at_notice_never_sends_plans_to_analysts():
    with stats_cluster() as connect:
        owner = connect()
        with owner.cursor() as cur:
            for setting in ["session_preload_libraries = 'auto_explain'", "auto_explain.log_min_duration = 0",
                            "auto_explain.log_analyze = on", "auto_explain.log_level = notice"]:
                cur.execute(f"ALTER ROLE {ANALYST} SET {setting}")
        for attempt in range(2):  # the first statement of a session also reads dxpriv's catalog
            analyst = connect(ANALYST)
            try:
                with analyst.cursor() as cur:
                    cur.execute(f"SELECT count(*) FROM people WHERE age > {20 + attempt}")
                    cur.fetchall()
            except psycopg2.Error as e:
                assert e.pgcode == "42501" and "auto_explain.log_level" in e.pgerror, e.pgerror
            # no plan at all: neither the protected table's nor those of dxpriv's catalog statements
            plans = [n for n in analyst.notices if "plan:" in n or "rows=" in n]
            assert not plans, plans
            analyst.close()
        # at log (auto_explain's default level) the analyst is answered and sees no plan
        with owner.cursor() as cur:
            cur.execute(f"ALTER ROLE {ANALYST} SET auto_explain.log_level = log")
        analyst = connect(ANALYST)
        with analyst.cursor() as cur:
            cur.execute("SELECT count(*) FROM people WHERE age > 30")
            assert len(cur.fetchall()) == 1
        assert not [n for n in analyst.notices if "plan:" in n], analyst.notices
        analyst.close()
        owner.close()
