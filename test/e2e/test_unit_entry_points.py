"""A privacy unit protects the person in every entry point (issue 21, class 4).

Tables with a privacy unit (k = 1 row per person) where person 1 holds 400 rows and 1000 others one
row each. Every dx function an analyst can execute is enumerated from pg_proc and must appear in
ENTRY_POINTS with a decision: functions that read the table row by row (releases, median sessions,
attribute releases) are refused with 0A000 naming the unit, before anything is charged, while the
same call on an identical table without a unit is answered; the dx aggregates bound the unit (the
person counts once); the others read no protected row (DBA functions check ownership, sizes are
hidden, computations read no table). A new function fails test_every_dx_function_has_a_decision until
it is classified here and exercised below.
"""
import os

import psycopg2

from e2e_common import connect, execute, fresh_db, scalar

ANALYST = f"unit_ep_analyst_{os.getpid()}"
GAUSS = ('{"family": "gaussian", "attributes": ["salary", "female", "age"], '
         '"covariance": [[400, 5, 10], [5, 0.25, 0.01], [10, 0.01, 150]]}')
NETWORK = ('{"family": "bayesian_network", "attributes": ["sat", "height", "weight", "gender", "income"], '
           '"edges": [["income", "sat"], ["gender", "sat"], ["gender", "height"], ["gender", "weight"], '
           '["height", "weight"]], "influences": {"gender": 0.3, "gender,sat": [[0.5, 0.5], [0.4, 0.6]]}}')
WEIGHTS = "ARRAY[[1,1,1,1,1,0,0,0,0,0],[0,0,0,0,0,1,1,1,1,1]]::float8[]"
PREDICATES = "ARRAY['age < 5', 'age >= 5']"

