"""Attribute privacy as an analyst (issue 15): dx.attr_avg / dx.attr_sum are charged to the
attribute-privacy budget durably before the answer leaves (ROLLBACK, an error later in the
statement and concurrent sessions never refund or overspend), cannot be pointed at undeclared
columns, expressions or tables without a policy, cannot be paid from the d_X budget, and the
declared model stays with the owner (the analyst sees only its consequences, dx.explain_attribute).
"""
import contextlib

import psycopg2

from e2e_common import connect, execute, fresh_db, race, scalar

ANALYST = "attr_e2e_analyst"
ATTR_EPS = 0.5  # per release (the policy's epsilon)
MODEL = ('{"family": "gaussian", "attributes": ["salary", "female", "age"], '
         '"covariance": [[400, 5, 10], [5, 0.25, 0.01], [10, 0.01, 150]]}')


@contextlib.contextmanager
def attribute_db(attr_budget=2.0, dx_budget=10.0, record_privacy=True):
    """A fresh database with a protected `staff` table under an attribute policy and an analyst."""
    with fresh_db() as name:
        admin = connect(name)
        execute(admin, f"""DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ANALYST}') THEN
                CREATE ROLE {ANALYST} LOGIN;
            END IF; END $$""")
        execute(admin, """CREATE TABLE staff (id int PRIMARY KEY, salary float8, female int, age int, note text)""")
        execute(admin, """INSERT INTO staff SELECT i, 40 + (i * 37) % 60 + 5 * (i % 2), i % 2, 20 + (i * 13) % 45,
                          'n' || i FROM generate_series(1, 1000) AS i""")
        execute(admin, "SELECT dx.protect_table('staff', 'Infinity')")
        execute(admin, """SELECT dx.set_column('staff', 'salary', '{"min": 0, "max": 200}',
                          '{"type": "absolute", "scale": 10}')""")
        execute(admin, """SELECT dx.set_column('staff', 'age', '{"min": 18, "max": 70}',
                          '{"type": "absolute", "scale": 5}')""")
        execute(admin, "SELECT dx.protect_attribute('staff', 'female', 0.2, %s, epsilon => %s, record_privacy => %s)",
                (MODEL, ATTR_EPS, record_privacy))
        execute(admin, f"SELECT dx.add_analyst('{ANALYST}')")
        execute(admin, f"SELECT dx.grant_budget('{ANALYST}', 'staff', %s)", (dx_budget,))
        execute(admin, f"SELECT dx.grant_attribute_budget('{ANALYST}', 'staff', %s, 1e-3)", (attr_budget,))
        analyst = connect(name, user=ANALYST)
        try:
            yield admin, analyst, name
        finally:
            analyst.close()
            admin.close()


def attr_spent(admin):
    return scalar(admin, f"SELECT attr_spent FROM dx.budgets WHERE role = '{ANALYST}'::regrole")


def attr_ledger_rows(admin):
    return scalar(admin, f"SELECT count(*) FROM dx.ledger WHERE role = '{ANALYST}'::regrole AND budget = 'attribute'")


def expect_error(conn, sql, code, params=None):
    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            cur.fetchall()
    except psycopg2.Error as e:
        assert e.pgcode == code, f"{sql}: {e.pgcode} {e.pgerror}"
        if not conn.autocommit:
            conn.rollback()
        return e
    raise AssertionError(f"{sql}: no error")


def test_release_is_charged_to_the_attribute_budget():
    with attribute_db() as (admin, analyst, _):
        value = scalar(analyst, "SELECT dx.attr_avg('staff', 'salary')")
        assert 0 < value < 200  # noise sd about 28 around 72
        assert attr_spent(admin) == ATTR_EPS
        # the d_X component of record privacy is charged to the d_X budget, at dxpriv.epsilon
        assert scalar(admin, f"SELECT spent FROM dx.budgets WHERE role = '{ANALYST}'::regrole") > 0
        # the analyst sees both in her own views
        rows = scalar(analyst, "SELECT array_agg(budget ORDER BY id) FROM dx.my_ledger")
        assert rows == ["attribute", "d_x"], rows
        assert scalar(analyst, "SELECT attr_spent FROM dx.budgets") == ATTR_EPS


