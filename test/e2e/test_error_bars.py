"""End-to-end: the error bars dx.last_release() reports are honest.

An analyst sends BI-style plain SQL (`SELECT avg(income) FROM people`) 800 times and reads
dx.last_release() after each answer in the same connection. The reported 95% interval of the
average (delta method from the released sum and count) must cover the true average in 92%..98% of
the releases (binomial standard error 0.8 points at 800, so the bounds are about 3.9 standard
errors from 95%). The same on a copy of the column in
cents (values x 100, domain and metric scale x 100): coverage again in 92%..98%, and the relative
error of the answers is the same as in dollars within statistical tolerance — which holds only
when the allocation of the average's epsilon between its sum and count does not depend on the
unit (issue 11's unit-free default allocation).
"""
import math
import statistics

from e2e_common import connect, fresh_db, scalar

ROWS = 20000
RELEASES = 800


def _setup(db):
    admin = connect(db)
    cur = admin.cursor()
    # incomes 0..199900 in steps of 100, deterministic, mean near 100000
    cur.execute(f"""
        CREATE TABLE people (id int, income int, income_cents bigint);
        INSERT INTO people
        SELECT i, v, v * 100 FROM (SELECT i, ((i * 7919) % 2000) * 100 AS v FROM generate_series(1, {ROWS}) i) s;
        SELECT dx.protect_table('people', 1.0);
        SELECT dx.set_column('people', 'income', '{{"min":0,"max":200000,"step":100}}',
                             '{{"type":"absolute","scale":10000}}');
        SELECT dx.set_column('people', 'income_cents', '{{"min":0,"max":20000000,"step":10000}}',
                             '{{"type":"absolute","scale":1000000}}');
        CREATE ROLE {db}_analyst LOGIN;
        SELECT dx.add_analyst('{db}_analyst');
        SELECT dx.grant_budget('{db}_analyst', 'people', 1000);
    """)
    truth = {c: float(scalar(admin, f"SELECT avg({c}) FROM people")) for c in ("income", "income_cents")}
    admin.close()
    return truth


def _releases(db, column, allocation):
    """(answer, low, high) of RELEASES plain-SQL averages, read back after each."""
    conn = connect(db, user=f"{db}_analyst")
    out = []
    with conn.cursor() as cur:
        if allocation:
            cur.execute(f"SET dxpriv.allocation = {allocation}")
        for _ in range(RELEASES):
            cur.execute(f"SELECT avg({column}) FROM people")
            answer = float(cur.fetchone()[0])
            cur.execute("SELECT answer, ci95_low, ci95_high, interval_method FROM dx.last_release() "
                        "WHERE component = 'avg'")
            rows = cur.fetchall()
            assert len(rows) == 1, rows
            reported, low, high, method = rows[0]
            assert method == "delta_method"
            assert math.isclose(reported, answer, rel_tol=1e-12), (reported, answer)
            out.append((answer, low, high))
    conn.close()
    return out


def _coverage(releases, truth):
    return sum(1 for _, low, high in releases if low <= truth <= high) / len(releases)


def _check(allocation):
    with fresh_db() as db:
        truth = _setup(db)
        dollars = _releases(db, "income", allocation)
        cents = _releases(db, "income_cents", allocation)
    admin = connect()
    admin.cursor().execute(f"DROP ROLE IF EXISTS {db}_analyst")  # roles outlive the database
    admin.close()
    cov_d, cov_c = _coverage(dollars, truth["income"]), _coverage(cents, truth["income_cents"])
    rel_d = [abs(a - truth["income"]) / truth["income"] for a, _, _ in dollars]
    rel_c = [abs(a - truth["income_cents"]) / truth["income_cents"] for a, _, _ in cents]
    width_d = statistics.median((h - l) / 2 / truth["income"] for _, l, h in dollars)
    width_c = statistics.median((h - l) / 2 / truth["income_cents"] for _, l, h in cents)
    print(f"  allocation {allocation or 'default'}: coverage dollars {cov_d:.4f}, cents {cov_c:.4f}; mean relative "
          f"error dollars {statistics.mean(rel_d):.3e}, cents {statistics.mean(rel_c):.3e}; median relative "
          f"half-width dollars {width_d:.3e}, cents {width_c:.3e}", flush=True)
    assert 0.92 <= cov_d <= 0.98, cov_d
    assert 0.92 <= cov_c <= 0.98, cov_c
    # same relative error in both units: the mean absolute relative error has a standard error of
    # about 3.5% of itself at 800 releases; 0.8..1.25 is more than 5 standard errors of the ratio
    ratio = statistics.mean(rel_c) / statistics.mean(rel_d)
    assert 0.8 <= ratio <= 1.25, ratio
    # the reported relative half-widths are data-independent functions of the allocation
    assert 0.9 <= width_c / width_d <= 1.11, (width_d, width_c)


def test_average_interval_under_the_default_allocation():
    """What a BI user gets with no setting (needs issue 11's unit-free default allocation)."""
    _check(None)


def test_average_interval_under_equal_split():
    """The interval itself, under an allocation that is unit-free already (each cell: its share)."""
    _check("equal_split")
