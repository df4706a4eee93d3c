"""The sealed path for elevated execution on Citus (issue 21, class 1; src/pg/elevated): an analyst's
distributed statement runs as the table owner on the coordinator and the workers, so nothing of the
analyst's session state may shape it:
  * a schema of hers that shadows the aggregates, functions, operators and types dxpriv's statements
    name (each shadow raises when called) on her search_path;
  * SET LOCAL search_path propagated to the workers (citus.propagate_set_commands = 'local');
  * citus.max_intermediate_result_size = 1 as a presence oracle;
plus dx.set_privacy_unit on distributed tables (append-distributed ones refused), the message when a worker
is down, and dx.check_citus_setup()."""
import os
import subprocess
import time

import psycopg2

from citus_common import citus_db, connect, create_role, execute, rows, scalar

ANALYST = "sealed_mallory"
PRIV = "42501"

# Shadows with the exact signatures of what the coordinator and the workers run (pg_catalog's
# aggregates, casts and operators), created on every node (as the analyst would through Citus's DDL
# propagation); each raises with its name and the role it runs as.
SHADOWS = """
CREATE SCHEMA ana AUTHORIZATION {a};
SET ROLE {a};
CREATE FUNCTION ana.spy(what text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN RAISE EXCEPTION 'shadow % ran as %', what, current_user; END $$;
CREATE FUNCTION ana.step0(int8) RETURNS int8 LANGUAGE plpgsql AS $$ BEGIN PERFORM ana.spy('count(*)'); RETURN 0; END $$;
CREATE AGGREGATE ana.count(*) (SFUNC = ana.step0, STYPE = int8, INITCOND = '0');
DO $d$
DECLARE t text; agg text; op text;
BEGIN
	FOREACH t IN ARRAY ARRAY['int2', 'int4', 'int8', 'float8', 'numeric', 'text', 'bytea', 'bool'] LOOP
		EXECUTE format('CREATE FUNCTION ana.step_%1$s(int8, %1$s) RETURNS int8 LANGUAGE plpgsql AS '
		               '$$ BEGIN PERFORM ana.spy(''aggregate(%1$s)''); RETURN 0; END $$', t);
		FOREACH agg IN ARRAY ARRAY['count', 'sum', 'avg', 'min', 'max'] LOOP
			EXECUTE format('CREATE AGGREGATE ana.%2$s(%1$s) (SFUNC = ana.step_%1$s, STYPE = int8, INITCOND = ''0'')', t, agg);
		END LOOP;
		EXECUTE format('CREATE FUNCTION ana.cmp_%1$s(%1$s, %1$s) RETURNS bool LANGUAGE plpgsql AS '
		               '$$ BEGIN RETURN ana.spy(''operator(%1$s)''); END $$', t);
		FOREACH op IN ARRAY ARRAY['=', '<', '<=', '>', '>=', '<>'] LOOP
			EXECUTE format('CREATE OPERATOR ana.%2$s (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = ana.cmp_%1$s)', t, op);
		END LOOP;
	END LOOP;
	FOREACH t IN ARRAY ARRAY['int4', 'int8', 'float8', 'numeric'] LOOP
		EXECUTE format('CREATE FUNCTION ana.add_%1$s(%1$s, %1$s) RETURNS %1$s LANGUAGE plpgsql AS '
		               '$$ BEGIN PERFORM ana.spy(''+(%1$s)''); RETURN NULL; END $$', t);
		EXECUTE format('CREATE OPERATOR ana.+ (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = ana.add_%1$s)', t);
		EXECUTE format('CREATE OPERATOR ana.* (LEFTARG = %1$s, RIGHTARG = %1$s, FUNCTION = ana.add_%1$s)', t);
	END LOOP;
	FOREACH t IN ARRAY ARRAY['int4', 'float8', 'numeric', 'text'] LOOP
		EXECUTE format('CREATE FUNCTION ana.int8(%1$s) RETURNS int8 LANGUAGE plpgsql AS '
		               '$$ BEGIN PERFORM ana.spy(''int8(%1$s)''); RETURN NULL; END $$', t);
		EXECUTE format('CREATE FUNCTION ana.float8(%1$s) RETURNS float8 LANGUAGE plpgsql AS '
		               '$$ BEGIN PERFORM ana.spy(''float8(%1$s)''); RETURN NULL; END $$', t);
	END LOOP;
	FOREACH t IN ARRAY ARRAY['text', 'float8', 'int8', 'int4', 'bytea', 'jsonb', 'date'] LOOP
		EXECUTE format('CREATE DOMAIN ana.%1$s AS pg_catalog.%1$s CHECK (ana.spy(''domain %1$s''))', t);
	END LOOP;
END $d$;
RESET ROLE;
"""


