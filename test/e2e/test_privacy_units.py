"""Privacy units end to end (README "Privacy units"): a visits table of 10^5 rows with heavy-tailed
rows per person. Bounded answers equal a SQL reference of the same rule (under the test seed, which
fixes the per-execution rank key); removing a person with 500 visits moves no answer by more than the
contribution bound; noise and ledger are unit-level; and analysts cannot read the key, see per-person
row counts, reshape the unit or skip the bounding."""
import os

import psycopg2

from e2e_common import connect, execute, fresh_db, scalar

ANALYST = f"pu_analyst_{os.getpid()}"
K, G, KG = 5, 2, 3  # max rows per person; max wards per person and rows per ward (recorded, not applied)
WARDS = ["a", "b", "c", "d", "e"]
SEED = 4242  # dxpriv.test_seed (superuser): the rank key of every execution derives from it


def make_visits(conn, table):
    """~1e5 visits: person p has min(500, 1 + 9600 // (p + 9)) visits (person 1: 500)."""
    execute(conn, f"SET dxpriv.test_seed = {SEED}")
    execute(conn, f"CREATE TABLE {table} (person int NOT NULL, ward text, age int, cost int, note text)")
    execute(conn, f"""INSERT INTO {table}
        SELECT p, (ARRAY{WARDS})[1 + (p * 7 + i * 3) % 5], (p * 13 + i * 7) % 101, (p * 31 + i * 17) % 1001, 'x'
        FROM generate_series(1, 40000) p, generate_series(1, least(500, 1 + 9600 / (p + 9))) i""")
    execute(conn, f"SELECT dx.protect_table('{table}', 'Infinity')")
    execute(conn, f"""SELECT dx.set_column('{table}', 'ward', '{{"values": {str(WARDS).replace("'", '"')}}}', '{{"type": "none"}}')""")
    execute(conn, f"""SELECT dx.set_column('{table}', 'age', '{{"min": 0, "max": 100}}', '{{"type": "none"}}')""")
    execute(conn, f"""SELECT dx.set_column('{table}', 'cost', '{{"min": 0, "max": 1000}}', '{{"type": "none"}}')""")
    execute(conn, f"SELECT dx.set_privacy_unit('{table}', 'person', {K}, {G}, {KG})")
    execute(conn, f"SELECT dx.grant_budget('postgres', '{table}', 1000)")