def test_rollback_and_later_errors_do_not_refund():
    with attribute_db() as (admin, analyst, _):
        analyst.autocommit = False
        with analyst.cursor() as cur:
            cur.execute("SELECT dx.attr_avg('staff', 'salary')")
            cur.fetchall()
        analyst.rollback()
        assert attr_spent(admin) == ATTR_EPS
        with analyst.cursor() as cur:
            cur.execute("SAVEPOINT s")
            cur.execute("SELECT dx.attr_sum('staff', 'salary')")
            cur.execute("ROLLBACK TO SAVEPOINT s")
        analyst.rollback()
        assert attr_spent(admin) == 2 * ATTR_EPS
        analyst.autocommit = True
        # an error after the release in the same statement: the charge stands
        expect_error(analyst, "SELECT dx.attr_avg('staff', 'salary'), 1 / (random() * 0)::int", "22012")
        assert attr_spent(admin) == 3 * ATTR_EPS
        assert attr_ledger_rows(admin) == 3


def test_attribute_budget_is_enforced_and_separate():
    # a large d_X budget does not pay for attribute releases
    with attribute_db(attr_budget=1.2, dx_budget=1000.0) as (admin, analyst, _):
        released = 0
        for _ in range(5):
            try:
                scalar(analyst, "SELECT dx.attr_avg('staff', 'age')")
                released += 1
            except psycopg2.Error as e:
                assert e.pgcode == "53000", e.pgerror
                assert "attribute-privacy budget" in e.pgerror
        assert released == 2
        assert attr_spent(admin) == 2 * ATTR_EPS <= 1.2
        assert attr_ledger_rows(admin) == 2
        # no grant at all on another table
        execute(admin, "CREATE TABLE other (x float8)")
        execute(admin, "SELECT dx.protect_table('other', 'Infinity')")
        execute(admin, """SELECT dx.set_column('other', 'x', '{"min": 0, "max": 10}', '{"type": "absolute", "scale": 1}')""")
        execute(admin, """SELECT dx.protect_attribute('other', 'x', 1,
                          '{"family": "gaussian", "attributes": ["x"], "covariance": [[1]]}')""")
        execute(admin, "INSERT INTO other VALUES (1), (2)")
        expect_error(analyst, "SELECT dx.attr_avg('other', 'x')", "42501")


def test_concurrent_sessions_never_overspend():
    with attribute_db(attr_budget=2.0) as (admin, analyst, name):
        results = race(name, "SELECT dx.attr_avg('staff', 'salary')", threads=4, repeats=3, user=ANALYST)
        assert results.count("ok") == 4, results  # 2.0 / 0.5
        assert set(results) <= {"ok", "53000"}, results
        assert attr_spent(admin) == 2.0
        assert attr_ledger_rows(admin) == 4


def test_no_undeclared_columns_expressions_or_rows():
    with attribute_db() as (admin, analyst, _):
        # undeclared or not in the model, expressions as names, no policy
        for col in ["note", "id", "salary + 0", "salary)", "female"]:
            expect_error(analyst, "SELECT dx.attr_avg('staff', %s)", "22023", (col,))
        expect_error(analyst, "SELECT dx.attr_avg('pg_class', 'relpages')", "22023")
        # the release function cannot be applied per row of the protected table, nor inside a dx query
        expect_error(analyst, "SELECT dx.attr_avg('staff', 'salary') FROM staff", "42501")
        expect_error(analyst, "SELECT dx.attr_avg('staff', 'salary') FROM staff LIMIT 0", "42501")
        expect_error(analyst, "SELECT dx.count(*) FROM staff WHERE dx.attr_avg('staff', 'salary') > 70", "0A000")
        # no data value appears in any refusal, and nothing was charged
        assert attr_spent(admin) == 0
        assert attr_ledger_rows(admin) == 0