# Row-by-row readers: refused on a unit table, answered on the control. {t}: the gaussian table,
# {n}: the network table, {ws}: a fresh target name in the analyst's schema.
REFUSED = {
    "dx.release_mwem(regclass,text[],text,double precision,name,integer,boolean)":
        "SELECT dx.release_mwem('{t}', ARRAY['age'], 'marginals:1', 0.5, '{ws}')",
    "dx.release_mwem(regclass,text[],double precision[],double precision,name,integer,boolean)":
        f"SELECT dx.release_mwem('{{t}}', ARRAY['age'], {WEIGHTS}, 0.5, '{{ws}}')",
    "dx.release_mwem(regclass,text[],text[],double precision,name,integer,boolean)":
        f"SELECT dx.release_mwem('{{t}}', ARRAY['age'], {PREDICATES}, 0.5, '{{ws}}')",
    "dx.release_smalldb(regclass,text[],text,double precision,name,integer)":
        "SELECT dx.release_smalldb('{t}', ARRAY['female'], 'marginals:1', 0.5, '{ws}', 3)",
    "dx.release_smalldb(regclass,text[],double precision[],double precision,name,integer)":
        "SELECT dx.release_smalldb('{t}', ARRAY['female'], ARRAY[[1,0],[0,1]]::float8[], 0.5, '{ws}', 3)",
    "dx.release_smalldb(regclass,text[],text[],double precision,name,integer)":
        "SELECT dx.release_smalldb('{t}', ARRAY['female'], ARRAY['female = 1'], 0.5, '{ws}', 3)",
    "dx.top_k(regclass,text,integer,double precision,text,text[])":
        "SELECT count(*) FROM dx.top_k('{t}', 'age', 2, 0.5)",
    "dx.release_synthetic(regclass,text[],text,double precision,name,integer,integer[])":
        "SELECT dx.release_synthetic('{t}', ARRAY['age'], 'marginals:1', 0.5, '{ws}')",
    "dx.release_synthetic(regclass,text[],double precision[],double precision,name,integer,integer[])":
        f"SELECT dx.release_synthetic('{{t}}', ARRAY['age'], {WEIGHTS}, 0.5, '{{ws}}')",
    "dx.release_synthetic(regclass,text[],text[],double precision,name,integer,integer[])":
        f"SELECT dx.release_synthetic('{{t}}', ARRAY['age'], {PREDICATES}, 0.5, '{{ws}}')",
    "dx.release_synthetic_error(regclass,text[],text,double precision,integer,integer[])":
        "SELECT count(*) FROM dx.release_synthetic_error('{t}', ARRAY['age'], 'marginals:1', 0.5)",
    "dx.release_synthetic_error(regclass,text[],double precision[],double precision,integer,integer[])":
        f"SELECT count(*) FROM dx.release_synthetic_error('{{t}}', ARRAY['age'], {WEIGHTS}, 0.5)",
    "dx.release_synthetic_error(regclass,text[],text[],double precision,integer,integer[])":
        f"SELECT count(*) FROM dx.release_synthetic_error('{{t}}', ARRAY['age'], {PREDICATES}, 0.5)",
    "dx.median_session_open(regclass,text[],text,double precision,double precision,integer,integer)":
        "SELECT dx.median_session_open('{t}', ARRAY['age'], 'marginals:1', 0.5)",
    "dx.median_session_open(regclass,text[],double precision[],double precision,double precision,integer,integer)":
        f"SELECT dx.median_session_open('{{t}}', ARRAY['age'], {WEIGHTS}, 0.5)",
    "dx.median_session_open(regclass,text[],text[],double precision,double precision,integer,integer)":
        f"SELECT dx.median_session_open('{{t}}', ARRAY['age'], {PREDICATES}, 0.5)",
    "dx.attr_avg(regclass,name)": "SELECT dx.attr_avg('{t}', 'salary')",
    "dx.attr_sum(regclass,name)": "SELECT dx.attr_sum('{t}', 'salary')",
    'dx.attr_avg("any")': "SELECT dx.attr_avg(salary) FROM {t}",
    'dx.attr_sum("any")': "SELECT dx.attr_sum(salary) FROM {t}",
    "dx.explain_attribute(regclass,name,text)": "SELECT count(*) FROM dx.explain_attribute('{t}', 'salary', 'avg')",
    "dx.attr_count(regclass,text)": "SELECT dx.attr_count('{n}', 'income > 5')",
}
# Aggregates that bound each unit's rows (the lookup path): exercised in test_aggregates_bound_the_person.
BOUNDED = ["dx.count()", 'dx.count("any")', 'dx.count("any",double precision)', 'dx.sum("any")',
           'dx.sum("any",double precision)', 'dx.avg("any")', 'dx.avg("any",double precision)', 'dx.linear("any")',
           'dx.linear("any",double precision)', 'dx.count_units("any")', 'dx.count_units("any",double precision)']
# Exponential-mechanism aggregates: refused by the analyzer on a unit table (0A000, nothing charged).
REFUSED_AGG = ["dx.mode(anyelement)", "dx.mode(anyelement,double precision)", "dx.quantile(anyelement,double precision)",
               "dx.quantile(anyelement,double precision,double precision)", "dx.median(anyelement)",
               "dx.median(anyelement,double precision)", 'dx.count_distinct("any")',
               'dx.count_distinct("any",double precision)']
