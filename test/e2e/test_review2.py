"""review2: attacks on the shared analysis memo (src/pg/planner/shared_memo.h) as an analyst and as a
careless DBA. Each test fails when its attack works: a new session served an analysis that a fresh
analysis would not give now (catalog written with DML or COPY, settings or search_path differing
between sessions), a catalog change through a statement the generation might not classify as DDL
(COMMENT, ALTER DEFAULT PRIVILEGES, DDL through SPI in a DO block, an event trigger's DDL), analyst
access to the memo's counter or setting, or node syntax in an analyst's aliases and constants."""
import io
import threading
import os

import psycopg2

from attack_fixture import ensure_analyst_role
from e2e_common import connect, execute, fresh_db, scalar
from test_ledger import restart_cluster
from test_shared_memo import OWNER_SQL, ROLE_A, SQL, _run, _setup


def _run_with(db, options, role=None, sql=OWNER_SQL):
    """sql in a new session opened with libpq options (settings from the client, no SET):
    (answer, shared hits of that session)."""
    c = psycopg2.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user="postgres", dbname=db,
                         options=options)
    c.autocommit = True
    try:
        answer, shared, _ = _run(db, role, sql, conn=c)
        return answer, shared
    finally:
        c.close()


def _stored(db, sql=OWNER_SQL, role=None):
    """Makes sure sql's analysis is in the shared memo now: a second new session hits it."""
    answer = _run(db, role, sql)[0]
    again, shared, _ = _run(db, role, sql)
    assert shared == 1 and again == answer, (shared, again, answer)
    return answer


def test_catalog_dml_by_a_superuser_is_not_served_a_stale_analysis():
    # UPDATE pg_proc changes the function the statement calls without any utility statement: the
    # generation must still move (catalog_generation_note_executor), else a new session replays
    # the analysis (per-point table) of the old body
    with fresh_db() as db:
        admin = _setup(db)
        try:
            old = _stored(db)
            execute(admin, "UPDATE pg_proc SET prosrc = 'SELECT x + 1000' WHERE proname = 'sm_f'")
            answer, shared, _ = _run(db, None, OWNER_SQL)
            assert shared == 0 and answer != old, (shared, answer, old)
            # and the new analysis is what sessions now share
            assert _run(db, None, OWNER_SQL)[:2] == (answer, 1)
            # a catalog write in an open transaction: nobody shares until it ends
            tx = connect(db, autocommit=False)
            try:
                execute(tx, "UPDATE pg_proc SET prosrc = 'SELECT x + 2000' WHERE proname = 'sm_f'")
                assert _run(db, None, OWNER_SQL)[1] == 0
                tx.rollback()
            finally:
                tx.close()
            assert _run(db, None, OWNER_SQL)[1] == 0  # (the generation moved at its end)
            assert _run(db, None, OWNER_SQL)[:2] == (answer, 1)
        finally:
            admin.close()


def test_copy_into_a_catalog_moves_the_generation():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            _stored(db)
            oid = scalar(admin, "SELECT 'spots'::regclass::oid")
            with admin.cursor() as cur:
                cur.copy_expert("COPY pg_catalog.pg_description FROM STDIN",
                                io.StringIO(f"{oid}\t1259\t0\treview2 copy\n"))
            assert _run(db, None, OWNER_SQL)[1] == 0
        finally:
            admin.close()


OTHER_CATALOG_CHANGES = [
    "COMMENT ON TABLE spots IS 'review2'",
    "ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO PUBLIC",
    "DO $$ BEGIN EXECUTE 'CREATE OR REPLACE FUNCTION sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE "
    "AS ''SELECT x + 3'''; END $$",
    "CREATE FUNCTION r2_et() RETURNS event_trigger LANGUAGE plpgsql AS $$ BEGIN NULL; END $$; "
    "CREATE EVENT TRIGGER r2_et ON ddl_command_end EXECUTE FUNCTION r2_et()",
    "CREATE OR REPLACE FUNCTION sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + 4'",  # (through it)
]


