"""End-to-end: what a statement is charged pays for the noise of what it releases (issue 21, class 2).

The planner removes aggregates a statement computes but never returns (an unused output of a
subquery, CASE WHEN false THEN <aggregate>); the cells that remain were calibrated together with the
removed ones, within the whole allocation's epsilon. For every shape below, an analyst runs the
plain SQL and the test checks, by brute force over the declared domain of the columns the released
cells read (age 0..120 with absolute metric scale 10, sex, zip; presence 1), the d_X privacy
condition of the released cells with the ledger's own numbers:

    for every edge (u, v) of the record metric:  sum_k |q_k(u) - q_k(v)| / b_k  <=  eps_charged * d(u, v)

(b_k: the ledger's scales of the released cells; the edges: one column changed, or a row added or
removed at distance 1). Then 200 releases of the issue's wrapper: their errors against the true count
have the variance of the recorded (discrete Laplace) scale, within 4 standard errors, and the answer
is not exact. Finally CUBE, plain and UNION ALL statements under forced parallel plans with the
leader not participating: answered, each charged once, listed by dx.last_release.
"""
import math
import statistics

import attack_fixture as fx
from e2e_common import execute, scalar

AGES = range(0, 121)
SEXES = ["F", "M"]
AGE_SCALE = 10.0
PRESENCE = 1.0
EPSILON = 0.1234

TEN = ", ".join(["count(*) FILTER (WHERE age < 30) a0"] +
                [f"count(*) FILTER (WHERE age >= {25 + 5 * i}) a{i}" for i in range(1, 10)])

# (name, settings, statement, released cells in ledger order: weight of a row (age, sex, zip))
SHAPES = [
    ("wrapper_drops_b", [], "SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, "
     "count(*) FILTER (WHERE age >= 60) b FROM people) t",
     [lambda a, s, z: a < 30]),
    ("ten_filters_one_read", [], f"SELECT a0 FROM (SELECT {TEN} FROM people) t",
     [lambda a, s, z: a < 30]),
    ("ten_filters_two_read", [], f"SELECT a0, a5 FROM (SELECT {TEN} FROM people) t",
     [lambda a, s, z: a < 30, lambda a, s, z: a >= 50]),
    ("case_when_false", [], "SELECT count(*) FILTER (WHERE age < 30) a, "
     "CASE WHEN false THEN count(*) FILTER (WHERE age >= 60) END b FROM people",
     [lambda a, s, z: a < 30]),
    ("free_cells_one_read", [], "SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, " +
     ", ".join(f"count(*) FILTER (WHERE age > {121 + i}) z{i}" for i in range(40)) + " FROM people) t",
     [lambda a, s, z: a < 30]),
    ("group_by_wrapper", [], "SELECT sex, a FROM (SELECT sex, count(*) FILTER (WHERE age < 30) a, "
     "count(*) FILTER (WHERE age >= 60) b FROM people GROUP BY sex) t",
     [lambda a, s, z: s == "F" and a < 30, lambda a, s, z: s == "M" and a < 30]),
    ("public_join", [], "SELECT a FROM (SELECT count(*) FILTER (WHERE p.age < 30) a, "
     "count(*) FILTER (WHERE z.city = 'Avalon') b FROM people p JOIN zips z ON z.zip = p.zip) t",
     [lambda a, s, z: a < 30]),
    ("min_total_variance", ["SET dxpriv.allocation = min_total_variance"],
     "SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, sum(age) FILTER (WHERE age >= 60) b "
     "FROM people) t",
     [lambda a, s, z: a < 30]),
    ("median_dropped", [], "SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, dx.median(age) m "
     "FROM people) t",
     [lambda a, s, z: a < 30]),
    ("sum_kept_count_dropped", [], "SELECT s FROM (SELECT sum(age) FILTER (WHERE sex = 'F') s, count(*) c "
     "FROM people) t",
     [lambda a, s, z: a if s == "F" else 0]),
    ("avg_kept", [], "SELECT m FROM (SELECT avg(age) m, count(*) FILTER (WHERE age < 30) c FROM people) t",
     [lambda a, s, z: a, lambda a, s, z: 1]),
    # two releases (two allocations): their cells are matched by kind (dx.last_release: cell, kind)
    ("two_releases", [], "SELECT x.a, y.c FROM (SELECT count(*) FILTER (WHERE age < 30) a, "
     "count(*) FILTER (WHERE age >= 60) b FROM people) x, (SELECT sum(age) c FROM people WHERE zip = '10007') y",
     {"count": lambda a, s, z: a < 30, "sum": lambda a, s, z: a if z == "10007" else 0}),
    # shapes that drop nothing: the same condition holds
    ("plain_count", [], "SELECT count(*) FROM people WHERE age < 30", [lambda a, s, z: a < 30]),
    ("plain_group_by", [], "SELECT sex, count(*) FROM people GROUP BY sex",
     [lambda a, s, z: s == "F", lambda a, s, z: s == "M"]),
    ("plain_two_counts", [], "SELECT count(*) FILTER (WHERE age < 30), count(*) FILTER (WHERE zip = '10007') "
     "FROM people",
     [lambda a, s, z: a < 30, lambda a, s, z: z == "10007"]),
]


