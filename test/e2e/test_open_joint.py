"""Open GROUP BY keys, joint releases (issue 26, openjoint), statistical checks with the seed off.

* test_count_units_noise_scale: dx.count_units beside an open key on a table with a privacy unit
  (k = 3, p0' = 1/2): dx.explain's noise scale is k' / (eps p0') = 6 at eps = 1, the same as
  dx.count(*)'s, and the empirical spread of 300 released distinct counts of a 400-person city
  matches the Laplace of that scale (sd = sqrt(2) b); a unit spread over 60 cities of its own is
  never released.
* test_rollup_one_person_keys_at_delta_bound: ROLLUP (city, ward) over 1000 cities of one row each
  and 4 big cities: the two sets with the open key each keep a one-row key at delta_p = delta / (2m)
  (m = 2: 2.5e-4 at delta 1e-3; 5e-4 under the former per-set release), within 5 binomial standard
  errors; the rate at which ANY set releases a one-row key stays below delta / 2; the big cities
  are released in both sets; the grand total and one ledger row per statement (epsilon 2, delta once).
"""
import math

from attack_fixture import ANALYST, analyst_conn, attack_db
from e2e_common import execute, scalar


def rows_of(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def test_count_units_noise_scale():
    with attack_db() as (db, admin):
        execute(admin, """CREATE TABLE cu (person int, city text, fare int);
            INSERT INTO cu SELECT p, 'big', t FROM generate_series(1, 400) AS p, generate_series(1, 3) AS t;
            INSERT INTO cu SELECT 5000, 'spread' || i, 1 FROM generate_series(1, 60) AS i;
            SELECT dx.protect_table('cu', 1.0);
            SELECT dx.set_column('cu', 'fare', '{"min": 0, "max": 9}', '{"type": "discrete"}');
            SELECT dx.set_column('cu', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
            SELECT dx.set_delta('cu', 1e-9);
            SELECT dx.set_privacy_unit('cu', 'person', 3);""")
        execute(admin, f"SELECT dx.grant_budget('{ANALYST}', 'cu', 1e9, delta => 1)")
        execute(admin, f"GRANT SELECT ON cu TO {ANALYST}")
        execute(admin, f"ALTER DATABASE {db} SET dxpriv.cache_lifetime = 0")  # every release drawn anew
        conn = analyst_conn(db)
        execute(conn, "SET dxpriv.epsilon = 1")
        sql = "SELECT city, dx.count_units(person) FROM cu GROUP BY city"
        scale = float(scalar(conn, f"SELECT noise_scale FROM dx.explain('{sql}') WHERE kind = 'count_units'"))
        assert abs(scale - 3 / (1 * 0.5)) < 1e-6, scale
        both = rows_of(conn, "SELECT kind, noise_scale * epsilon FROM dx.explain('SELECT city, dx.count(*), "
                             "dx.count_units(person) FROM cu GROUP BY city') WHERE kind <> 'selection'")
        assert len(both) == 2 and all(abs(float(p) - 6) < 1e-6 for _k, p in both), both
        errors, spread = [], 0
        for _ in range(300):
            rows = rows_of(conn, sql)
            spread += sum(1 for (c, _u) in rows if c.startswith("spread"))
            errors += [float(u) - 400 for (c, u) in rows if c == "big"]
        assert spread == 0, spread
        assert len(errors) == 300, len(errors)
        mean = sum(errors) / len(errors)
        sd = math.sqrt(sum(e * e for e in errors) / len(errors))
        assert abs(mean) < 5 * math.sqrt(2) * scale / math.sqrt(len(errors)), mean
        assert 0.8 * math.sqrt(2) * scale < sd < 1.25 * math.sqrt(2) * scale, (sd, scale)
        print(f"  count_units: scale {scale:g}, empirical sd {sd:.2f} vs Laplace {math.sqrt(2) * scale:.2f}, "
              f"mean error {mean:.2f}; spreader's cities released 0 of {300 * 60}")


def test_rollup_one_person_keys_at_delta_bound():
    with attack_db() as (db, admin):
        execute(admin, """CREATE TABLE rk (city text, ward text, v int);
            INSERT INTO rk SELECT 'solo' || i, (ARRAY['A','B'])[1 + i % 2], i % 10 FROM generate_series(1, 1000) AS i;
            INSERT INTO rk SELECT 'big' || (1 + i % 4), (ARRAY['A','B'])[1 + (i / 4) % 2], i % 10 FROM generate_series(1, 800) AS i;
            SELECT dx.protect_table('rk', 1.0);
            SELECT dx.set_column('rk', 'ward', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 1}');
            SELECT dx.set_column('rk', 'v', '{"min": 0, "max": 9}', '{"type": "discrete"}');
            SELECT dx.set_column('rk', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}');
            SELECT dx.set_delta('rk', 1e-3);""")
        execute(admin, f"SELECT dx.grant_budget('{ANALYST}', 'rk', 1e9, delta => 1)")
        execute(admin, f"GRANT SELECT ON rk TO {ANALYST}")
        execute(admin, f"ALTER DATABASE {db} SET dxpriv.cache_lifetime = 0")  # every release drawn anew
        conn = analyst_conn(db)
        execute(conn, "SET dxpriv.epsilon = 1")
        sql = "SELECT city, ward, GROUPING(city, ward) AS g, dx.count(*) FROM rk GROUP BY ROLLUP (city, ward)"
        sel = rows_of(conn, f"SELECT component, query_epsilon, query_delta FROM dx.explain('{sql}') "
                            "WHERE kind = 'selection'")
        assert len(sel) == 2 and all("delta=0.00025" in c for c, _e, _d in sel), sel
        assert all(abs(float(e) - 2) < 1e-9 and abs(float(d) - 1e-3) < 1e-15 for _c, e, d in sel), sel
        releases = 200
        last = scalar(admin, "SELECT coalesce(max(id), 0) FROM dx.ledger")
        by_set = {0: 0, 1: 0}
        any_set = 0
        big = {0: 0, 1: 0}
        totals = 0
        for _ in range(releases):
            rows = rows_of(conn, sql)
            solo = set()
            for city, _ward, g, _n in rows:
                if city is not None and city.startswith("solo"):
                    by_set[g] += 1
                    solo.add(city)
                elif city is not None:
                    big[g] += 1
                else:
                    totals += 1
            any_set += len(solo)
        trials = releases * 1000
        delta_p = 1e-3 / 4
        for g, n in by_set.items():  # a one-row key lies in one (city, ward) partition and one (city)
            sd = math.sqrt(trials * delta_p * (1 - delta_p))
            assert n <= trials * delta_p + 5 * sd, (g, n)
            assert abs(n - trials * delta_p) <= 5 * sd, (g, n, trials * delta_p)
        assert any_set <= trials * 2 * delta_p + 5 * math.sqrt(trials * 2 * delta_p), any_set
        # the big cities: 4 keys x 2 wards in (city, ward), 4 in (city); the grand total always
        assert big[0] == releases * 8 and big[1] == releases * 4, big
        assert totals == releases, totals
        charged = rows_of(admin, f"SELECT epsilon, delta FROM dx.ledger WHERE id > {last} AND relid = 'rk'::regclass")
        assert len(charged) == releases, len(charged)
        assert all(abs(float(e) - 2) < 1e-9 and abs(float(d) - 1e-3) < 1e-15 for e, d in charged), charged[:3]
        print(f"  rollup: one-row keys released {by_set[0]} (city, ward) and {by_set[1]} (city) of {trials} "
              f"(expected {trials * delta_p:.0f} each at delta_p {delta_p:g}), by any set {any_set} "
              f"(bound {trials * 2 * delta_p:.0f})")