UNIT_QUERIES = [
    "SELECT dx.count(*), dx.sum(age) FROM {t}",
    "SELECT region, dx.count(*), dx.count(DISTINCT person) FROM {t} GROUP BY region ORDER BY 1",
]


def _setup(db, analyst=ANALYST):
    create_role(analyst)
    c = connect("coord", db)
    execute(c, "CREATE TABLE people (id int PRIMARY KEY, age int, sex text, region text)")
    execute(c, "SELECT create_distributed_table('people', 'id', shard_count := 4)")
    execute(c, "INSERT INTO people SELECT i, 18 + i % 70, CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END, "
               "(ARRAY['north', 'south'])[1 + i % 2] FROM generate_series(1, 500) i")
    execute(c, "CREATE TABLE people_empty (id int PRIMARY KEY, age int, sex text, region text)")
    execute(c, "SELECT create_distributed_table('people_empty', 'id', shard_count := 4)")
    for t in ("people", "people_empty"):
        execute(c, f"SELECT dx.protect_table('{t}', 1.0)")
        execute(c, f"""SELECT dx.set_column('{t}', 'age', '{{"min": 0, "max": 120}}', '{{"type": "absolute", "scale": 10}}')""")
        execute(c, f"""SELECT dx.set_column('{t}', 'sex', '{{"values": ["F", "M"]}}', '{{"type": "discrete", "weight": 1}}')""")
        execute(c, f"""SELECT dx.set_column('{t}', 'region', '{{"values": ["north", "south"]}}', '{{"type": "discrete", "weight": 1}}')""")
    execute(c, "SELECT dx.add_analyst(%s::regrole)", (analyst,))
    for t in ("people", "people_empty"):
        execute(c, f"SELECT dx.grant_budget(%s::regrole, '{t}', 10000)", (analyst,))
    c.close()


def _shadow_everywhere(db, analyst=ANALYST):
    for node in ("coord", "w1", "w2"):
        c = connect(node, db)
        execute(c, "SET citus.enable_ddl_propagation = off")
        execute(c, SHADOWS.format(a=analyst))
        c.close()


def _refused(conn, sql, code=PRIV):
    try:
        execute(conn, sql)
    except psycopg2.Error as e:
        assert e.pgcode == code, f"{sql}: {e.pgcode} {e.pgerror}"
        return e
    raise AssertionError(f"not refused: {sql}")


QUERIES = [
    "SELECT dx.count(*) FROM people",
    "SELECT sex, dx.count(*) FROM people GROUP BY sex ORDER BY 1",
    "SELECT dx.sum(age), dx.avg(age) FROM people",
    "SELECT region, dx.sum(age) FROM people WHERE sex OPERATOR(pg_catalog.=) 'F' GROUP BY region ORDER BY 1",
    "SELECT pg_catalog.count(*), pg_catalog.sum(age) FROM people",
    "SELECT dx.mode(sex) FROM people",
    "SELECT region, dx.mode(sex), dx.median(age) FROM people GROUP BY region ORDER BY 1",
]