def _worst_loss(cells, scales):
    """max over the record metric's edges of sum_k |q_k(u) - q_k(v)| / b_k / d(u, v) (brute force)."""
    points = [(a, s, z) for a in AGES for s in SEXES for z in fx.ZIPS]

    def q(p):
        return [float(c(*p)) for c in cells]

    def term(qu, qv):
        total = 0.0
        for x, y, b in zip(qu, qv, scales):
            if x != y:
                if not b > 0:
                    return math.inf
                total += abs(x - y) / b
        return total

    worst = 0.0
    values = {p: q(p) for p in points}
    for p, qu in values.items():
        worst = max(worst, term(qu, [0.0] * len(cells)) / PRESENCE)  # add / remove the row
    for s in SEXES:
        for z in fx.ZIPS:
            for a in AGES:  # age: every pair (absolute metric, d = |a - a'| / 10)
                qa = values[(a, s, z)]
                for b2 in AGES:
                    if b2 > a:
                        worst = max(worst, term(qa, values[(b2, s, z)]) / ((b2 - a) / AGE_SCALE))
    for a in AGES:
        for z in fx.ZIPS:  # sex (discrete, weight 1)
            worst = max(worst, term(values[(a, "F", z)], values[(a, "M", z)]))
        for s in SEXES:  # zip (discrete, weight 1)
            for i, z1 in enumerate(fx.ZIPS):
                for z2 in fx.ZIPS[i + 1:]:
                    worst = max(worst, term(values[(a, s, z1)], values[(a, s, z2)]))
    return worst


def _last_ledger(admin, marker):
    rows = fx.ledger_rows(admin, marker)
    assert len(rows) == 1, rows
    return float(rows[0][0]), [float(x) for x in rows[0][1]]


def test_ledger_pays_for_the_released_cells():
    with fx.attack_db() as (db, admin):
        execute(admin, "SELECT dx.set_public('zips')")
        a = fx.analyst_conn(db)
        execute(a, f"SET dxpriv.epsilon = {EPSILON}")
        failed = []
        for name, settings, sql, cells in SHAPES:
            for s in settings:
                execute(a, s)
            marker = fx.tag()
            execute(a, marker + sql)
            charged, scales = _last_ledger(admin, marker)
            if isinstance(cells, dict):  # the kinds of the ledger's cells, in ledger order
                with a.cursor() as cur:
                    cur.execute("SELECT kind FROM dx.last_release() WHERE cell IS NOT NULL ORDER BY cell")
                    cells = [cells[k] for (k,) in cur.fetchall()]
            explained = scalar(a, "SELECT max(query_epsilon) FROM dx.explain(%s)", (sql,))
            for s in settings:
                execute(a, "RESET " + s.split()[1])
            if len(scales) != len(cells):
                failed.append((name, "released cells", scales))
                continue
            loss = _worst_loss(cells, scales)
            print(f"  {name}: charged {charged:.4g} (dx.explain: {explained:.4g}), released {len(scales)} cell(s), "
                  f"worst loss / charged = {loss / charged:.3f}")
            if not math.isclose(charged, explained, rel_tol=1e-9):
                failed.append((name, "charged", charged, "allocated", explained))
            if loss > charged * (1 + 1e-9):
                failed.append((name, "privacy loss per unit distance", loss, "charged", charged))
        a.close()
        assert not failed, failed