def test_catalog_changes_outside_plain_ddl_move_the_generation():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            for statement in OTHER_CATALOG_CHANGES:
                old = _stored(db)
                execute(admin, statement)
                answer, shared, _ = _run(db, None, OWNER_SQL)
                assert shared == 0, statement
                if "SELECT x + " in statement:
                    assert answer != old, statement
        finally:
            admin.close()


def _sqlstate(conn, sql):
    try:
        execute(conn, sql)
    except psycopg2.Error as e:
        return e.pgcode
    return None


def test_settings_from_the_client_and_search_path_are_part_of_the_key():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            old = _stored(db)
            # another epsilon from the connection's options (no SET, no DDL): another analysis
            answer, shared = _run_with(db, "-c dxpriv.epsilon=0.25")
            assert shared == 0 and answer != old, (shared, answer, old)
            assert _run_with(db, "-c dxpriv.epsilon=0.25") == (answer, 1)
            assert _run(db, None, OWNER_SQL)[:2] == (old, 1)
            # the same text resolving to another function through search_path
            execute(admin, "CREATE SCHEMA r2")
            execute(admin, "CREATE FUNCTION r2.sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + 40'")
            old = _stored(db)
            other, shared = _run_with(db, "-c search_path=r2,public")
            assert shared == 0 and other != old, (shared, other, old)
            assert _run_with(db, "-c search_path=r2,public") == (other, 1)
            # per-database and per-role settings (ALTER ... SET is DDL, and a new session's value
            # is in the settings hash): the analyst's statement under another epsilon
            base = _stored(db, SQL, ROLE_A)
            execute(admin, f"ALTER DATABASE {db} SET dxpriv.epsilon = 0.3")
            answer, shared, _ = _run(db, ROLE_A, SQL)
            assert shared == 0 and answer != base
            assert _run(db, ROLE_A, SQL)[:2] == (answer, 1)
            # session_replication_role = replica in the DBA's session only: the contents triggers
            # still fire (ENABLE ALWAYS), so a write there gives other sessions another key
            execute(admin, "SET session_replication_role = replica")
            execute(admin, "INSERT INTO spots SELECT id, lon, lat FROM spots LIMIT 500")
            execute(admin, "RESET session_replication_role")
            after, shared, _ = _run(db, ROLE_A, SQL)
            assert shared == 0 and after != answer
        finally:
            admin.close()


def test_the_memo_counter_and_setting_are_not_the_analysts():
    with fresh_db() as db:
        admin = _setup(db)
        analyst = connect(db, user=ROLE_A)
        try:
            assert _sqlstate(analyst, "SELECT dx._shared_memo_hits()") == "42501"
            assert _sqlstate(analyst, "SET dxpriv.shared_memo_memory = 0") == "55P02"
            assert _sqlstate(analyst, "SELECT dx._analysis_memo_hits()") == "42501"
        finally:
            analyst.close()
            admin.close()


# an analyst's aliases (outToken-escaped) and constants (datum bytes) written as node syntax
NODE_SQL = ('SELECT avg(lat) AS "{QUERY :commandType 1 :location 5} ) (", count(*) FILTER (WHERE lon < -100 '
            "AND ':location 7 {CONST :consttype 25 :constisnull true}' <> '') AS \":location 3\" FROM spots")


def test_node_syntax_in_aliases_and_constants_reads_back_the_same():
    with fresh_db() as db:
        admin = _setup(db)
        try:
            first, shared, _ = _run(db, ROLE_A, NODE_SQL)
            assert shared == 0
            c = connect(db)
            try:
                execute(c, "SET dxpriv.test_seed = 21")
                execute(c, f"SET ROLE {ROLE_A}")
                with c.cursor() as cur:
                    cur.execute(NODE_SQL)
                    again, names = cur.fetchone(), [d.name for d in cur.description]
                execute(c, "RESET ROLE")
                assert scalar(c, "SELECT dx._shared_memo_hits()") == 1
            finally:
                c.close()
            assert again == first
            assert names == ["{QUERY :commandType 1 :location 5} ) (", ":location 3"]
            # the same statement with another constant or alias: not the same key
            other = NODE_SQL.replace(":location 7", ":location 8")
            assert _run(db, ROLE_A, other)[1] == 0
            assert _run(db, ROLE_A, NODE_SQL.replace('":location 3"', '":location 4"'))[1] == 0
        finally:
            admin.close()


