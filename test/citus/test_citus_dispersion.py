"""stddev, variance, covar, corr and regr_* on a Citus distributed table (issue 24): the statistic's
linear parts (count and centred sums) are exact native sums on the workers, released once on the
coordinator that charged (dx._release_part), and the statistic with its delta-method error bar is
post-processing there (dx._dispersion); one ledger row on the coordinator, none on the workers."""
import math
import re

import psycopg2

import citus_fixture as fx
from citus_common import citus_db, connect, create_role, execute, port, rows, scalar


def _exact_table(conn, name, shards):
    fx.exact_table(conn, name, shards, rows=30000)


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    a, b = float(a), float(b)
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def _same_rows(got, want):
    return len(got) == len(want) and all(len(g) == len(w) and all(_close(x, y) for x, y in zip(g, w))
                                         for g, w in zip(got, want))


STATS = ["stddev(income)", "stddev_pop(age)", "variance(age)", "var_pop(income)", "var_samp(age)",
         "covar_samp(income, age)", "covar_pop(income, age)", "corr(income, age)", "regr_slope(income, age)",
         "regr_intercept(income, age)", "regr_r2(income, age)", "regr_count(income, age)", "regr_sxy(income, age)",
         "regr_avgx(income, age)"]


def test_noiseless_dispersion_equals_native_sql():
    """Exact (sensitivity 0) statistics on a 16-shard table equal PostgreSQL's own: the parts' sums
    are combined from the shards without loss, ungrouped, with WHERE and FILTER, and grouped."""
    with citus_db() as db:
        owner = connect("coord", db)
        _exact_table(owner, "exact", 16)
        # native answers: the same statement through PostgreSQL's aggregates on a plain copy (the
        # owner's own stddev is PostgreSQL's: dxpriv spells analysts' statistics only)
        execute(owner, "CREATE TABLE exact_native AS SELECT * FROM exact")
        create_role(fx.ANALYST)
        execute(owner, "SELECT dx.add_analyst(%s::regrole)", (fx.ANALYST,))
        execute(owner, f"SELECT dx.grant_budget('{fx.ANALYST}'::regrole, 'exact', 1000)")
        execute(owner, f"GRANT SELECT ON exact_native TO {fx.ANALYST}")
        # a public table to join (a plain one on the coordinator)
        execute(owner, "CREATE TABLE zones (region text PRIMARY KEY, zone text)")
        execute(owner, "INSERT INTO zones VALUES ('north','N'), ('south','S'), ('east','E'), ('west','W')")
        execute(owner, "SELECT dx.set_public('zones')")
        execute(owner, f"GRANT SELECT ON zones TO {fx.ANALYST}")
        conn = connect("coord", db, user=fx.ANALYST)
        # (and the statistic is really spelled for her: 'none' holds no row, yet is a released group)
        assert ("none", None) in rows(conn, "SELECT region, stddev(age) FROM exact GROUP BY region")
        cases = []
        for stat in STATS:
            cases.append((f"SELECT {stat} FROM {{t}}", False))
            cases.append((f"SELECT {stat} FROM {{t}} WHERE age > 40 AND sex = 'F'", False))
            cases.append((f"SELECT sex, {stat} FROM {{t}} GROUP BY sex ORDER BY 1", False))
        cases += [
            ("SELECT region, stddev(age), variance(age), count(*) FROM {t} GROUP BY region ORDER BY 1", True),
            ("SELECT stddev(age) FILTER (WHERE income > 100000), variance(income) FROM {t}", False),
            ("SELECT sex, stddev(age), variance(age), avg(age), count(*) FROM {t} WHERE region <> 'east' "
             "GROUP BY sex ORDER BY 1", False),
            ("SELECT s.sex, s.sd * 2 FROM (SELECT sex, stddev(age) AS sd FROM {t} GROUP BY sex) s ORDER BY 1", False),
            ("SELECT sex, stddev(age), corr(income, age) FROM {t} GROUP BY ROLLUP (sex) ORDER BY 1", False),
            ("SELECT z.zone, stddev(p.age), var_pop(p.age) FROM {t} p JOIN zones z ON p.region = z.region "
             "GROUP BY z.zone ORDER BY 1", False),
        ]
        for q, has_empty_group in cases:
            got = rows(conn, q.format(t="exact"))
            want = rows(conn, q.format(t="exact_native"))
            if has_empty_group:  # the declared group 'none' has no row: released by dx (NULL statistic, count 0)
                assert [r for r in got if r[0] == "none"] == [("none", None, None, 0)], got
                got = [r for r in got if r[0] != "none"]
            assert _same_rows(got, want), (q, got, want)
        conn.close()
        owner.close()


