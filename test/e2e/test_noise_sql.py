"""End-to-end noise checks through SQL with the production (kernel CSPRNG) noise source.

The noise of a released count is `answer - exact`. Over many releases its law must be the
discrete Laplace of the recorded scale: mean 0, variance 2a/(1-a)^2 with a = exp(-1/scale),
and P(|Z| >= k) = 2 a^k / (1 + a). Thresholds are 6 standard errors, so a correct
implementation fails with probability below 1e-8 per check, while a wrong scale (even 20% off)
or a biased or one-sided sampler fails reliably at these sample sizes.
"""
import math

from e2e_common import connect, execute, fresh_db, scalar

RELEASES = 3000


def _setup(conn):
    execute(conn, "CREATE TABLE t (a int)")
    execute(conn, "INSERT INTO t SELECT i % 10 FROM generate_series(1, 500) AS i")
    execute(conn, "SELECT dx.protect_table('t', 1.0)")
    execute(conn, """SELECT dx.set_column('t', 'a', '{"min": 0, "max": 9}', '{"type": "absolute", "scale": 2}')""")
    execute(conn, "SELECT dx.grant_budget(current_user::regrole, 't', 1e6)")


def test_count_noise_matches_discrete_laplace():
    with fresh_db() as db:
        conn = connect(db)
        _setup(conn)
        exact = scalar(conn, "SELECT count(*) FROM t WHERE a >= 5")
        noise = []
        with conn.cursor() as cur:
            for _ in range(RELEASES):
                cur.execute("SELECT dx.count(a, 0.5) FROM t WHERE a >= 5")
                noise.append(cur.fetchone()[0] - exact)
        scale = scalar(conn, "SELECT scales[1] FROM dx.ledger ORDER BY id DESC LIMIT 1")
        # threshold 4|5 at distance 1/2 per unit: S = 2, scale = S / 0.5 = 4
        assert abs(scale - 4.0) < 1e-12, scale
        a = math.exp(-1 / scale)
        var = 2 * a / (1 - a) ** 2
        n = len(noise)
        mean = sum(noise) / n
        assert abs(mean) < 6 * math.sqrt(var / n), (mean, var)
        sample_var = sum(z * z for z in noise) / n
        # fourth moment of the discrete Laplace bounds the variance of the sample variance
        m4 = 2 * a * (1 + 10 * a + a * a) / (1 - a) ** 4
        assert abs(sample_var - var) < 6 * math.sqrt((m4 - var * var) / n), (sample_var, var)
        for k in (4, 8, 12):
            p = 2 * a ** k / (1 + a)
            observed = sum(1 for z in noise if abs(z) >= k) / n
            assert abs(observed - p) < 6 * math.sqrt(p * (1 - p) / n), (k, observed, p)
        positive = sum(1 for z in noise if z > 0)
        negative = sum(1 for z in noise if z < 0)
        assert abs(positive - negative) < 6 * math.sqrt(positive + negative), (positive, negative)
        charged = scalar(conn, "SELECT sum(epsilon) FROM dx.ledger")
        assert abs(charged - 0.5 * RELEASES) < 1e-6, charged
        conn.close()


def test_sessions_draw_independent_noise():
    """Two backends forked from the same postmaster must not share a random stream."""
    with fresh_db() as db:
        c1, c2 = connect(db), connect(db)
        _setup(c1)
        seq1 = [scalar(c1, "SELECT dx.sum(a, 0.1) FROM t") for _ in range(20)]
        seq2 = [scalar(c2, "SELECT dx.sum(a, 0.1) FROM t") for _ in range(20)]
        assert seq1 != seq2
        assert len(set(seq1)) > 15 and len(set(seq2)) > 15
        c1.close()
        c2.close()


def _discrete_law(weight, bound):
    """Exact pmf of an integer law with P(z) ∝ weight(z) on [-bound, bound]: (pmf dict, var, 4th)."""
    w = {z: weight(z) for z in range(-bound, bound + 1)}
    total = sum(w.values())
    pmf = {z: v / total for z, v in w.items()}
    var = sum(p * z * z for z, p in pmf.items())
    m4 = sum(p * z ** 4 for z, p in pmf.items())
    return pmf, var, m4