PART_SQL = "SELECT sum(v), count(*) FROM r2_t"


def _part_setup(db):
    admin = connect(db)
    ensure_analyst_role(admin, ROLE_A)
    execute(admin, "SELECT dx.add_analyst(%s::regrole)", (ROLE_A,))
    execute(admin, "CREATE TABLE r2_t (id int, v int) PARTITION BY RANGE (id)")
    for i in range(4):
        execute(admin, f"CREATE TABLE r2_t_{i} PARTITION OF r2_t FOR VALUES FROM ({i * 100}) TO ({(i + 1) * 100})")
    execute(admin, "INSERT INTO r2_t SELECT g, g % 50 FROM generate_series(0, 399) g")
    execute(admin, "SELECT dx.protect_table('r2_t', 1.0)")
    execute(admin, "SELECT dx.set_column('r2_t', 'v', '{\"min\": 0, \"max\": 49}', "
                   "'{\"type\": \"absolute\", \"scale\": 5}')")
    execute(admin, "SELECT dx.grant_budget(%s::regrole, 'r2_t', 1e6)", (ROLE_A,))
    return admin


def test_multi_transaction_ddl_keeps_the_generation_busy_to_its_end():
    # DETACH PARTITION CONCURRENTLY (like CREATE/DROP/REINDEX ... CONCURRENTLY) commits inside the
    # statement and changes the catalog in a later transaction: sharing stays off until the last
    with fresh_db() as db:
        admin = _part_setup(db)
        try:
            old = _stored(db, PART_SQL, ROLE_A)
            execute(admin, "ALTER TABLE r2_t DETACH PARTITION r2_t_3 CONCURRENTLY")
            answer, shared, _ = _run(db, ROLE_A, PART_SQL)
            assert shared == 0 and answer != old, (shared, answer, old)
            assert 250 < answer[1] < 350, answer  # (three partitions of 100 rows, noise scale 1)
            assert _run(db, ROLE_A, PART_SQL)[:2] == (answer, 1)
            # a procedure that commits between its DDL statements: nobody shares while it runs
            execute(admin, "CREATE PROCEDURE r2_p() LANGUAGE plpgsql AS $$ BEGIN "
                           "EXECUTE 'COMMENT ON TABLE r2_t IS ''a'''; COMMIT; PERFORM pg_sleep(0); "
                           "EXECUTE 'COMMENT ON TABLE r2_t IS ''b'''; END $$")
            execute(admin, "CALL r2_p()")
            assert _run(db, ROLE_A, PART_SQL)[1] == 0
            execute(admin, "CREATE INDEX CONCURRENTLY r2_i ON r2_t_0 (v)")
            assert _run(db, ROLE_A, PART_SQL)[1] == 0
            assert _run(db, ROLE_A, PART_SQL)[:2] == (answer, 1)
        finally:
            admin.close()


SMALL_SQL = "SELECT dx.sum(sm_f(id)), dx.count(*) FROM spots WHERE id > 5"  # (small per-point tables)


