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