def _setup_family(conn, family, delta):
    """_setup, then a per-query delta on t, a delta budget of 1 and dxpriv.noise = family."""
    _setup(conn)
    execute(conn, f"SELECT dx.set_delta('t', {delta})")
    execute(conn, "SELECT dx.grant_budget(current_user::regrole, 't', 1e6, delta => 1.0)")
    execute(conn, f"SET dxpriv.noise = '{family}'")


def _row(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchone()


def _releases(conn, sql, exact):
    noise = []
    with conn.cursor() as cur:
        for _ in range(RELEASES):
            cur.execute(sql)
            noise.append(cur.fetchone()[0] - exact)
    return noise


def test_gaussian_count_noise_matches_discrete_gaussian():
    """SET dxpriv.noise = 'gaussian': the noise is N_Z(0, sigma^2) with the sigma of the ledger;
    its kurtosis (3) tells it apart from the Laplace (6); every release spends epsilon and delta."""
    with fresh_db() as db:
        conn = connect(db)
        _setup_family(conn, "gaussian", 1e-6)
        exact = scalar(conn, "SELECT count(*) FROM t WHERE a >= 5")
        noise = _releases(conn, "SELECT dx.count(a, 0.5) FROM t WHERE a >= 5", exact)
        sigma = scalar(conn, "SELECT scales[1] FROM dx.ledger ORDER BY id DESC LIMIT 1")
        assert sigma > 1.0, sigma
        # the sampler rounds sigma up to a multiple of 2^-20
        s = math.ceil(sigma * 2 ** 20) / 2 ** 20
        bound = int(14 * s) + 2
        pmf, var, m4 = _discrete_law(lambda z: math.exp(-z * z / (2 * s * s)), bound)
        n = len(noise)
        assert abs(sum(noise) / n) < 6 * math.sqrt(var / n)
        sample_var = sum(z * z for z in noise) / n
        assert abs(sample_var - var) < 6 * math.sqrt((m4 - var * var) / n), (sample_var, var)
        kurtosis = (sum(z ** 4 for z in noise) / n) / sample_var ** 2
        assert 2.5 < kurtosis < 3.6, kurtosis  # Laplace: about 6
        for k in (1, 2, 3):
            p = sum(q for z, q in pmf.items() if abs(z) > k * s)
            observed = sum(1 for z in noise if abs(z) > k * s) / n
            assert abs(observed - p) < 6 * math.sqrt(p * (1 - p) / n), (k, observed, p)
        row = _row(conn, "SELECT count(*), sum(epsilon), sum(delta), min(mechanism), max(mechanism) FROM dx.ledger")
        count, eps, delta, mech_lo, mech_hi = row
        assert count == RELEASES and abs(eps - 0.5 * RELEASES) < 1e-6, row
        assert abs(delta - 1e-6 * RELEASES) < 1e-12 and mech_lo == mech_hi == "discrete_gaussian", row
        conn.close()


def test_truncated_sum_noise_is_bounded_truncated_laplace():
    """SET dxpriv.noise = 'truncated_laplace': the noise has the truncated discrete Laplace law and
    never leaves the bound dx.explain reports."""
    with fresh_db() as db:
        conn = connect(db)
        _setup_family(conn, "truncated_laplace", 1e-4)
        sql = "SELECT dx.sum(a, 1.0) FROM t"
        bound, scale = _row(conn, f"SELECT noise_bound, noise_scale FROM dx.explain($${sql}$$)")
        exact = scalar(conn, "SELECT sum(a) FROM t")
        noise = _releases(conn, sql, exact)
        # integer weights: grid 1; S = 9 (a record of value 9 against ⊥ at presence 1), scale = 9
        assert abs(scale - 9.0) < 1e-12 and bound == int(bound), (scale, bound)
        assert max(abs(z) for z in noise) <= bound
        b = int(bound)
        pmf, var, m4 = _discrete_law(lambda z: math.exp(-abs(z) / scale), b)
        n = len(noise)
        assert abs(sum(noise) / n) < 6 * math.sqrt(var / n)
        sample_var = sum(z * z for z in noise) / n
        assert abs(sample_var - var) < 6 * math.sqrt((m4 - var * var) / n), (sample_var, var)
        for k in (2, 5, 10):
            p = sum(q for z, q in pmf.items() if abs(z) >= k)
            observed = sum(1 for z in noise if abs(z) >= k) / n
            assert abs(observed - p) < 6 * math.sqrt(p * (1 - p) / n), (k, observed, p)
        conn.close()