BOUNDED_SQL = {
    "dx.count()": "SELECT dx.count(*) FROM {t}",
    'dx.count("any")': "SELECT dx.count(age) FROM {t}",
    'dx.count("any",double precision)': "SELECT dx.count(age, 0.5) FROM {t}",
    'dx.sum("any")': "SELECT dx.sum(age) FROM {t}",
    'dx.sum("any",double precision)': "SELECT dx.sum(age, 0.5) FROM {t}",
    'dx.avg("any")': "SELECT dx.avg(age) FROM {t}",
    'dx.avg("any",double precision)': "SELECT dx.avg(age, 0.5) FROM {t}",
    'dx.linear("any")': "SELECT dx.linear(age * 2) FROM {t}",
    'dx.linear("any",double precision)': "SELECT dx.linear(age * 2, 0.5) FROM {t}",
    'dx.count_units("any")': "SELECT dx.count_units(person) FROM {t}",
    'dx.count_units("any",double precision)': "SELECT dx.count_units(person, 0.5) FROM {t}",
    "dx.mode(anyelement)": "SELECT dx.mode(age) FROM {t}",
    "dx.mode(anyelement,double precision)": "SELECT dx.mode(age, 0.5) FROM {t}",
    "dx.quantile(anyelement,double precision)": "SELECT dx.quantile(age, 0.5) FROM {t}",
    "dx.quantile(anyelement,double precision,double precision)": "SELECT dx.quantile(age, 0.5, 0.5) FROM {t}",
    "dx.median(anyelement)": "SELECT dx.median(age) FROM {t}",
    "dx.median(anyelement,double precision)": "SELECT dx.median(age, 0.5) FROM {t}",
    'dx.count_distinct("any")': "SELECT dx.count_distinct(age) FROM {t}",
    'dx.count_distinct("any",double precision)': "SELECT dx.count_distinct(age, 0.5) FROM {t}",
}
# Owner or superuser functions (SECURITY DEFINER, checked in their body): never read rows for an analyst.
DBA = ["dx.protect_table(regclass,double precision,double precision)", "dx.unprotect_table(regclass)",
       "dx.set_column(regclass,name,jsonb,jsonb)", "dx.unset_column(regclass,name)",
       "dx.grant_budget(regrole,regclass,double precision,interval,double precision)",
       "dx.revoke_budget(regrole,regclass)", "dx.set_query_cap(regclass,double precision)",
       "dx.set_delta(regclass,double precision)", "dx.set_column_group(regclass,name[],jsonb,jsonb)",
       "dx.unset_column_group(regclass,name[])", "dx.set_public(regclass,boolean)",
       "dx.set_privacy_unit(regclass,name,integer,integer,integer)", "dx.unset_privacy_unit(regclass)",
       "dx.add_analyst(regrole)", "dx.remove_analyst(regrole)", "dx.clear_cache(regclass)",
       "dx.protect_attribute(regclass,name,double precision,jsonb,double precision,double precision,text,boolean)",
       "dx.unprotect_attribute(regclass,name)",
       "dx.grant_attribute_budget(regrole,regclass,double precision,double precision)"]
# Sizes of relations: NULL for an analyst on a relation holding protected rows (README "Catalog sizes").
SIZES = {
    "dx.analyst_relation_size(regclass)": "SELECT dx.analyst_relation_size('{t}')",
    "dx.analyst_relation_size(regclass,text)": "SELECT dx.analyst_relation_size('{t}', 'main')",
    "dx.analyst_table_size(regclass)": "SELECT dx.analyst_table_size('{t}')",
    "dx.analyst_total_relation_size(regclass)": "SELECT dx.analyst_total_relation_size('{t}')",
    "dx.analyst_indexes_size(regclass)": "SELECT dx.analyst_indexes_size('{t}')",
}
# Read no protected row: database/tablespace/Citus sizes (no table argument), computations on their
# arguments, the caller's own catalog state, the local model (reports the analyst passes), the
# labels and already-public answers of a median session.
NO_TABLE = ["dx.analyst_database_size(name)", "dx.analyst_database_size(oid)", "dx.analyst_tablespace_size(name)",
            "dx.analyst_tablespace_size(oid)", "dx.analyst_citus_relation_size(regclass)",
            "dx.analyst_citus_table_size(regclass)", "dx.analyst_citus_total_relation_size(regclass,boolean)",
            "dx.analyst_citus_shard_sizes()", "dx.is_analyst()", "dx.last_release()",
            "dx.geometric_randomize(integer,integer,integer,double precision)",
            "dx.krr_randomize(integer,integer,integer,double precision)",
            "dx.kantorovich(double precision[],double precision[])",
            "dx.ibu(integer,integer,integer,double precision,text,integer)",
            "dx.wasserstein_scale(jsonb,double precision)",
            "dx.markov_quilt_scale(jsonb,text[],text[],jsonb,double precision,double precision)",
            "dx.median_session_queries(bigint)"]