def fetch(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def reference_ungrouped(conn, table):
    """count(*), sum(cost), people with a visit at age >= 50, after keeping K rows per person."""
    return fetch(conn, f"""
        WITH r AS (SELECT v.*, row_number() OVER (PARTITION BY person
                     ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r FROM {table} v)
        SELECT count(*), sum(cost)::float8, count(DISTINCT person) FILTER (WHERE age >= 50) FROM r WHERE r <= {K}""")[0]


def reference_grouped(conn, table):
    """Per ward: count, sum(cost), people, after keeping K rows per person (G and KG not applied)."""
    return fetch(conn, f"""
        WITH t AS (SELECT v.*, row_number() OVER (PARTITION BY person
                     ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r FROM {table} v)
        SELECT ward, count(*), sum(cost)::float8, count(DISTINCT person) FROM t WHERE r <= {K}
        GROUP BY ward ORDER BY ward""")


DX_UNGROUPED = "SELECT dx.count(*), dx.sum(cost), dx.count_units(person) FILTER (WHERE age >= 50) FROM {t}"
DX_GROUPED = "SELECT ward, dx.count(*), dx.sum(cost), dx.count_units(person) FROM {t} GROUP BY ward ORDER BY ward"


def test_bounded_answers_equal_the_sql_reference_and_a_heavy_person_moves_them_within_the_bound():
    with fresh_db() as db:
        conn = connect(db)
        make_visits(conn, "visits")
        rows = scalar(conn, "SELECT count(*) FROM visits")
        assert 95000 <= rows <= 115000, rows
        assert scalar(conn, "SELECT count(*) FROM visits WHERE person = 1") == 500
        answers = {}
        for state in ("with_1", "without_1"):
            if state == "without_1":  # the neighbour: person 1 removed, every other row in its place
                execute(conn, "DELETE FROM visits WHERE person = 1")
            got = fetch(conn, DX_UNGROUPED.format(t="visits"))[0]
            assert tuple(got) == tuple(reference_ungrouped(conn, "visits")), (state, got)
            got_g = fetch(conn, DX_GROUPED.format(t="visits"))
            assert [tuple(r) for r in got_g] == [tuple(r) for r in reference_grouped(conn, "visits")], state
            answers[state] = (got, got_g)
        # the bound at work: without it person 1 alone would move count(*) by 500
        with_1, g_with = answers["with_1"]
        without_1, g_without = answers["without_1"]
        assert with_1[0] - without_1[0] == K
        assert 0 <= with_1[1] - without_1[1] <= K * 1000
        assert 0 <= with_1[2] - without_1[2] <= 1
        d_count = [a[1] - b[1] for a, b in zip(g_with, g_without)]
        d_units = [a[3] - b[3] for a, b in zip(g_with, g_without)]
        assert all(0 <= d <= K for d in d_count) and sum(d_count) == K, d_count
        assert all(0 <= d <= 1 for d in d_units) and sum(d_units) <= K, d_units
        # every person moves the ungrouped count by at most K (the heaviest ten, on the bounded rows)
        per_person = fetch(conn, f"""
            SELECT max(n) FROM (SELECT person, count(*) AS n FROM (
                SELECT person, row_number() OVER (PARTITION BY person
                    ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r FROM visits v) x
              WHERE r <= {K} GROUP BY person) y""")[0][0]
        assert per_person == K
        conn.close()


def test_noise_is_calibrated_to_the_unit_and_the_ledger_records_it():
    with fresh_db() as db:
        conn = connect(db)
        make_visits(conn, "visits")
        execute(conn, "SELECT dx.protect_table('visits', 1.0)")
        execute(conn, """SELECT dx.set_column('visits', 'ward', '{"values": ["a","b","c","d","e"]}', '{"type": "discrete"}')""")
        # one count at eps 0.5: a person is K rows -> scale K / 0.5
        assert abs(scalar(conn, "SELECT noise_scale FROM dx.explain('SELECT dx.count(1, 0.5) FROM visits')") - 2 * K) < 1e-9
        # sum(cost) over 0..1000: K * 1000 / eps
        assert abs(scalar(conn, "SELECT noise_scale FROM dx.explain('SELECT dx.sum(cost, 0.5) FROM visits')") - 2 * K * 1000) < 1e-6
        # count_units: a person is one unit -> 1 / eps, whatever K
        assert abs(scalar(conn, "SELECT noise_scale FROM dx.explain('SELECT dx.count_units(person, 0.5) FROM visits')") - 2) < 1e-9
        # grouped counts: K = 5 rows in one ward (G and KG are not applied)
        scales = [r[0] for r in fetch(conn, "SELECT noise_scale FROM dx.explain('SELECT ward, dx.count(1, 1.0) FROM visits GROUP BY ward') WHERE cell IS NOT NULL")]
        assert len(scales) == 5 and all(abs(s - 5.0) < 1e-6 for s in scales), scales
        execute(conn, "SELECT dx.count(*) FROM visits")
        mech, eps, sc = fetch(conn, "SELECT mechanism, epsilon, scales FROM dx.ledger ORDER BY id DESC LIMIT 1")[0]
        assert mech == f"discrete_laplace per unit person ({K} rows)", mech
        assert abs(sc[0] - K / 0.1) < 1e-9 and abs(eps - 0.1) < 1e-12
        # a statistical check of the released count: mean error ~ 0, mean |error| ~ scale
        exact = fetch(conn, "SELECT count(*) FROM (SELECT row_number() OVER (PARTITION BY person ORDER BY "
                            "dx._unit_rank(v.tableoid, v.ctid)) r FROM visits v) x WHERE r <= 5")[0][0]
        errors = [scalar(conn, "SELECT dx.count(1, 2.0) FROM visits") - exact for _ in range(300)]
        scale = K / 2.0
        mean_abs = sum(abs(e) for e in errors) / len(errors)
        assert abs(sum(errors) / len(errors)) < 5 * scale * 1.5 / len(errors) ** 0.5, errors[:20]
        assert 0.75 * scale < mean_abs < 1.3 * scale, mean_abs
        conn.close()


def refused(conn, sql, code=None):
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
            cur.fetchall()
    except psycopg2.Error as e:
        assert code is None or e.pgcode == code, (sql, e.pgcode, e.pgerror)
        return e.pgerror
    raise AssertionError(f"not refused: {sql}")


def test_analyst_attacks_on_the_unit():
    with fresh_db() as db:
        admin = connect(db)
        make_visits(admin, "visits")
        execute(admin, f"""DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ANALYST}')
                            THEN CREATE ROLE {ANALYST} LOGIN; END IF; END $$""")
        execute(admin, f"SELECT dx.add_analyst('{ANALYST}')")
        execute(admin, f"SELECT dx.grant_budget('{ANALYST}', 'visits', 1000)")
        execute(admin, "CREATE TABLE wards (ward text, name text)")
        execute(admin, "INSERT INTO wards SELECT w, upper(w) FROM unnest(ARRAY['a','b','c','d','e']) w")
        execute(admin, "SELECT dx.set_public('wards')")
        execute(admin, f"GRANT SELECT ON wards TO {ANALYST}")
        execute(admin, "CREATE VIEW visit_view AS SELECT * FROM visits")
        execute(admin, f"GRANT SELECT ON visit_view TO {ANALYST}")
        key_hex = scalar(admin, "SELECT encode(hash_key, 'hex') FROM dx.privacy_units")
        bounded = reference_ungrouped(admin, "visits")
        people = scalar(admin, "SELECT count(DISTINCT person) FROM visits")
        raw = scalar(admin, "SELECT count(*) FROM visits")
        try:
            a = connect(db, user=ANALYST)
            # the key: catalog, key generator, dx.explain, error texts
            refused(a, "SELECT * FROM dx.privacy_units", "42501")
            refused(a, "SELECT hash_key FROM dx.privacy_units", "42501")
            refused(a, "SELECT dx._unit_key()", "42501")
            text = str(fetch(a, "SELECT * FROM dx.explain('SELECT count(*) FROM visits')"))
            assert key_hex not in text and "person: 5 rows per unit" in text
            refused(a, "EXPLAIN SELECT count(*) FROM visits", "42501")
            # per-person row counts: the unit column is no declared column
            for sql in ["SELECT count(*) FROM visits WHERE person = 1",
                        "SELECT person, count(*) FROM visits GROUP BY person",
                        "SELECT count(*) FROM visits GROUP BY person % 2",
                        "SELECT count(*) FILTER (WHERE person = 1) FROM visits",
                        "SELECT dx.linear(CASE WHEN person = 1 THEN 1 ELSE 0 END) FROM visits",
                        "SELECT sum(person) FROM visits",
                        "SELECT count(person) FROM visits WHERE age > 0 AND person IN (1, 2)"]:
                refused(a, sql)
            # reshaping the unit, or COUNT(DISTINCT) of other columns
            for sql in ["SELECT count(DISTINCT person % 2) FROM visits",
                        "SELECT count(DISTINCT person::text) FROM visits",
                        "SELECT count(DISTINCT coalesce(person, 0)) FROM visits",
                        "SELECT count(DISTINCT (person, ward)) FROM visits",
                        "SELECT count(DISTINCT ward) FROM visits",
                        "SELECT count(DISTINCT age) FROM visits",
                        "SELECT dx.count_units(ward) FROM visits",
                        "SELECT dx.count_units(person + 0) FROM visits",
                        "SELECT sum(DISTINCT cost) FROM visits"]:
                refused(a, sql)
            # skipping the bounding: subqueries, CTEs, joins, views, prepared statements
            assert scalar(a, "SELECT count(*) FROM visits") == bounded[0] != raw
            assert scalar(a, "SELECT count(*) FROM (SELECT * FROM visits) s") == bounded[0]
            assert scalar(a, "SELECT count(*) FROM (SELECT * FROM visits WHERE age >= 0) AS anon_1") == bounded[0]
            assert scalar(a, "SELECT n FROM (SELECT count(*) AS n FROM visits) s") == bounded[0]
            assert scalar(a, "SELECT count(DISTINCT person) FROM visits") == people
            for sql in ["WITH s AS (SELECT * FROM visits) SELECT count(*) FROM s",
                        "SELECT count(*) FROM (SELECT * FROM visits LIMIT 1000000) s",
                        "SELECT count(*) FROM (SELECT DISTINCT * FROM visits) s",
                        "SELECT count(*) FROM visits v JOIN wards w ON w.ward = v.ward",
                        "SELECT count(*) FROM visits v1 JOIN visits v2 USING (person)",
                        "SELECT count(*) FROM visit_view",
                        "SELECT count(*) FROM (SELECT person FROM visits GROUP BY person) s",
                        "SELECT count(*) FROM visits GROUP BY ROLLUP (ward)",
                        "SELECT dx.mode(ward) FROM visits",
                        "SELECT count(*) OVER () FROM visits"]:
                refused(a, sql)
            execute(a, "PREPARE p(int) AS SELECT count(*) FROM visits WHERE age >= $1")
            assert scalar(a, "EXECUTE p(0)") == bounded[0]
            execute(a, "SET dxpriv.noise = 'gaussian'")
            refused(a, "SELECT count(*) FROM visits")
            a.close()
        finally:
            execute(admin, f"SELECT dx.remove_analyst('{ANALYST}')")
            execute(admin, f"DROP OWNED BY {ANALYST}")
            admin.close()