def test_shadow_schema_on_the_search_path():
    """Her shadows fire in her own statements, never in what dxpriv runs as the owner (the releases,
    the lookups, the per-point tables stored on the workers)."""
    with citus_db() as db:
        _setup(db)
        c = connect("coord", db)
        execute(c, "CREATE TABLE wide (id bigint, score int)")
        execute(c, "SELECT create_distributed_table('wide', 'id', shard_count => 4)")
        execute(c, "INSERT INTO wide SELECT g, g FROM generate_series(1, 100) g")
        execute(c, "SELECT dx.protect_table('wide', 'Infinity')")
        execute(c, """SELECT dx.set_column('wide', 'score', '{"min": 0, "max": 100000}', '{"type": "none"}')""")
        execute(c, "SELECT dx.grant_budget(%s::regrole, 'wide', 1000)", (ANALYST,))
        # privacy units (issue 27): co-located (bounded on the workers) and not (on the coordinator)
        for t, by in (("units_by_unit", "person"), ("units_by_id", "id")):
            execute(c, f"CREATE TABLE {t} (id int, person int, age int, region text)")
            execute(c, f"SELECT create_distributed_table('{t}', '{by}', shard_count := 4)")
            execute(c, f"INSERT INTO {t} SELECT i, i % 50, 18 + i % 70, (ARRAY['north', 'south'])[1 + i % 2] "
                       "FROM generate_series(1, 300) i")
            execute(c, f"SELECT dx.protect_table('{t}', 1.0)")
            execute(c, f"""SELECT dx.set_column('{t}', 'age', '{{"min": 0, "max": 120}}', '{{"type": "absolute", "scale": 10}}')""")
            execute(c, f"""SELECT dx.set_column('{t}', 'region', '{{"values": ["north", "south"]}}', '{{"type": "discrete", "weight": 1}}')""")
            execute(c, f"SELECT dx.set_privacy_unit('{t}', 'person', 2)")
            execute(c, f"SELECT dx.grant_budget(%s::regrole, '{t}', 1000)", (ANALYST,))
        c.close()
        _shadow_everywhere(db)
        a = connect("coord", db, user=ANALYST)
        execute(a, "SET search_path = ana, pg_catalog, public")
        e = _refused(a, "SELECT 1 + 1", code="P0001")
        assert f"ran as {ANALYST}" in e.pgerror, e.pgerror
        # a large per-point table: stored on every worker first (sealed run_command_on_workers)
        assert scalar(a, "SELECT dx.linear(score::pg_catalog.float8 OPERATOR(pg_catalog.*) score "
                         "OPERATOR(pg_catalog./) 1e6) FROM wide") is not None
        for sql in QUERIES + [q.format(t=t) for t in ("units_by_unit", "units_by_id") for q in UNIT_QUERIES]:
            got = rows(a, sql)
            assert got and all(v is not None for r in got for v in r), (sql, got)
        # the same inside a transaction block, with her settings changed too
        a.autocommit = False
        execute(a, "SET LOCAL DateStyle = 'SQL, DMY'")
        execute(a, "SET LOCAL extra_float_digits = -15")
        execute(a, "SET LOCAL citus.enable_binary_protocol = off")
        for sql in QUERIES[:3]:
            assert rows(a, sql)
        a.rollback()
        a.close()


def test_set_local_propagated_to_workers_is_refused():
    """SET LOCAL replayed on the workers' connections would run her shadows there as the owner."""
    with citus_db() as db:
        _setup(db)
        _shadow_everywhere(db)
        # the mechanism, shown with the superuser's own plain statement (not sealed: not an analyst's)
        su = connect("coord", db, autocommit=False)
        execute(su, "SET LOCAL citus.propagate_set_commands = 'local'")
        execute(su, "SET LOCAL search_path = ana, pg_catalog, public")
        e = _refused(su, "SELECT sum(age) FROM public.people", code="P0001")
        assert "shadow aggregate(int4) ran as postgres" in e.pgerror, e.pgerror
        su.rollback()
        su.close()
        a = connect("coord", db, user=ANALYST, autocommit=False)
        for setting in ("search_path = ana, pg_catalog, public", "DateStyle = 'SQL, DMY'",
                        "citus.max_intermediate_result_size = 1"):
            execute(a, "SET LOCAL citus.propagate_set_commands = 'local'")
            execute(a, f"SET LOCAL {setting}")
            e = _refused(a, "SELECT dx.count(*) FROM people")
            assert "propagated to the Citus workers" in e.pgerror and e.diag.message_hint, e.pgerror
            a.rollback()
        # switched back to 'none' after the SET LOCAL: Citus still replays it, still refused
        execute(a, "SET LOCAL citus.propagate_set_commands = 'local'")
        execute(a, "SET LOCAL search_path = ana, pg_catalog, public")
        execute(a, "SET LOCAL citus.propagate_set_commands = 'none'")
        _refused(a, "SELECT dx.count(*) FROM people")
        a.rollback()
        # a prepared statement planned before the SET LOCAL: refused when it starts
        execute(a, "PREPARE q AS SELECT dx.count(*) FROM people")
        a.commit()
        execute(a, "SET LOCAL citus.propagate_set_commands = 'local'")
        execute(a, "SET LOCAL search_path = ana, pg_catalog, public")
        _refused(a, "EXECUTE q")
        a.rollback()
        # the next transaction is clean; a SET LOCAL that Citus does not propagate is harmless
        assert scalar(a, "SELECT dx.count(*) FROM people") is not None
        execute(a, "SET LOCAL search_path = ana, pg_catalog, public")
        assert scalar(a, "SELECT dx.count(*) FROM people") is not None
        a.rollback()
        a.close()