def test_two_phase_ddl_and_a_wrapping_ring_under_concurrency():
    """With a 128 kB region and prepared transactions (restart): a prepared DDL is shared by nobody
    once COMMIT PREPARED ran; four sessions running 40 statements at once while the ring wraps (the
    entries evicted under the readers) always get the answer of a fresh analysis."""
    c = connect()
    execute(c, "ALTER SYSTEM SET dxpriv.shared_memo_memory = '128kB'")
    execute(c, "ALTER SYSTEM SET max_prepared_transactions = 4")
    c.close()
    restart_cluster()
    try:
        with fresh_db() as db:
            admin = _setup(db)
            try:
                old = _stored(db, SMALL_SQL)
                tx = connect(db, autocommit=False)
                try:
                    execute(tx, "CREATE OR REPLACE FUNCTION sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE "
                                "AS 'SELECT x + 9'")
                    execute(tx, "PREPARE TRANSACTION 'review2'")
                finally:
                    tx.close()
                # prepared, not committed: the old definition, shared again
                assert _run(db, None, SMALL_SQL)[0] == old
                assert _run(db, None, SMALL_SQL)[:2] == (old, 1)
                execute(admin, "COMMIT PREPARED 'review2'")
                answer, shared, _ = _run(db, None, SMALL_SQL)
                assert shared == 0 and answer != old, (shared, answer, old)
                # a prepared DDL rolled back: the same analysis afterwards
                tx = connect(db, autocommit=False)
                try:
                    execute(tx, "CREATE OR REPLACE FUNCTION sm_f(x int) RETURNS int LANGUAGE sql IMMUTABLE "
                                "AS 'SELECT x + 90'")
                    execute(tx, "PREPARE TRANSACTION 'review2b'")
                finally:
                    tx.close()
                execute(admin, "ROLLBACK PREPARED 'review2b'")
                assert _run(db, None, SMALL_SQL)[0] == answer

                statements = [f"SELECT sum(id), count(*) FROM spots WHERE id > {i % 20} AND id < {50 - i // 20}" for i in range(40)]
                fresh = {s: _run(db, ROLE_A, s)[0] for s in statements}
                errors, hits = [], []

                def worker(seed):
                    import random
                    order = list(statements) * 2
                    random.Random(seed).shuffle(order)
                    try:
                        for s in order:  # each in a new session: read from the shared memo or analysed
                            answer, shared, _ = _run(db, ROLE_A, s)
                            hits.append(shared)
                            if answer != fresh[s]:
                                errors.append((s, answer, fresh[s]))
                    except Exception as e:  # reported below
                        errors.append(e)

                threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                assert not errors, errors[:3]
                # both happened: replays of shared entries and analyses of evicted ones
                assert 0 < sum(hits) < len(hits), (sum(hits), len(hits))
            finally:
                admin.close()
    finally:
        c = connect()
        execute(c, "ALTER SYSTEM RESET dxpriv.shared_memo_memory")
        execute(c, "ALTER SYSTEM RESET max_prepared_transactions")
        c.close()
        restart_cluster()


def test_temporary_objects_are_never_shared():
    """A function in another session's temporary schema (it goes with that session, no DDL), and a
    session with a temporary schema of its own (pg_temp on its path): neither reads nor stores."""
    with fresh_db() as db:
        admin = _setup(db)
        holder = connect(db)
        try:
            execute(holder, "CREATE FUNCTION pg_temp.r2_tf(x int) RETURNS int LANGUAGE sql IMMUTABLE AS 'SELECT x + 5'")
            schema = scalar(holder, "SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()")
            temp_sql = f"SELECT dx.sum({schema}.r2_tf(id)), dx.count(*) FROM spots"
            first = _run(db, None, temp_sql)
            assert first[1] == 0 and _run(db, None, temp_sql)[1] == 0
            holder.close()  # its temporary function goes without a DDL statement
            c = connect(db)
            try:
                execute(c, "CREATE TEMP TABLE r2_mine (x int)")
                _, shared, _ = _run(db, None, OWNER_SQL, conn=c)  # (stored by others or not: never read here)
                assert shared == 0
            finally:
                c.close()
            _stored(db)
            c = connect(db)
            try:
                execute(c, "CREATE TEMP TABLE r2_mine (x int)")
                assert _run(db, None, OWNER_SQL, conn=c)[1] == 0
            finally:
                c.close()
        finally:
            if not holder.closed:
                holder.close()
            admin.close()