def test_errors_of_200_releases_match_the_charged_scale():
    sql = ("SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, count(*) FILTER (WHERE age >= 60) b "
           "FROM people) t")
    with fx.attack_db() as (db, admin):
        truth = scalar(admin, "SELECT count(*) FROM people WHERE age < 30")
        a = fx.analyst_conn(db)
        execute(a, f"SET dxpriv.epsilon = {EPSILON}")
        marker = fx.tag()
        errors = [scalar(a, marker + sql) - truth for _ in range(200)]
        a.close()
        rows = fx.ledger_rows(admin, marker)
        assert len(rows) == 200
        assert {len(r[1]) for r in rows} == {1} and len({r[1][0] for r in rows}) == 1, rows[:2]
        charged, b = float(rows[0][0]), float(rows[0][1][0])
        # the released scale pays for the count's sensitivity (10: ages 29 -> 30 are 0.1 apart) at
        # the charged epsilon
        assert b * charged >= 10 * (1 - 1e-9), (b, charged)
        t = math.exp(-1 / b)  # discrete Laplace of scale b: variance 2t / (1 - t)^2
        expected = 2 * t / (1 - t) ** 2
        se = math.sqrt(20 / len(errors)) * b * b  # standard error of a Laplace sample variance
        var = statistics.pvariance(errors, mu=0.0)
        exact = sum(1 for e in errors if e == 0)
        print(f"  200 releases: scale {b:.3f} at charged epsilon {charged:.4g}; error variance {var:.1f}, "
              f"expected {expected:.1f} (+- {se:.1f}); mean |error| {statistics.fmean(abs(e) for e in errors):.1f}; "
              f"{exact} exact")
        assert abs(var - expected) <= 4 * se, (var, expected, se)
        assert exact < 20, exact


def test_parallel_workers_release_what_the_leader_charged():
    with fx.attack_db() as (db, admin):
        a = fx.analyst_conn(db)
        marker = fx.tag()
        # the whole plan in one worker (a single-copy Gather: final functions run there), then
        # partial aggregates in the workers and their finalize phase in the leader
        for extra in ([], ["parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0"]):
            for s in ["force_parallel_mode = on", "parallel_leader_participation = off"] + extra:
                execute(a, "SET " + s)
            for _ in range(8):
                with a.cursor() as cur:
                    cur.execute(marker + "SELECT sex, diagnosis, count(*) FROM people GROUP BY CUBE (sex, diagnosis)")
                    assert len(cur.fetchall()) == 9
                assert scalar(a, "SELECT count(*) FROM dx.last_release()") == 9  # the leader released them
                assert scalar(a, marker + "SELECT count(*) FROM people WHERE age < 30") is not None
                assert scalar(a, marker + "SELECT a FROM (SELECT count(*) FILTER (WHERE age < 30) a, "
                                          "count(*) FILTER (WHERE age >= 60) b FROM people) t") is not None
                # (costs 0: two releases under a Parallel Append, each whole aggregate in one worker)
                with a.cursor() as cur:
                    cur.execute(marker + "SELECT count(*) FROM people UNION ALL "
                                         "SELECT count(*) FROM people WHERE age < 30")
                    assert len(cur.fetchall()) == 2
        assert len(fx.ledger_rows(admin, marker)) == 64
        a.close()
