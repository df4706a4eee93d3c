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


def create_analyst(admin):
    """The analyst role (cluster-wide: created once)."""
    execute(admin, f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ANALYST}') THEN
            CREATE ROLE {ANALYST} LOGIN;
        END IF; END $$""")


def analyst_session(admin, name):
    """Makes the role an analyst of database `name`, yields (admin, analyst, name), closes both."""
    execute(admin, f"SELECT dx.add_analyst('{ANALYST}')")
    analyst = connect(name, user=ANALYST)
    try:
        yield admin, analyst, name
    finally:
        analyst.close()
        admin.close()


@contextlib.contextmanager
def attribute_db(attr_budget=2.0, dx_budget=10.0, record_privacy=True):
    """A fresh database with a protected `staff` table under an attribute policy and an analyst."""
    with fresh_db() as name:
        admin = connect(name)
        create_analyst(admin)
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
        execute(admin, f"SELECT dx.grant_budget('{ANALYST}', 'staff', %s)", (dx_budget,))
        execute(admin, f"SELECT dx.grant_attribute_budget('{ANALYST}', 'staff', %s, 1e-3)", (attr_budget,))
        yield from analyst_session(admin, name)


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


# ---- Markov quilt (bayesian_network) and Wasserstein (binary_conditional) table releases ----

NETWORK = ('{"family": "bayesian_network", "attributes": ["sat", "height", "weight", "gender", "income"], '
           '"edges": [["income", "sat"], ["gender", "sat"], ["gender", "height"], ["gender", "weight"], '
           '["height", "weight"]], "influences": {"gender": 0.3, "gender,sat": [[0.5, 0.5], [0.4, 0.6]]}}')
NET_EPS = 1.0
BINARY = ('{"family": "binary_conditional", "released": "passed", "p1": [0.4, 0.6], "p2": [0.4, 0.6], '
          '"grid": 0.05}')
BIN_EPS = 0.5


@contextlib.contextmanager
def network_db(attr_budget=1000.0):
    """students (Example 1 as a table, 500 rows) under a network policy on income, and exam (the
    seed's Example 2: 4 rows) under a binary conditional policy on female; no record privacy."""
    with fresh_db() as name:
        admin = connect(name)
        create_analyst(admin)
        execute(admin, "CREATE TABLE students (id int PRIMARY KEY, sat int, height int, weight int, gender int, income int)")
        execute(admin, """INSERT INTO students SELECT i, 400 + (i * 37) % 1200, 150 + (i * 13) % 50, 50 + (i * 7) % 50,
                          i % 2, (i * 11) % 10 FROM generate_series(1, 500) AS i""")
        execute(admin, "SELECT dx.protect_table('students', 'Infinity')")
        for col, dom in [("sat", '{"min": 200, "max": 1600}'), ("height", '{"min": 140, "max": 210}'),
                         ("income", '{"min": 0, "max": 10}')]:
            execute(admin, "SELECT dx.set_column('students', %s, %s, '{\"type\": \"absolute\", \"scale\": 5}')", (col, dom))
        execute(admin, "SELECT dx.protect_attribute('students', 'income', 0.2, %s, epsilon => %s, record_privacy => false)",
                (NETWORK, NET_EPS))
        execute(admin, "CREATE TABLE exam (id int PRIMARY KEY, passed int, female int)")
        execute(admin, "INSERT INTO exam VALUES (1, 1, 1), (2, 0, 1), (3, 1, 0), (4, 1, 0)")
        execute(admin, "SELECT dx.protect_table('exam', 'Infinity')")
        for col in ["passed", "female"]:
            execute(admin, """SELECT dx.set_column('exam', %s, '{"min": 0, "max": 1, "step": 1}',
                              '{"type": "absolute", "scale": 1}')""", (col,))
        execute(admin, "SELECT dx.protect_attribute('exam', 'female', 1.0, %s, epsilon => %s, record_privacy => false)",
                (BINARY, BIN_EPS))
        for table in ["students", "exam"]:
            execute(admin, f"SELECT dx.grant_attribute_budget('{ANALYST}', '{table}', %s, 1e-3)", (attr_budget,))
        yield from analyst_session(admin, name)


def spent_on(admin, table):
    return scalar(admin, f"SELECT attr_spent FROM dx.budgets WHERE role = '{ANALYST}'::regrole "
                         f"AND \"table\" = '{table}'::regclass")


def test_network_and_wasserstein_models_stay_with_the_owner():
    with network_db() as (admin, analyst, _):
        expect_error(analyst, "SELECT influences, quilts, theta FROM dx.attribute_policies", "42501")
        expect_error(analyst, "SELECT dx._max_influence(2, '{0.5, 0.5, 0.4, 0.6}')", "42501")
        expect_error(analyst, "SELECT dx._check_network_model('students', 'income', '{sat,income}', '{}', '{}', '{}')",
                     "42501")
        expect_error(analyst, "SELECT dx._check_binary_model('exam', '{passed,female}', '{0,1,0,1,0.1}')", "42501")
        expect_error(analyst, "SELECT dx.protect_attribute('students', 'income', 0.2, %s, epsilon => 100)", "42501",
                     (NETWORK,))
        # the analyst sees the consequences: the quilt used and the scale, not the declared influences
        rows = scalar(analyst, """SELECT array_agg(component || ':' || quilt || ':' || scale)
                                  FROM dx.explain_attribute('students', 'sat')""")
        assert rows == ["markov_quilt:{sat, gender}; nearby {income}:0"], rows
        assert scalar(analyst, "SELECT scale FROM dx.explain_attribute('exam', 'passed', 'sum')") == 1 / BIN_EPS
        assert spent_on(admin, "students") == 0 and spent_on(admin, "exam") == 0


def test_network_releases_are_charged_even_without_noise_and_cannot_be_refunded():
    with network_db(attr_budget=2.5) as (admin, analyst, _):
        exact = scalar(admin, "SELECT avg(height) FROM students")
        # height is outside the nearby set of the quilt {gender}: exact, but still charged epsilon
        assert scalar(analyst, "SELECT dx.attr_avg('students', 'height')") == exact
        assert spent_on(admin, "students") == NET_EPS
        analyst.autocommit = False
        with analyst.cursor() as cur:
            cur.execute("SELECT dx.attr_avg('students', 'income')")
            cur.fetchall()
        analyst.rollback()
        analyst.autocommit = True
        assert spent_on(admin, "students") == 2 * NET_EPS
        # budget 2.5: the third release is refused and nothing more is spent
        e = expect_error(analyst, "SELECT dx.attr_sum('students', 'sat')", "53000")
        assert "attribute-privacy budget" in e.pgerror
        assert spent_on(admin, "students") == 2 * NET_EPS
        assert scalar(admin, f"""SELECT array_agg(mechanism ORDER BY id) FROM dx.ledger
                                 WHERE role = '{ANALYST}'::regrole AND relid = 'students'::regclass""") == \
            ["markov_quilt(exact)", "markov_quilt(laplace)"]


def test_wasserstein_refusals_charge_nothing():
    with network_db() as (admin, analyst, _):
        # columns outside the declared model, and models too large to compute, are refused uncharged
        expect_error(analyst, "SELECT dx.attr_sum('exam', 'id')", "22023")
        execute(admin, "CREATE TABLE big01 (id int PRIMARY KEY, passed int, female int)")
        execute(admin, "INSERT INTO big01 SELECT i, i % 2, (i / 2) % 2 FROM generate_series(1, 3000) AS i")
        execute(admin, "SELECT dx.protect_table('big01', 'Infinity')")
        execute(admin, """SELECT dx.set_column('big01', 'passed', '{"min": 0, "max": 1, "step": 1}',
                          '{"type": "absolute", "scale": 1}')""")
        execute(admin, "SELECT dx.protect_attribute('big01', 'female', 0.1, %s, record_privacy => false)", (BINARY,))
        execute(admin, f"SELECT dx.grant_attribute_budget('{ANALYST}', 'big01', 10, 1e-3)")
        expect_error(analyst, "SELECT dx.attr_sum('big01', 'passed')", "54000")
        expect_error(analyst, "SELECT dx.attr_sum(passed) FROM big01", "54000")
        assert spent_on(admin, "big01") == 0
        assert spent_on(admin, "exam") == 0


def sample_moments(analyst, sql, count):
    with analyst.cursor() as cur:
        values = []
        for _ in range(count):
            cur.execute(sql)
            values.append(cur.fetchone()[0])
    mean = sum(values) / count
    var = sum((v - mean) ** 2 for v in values) / (count - 1)
    return mean, var


def test_laplace_noise_scales_are_statistically_right():
    """400 releases each (secure randomness, no test seed): the sample variance of Laplace noise of
    scale b is 2 b^2 with standard error b^2 sqrt(20 / 400) (fourth moment 24 b^4); accepted within 4
    standard errors, which rejects half or double the scale and zero noise."""
    count = 400
    with network_db() as (admin, analyst, _):
        assert scalar(analyst, "SHOW dxpriv.test_seed") in ("-1", "")
        cases = [
            # Markov quilt, trivial bound for income itself: mean (10 - 0) / 1
            ("SELECT dx.attr_avg('students', 'income')", "SELECT avg(income) FROM students", 10.0 / NET_EPS),
            # Wasserstein, Example 2 with Theta = [0.4, 0.6]^2: W = 1, sum scale 1 / 0.5
            ("SELECT dx.attr_sum('exam', 'passed')", "SELECT sum(passed) FROM exam", 1.0 / BIN_EPS),
            # Markov quilt count on income itself (always nearby): Delta F = n = 500, scale 500 / 1
            ("SELECT dx.attr_count('students', 'income > 5')", "SELECT count(*) FROM students WHERE income > 5",
             500.0 / NET_EPS),
        ]
        for release, exact_sql, b in cases:
            exact = float(scalar(admin, exact_sql))
            mean, var = sample_moments(analyst, release, count)
            se_var = b * b * (20.0 / count) ** 0.5
            assert abs(var - 2 * b * b) < 4 * se_var, (release, var, 2 * b * b)
            assert abs(mean - exact) < 4 * (2 * b * b / count) ** 0.5, (release, mean, exact)
        assert spent_on(admin, "students") == 2 * count * NET_EPS
        assert spent_on(admin, "exam") == count * BIN_EPS


def test_mixed_families_and_approximation_charge_their_sum():
    with network_db() as (admin, analyst, _):
        # a gaussian policy on gender beside the network's income, declared only approximately
        # Gaussian: each release spends 1.0 (network) + 0.5 + 2 * 0.1 (Theorem 3)
        execute(admin, """SELECT dx.protect_attribute('students', 'gender', 0.2,
            '{"family": "gaussian", "attributes": ["height", "gender", "income"],
              "covariance": [[100, 1, 0], [1, 0.25, 0], [0, 0, 8]], "approximation": {"lambda": 0.1, "eta": 1e-6}}',
            epsilon => 0.5, delta => 1e-5, record_privacy => false)""")
        rows = scalar(analyst, "SELECT array_agg(component ORDER BY component) FROM dx.explain_attribute('students', 'height')")
        assert rows == ["apgm", "markov_quilt"], rows
        scalar(analyst, "SELECT dx.attr_avg('students', 'height')")
        assert abs(spent_on(admin, "students") - 1.7) < 1e-12
        delta = scalar(admin, f"SELECT attr_delta_spent FROM dx.budgets WHERE role = '{ANALYST}'::regrole "
                              "AND \"table\" = 'students'::regclass")
        assert abs(delta - (2.718281828459045 ** 0.1 * 1e-5 + 1e-6)) < 1e-15
        # sat is in the network but not in the gaussian model: refused, uncharged
        expect_error(analyst, "SELECT dx.attr_avg('students', 'sat')", "22023")
        assert abs(spent_on(admin, "students") - 1.7) < 1e-12


def test_count_conditions_run_on_declared_points_never_on_rows():
    """dx.attr_count's condition is evaluated on the declared domain points: an error at a point no
    row holds is raised anyway (before any charge), injected SQL is refused, and the released count
    of a condition outside the nearby set is the exact count, charged once."""
    with network_db(attr_budget=3.0) as (admin, analyst, _):
        # no student is 140 cm tall (heights 150..199), but 140 is a declared point
        assert scalar(admin, "SELECT count(*) FROM students WHERE height = 140") == 0
        expect_error(analyst, "SELECT dx.attr_count('students', '1 / (height - 140) > 0')", "22012")
        for condition, code in [
                ("height > 168) FROM students WHERE (id = 7", "42601"),
                ("true) FROM pg_authid --", "22023"),
                ("height IN (SELECT height FROM students WHERE id = 7)", "22023"),
                ("id = 7", "42501"),                      # undeclared column
                ("weight > 60", "42501"),                 # in the network, not declared on this table
                ("pg_read_file('/etc/passwd') IS NULL", "0A000"),
                ("count(*) > 0", "22023")]:
            expect_error(analyst, "SELECT dx.attr_count('students', %s)", code, (condition,))
        expect_error(analyst, "SELECT dx.attr_count('exam', 'passed = 1')", "0A000")  # a binary_conditional model
        assert spent_on(admin, "students") == 0 and attr_ledger_rows(admin) == 0
        exact = scalar(admin, "SELECT count(*) FROM students WHERE height > 168")
        assert scalar(analyst, "SELECT dx.attr_count('students', 'height > 168')") == exact
        assert spent_on(admin, "students") == NET_EPS
        # explain is free and shows the quilt that makes it exact
        assert scalar(analyst, """SELECT noise_scale FROM dx.explain('SELECT dx.attr_count(''students'', ''height > 168'')')""") == 0
        assert spent_on(admin, "students") == NET_EPS
