"""Bound parameters ($1): each execution is analysed, charged and noised with its own values.

Clients that bind server-side: psycopg 3 (its default), psycopg 3 prepared statements (named after
prepare_threshold executions), PREPARE/EXECUTE, PL/pgSQL variables; JDBC PreparedStatement is in
test_bi_shapes.py. The noise scale recorded for every execution must be the one dx.explain reports
for the same query written with the value as a literal: a parameter can never get the sensitivity
computed for other values. A generic plan (planned without values) is never used.
"""
import psycopg
import psycopg2

from attack_fixture import ANALYST, analyst_conn, attack_db
from e2e_common import execute, scalar

# age >= v: v = 0 matches every declared age (only presence moves it), v = 200 matches none (an exact
# 0), values in between cut the absolute metric: three different scales for one statement
AGE_VALUES = [0, 18, 40, 200, 65]


def explain_scale(conn, sql):
    """The noise scale dx.explain reports for a literal query (spends nothing)."""
    return scalar(conn, "SELECT max(noise_scale) FROM dx.explain(%s)", (sql,))


def ledger_since(admin, last_id):
    with admin.cursor() as cur:
        cur.execute("SELECT epsilon, scales FROM dx.ledger WHERE id > %s AND role = %s::regrole ORDER BY id",
                    (last_id, ANALYST))
        return cur.fetchall()


def last_id(admin):
    return scalar(admin, "SELECT coalesce(max(id), 0) FROM dx.ledger")


def psycopg3_conn(db):
    import os
    conn = psycopg.connect(host=os.environ["PGHOST"], port=os.environ["PGPORT"], user=ANALYST, dbname=db,
                           autocommit=True)
    return conn


def expected_scales(db, template):
    conn = analyst_conn(db)
    try:
        return [explain_scale(conn, template.replace("%s", str(v))) for v in AGE_VALUES]
    finally:
        conn.close()


def test_psycopg3_server_side_binding_analyses_each_value():
    template = "SELECT count(*) FROM people WHERE age >= %s"
    with attack_db() as (db, admin):
        want = expected_scales(db, template)
        assert len(set(want)) == 3, f"the values should give three different scales: {want}"
        before = last_id(admin)
        with psycopg3_conn(db) as conn:
            answers = [conn.execute(template, (v,)).fetchone()[0] for v in AGE_VALUES]
        charges = ledger_since(admin, before)
        assert len(charges) == len(AGE_VALUES), f"{len(charges)} charges for {len(AGE_VALUES)} executions"
        assert [sc[0] for _, sc in charges] == want, f"scales {[sc[0] for _, sc in charges]}, explain {want}"
        assert answers[3] == 0, f"age >= 200 matches no declared age: an exact 0, got {answers[3]}"
        print(f"  psycopg 3: scales {want}, answers {answers}")


def test_psycopg3_prepared_statement_past_threshold():
    template = "SELECT count(*) FROM people WHERE age >= %s"
    with attack_db() as (db, admin):
        want = expected_scales(db, template)
        before = last_id(admin)
        with psycopg3_conn(db) as conn:
            conn.prepare_threshold = 2  # named server-side statement from the 2nd execution on
            for _ in range(3):
                for v in AGE_VALUES:
                    conn.execute(template, (v,), prepare=True).fetchone()
        charges = ledger_since(admin, before)
        assert [sc[0] for _, sc in charges] == want * 3, f"scales {[sc[0] for _, sc in charges]}"
        assert all(e == 0.1 for e, _ in charges)