# Special cases exercised below: explain (bounded aggregates explained, row readers refused) and a
# session opened before the unit was declared.
SPECIAL = ["dx.explain(text)", "dx.median_session_query(bigint,integer)"]

ENTRY_POINTS = {**{k: "refused" for k in REFUSED}, **{k: "bounded" for k in BOUNDED},
                **{k: "refused by the analyzer" for k in REFUSED_AGG}, **{k: "dba" for k in DBA},
                **{k: "sizes" for k in SIZES}, **{k: "no rows" for k in NO_TABLE}, **{k: "special" for k in SPECIAL}}


def ensure_analyst(admin):
    execute(admin, f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ANALYST}') THEN
            CREATE ROLE {ANALYST} LOGIN;
        END IF; END $$""")


def make_gauss(admin, table, unit):
    """person 1: 400 rows (age 9, female 1, salary 200); persons 2..1001: one row each."""
    execute(admin, f"CREATE TABLE {table} (person int NOT NULL, age int, female int, salary float8)")
    execute(admin, f"""INSERT INTO {table} SELECT p, p % 10, p % 2, 40 + p % 60 FROM generate_series(2, 1001) p
                       UNION ALL SELECT 1, 9, 1, 200 FROM generate_series(1, 400)""")
    execute(admin, f"SELECT dx.protect_table('{table}', 'Infinity')")
    execute(admin, f"""SELECT dx.set_column('{table}', 'age', '{{"min": 0, "max": 9}}', '{{"type": "absolute", "scale": 1}}')""")
    execute(admin, f"""SELECT dx.set_column('{table}', 'female', '{{"min": 0, "max": 1}}', '{{"type": "absolute", "scale": 1}}')""")
    execute(admin, f"""SELECT dx.set_column('{table}', 'salary', '{{"min": 0, "max": 200}}', '{{"type": "absolute", "scale": 10}}')""")
    execute(admin, f"SELECT dx.protect_attribute('{table}', 'female', 0.2, %s, epsilon => 0.5)", (GAUSS,))
    finish(admin, table, unit)


def make_network(admin, table, unit):
    execute(admin, f"CREATE TABLE {table} (person int NOT NULL, sat int, height int, weight int, gender int, income int)")
    execute(admin, f"""INSERT INTO {table} SELECT p, 400 + (p * 37) % 1200, 150 + (p * 13) % 50, 50 + (p * 7) % 50,
                       p % 2, (p * 11) % 10 FROM generate_series(2, 1001) p
                       UNION ALL SELECT 1, 1600, 200, 99, 1, 9 FROM generate_series(1, 400)""")
    execute(admin, f"SELECT dx.protect_table('{table}', 'Infinity')")
    for col, dom in [("sat", '{"min": 200, "max": 1600}'), ("height", '{"min": 140, "max": 210}'),
                     ("income", '{"min": 0, "max": 10}')]:
        execute(admin, f"SELECT dx.set_column('{table}', %s, %s, '{{\"type\": \"absolute\", \"scale\": 5}}')", (col, dom))
    execute(admin, f"SELECT dx.protect_attribute('{table}', 'income', 0.2, %s, epsilon => 1.0, record_privacy => false)",
            (NETWORK,))
    finish(admin, table, unit)


def finish(admin, table, unit):
    if unit:
        execute(admin, f"SELECT dx.set_privacy_unit('{table}', 'person', 1)")
    execute(admin, f"SELECT dx.grant_budget('{ANALYST}', '{table}', 1000)")
    execute(admin, f"SELECT dx.grant_attribute_budget('{ANALYST}', '{table}', 1000, 0.5)")


def setup(name):
    admin = connect(name)
    ensure_analyst(admin)
    execute(admin, f"CREATE SCHEMA ws AUTHORIZATION {ANALYST}")
    make_gauss(admin, "g_unit", True)
    make_gauss(admin, "g_rows", False)
    make_network(admin, "n_unit", True)
    make_network(admin, "n_rows", False)
    execute(admin, f"SELECT dx.add_analyst('{ANALYST}')")
    return admin, connect(name, user=ANALYST)


def charges(admin):
    """(ledger rows, epsilon spent, attribute epsilon spent) of the analyst, all tables."""
    return (scalar(admin, f"SELECT count(*) FROM dx.ledger WHERE role = '{ANALYST}'::regrole"),
            scalar(admin, f"SELECT coalesce(sum(spent), 0) FROM dx.budget_grants WHERE role = '{ANALYST}'::regrole"),
            scalar(admin, f"SELECT coalesce(sum(attr_spent), 0) FROM dx.budget_grants WHERE role = '{ANALYST}'::regrole"))


def error_of(conn, sql):
    try:
        scalar(conn, sql)
    except psycopg2.Error as e:
        return e
    return None


def test_every_dx_function_has_a_decision():
    with fresh_db() as name:
        conn = connect(name)
        found = {r[0] for r in fetch(conn, """
            SELECT p.oid::regprocedure::text FROM pg_proc p
            WHERE p.pronamespace = 'dx'::regnamespace AND has_function_privilege('public', p.oid, 'EXECUTE')
              AND (p.proname !~ '^_' OR p.proargtypes::oid[] && ARRAY['regclass'::regtype::oid])""")}
        missing = sorted(found - set(ENTRY_POINTS))
        assert not missing, f"dx functions without a privacy-unit decision (classify them in ENTRY_POINTS): {missing}"
        gone = sorted(set(ENTRY_POINTS) - found)
        assert not gone, f"classified functions that no longer exist: {gone}"
        # the DBA functions check the caller in their body
        for sig in DBA:
            src, definer = fetch(conn, "SELECT prosrc, prosecdef FROM pg_proc WHERE oid = %s::regprocedure", (sig,))[0]
            assert definer and ("_check_owner" in src or "_check_grant" in src or "_caller_is_superuser" in src), sig


def fetch(conn, sql, params=None):
    with conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def test_row_readers_refuse_the_unit_before_any_charge_and_answer_without_it():
    with fresh_db() as name:
        admin, analyst = setup(name)
        for i, (sig, sql) in enumerate(sorted(REFUSED.items())):
            before = charges(admin)
            e = error_of(analyst, sql.format(t="g_unit", n="n_unit", ws=f"ws.u{i}"))
            assert e is not None, f"{sig} answered on a table with a privacy unit"
            assert e.pgcode == "0A000", (sig, e.pgcode, e.diag.message_primary)
            assert "privacy unit (person" in e.diag.message_primary, (sig, e.diag.message_primary)
            assert "dx aggregates" in e.diag.message_hint, (sig, e.diag.message_hint)
            assert charges(admin) == before, f"{sig} charged a refused call"
            assert scalar(admin, "SELECT to_regclass(%s) IS NULL", (f"ws.u{i}",)), sig
            # the same call without a unit is answered (the refusal is the unit's, not the call's)
            scalar(analyst, sql.format(t="g_rows", n="n_rows", ws=f"ws.r{i}"))
        assert scalar(admin, "SELECT count(*) FROM dx.releases WHERE source IN ('g_unit'::regclass, 'n_unit'::regclass)") == 0
        assert scalar(admin, "SELECT count(*) FROM dx.median_sessions WHERE source = 'g_unit'::regclass") == 0
        analyst.close()
        admin.close()


def test_aggregates_bound_the_person():
    with fresh_db() as name:
        admin, analyst = setup(name)
        for sig in BOUNDED:
            scalar(analyst, BOUNDED_SQL[sig].format(t="g_unit"))
        for sig in REFUSED_AGG:
            before = charges(admin)
            e = error_of(analyst, BOUNDED_SQL[sig].format(t="g_unit"))
            assert e is not None and e.pgcode == "0A000" and "privacy unit" in e.diag.message_primary, (sig, e)
            assert charges(admin) == before, sig
            scalar(analyst, BOUNDED_SQL[sig].format(t="g_rows"))
        # presence 'Infinity': dx.count(*) is exact; the unit keeps one of person 1's 400 rows
        assert scalar(analyst, "SELECT dx.count(*) FROM g_unit") == 1001
        assert scalar(analyst, "SELECT dx.count(*) FROM g_rows") == 1400
        # person 1 moves the bounded sum by at most 9 (one row, age <= 9), far less than 400 rows * 9
        others = scalar(admin, "SELECT sum(age) FROM g_unit WHERE person <> 1")
        got = [scalar(analyst, "SELECT dx.sum(age, 1.0) FROM g_unit") for _ in range(5)]
        assert all(others - 15 <= g <= others + 9 + 15 for g in got), (others, got)
        analyst.close()
        admin.close()


def test_sizes_and_explain_on_a_unit_table():
    with fresh_db() as name:
        admin, analyst = setup(name)
        for sig, sql in SIZES.items():
            assert scalar(analyst, sql.format(t="g_unit")) is None, sig
        before = charges(admin)
        rows = fetch(analyst, "SELECT component FROM dx.explain('SELECT dx.count(*) FROM g_unit WHERE age = 3')")
        assert rows and not any("statistical query" in r[0] for r in rows), rows
        rows = fetch(analyst, "SELECT component FROM dx.explain('SELECT dx.count(*) FROM g_rows WHERE age = 3')")
        assert any("statistical query" in r[0] for r in rows), rows  # the control reads n
        e = error_of(analyst, "SELECT count(*) FROM dx.explain('SELECT dx.attr_avg(salary) FROM g_unit')")
        assert e is not None and e.pgcode == "0A000", e
        assert charges(admin) == before
        analyst.close()
        admin.close()


def test_a_session_opened_before_the_unit_is_refused_after_it():
    with fresh_db() as name:
        admin, analyst = setup(name)
        sid = scalar(analyst, "SELECT dx.median_session_open('g_rows', ARRAY['age'], 'marginals:1', 0.5)")
        first = fetch(analyst, f"SELECT answer, reused FROM dx.median_session_query({sid}, 1)")[0]
        assert first[0] is not None and not first[1]
        execute(admin, "SELECT dx.set_privacy_unit('g_rows', 'person', 1)")
        before = charges(admin)
        e = error_of(analyst, f"SELECT answer FROM dx.median_session_query({sid}, 2)")
        assert e is not None and e.pgcode == "0A000" and "privacy unit" in e.diag.message_primary, e
        assert charges(admin) == before
        # an answer already given stays public and free
        again = fetch(analyst, f"SELECT answer, reused FROM dx.median_session_query({sid}, 1)")[0]
        assert again == (first[0], True), again
        assert len(fetch(analyst, f"SELECT * FROM dx.median_session_queries({sid})")) == 10
        analyst.close()
        admin.close()


def test_rows_are_read_as_the_owner_only_through_the_gate():
    """The owner of a protected table is looked up (to read its rows as that owner) only by the gate
    src/pg/metadata/protected_rows.cpp; a new reader must use ProtectedRowRead and so inherits the
    privacy-unit refusal. (The lookup aggregates' owner switches, which bound units, live in the
    analyzer and the Citus glue and do not call relation_owner.)"""
    import pathlib
    import re
    src = pathlib.Path(__file__).resolve().parents[2] / "src" / "pg"
    callers = sorted(str(p.relative_to(src)) for p in src.rglob("*.cpp")
                     if re.search(r"\brelation_owner\s*\(", p.read_text()))
    assert callers == ["metadata/policy.cpp", "metadata/protected_rows.cpp"], callers
    definition = (src / "metadata" / "policy.cpp").read_text()
    assert len(re.findall(r"\brelation_owner\s*\(", definition)) == 1, "policy.cpp only defines relation_owner"