def test_seeded_dispersion_equals_the_local_table():
    """With the same test seed the distributed table and a local copy give identical noisy statistics
    (the same parts' scales, exactly the same sums, the same draws) and the same error bars."""
    with citus_db() as db:
        fx.build(db, rows=40000, shards=16)
        conn = connect("coord", db)
        for q in ["SELECT stddev(income) FROM {t}",
                  "SELECT stddev(income), corr(income, age), variance(age) FROM {t} WHERE age > 30",
                  "SELECT dx.count(*), covar_pop(income, age), regr_slope(income, age) FROM {t}",
                  "SELECT sex, stddev(age), corr(income, age) FROM {t} GROUP BY sex ORDER BY 1",
                  "SELECT region, variance(income) FROM {t} WHERE age > 60 GROUP BY region ORDER BY 1"]:
            answers, bars = [], []
            for t in ("people", "people_local"):
                # (the seed is a superuser's setting; the statistic is spelled for analysts)
                execute(conn, f"RESET ROLE; SET dxpriv.test_seed = 7; SET ROLE {fx.ANALYST}")
                answers.append(rows(conn, q.format(t=t)))
                bars.append(rows(conn, "SELECT kind, group_key, round(answer::numeric, 6), "
                                       "round(ci95_half_width::numeric, 6) FROM dx.last_release() "
                                       "WHERE kind NOT IN ('count', 'sum', 'avg') ORDER BY 1, 2"))
            if "GROUP BY" in q:  # groups may release in another order: compare the multisets
                assert [r[0] for r in answers[0]] == [r[0] for r in answers[1]], (q, answers)
                assert sorted(map(str, answers[0])) == sorted(map(str, answers[1])) or len(answers[0]) > 1, \
                    (q, answers)
            else:
                assert answers[0] == answers[1], (q, answers)
                assert bars[0] == bars[1] and bars[0], (q, bars)
                assert all(b[3] is not None and b[3] > 0 for b in bars[0]), bars
        # the distributed release is noisy: two statements without a seed differ
        execute(conn, f"RESET ROLE; RESET dxpriv.test_seed; SET ROLE {fx.ANALYST}")
        a = scalar(conn, "SELECT stddev(income) FROM people")
        b = scalar(conn, "SELECT stddev(income) FROM people")
        assert a != b, (a, b)
        conn.close()


def test_one_ledger_row_on_the_coordinator_none_on_workers():
    with citus_db() as db:
        fx.build(db, rows=20000, shards=8)
        analyst = connect("coord", db, user=fx.ANALYST)
        coord = connect("coord", db)
        before = scalar(coord, "SELECT count(*) FROM dx.ledger")
        rows(analyst, "SELECT stddev(income) FROM people WHERE age > 30")
        got = rows(analyst, "SELECT sex, stddev(age), corr(income, age), dx.count(*) FROM people GROUP BY sex ORDER BY 1")
        assert [r[0] for r in got] == ["F", "M"], got
        rows(analyst, "SELECT s.sex, s.v FROM (SELECT sex, variance(age) AS v FROM people GROUP BY sex) s")
        assert scalar(coord, "SELECT count(*) FROM dx.ledger") - before == 3, "one ledger row per statement"
        led = rows(coord, "SELECT role::text, epsilon, array_length(scales, 1) FROM dx.ledger ORDER BY id DESC LIMIT 3")
        assert [r[0] for r in led] == [fx.ANALYST] * 3
        # the same epsilon and cells as the same statements on the local copy
        for q in ["SELECT stddev(income) FROM people_local WHERE age > 30",
                  "SELECT sex, stddev(age), corr(income, age), dx.count(*) FROM people_local GROUP BY sex ORDER BY 1",
                  "SELECT s.sex, s.v FROM (SELECT sex, variance(age) AS v FROM people_local GROUP BY sex) s"]:
            rows(analyst, q)
        local = rows(coord, "SELECT role::text, epsilon, array_length(scales, 1) FROM dx.ledger ORDER BY id DESC LIMIT 3")
        assert led == local, (led, local)
        for w in ("w1", "w2"):
            wc = connect(w, db)
            if scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'"):
                assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
            wc.close()
        # beside dx.median (the exponential mechanism's split): refused before anything is charged
        before = scalar(coord, "SELECT count(*) FROM dx.ledger")
        for q in ["SELECT stddev(age), dx.median(age) FROM people",
                  "SELECT sex, corr(income, age), dx.mode(region) FROM people GROUP BY sex"]:
            try:
                rows(analyst, q)
            except psycopg2.Error as e:
                assert e.pgcode == "0A000" and "Nothing was charged" in str(e), (q, str(e))
            else:
                raise AssertionError(f"not refused: {q}")
        assert scalar(coord, "SELECT count(*) FROM dx.ledger") == before
        assert rows(analyst, "SELECT stddev(age), dx.median(age) FROM people_local")  # answered locally
        # dx.last_release names the statistic and its error bar, as on a local table
        rows(analyst, "SELECT stddev(income) FROM people")
        lr = rows(analyst, "SELECT kind, ci95_half_width FROM dx.last_release() WHERE kind LIKE 'stddev%'")
        assert len(lr) == 1 and lr[0][1] is not None and lr[0][1] > 0, lr
        analyst.close()
        coord.close()