def test_intermediate_result_size_is_no_presence_oracle():
    """citus.max_intermediate_result_size = 1 must not make a statement fail on a table with rows and
    succeed on an empty one (or the reverse): the sealed path runs it with -1 (no limit)."""
    with citus_db() as db:
        _setup(db)
        a = connect("coord", db, user=ANALYST)
        execute(a, "SET citus.max_intermediate_result_size = 1")
        for template in ["SELECT region, dx.mode(sex) FROM {t} GROUP BY region ORDER BY 1",
                         "SELECT region, dx.median(age), dx.quantile(age, 0.9) FROM {t} GROUP BY region ORDER BY 1",
                         "SELECT dx.mode(sex) FROM {t}",
                         "SELECT region, mode() WITHIN GROUP (ORDER BY sex) FROM {t} GROUP BY region ORDER BY 1",
                         "SELECT region, percentile_disc(0.5) WITHIN GROUP (ORDER BY age) FROM {t} GROUP BY region "
                         "ORDER BY 1"]:
            outcomes = []
            for t in ("people", "people_empty"):
                try:
                    rows(a, template.format(t=t))
                    outcomes.append("ok")
                except psycopg2.Error as e:
                    outcomes.append(e.pgcode)
            assert outcomes[0] == outcomes[1], (template, outcomes)
            assert outcomes[0] == "ok" or not template.startswith("SELECT region, dx."), (template, outcomes)
        a.close()


def test_privacy_unit_on_distributed_tables():
    """A unit is declared on a hash-distributed table (issue 27); an append-distributed one refuses."""
    with citus_db() as db:
        _setup(db)
        c = connect("coord", db)
        execute(c, "SELECT dx.set_privacy_unit('people', 'id', 1)")
        assert scalar(c, "SELECT count(*) FROM dx.privacy_units") == 1
        execute(c, "CREATE TABLE appended (id int, age int)")
        execute(c, "SELECT create_distributed_table('appended', 'id', 'append')")
        execute(c, "SELECT dx.protect_table('appended', 1.0)")
        e = _refused(c, "SELECT dx.set_privacy_unit('appended', 'id', 1)", code="0A000")
        assert "append" in e.pgerror.lower() and e.diag.message_hint, e.pgerror
        c.close()