def test_large_constant_with_node_syntax_is_kept_as_bytes():
    # an analyst's constant over 1 kB travels as a raw blob next to the tree's text
    big = "x" * 1500 + " :location 9 {CONST :constlen -1001 :constisnull true} ) \\ \" "
    sql = f"SELECT count(*) FILTER (WHERE lon < -100 AND '{big}' <> '') FROM spots"
    with fresh_db() as db:
        admin = _setup(db)
        try:
            first, shared, _ = _run(db, ROLE_A, sql)
            assert shared == 0
            assert _run(db, ROLE_A, sql)[:2] == (first, 1)
            assert _run(db, ROLE_A, sql.replace("-1001", "-1002"))[1] == 0
        finally:
            admin.close()


def test_replayed_first_statement_keeps_log_messages_from_the_analyst():
    """A new session whose first statement is answered from the shared memo is an analyst's as a
    fresh analysis's would be: LOG messages (debug_print_parse / _rewritten: the rewritten tree) do
    not reach the analyst's client (the statement is then refused for client_min_messages)."""
    with fresh_db() as db:
        admin = _setup(db)
        try:
            for attempt in range(3):  # analysed (and stored), then replayed in new sessions
                c = connect(db, user=ROLE_A)
                try:
                    execute(c, "SET client_min_messages = log; SET debug_print_parse = on; "
                               "SET debug_print_rewritten = on; SET debug_print_plan = on")
                    before = len(c.notices)
                    assert _sqlstate(c, SQL) == "42501"
                    leaked = [n[:60] for n in c.notices[before:] if n.startswith(("LOG", "DEBUG"))]
                    assert not leaked, (attempt, leaked)
                finally:
                    c.close()
        finally:
            admin.close()


def test_extended_protocol_and_prepared_statements():
    """The extended protocol (psycopg 3: Parse/Bind/Execute, named server-side statements) shares
    with the simple protocol by the parsed text; a bound parameter is never shared; a prepared
    statement re-analysed after a policy change gets the new policy, not a shared entry of the old."""
    import psycopg

    def ext_connect(db, user="postgres"):
        return psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=user, dbname=db,
                               autocommit=True, prepare_threshold=0)

    def ext_run(c, sql, params=None):
        c.execute("SET dxpriv.test_seed = 21")
        c.execute(f"SET ROLE {ROLE_A}")
        answer = c.execute(sql, params, prepare=True).fetchone()
        c.execute("RESET ROLE")
        return answer, c.execute("SELECT dx._shared_memo_hits()").fetchone()[0]

    with fresh_db() as db:
        admin = _setup(db)
        try:
            with ext_connect(db) as c:
                first, shared = ext_run(c, SQL)
                assert shared == 0
            assert _run(db, ROLE_A, SQL)[:2] == (first, 1)  # the simple protocol reads it
            with ext_connect(db) as c:
                assert ext_run(c, SQL) == (first, 1)
                assert ext_run(c, SQL) == (first, 1)  # (then this backend's own memo)
            bound = SQL.replace("-100", "%s")
            for _ in range(2):
                with ext_connect(db) as c:
                    assert ext_run(c, bound, (-100,))[1] == 0
            # a prepared statement of the owner, a policy change, the same prepared statement again:
            # analysed again (the domain of id now ends at 9: the sum falls from ~122500 to ~40000)
            with ext_connect(db) as c:
                c.execute("SET dxpriv.test_seed = 21")
                c.execute("SET ROLE postgres")  # (as _run: the same settings)
                old = c.execute(OWNER_SQL, prepare=True).fetchone()
                assert _run(db, None, OWNER_SQL)[:2] == (old, 1)
                execute(admin, "SELECT dx.set_column('spots', 'id', '{\"min\": 0, \"max\": 9}', "
                               "'{\"type\": \"absolute\", \"scale\": 10}')")
                new = c.execute(OWNER_SQL, prepare=True).fetchone()
                fresh, shared, _ = _run(db, None, OWNER_SQL)
                assert fresh[0] < 60000 and new[0] < 60000, (old, new, fresh, shared)  # (shared: stored by its re-analysis)
        finally:
            admin.close()