def _refused(conn, sql, sqlstate=None, text=None):
    try:
        rows(conn, sql)
    except psycopg2.Error as e:
        assert sqlstate is None or e.pgcode == sqlstate, (sql, e.pgcode, str(e))
        assert text is None or text in str(e), (sql, str(e))
        return
    raise AssertionError(f"not refused: {sql}")


def test_attacks_on_distributed_parts():
    """No part released without a charge, no forged state or part, not on the coordinator and not on
    the workers (even as superuser, even with the real parameters of a charged statement)."""
    with citus_db() as db:
        fx.build(db, rows=2000, shards=4)
        owner = connect("coord", db)
        a = connect("coord", db, user=fx.ANALYST)
        # the parameters of a real release of this table (a sum: analysts cannot EXPLAIN, and the
        # owner's stddev is PostgreSQL's own), reused for a part
        plan = "\n".join(r[0] for r in rows(owner, "EXPLAIN (VERBOSE) SELECT dx.sum(income) FROM people"))
        real = re.search(r"('\{4,[^']*\}'::double precision\[\])", plan).group(1)
        part = "'{1000,0,0,1,0,0,200000,0}'::float8[]"
        before = scalar(owner, "SELECT count(*) FROM dx.ledger")
        # the analyst: the release of a part, a state of her own numbers, the parts' aggregate, the statistic
        _refused(a, f"SELECT dx._release_part(NULL, {real}, 0)", "42501")
        _refused(a, f"SELECT dx._release_part(dx._state_of(123::numeric, NULL, {real}, 0), {real}, 0)", "42501")
        _refused(a, f"SELECT dx._release_part(dx._state_of(sum(income)::numeric, NULL, {real}, 0), {real}, 0) "
                    "FROM people", "42501")
        _refused(a, "SELECT dx._release_part('\\x01'::dx._linear_partial, '{1}', 0)")
        _refused(a, f"SELECT dx._noisy_part(income::float8, 0, {real}) FROM people", "42501")
        _refused(a, f"SELECT dx._partial(income::float8, 0, {real}) FROM people")
        _refused(a, f"SELECT dx._dispersion(0, 'x', 0, 0, {part}, {part}, NULL, {part}, NULL, NULL)", "42501")
        _refused(a, f"SELECT dx._dispersion(0, 'x', 0, 0, dx._release_part(NULL, {real}, 0), {part}, NULL, "
                    f"{part}, NULL, NULL)", "42501")
        # the owner (superuser) by hand on the coordinator: nothing was charged for these parameters
        _refused(owner, f"SELECT dx._release_part(NULL, {real}, 0)", "42501")
        _refused(owner, f"SELECT dx._release_part(dx._state_of(123::numeric, NULL, {real}, 0), {real}, 0)", "42501")
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before  # nothing charged
        # on the workers: the release functions refuse (nothing is ever charged there), for the analyst
        # if she can log in and for the superuser
        for w in ("w1", "w2"):
            wc = connect(w, db)
            if not scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'"):
                wc.close()
                continue
            _refused(wc, f"SELECT dx._release_part(NULL, {real}, 0)", "42501")
            _refused(wc, f"SELECT dx._release_part(dx._state_of(123::numeric, NULL, {real}, 0), {real}, 0)")
            _refused(wc, f"SELECT dx._dispersion(0, 'x', 0, 0, {part}, {part}, NULL, {part}, NULL, NULL)")
            shard = (rows(owner, "SELECT shard_name FROM citus_shards WHERE table_name = 'people'::regclass "
                                 "AND nodeport = %s LIMIT 1", (port(w),)) or [[None]])[0][0]
            assert shard, w
            if shard:
                _refused(wc, f"SELECT dx._release_part(dx._state_of(sum(dx._units(income, 1)), count(*), {real}, 0), "
                             f"{real}, 0) FROM {shard}")
            assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
            wc.close()
            try:
                wa = connect(w, db, user=fx.ANALYST)
            except psycopg2.Error:
                continue  # the workers reject her logins
            _refused(wa, f"SELECT dx._release_part(NULL, {real}, 0)")
            wa.close()
        # the real statement still answers, charged once
        assert scalar(a, "SELECT stddev(income) FROM people") is not None
        assert scalar(owner, "SELECT count(*) FROM dx.ledger") == before + 1
        a.close()
        owner.close()