def test_policy_and_model_stay_with_the_owner():
    with attribute_db() as (admin, analyst, _):
        expect_error(analyst, "SELECT * FROM dx.attribute_policies", "42501")
        expect_error(analyst, "SELECT dx.protect_attribute('staff', 'female', 100, %s)", "42501", (MODEL,))
        expect_error(analyst, "SELECT dx.unprotect_attribute('staff')", "42501")
        expect_error(analyst, f"SELECT dx.grant_attribute_budget('{ANALYST}', 'staff', 1000)", "42501")
        expect_error(analyst, "SELECT dx._parse_attribute_model('staff', %s)", "42501", (MODEL,))
        expect_error(analyst, "SELECT dx._check_gaussian_model('staff', '{salary}', '{1}', 1)", "42501")
        # what the analyst may know: the noise and what it protects, without spending
        rows = scalar(analyst, "SELECT array_agg(component || ':' || protects) FROM dx.explain_attribute('staff', 'salary')")
        assert rows == ["apgm:mean of female", "d_x laplace:rows of staff (d_X policy of salary)"], rows
        assert attr_spent(admin) == 0


def test_without_record_privacy_only_the_attribute_budget_pays():
    with attribute_db(record_privacy=False, dx_budget=0.001) as (admin, analyst, _):
        exact = scalar(admin, "SELECT avg(age) FROM staff")
        # age is nearly independent of the protected share of women: no noise is needed
        assert scalar(analyst, "SELECT dx.attr_avg('staff', 'age')") == exact
        assert attr_spent(admin) == ATTR_EPS
        assert scalar(admin, f"SELECT spent FROM dx.budgets WHERE role = '{ANALYST}'::regrole") == 0


def test_session_settings_do_not_change_the_noise():
    """The policy is read in binary and dxpriv's statements name pg_catalog objects explicitly: the
    caller's extra_float_digits or search_path cannot change the calibration or the statement."""
    with attribute_db() as (admin, analyst, _):
        # (numeric: the float8 text output itself follows extra_float_digits)
        sql = "SELECT round(noise_sd::numeric, 9) FROM dx.explain_attribute('staff', 'salary') WHERE budget = 'attribute'"
        reference = scalar(analyst, sql)
        execute(analyst, "SET extra_float_digits = -15")
        assert scalar(analyst, sql) == reference
        execute(analyst, "RESET extra_float_digits")
        # a role that may create functions shadows sum() and count() in a schema searched first
        execute(admin, "CREATE SCHEMA shadow")
        # (its "sum" is a maximum: a shadowed statement would release max/n instead of the mean)
        execute(admin, "CREATE AGGREGATE shadow.sum(float8) (SFUNC = float8larger, STYPE = float8)")
        execute(admin, "SELECT dx.protect_attribute('staff', 'female', 0.2, %s, record_privacy => false)", (MODEL,))
        execute(admin, f"GRANT USAGE ON SCHEMA shadow TO {ANALYST}")
        execute(analyst, "SET search_path = shadow, pg_catalog, public")
        exact = scalar(admin, "SELECT avg(age) FROM staff")
        assert scalar(analyst, "SELECT dx.attr_avg('staff', 'age')") == exact


def test_aggregate_spelling_as_an_analyst():
    with attribute_db(record_privacy=False) as (admin, analyst, _):
        exact = scalar(admin, "SELECT avg(age) FROM staff")
        assert scalar(analyst, "SELECT dx.attr_avg(age) FROM staff") == exact
        assert attr_spent(admin) == ATTR_EPS
        # every other shape is refused before anything is read or charged
        for sql in ["SELECT dx.attr_avg(age) FROM staff WHERE id = 5",
                    "SELECT dx.attr_avg(CASE WHEN id = 5 THEN age ELSE 0 END) FROM staff",
                    "SELECT dx.attr_avg(age) FROM staff GROUP BY note",
                    "SELECT dx.attr_avg(age), count(*) FROM staff",
                    "SELECT dx.attr_sum(age) FROM (SELECT * FROM staff WHERE id = 5) s",
                    "SELECT dx.attr_avg(staff.age) FROM staff, staff s2"]:
            expect_error(analyst, sql, "0A000")
        expect_error(analyst, "SELECT dx.attr_avg(note) FROM staff", "22023")
        assert attr_spent(admin) == ATTR_EPS
        assert attr_ledger_rows(admin) == 1