def test_prepare_execute_plpgsql_and_generic_plans():
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        want = expected_scales(db, "SELECT count(*) FROM people WHERE age >= %s")
        execute(conn, "PREPARE q(int) AS SELECT count(*) FROM people WHERE age >= $1")
        before = last_id(admin)
        for v in AGE_VALUES * 2:  # more than 5 executions: the plan cache considers a generic plan
            scalar(conn, f"EXECUTE q({v})")
        charges = ledger_since(admin, before)
        assert [sc[0] for _, sc in charges] == want * 2, f"scales {[sc[0] for _, sc in charges]}"
        # a forced generic plan is refused before anything is charged: at planning (0A000), or, when
        # the plan cache already holds the generic plan it built to compare costs, by the executor's
        # admission check (42501: its aggregates were never analysed)
        before = last_id(admin)
        execute(conn, "SET plan_cache_mode = force_generic_plan")
        try:
            scalar(conn, "EXECUTE q(40)")
            raise AssertionError("a generic plan answered")
        except psycopg2.Error as e:
            assert e.pgcode in ("0A000", "42501") and e.diag.message_hint, (e.pgcode, e.diag.message_primary)
        execute(conn, "RESET plan_cache_mode")
        assert ledger_since(admin, before) == []
        # the epsilon and a quantile's p may be parameters too; bad values are refused at execution
        execute(conn, "PREPARE e(float8) AS SELECT dx.count(age, $1) FROM people")
        before = last_id(admin)
        scalar(conn, "EXECUTE e(0.25)")
        assert [e for e, _ in ledger_since(admin, before)] == [0.25]
        try:
            scalar(conn, "EXECUTE e(-1)")
            raise AssertionError("a negative epsilon was accepted")
        except psycopg2.Error as err:
            assert err.pgcode == "22023", err.pgcode
        execute(conn, "PREPARE m(float8) AS SELECT dx.quantile(age, $1) FROM people")
        assert scalar(conn, "EXECUTE m(0.5)") is not None
        # a PL/pgSQL variable is a parameter: every call is analysed with its value and charged
        execute(conn, """CREATE FUNCTION mallory_ws.older_than(v int) RETURNS bigint LANGUAGE plpgsql AS $$
                         DECLARE r bigint;
                         BEGIN SELECT count(*) INTO r FROM people WHERE age >= v; RETURN r; END $$""")
        before = last_id(admin)
        for v in AGE_VALUES:
            scalar(conn, f"SELECT mallory_ws.older_than({v})")
        charges = ledger_since(admin, before)
        assert [sc[0] for _, sc in charges] == want, f"PL/pgSQL scales {[sc[0] for _, sc in charges]}"
        conn.close()


def test_grouped_query_with_parameters():
    with attack_db() as (db, admin):
        before = last_id(admin)
        with psycopg3_conn(db) as conn:
            rows = conn.execute("SELECT zip, count(*) FROM people WHERE sex = %s AND age BETWEEN %s AND %s "
                                "GROUP BY zip ORDER BY zip", ("F", 20, 60)).fetchall()
        assert len(rows) == 10, rows
        charges = ledger_since(admin, before)
        assert len(charges) == 1 and len(charges[0][1]) == 10 and min(charges[0][1]) > 0, charges


def test_psycopg3_join_with_public_table_and_parameters():
    """A join with a public table, grouped by a public column, with server-side bound values: each
    execution is analysed with its values and the public rows of that moment, and its scales are the
    ones dx.explain reports for the literal query. Values for which no (declared value, public row)
    pair passes WHERE leave the GROUP BY without a group: refused at that execution, nothing charged."""
    template = ("SELECT z.city, count(*) FROM people p LEFT JOIN zips z ON z.zip = p.zip AND z.city <> %s "
                "WHERE p.age >= %s GROUP BY z.city ORDER BY z.city")
    values = [("Gotham", 0), ("Avalon", 40), ("Gotham", 120)]
    with attack_db() as (db, admin):
        execute(admin, "SELECT dx.set_public('zips')")
        conn2 = analyst_conn(db)
        try:
            want = [scalar(conn2, "SELECT array_agg(noise_scale ORDER BY cell) FROM dx.explain(%s)",
                           (template % (f"'{c}'", a),)) for c, a in values]
        finally:
            conn2.close()
        before = last_id(admin)
        with psycopg3_conn(db) as conn:
            answers = [conn.execute(template, v).fetchall() for v in values]
            try:
                conn.execute(template, ("Gotham", 121)).fetchall()
                raise AssertionError("age >= 121 (no declared age) was answered")
            except psycopg.errors.FeatureNotSupported as e:
                assert "no group" in str(e), e
        charges = ledger_since(admin, before)
        assert len(charges) == len(values), f"{len(charges)} charges for {len(values)} answered executions"
        assert [list(sc) for _, sc in charges] == [list(w) for w in want], f"scales {charges}, explain {want}"
        # nine cities and the NULL group (the excluded city's zip joins no row)
        assert all(len(rows) == 10 for rows in answers), [len(rows) for rows in answers]
        print(f"  psycopg 3 join: {len(values)} executions, largest scales {[max(w) for w in want]}")