def test_check_citus_setup():
    with citus_db() as db:
        _setup(db)
        c = connect("coord", db)
        got = {r[0]: (r[1], r[2]) for r in rows(c, "SELECT * FROM dx.check_citus_setup()")}
        assert got["citus loaded before dxpriv"][0] is True, got
        assert got["no grants on protected tables to PUBLIC or analysts"][0] is True, got
        assert got["citus.propagate_set_commands is none by default"][0] is True, got
        assert got[f"workers reject logins of analyst {ANALYST}"][0] is False, got  # LOGIN on the workers here
        assert "dxpriv installed on every worker" in got
        assert "worker search_path holds no schema analysts can write" in got
        # protecting a distributed table with a grant to PUBLIC or to an analyst's group is refused
        create_role("sealed_group")
        execute(c, f"GRANT sealed_group TO {ANALYST}")
        execute(c, "CREATE TABLE pre (id int PRIMARY KEY, age int)")
        execute(c, "SELECT create_distributed_table('pre', 'id', shard_count := 2)")
        for grant, revoke in (("GRANT SELECT ON pre TO PUBLIC", "REVOKE ALL ON pre FROM PUBLIC"),
                              ("GRANT SELECT (age) ON pre TO sealed_group", "REVOKE ALL (age) ON pre FROM sealed_group")):
            execute(c, grant)
            e = _refused(c, "SELECT dx.protect_table('pre', 1.0)")
            assert "copies onto its shards" in e.pgerror and e.diag.message_hint, e.pgerror
            execute(c, revoke)
        execute(c, "SELECT dx.protect_table('pre', 1.0)")
        # a grant made after protecting a local table (dx.protect_table revokes earlier ones) that is
        # distributed afterwards (Citus copies it: the check reports it), and analysts made NOLOGIN
        # on the workers
        execute(c, "CREATE TABLE granted (id int PRIMARY KEY, age int)")
        execute(c, "SELECT dx.protect_table('granted', 1.0)")
        execute(c, "GRANT SELECT ON granted TO PUBLIC")
        execute(c, "SELECT create_distributed_table('granted', 'id', shard_count := 2)")
        for w in ("w1", "w2"):
            wc = connect(w, db)
            execute(wc, f"SET citus.enable_ddl_propagation = off; ALTER ROLE {ANALYST} NOLOGIN")
            wc.close()
        try:
            got = {r[0]: (r[1], r[2]) for r in rows(c, "SELECT * FROM dx.check_citus_setup()")}
            bad = got["no grants on protected tables to PUBLIC or analysts"]
            assert bad[0] is False and "PUBLIC" in bad[1] and "granted" in bad[1], bad
            assert got[f"workers reject logins of analyst {ANALYST}"][0] is True, got
        finally:
            for w in ("w1", "w2"):
                wc = connect(w, db)
                execute(wc, f"SET citus.enable_ddl_propagation = off; ALTER ROLE {ANALYST} LOGIN")
                wc.close()
        c.close()
        a = connect("coord", db, user=ANALYST)
        _refused(a, "SELECT * FROM dx.check_citus_setup()")
        a.close()


def _worker_ctl(node, action):
    work = os.environ["DXPRIV_CITUS_WORK"]
    bindir = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True).stdout.strip()
    cmd = f"{bindir}/pg_ctl -D '{work}/{node}/data' -l '{work}/{node}/server.log' -w {action}"
    if action == "stop":
        cmd += " -m fast"
    if os.getuid() == 0:
        subprocess.run(["su", "postgres", "-s", "/bin/bash", "-c", cmd], check=True, capture_output=True)
    else:
        subprocess.run(["bash", "-c", cmd], check=True, capture_output=True)


def test_zz_worker_down_message():
    """A statement while a worker is down says that a worker could not be reached (not that dxpriv
    may be missing there)."""
    if not os.environ.get("DXPRIV_CITUS_WORK"):
        print("skipped: no cluster directory")
        return
    with citus_db() as db:
        _setup(db)
        c = connect("coord", db)
        execute(c, "CREATE TABLE wide (id bigint, score int)")
        execute(c, "SELECT create_distributed_table('wide', 'id', shard_count => 4)")
        execute(c, "INSERT INTO wide SELECT g, g FROM generate_series(1, 100) g")
        execute(c, "SELECT dx.protect_table('wide', 'Infinity')")
        execute(c, """SELECT dx.set_column('wide', 'score', '{"min": 0, "max": 100000}', '{"type": "none"}')""")
        execute(c, "SELECT dx.grant_budget('postgres', 'wide', 1000)")
        a = connect("coord", db, user=ANALYST)
        execute(a, "SET citus.node_connection_timeout = 2000")
        _worker_ctl("w2", "stop")
        try:
            start = time.time()
            for sql in ("SELECT dx.count(*) FROM people", "SELECT region, dx.count(*) FROM people GROUP BY region"):
                try:
                    rows(a, sql)
                    raise AssertionError(f"answered with a worker down: {sql}")
                except psycopg2.Error as e:
                    text = (e.pgerror or "") + (e.diag.message_hint or "")
                    print("  " + text.replace("\n", " | "))
                    assert "dxpriv is installed" not in text, text
                    assert "could not be reached" in text or "connect" in text.lower(), text
            # a large per-point table is stored on every worker before the statement runs (one shard or all)
            try:
                rows(c, "SELECT dx.linear(score::float8 * score / 1e6) FROM wide")
                raise AssertionError("answered with a worker down")
            except psycopg2.Error as e:
                print("  " + e.pgerror.replace("\n", " | ") + " hint: " + (e.diag.message_hint or ""))
                assert e.pgcode == "08006" and "could not be reached" in e.pgerror, e.pgerror
                assert "dxpriv is installed" not in (e.diag.message_hint or ""), e.diag.message_hint
            # as the hint says: the charge stands
            assert scalar(c, "SELECT count(*) FROM dx.ledger WHERE relid = 'wide'::regclass") == 1
            print(f"  worker-down errors after {time.time() - start:.1f}s")
        finally:
            _worker_ctl("w2", "start")
        a.close()
        c.close()


def test_add_analyst_maintains_the_worker_login_block():
    """dx.add_analyst on a Citus coordinator makes the analyst a member of the NOLOGIN group
    dx_analysts on every node (one pg_hba.conf block on the workers rejects them all) and says so;
    dx.check_citus_setup() accepts a `+dx_analysts` reject line."""
    role = "sealed_group_analyst"
    create_role(role)
    with citus_db() as db:
        c = connect("coord", db)
        c.notices.clear()
        execute(c, "SELECT dx.add_analyst(%s::regrole)", (role,))
        assert any("+dx_analysts" in n or "dx_analysts" in n for n in c.notices), c.notices
        for node in ("coord", "w1", "w2"):
            n = connect(node, db)
            assert rows(n, "SELECT rolcanlogin FROM pg_roles WHERE rolname = 'dx_analysts'") == [(False,)], node
            assert scalar(n, "SELECT pg_has_role(%s, 'dx_analysts', 'MEMBER')", (role,)), node
            n.close()
        # the group holds no privilege on a protected table and is no analyst itself
        assert scalar(c, "SELECT count(*) FROM dx.analysts WHERE role = 'dx_analysts'::regrole") == 0
        work = os.environ.get("DXPRIV_CITUS_WORK")
        hbas = {n: os.path.join(work, n, "data", "pg_hba.conf") for n in ("w1", "w2")} if work else {}
        if hbas and all(os.access(h, os.W_OK) for h in hbas.values()):
            name = f"workers reject logins of analyst {role}"
            checks = dict((n, ok) for n, ok, _ in rows(c, "SELECT * FROM dx.check_citus_setup()"))
            assert checks.get(name) is False, checks
            originals = {n: open(h).read() for n, h in hbas.items()}

            def reload(node):
                w = connect(node)
                execute(w, "SELECT pg_reload_conf()")
                w.close()
            try:
                for n, h in hbas.items():
                    with open(h, "w") as f:  # the block the NOTICE gives, at the top
                        f.write("host all +dx_analysts 0.0.0.0/0 reject\nhost all +dx_analysts ::/0 reject\n" + originals[n])
                    reload(n)
                time.sleep(0.5)
                for n in hbas:
                    try:
                        psycopg2.connect(host="127.0.0.1", port=int(os.environ["DXPRIV_CITUS_" + n.upper()]), user=role,
                                         dbname=db).close()
                        raise AssertionError(f"worker {n} accepted an analyst")
                    except psycopg2.OperationalError as e:
                        assert "reject" in str(e), e
                after = dict((n, ok) for n, ok, _ in rows(c, "SELECT * FROM dx.check_citus_setup()"))
                assert after.get(name) is True, after
            finally:
                for n, h in hbas.items():
                    with open(h, "w") as f:
                        f.write(originals[n])
                    reload(n)
        c.close()
