"""Open GROUP BY keys on Citus distributed tables (issue 26): the workers count each candidate
partition's contributors and sum its aggregates (PostgreSQL's own grouped sums, which Citus splits
into per-shard partials), the coordinator runs the private partition selection and adds the d_X
noise once, in the backend that charged. Noiseless answers equal native SQL for the released keys,
seeded answers equal a local copy's, one ledger row on the coordinator and none on the workers, a
one-person key is never released, the selection written by hand (on a worker or the coordinator)
is refused, and no error or plan shows a key value."""
import re

import psycopg2

from citus_common import citus_db, connect, create_role, execute, rows, scalar

ANALYST = "open_citus_analyst"
SECRET = "Zanzibar-4711"


def rows_sql(n, keys, solo=0):
    """n rows over `keys` cities (city i holds the rows g with g % keys = i: at least 2 each when n >= 2
    keys), then `solo` cities of one row each; qty 0..99, sex F/M, day over two years, person g / 3."""
    return f"""SELECT g, 'c' || (g % {keys}), (g * 37 + g / {keys}) % 100, CASE WHEN g % 3 = 0 THEN 'F' ELSE 'M' END,
                      DATE '2024-01-01' + (g * 7) % 730, g / 3
               FROM generate_series(1, {n}) g
               UNION ALL
               SELECT {n} + s, 'solo' || s, 5, 'F', DATE '2024-06-01', 1000000 + s FROM generate_series(1, {solo}) s"""


def make_table(conn, name, by, n=6000, keys=300, solo=0, exact=False, unit=None, delta="1e-9", shards=8,
               analyst=False):
    """`name` (id, city open, qty, sex, day open, person), distributed by `by` ('id', 'city', 'person';
    'reference'; None: local). exact: presence and weights 1e6 (qty: scale 1e-6), so that aggregates at
    epsilon 1e6 draw noise below 1e-6 and the selection at dxpriv.epsilon = 2e-5 runs at a per-partition
    epsilon of 10 (check_exact)."""
    execute(conn, f"CREATE TABLE {name} (id bigint, city text, qty int, sex text, day date, person int)")
    if by == "reference":
        execute(conn, f"SELECT create_reference_table('{name}')")
    elif by:
        execute(conn, f"SELECT create_distributed_table('{name}', '{by}', shard_count => {shards})")
    execute(conn, f"INSERT INTO {name} {rows_sql(n, keys, solo)}")
    w = 1e6 if exact else 1
    execute(conn, f"SELECT dx.protect_table('{name}', {w})")
    execute(conn, f"""SELECT dx.set_column('{name}', 'qty', '{{"min": 0, "max": 99}}', '{{"type": "absolute", "scale": {1 / w if exact else 10}}}');
        SELECT dx.set_column('{name}', 'sex', '{{"values": ["F", "M"]}}', '{{"type": "discrete", "weight": {w}}}');
        SELECT dx.set_column('{name}', 'city', '{{"open": true}}', '{{"type": "discrete", "weight": {w}}}');
        SELECT dx.set_column('{name}', 'day', '{{"open": true}}', '{{"type": "discrete", "weight": {w}}}');
        SELECT dx.set_delta('{name}', {delta})""")
    if unit:
        execute(conn, f"SELECT dx.set_privacy_unit('{name}', 'person', {unit})")
    execute(conn, f"SELECT dx.grant_budget('postgres', '{name}', 1e9, delta => 1)")
    if analyst:
        execute(conn, f"SELECT dx.grant_budget('{ANALYST}', '{name}', 1e6, delta => 1)")


def keys_of(r):
    return tuple(v for v in r if isinstance(v, str) or hasattr(v, "isoformat"))


def same_answers(got, want):
    """The same keys, and values within 1e-3 (the exact table's noise is below 1e-6)."""
    g = {keys_of(r): r for r in got}
    w = {keys_of(r): r for r in want}
    if len(g) != len(got) or set(g) != set(w):
        return False
    for k, r in g.items():
        for a, b in zip(r, w[k]):
            if isinstance(a, str) or hasattr(a, "isoformat"):
                continue
            if (a is None) != (b is None) or (a is not None and abs(float(a) - float(b)) > 1e-3):
                return False
    return True


EXACT = [  # dx on the exact table (aggregates at epsilon 1e6); native on the same rows, its last column
    # the partition's contributors
    ("SELECT city, dx.count(1, 1e6), dx.sum(qty, 1e6), round(dx.avg(qty, 1e6)::numeric, 6) FROM {t} GROUP BY city",
     "SELECT city, count(*), sum(qty), round(avg(qty)::numeric, 6), count(*) FROM {t} GROUP BY city"),
    ("SELECT city, dx.count(1, 1e6), dx.sum(qty, 1e6) FROM {t} WHERE qty > 50 GROUP BY city",
     "SELECT city, count(*), sum(qty), count(*) FROM {t} WHERE qty > 50 GROUP BY city"),
    ("SELECT sex, city, dx.count(1, 1e6) FROM {t} WHERE qty < 80 GROUP BY sex, city",
     "SELECT sex, city, count(*), count(*) FROM {t} WHERE qty < 80 GROUP BY sex, city"),
    ("SELECT date_trunc('month', day) AS m, dx.count(1, 1e6), dx.sum(qty, 1e6) FROM {t} GROUP BY 1",
     "SELECT date_trunc('month', day) AS m, count(*), sum(qty), count(*) FROM {t} GROUP BY 1"),
    # a wrapper over the release (post-processing on the coordinator)
    ("SELECT s.city, s.n * 2 FROM (SELECT city, dx.count(1, 1e6) AS n FROM {t} WHERE sex = 'F' GROUP BY city) s",
     "SELECT city, count(*) * 2, count(*) FROM {t} WHERE sex = 'F' GROUP BY city"),
]


def check_exact(conn, t, cases=EXACT):
    """Every released key is a native key with the same answers; every key of 7 or more contributors
    is released, no key of one (per partition: epsilon 10, delta 5e-10, at dxpriv.epsilon = 2e-5 with
    S = 2/w)."""
    execute(conn, "SET dxpriv.epsilon = 2e-5")
    for dx_sql, native in cases:
        got = rows(conn, dx_sql.format(t=t))
        full = rows(conn, native.format(t=t))
        sure = [r[:-1] for r in full if r[-1] >= 7]
        never = {keys_of(r) for r in full if r[-1] <= 1}
        released = {keys_of(r) for r in got}
        assert len(released) == len(got) and len(sure) > 10, (dx_sql, len(got), len(sure))
        assert not released & never, (t, dx_sql, sorted(released & never)[:5])
        assert {keys_of(r) for r in sure} <= released, (t, dx_sql, len(sure), len(got))
        by_key = {keys_of(r): r[:-1] for r in full}
        assert same_answers(got, [by_key[k] for k in released]), (t, dx_sql, got[:5])
    execute(conn, "RESET dxpriv.epsilon")


def test_open_keys_noiseless_answers_equal_native_sql():
    """Hash-distributed by another column, by the key itself, and a local copy: every key with 2 or
    more contributors is released with its exact answers; the one-row keys are not (delta 1e-9)."""
    with citus_db() as db:
        conn = connect("coord", db)
        for t, by in (("by_id", "id"), ("by_city", "city"), ("local_copy", None)):
            make_table(conn, t, by, n=12000, solo=50, exact=True)
            check_exact(conn, t)
        conn.close()


def test_open_keys_with_a_privacy_unit_count_distinct_units():
    """Distributed by the unit column and by another: a key's contributors are distinct units. Each
    'pair' city holds 3 rows of one person (never released: one contributor, although 3 rows would
    be kept without a unit) and each 'crowd' city one row of each of 20 persons (released); the
    aggregates are bounded per unit (k = 3) as locally."""
    with citus_db() as db:
        conn = connect("coord", db)
        for t, by in (("u_by_person", "person"), ("u_by_id", "id"), ("u_local", None)):
            make_table(conn, t, by, n=300, keys=10, exact=True, unit=3)
            execute(conn, f"""INSERT INTO {t} SELECT 100000 + i * 3 + r, 'pair' || i, 1, 'F', DATE '2024-01-01', 500000 + i
                              FROM generate_series(1, 30) i, generate_series(0, 2) r""")
            execute(conn, f"""INSERT INTO {t} SELECT 200000 + i * 20 + r, 'crowd' || i, r, 'F', DATE '2024-01-01', 600000 + i * 20 + r
                              FROM generate_series(1, 30) i, generate_series(0, 19) r""")
            # per partition: epsilon 10 (S = k'/p0' = 6e-6), delta 1e-9 / 6
            execute(conn, "SET dxpriv.epsilon = 6e-5")
            got = rows(conn, f"SELECT city, dx.count(1, 1e6), dx.sum(qty, 1e6) FROM {t} GROUP BY city")
            assert not [r for r in got if r[0].startswith("pair")], (t, got[:5])
            native = rows(conn, f"""SELECT city, count(*), sum(qty) FROM {t} GROUP BY city
                                    HAVING count(DISTINCT person) >= 7""")
            assert len([r for r in native if r[0].startswith("crowd")]) == 30, native
            assert same_answers(got, native), (t, sorted(got)[:5], sorted(native)[:5])
        # co-located with the unit: the shards' task queries bound the units and count on the workers
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT city, dx.count(*) FROM u_by_person GROUP BY city"))
        tasks = [line for line in plan.splitlines() if "Query: " in line and "u_by_person_" in line]
        assert tasks and all("_unit_rank" in q for q in tasks), plan
        conn.close()


def test_open_keys_seeded_answers_equal_the_local_table():
    """The same seed gives the same kept keys and the same noisy answers on the distributed table
    and on a local copy (the local plan sorted by the keys, as the coordinator draws them)."""
    with citus_db() as db:
        conn = connect("coord", db)
        for t, by in (("dist", "id"), ("dist_city", "city"), ("local_copy", None)):
            make_table(conn, t, by, n=12000, keys=400, solo=20)
        # per partition epsilon 1, delta 5e-10: 30 contributors kept almost surely
        execute(conn, "SET dxpriv.epsilon = 2")
        for q in ["SELECT city, dx.count(*), dx.sum(qty), dx.avg(qty) FROM {t} GROUP BY city",
                  "SELECT city, dx.count(*) FROM {t} WHERE sex = 'M' GROUP BY city ORDER BY city DESC",
                  "SELECT sex, city, dx.count(*), dx.avg(qty) FROM {t} GROUP BY sex, city"]:
            answers = []
            for t in ("dist", "dist_city", "local_copy"):
                execute(conn, "SET enable_hashagg = off")  # the local plan meets its groups in key order
                execute(conn, "SET dxpriv.test_seed = 11")
                answers.append(rows(conn, q.format(t=t)))
                execute(conn, "RESET enable_hashagg")
            assert 0 < len(answers[2]) < 420, (q, len(answers[2]))
            assert answers[0] == answers[2], (q, answers[0][:3], answers[2][:3])
            assert answers[1] == answers[2], (q, answers[1][:3], answers[2][:3])
        conn.close()


def test_open_keys_one_ledger_row_on_the_coordinator_and_last_release():
    """An analyst's open release on a distributed table: one ledger row (epsilon of the aggregates and
    the selection, the table's delta) on the coordinator, none on the workers; dx.last_release() lists
    the kept partitions only; the workers' task queries hold only counts and sums."""
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, f"SELECT dx.add_analyst('{ANALYST}')")
        make_table(conn, "sales", "id", n=12000, keys=300, solo=30, delta="1e-7", analyst=True)
        make_table(conn, "sales_local", None, n=12000, keys=300, solo=30, delta="1e-7", analyst=True)
        a = connect("coord", db, user=ANALYST)
        execute(a, "SET dxpriv.epsilon = 4")  # per partition 2: 40 contributors kept surely
        charged = []
        for t in ("sales_local", "sales"):
            before = scalar(conn, "SELECT count(*) FROM dx.ledger")
            got = rows(a, f"SELECT city, count(*), avg(qty) FROM {t} GROUP BY city")
            assert len(got) == 300 and not [r for r in got if r[0].startswith("solo")], len(got)
            assert [r[0] for r in got] == sorted(r[0] for r in got)  # released in key order
            assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1
            charged.append(rows(conn, "SELECT epsilon, delta, mechanism, array_length(scales, 1) FROM dx.ledger "
                                      "ORDER BY id DESC LIMIT 1")[0])
        assert charged[0] == charged[1] and charged[1][1] == 1e-7 and "partition_selection" in charged[1][2], charged
        labelled = rows(a, "SELECT count(DISTINCT group_key) FROM dx.last_release() WHERE group_key LIKE 'city=%'")
        assert labelled == [(len(got),)], (labelled, len(got))
        assert not rows(a, "SELECT 1 FROM dx.last_release() WHERE group_key LIKE 'city=solo%'")
        # HAVING reads the very answers released (one draw per cell, as PostgreSQL computes an aggregate
        # that appears twice once), never a second draw of the same cell
        shown = 0
        for t in ("sales_local", "sales"):
            for _ in range(3):
                got = rows(a, f"SELECT city, dx.count(1, 0.02) FROM {t} GROUP BY city HAVING dx.count(1, 0.02) > 40")
                assert all(r[1] > 40 for r in got), (t, [r for r in got if r[1] <= 40][:5])
                shown += len(got)
        assert shown > 100, shown
        # the answer cache: like every statement on a distributed table (whose contents version the
        # coordinator does not track), a repeated open release is not replayed: it is charged again
        # and draws again (never a stale or another role's rows)
        execute(conn, f"ALTER ROLE {ANALYST} IN DATABASE {db} SET dxpriv.cache_lifetime = 3600")
        a.close()
        a = connect("coord", db, user=ANALYST)
        execute(a, "SET dxpriv.epsilon = 4")
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        for _ in range(2):
            assert len(rows(a, "SELECT city, count(*) FROM sales WHERE sex = 'M' GROUP BY city")) > 100
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 2
        for w in ("w1", "w2"):
            wc = connect(w, db)
            if scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'"):
                assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
            wc.close()
        # the plan: workers group and sum; the selection, the noise and the labels stay on the coordinator
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT city, dx.count(*), dx.avg(qty) FROM sales GROUP BY city"))
        tasks = [line for line in plan.splitlines() if "Query: " in line and "sales_" in line]
        assert tasks, plan
        for line in tasks:
            assert "GROUP BY" in line and not re.search(r"_release_|_open_cells|_partition_select|_state_of", line), line
        assert "_release_selection" in plan and "_open_cells" in plan, plan
        # EXPLAIN ANALYZE would show row counts (analysts: no EXPLAIN at all) and run the statement over
        # a new connection (the owner's: refused before the charge)
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        for c, code in ((a, "42501"), (conn, "0A000")):
            try:
                rows(c, "EXPLAIN ANALYZE SELECT city, dx.count(*) FROM sales GROUP BY city")
                raise AssertionError("EXPLAIN ANALYZE ran")
            except psycopg2.Error as e:
                assert e.pgcode == code, e
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before
        a.close()
        conn.close()


def test_open_keys_one_person_key_never_released():
    """Every key held by one row (delta 1e-12: each kept with probability 5e-13): over 40 statements
    none is ever released, while keys of 40 contributors always are."""
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, f"SELECT dx.add_analyst('{ANALYST}')")
        make_table(conn, "lonely", "id", n=2000, keys=50, solo=1500, delta="1e-12", analyst=True)
        a = connect("coord", db, user=ANALYST)
        execute(a, "SET dxpriv.epsilon = 4")  # per partition 2: 40 contributors kept surely
        for _ in range(40):
            got = rows(a, "SELECT city, count(*) FROM lonely GROUP BY city")
            assert not [r for r in got if r[0].startswith("solo")], got
            assert len(got) == 50, len(got)
        a.close()
        conn.close()


def test_open_keys_forged_selection_refused_and_no_key_in_errors():
    """dx._release_selection written by hand is refused on the coordinator (analyst and owner) and on
    a worker (nothing was charged there); errors of open releases name no key value; a date beyond
    the timestamp range is bucketed without an error on the workers."""
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, f"SELECT dx.add_analyst('{ANALYST}')")
        make_table(conn, "secret", "id", n=3000, keys=100, delta="1e-7", analyst=True)
        execute(conn, f"INSERT INTO secret VALUES (99999, '{SECRET}', 1, 'F', DATE '300000-01-01', 99999)")
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT city, dx.count(*) FROM secret GROUP BY city"))
        params = re.search(r"_release_selection\([^,]+, ('\{[^']*\}'::double precision\[\]), ('\{[^']*\}'::double precision\[\])", plan)
        assert params, plan
        forged = f"SELECT dx._release_selection(1000, {params.group(1)}, {params.group(2)})"
        a = connect("coord", db, user=ANALYST)
        texts = []
        for c in (a, conn, connect("w1", db), connect("w2", db)):
            try:
                rows(c, forged)
                raise AssertionError("a forged selection ran")
            except psycopg2.Error as e:
                assert e.pgcode == "42501", (e.pgcode, str(e))
                texts.append(str(e))
        # the analyst's own expressions run only on kept partitions; errors carry no key
        for sql in ["SELECT city, count(*) FROM secret GROUP BY city HAVING 1 / (count(*) - count(*)) > 0",
                    "SELECT city, 1 / (count(*) * 0) FROM secret GROUP BY city",
                    f"SELECT city, count(*) FROM secret WHERE city = '{SECRET}' GROUP BY city",
                    "SELECT city::int, count(*) FROM secret GROUP BY city",
                    "SELECT city, count(*) FROM secret GROUP BY city ORDER BY city::int"]:
            try:
                texts.extend(str(r) for r in rows(a, sql))
            except psycopg2.Error as e:
                texts.extend([str(e.pgerror), str(e.diag.message_hint), str(e.diag.message_detail), str(e.diag.context)])
        # settings that would turn the candidates' count into an error or log what the workers run are
        # reset for the analyst's statement (sealed execution): the answer comes, nothing names a key
        for setting in ("citus.max_intermediate_result_size = '1kB'", "citus.log_remote_commands = on",
                        "citus.log_intermediate_results = on", "citus.enable_local_execution = off"):
            execute(a, f"SET {setting}")
        execute(a, "SET dxpriv.epsilon = 4")
        assert len(rows(a, "SELECT city, count(*) FROM secret GROUP BY city")) == 100
        execute(a, "RESET ALL")
        # date_trunc of 300000-01-01 would fail (22008) where it runs: dxpriv's guarded bucket does not
        got = rows(a, "SELECT date_trunc('year', day), count(*) FROM secret GROUP BY 1")
        assert len(got) >= 2 and all(r[0] is not None for r in got), got
        texts.extend(str(r) for r in got)
        texts.extend(n for n in a.notices)
        for t in texts:
            assert SECRET not in t and "300000" not in t, t
        a.close()
        conn.close()


def test_open_keys_on_a_reference_table():
    """A reference table (one shard, a placement on every node): the same exact answers."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_table(conn, "ref_t", "reference", n=12000, solo=20, exact=True)
        check_exact(conn, "ref_t", EXACT[:2])
        conn.close()


# Open keys beside the other open-key features (count_units, grouping sets, bound parameters, HAVING
# on count_units), each as (dx statement, native statement, number of leading key columns). The
# native statement's last column is the partition's contributors (distinct persons with a unit).
JOINT_UNIT = [
    ("SELECT city, dx.count_units(person, 1e6), dx.count(1, 1e6) FROM {t} GROUP BY city",
     "SELECT city, count(DISTINCT person), count(*), count(DISTINCT person) FROM {t} GROUP BY city", 1),
    ("SELECT city, count(DISTINCT person) FROM {t} GROUP BY city",
     "SELECT city, count(DISTINCT person), count(DISTINCT person) FROM {t} GROUP BY city", 1),
    ("SELECT city, sex, dx.count_units(person, 1e6) FROM {t} WHERE qty < 70 GROUP BY city, sex",
     "SELECT city, sex, count(DISTINCT person), count(DISTINCT person) FROM {t} WHERE qty < 70 GROUP BY city, sex", 2),
    ("SELECT city FROM {t} GROUP BY city HAVING dx.count_units(person, 1e6) > 100",
     "SELECT city, count(DISTINCT person) FROM {t} GROUP BY city HAVING count(DISTINCT person) > 100", 1),
]
JOINT_SETS = [
    ("SELECT city, sex, GROUPING(city, sex), dx.count(1, 1e6), dx.sum(qty, 1e6) FROM {t} GROUP BY ROLLUP (city, sex)",
     "SELECT city, sex, GROUPING(city, sex), count(*), sum(qty), {contributors} FROM {t} GROUP BY ROLLUP (city, sex)", 3),
    ("SELECT city, sex, GROUPING(city, sex), dx.count(1, 1e6) FROM {t} GROUP BY CUBE (city, sex)",
     "SELECT city, sex, GROUPING(city, sex), count(*), {contributors} FROM {t} GROUP BY CUBE (city, sex)", 3),
    ("SELECT city, sex, GROUPING(city, sex), dx.count(1, 1e6) FROM {t} WHERE qty > 20 GROUP BY GROUPING SETS ((city), (sex), ())",
     "SELECT city, sex, GROUPING(city, sex), count(*), {contributors} FROM {t} WHERE qty > 20 GROUP BY GROUPING SETS ((city), (sex), ())", 3),
]


def check_joint(conn, a, t, dx_sql, native_sql, nkeys, local=None):
    """One analyst statement on t: one ledger row on the coordinator (the same as on the local copy
    `local`), answers equal native SQL's for every released partition, every partition of 100 or
    more contributors released and none of one (the 'solo' keys); returns the released rows."""
    before = scalar(conn, "SELECT count(*) FROM dx.ledger")
    try:
        got = rows(a, dx_sql.format(t=t))
    except psycopg2.Error as e:
        raise AssertionError((t, dx_sql, e.pgcode, str(e)))
    assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before + 1, (t, dx_sql)
    charged = rows(conn, "SELECT epsilon, delta, mechanism FROM dx.ledger ORDER BY id DESC LIMIT 1")[0]
    # native SQL on the local copy (the same rows: Citus plans no GROUPING on a distributed table)
    full = {tuple(r[:nkeys]): r[nkeys:] for r in rows(conn, native_sql.format(t=t.split("_")[0] + "_local"))}
    released = {tuple(r[:nkeys]) for r in got}
    assert len(released) == len(got), (t, dx_sql)
    assert not [k for k in released if any(isinstance(v, str) and v.startswith("solo") for v in k)], (t, dx_sql)
    assert released <= set(full), (t, dx_sql, sorted(released - set(full), key=str)[:3])
    assert {k for k, v in full.items() if v[-1] >= 100} <= released, (t, dx_sql, len(released), len(full))
    for r in got:
        want = full[tuple(r[:nkeys])][:-1]
        for x, y in zip(r[nkeys:], want):
            assert abs(float(x) - float(y)) <= 1e-3, (t, dx_sql, r, want)
    if local is not None:
        assert charged == local, (t, dx_sql, charged, local)
    return got, charged


def workers_charged_nothing(db):
    for w in ("w1", "w2"):
        wc = connect(w, db)
        if scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'"):
            assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
        wc.close()


def test_open_keys_joint_releases_as_locally():
    """count_units (and count(DISTINCT unit)) beside an open key, HAVING on it, ROLLUP / CUBE /
    GROUPING SETS with an open key (with and without a privacy unit) and prepared open releases with
    bound parameters (custom and generic plans), on tables distributed by id and by the unit (or the
    key): one ledger row on the coordinator equal to the local copy's, none on the workers, noiseless
    answers equal to native SQL for released partitions, one-contributor keys never released."""
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, f"SELECT dx.add_analyst('{ANALYST}')")
        for t, by, unit in (("ju_local", None, 3), ("ju_id", "id", 3), ("ju_person", "person", 3),
                            ("jn_local", None, None), ("jn_id", "id", None), ("jn_city", "city", None)):
            make_table(conn, t, by, n=3000, keys=20, solo=5, exact=True, unit=unit, delta="1e-7")
            execute(conn, f"SELECT dx.grant_budget('{ANALYST}', '{t}', 1e9, delta => 1)")
        a = connect("coord", db, user=ANALYST)
        # per partition epsilon 10 or more at p0 = 1e6 (units: S = k'/p0'; without a unit, 6e-5 would
        # put the grouping sets' per-partition selection beyond the delta it can reach: 22023 locally too)
        for group, cases in (("ju", JOINT_UNIT + JOINT_SETS), ("jn", JOINT_SETS)):
            execute(a, f"SET dxpriv.epsilon = {'6e-5' if group == 'ju' else '2e-5'}")
            contributors = "count(DISTINCT person)" if group == "ju" else "count(*)"
            for dx_sql, native, nkeys in cases:
                native = native.replace("{contributors}", contributors)
                _, local = check_joint(conn, a, f"{group}_local", dx_sql, native, nkeys)
                for t in ([f"{group}_id", f"{group}_person"] if group == "ju" else [f"{group}_id", f"{group}_city"]):
                    got, _ = check_joint(conn, a, t, dx_sql, native, nkeys, local)
                    if "HAVING" in dx_sql:
                        assert len(got) == 20, (t, got)
        # bound parameters: each execution (custom plans, then the generic plan) analysed with its
        # values, one release and one ledger row each
        for t, unit in (("ju_id", True), ("ju_person", True), ("jn_id", False), ("jn_city", False)):
            what = "dx.count_units(person, 1e6)" if unit else "dx.count(1, 1e6)"
            native_what = "count(DISTINCT person)" if unit else "count(*)"
            contributors = "count(DISTINCT person)" if unit else "count(*)"
            execute(a, f"SET dxpriv.epsilon = {'6e-5' if unit else '2e-5'}")
            execute(a, f"PREPARE p_{t}(int) AS SELECT city, {what} FROM {t} WHERE qty < $1 GROUP BY city")
            execute(a, f"PREPARE r_{t}(int) AS SELECT city, sex, GROUPING(city, sex), dx.count(1, 1e6) FROM {t} "
                       "WHERE qty < $1 GROUP BY ROLLUP (city, sex)")
            if unit:
                execute(a, f"PREPARE h_{t}(int) AS SELECT city FROM {t} WHERE qty < $1 GROUP BY city "
                           "HAVING dx.count_units(person, 1e6) > 100")
            for v in (50, 80, 90, 95, 99, 60, 70):
                if unit:
                    check_joint(conn, a, t, f"EXECUTE h_{{t}}({v})",
                                f"SELECT city, count(DISTINCT person) FROM {{t}} WHERE qty < {v} GROUP BY city "
                                "HAVING count(DISTINCT person) > 100", 1)
                check_joint(conn, a, t, f"EXECUTE p_{{t}}({v})",
                            f"SELECT city, {native_what}, {contributors} FROM {{t}} WHERE qty < {v} GROUP BY city", 1)
                check_joint(conn, a, t, f"EXECUTE r_{{t}}({v})",
                            f"SELECT city, sex, GROUPING(city, sex), count(*), {contributors} FROM {{t}} "
                            f"WHERE qty < {v} GROUP BY ROLLUP (city, sex)", 3)
        # a bound parameter cannot stand for (or shift) the counted unit: refused when executed with
        # its value (0A000, a hint), before any charge, no key value in the message
        for t in ("ju_local", "ju_id", "ju_person"):
            for i, q in enumerate(["SELECT city, dx.count_units($1) FROM {t} GROUP BY city",
                                   "SELECT city, dx.count_units(person + $1) FROM {t} GROUP BY city",
                                   "SELECT city, dx.count_units(qty) FROM {t} WHERE qty < $1 GROUP BY city",
                                   "SELECT city, sex, dx.count_units(person - $1) FROM {t} GROUP BY ROLLUP (city, sex)"]):
                before = scalar(conn, "SELECT count(*) FROM dx.ledger")
                try:
                    execute(a, f"PREPARE bad{i}_{t}(int) AS " + q.format(t=t))
                    rows(a, f"EXECUTE bad{i}_{t}(1)")
                    raise AssertionError(("ran", t, q))
                except psycopg2.Error as e:
                    assert e.pgcode == "0A000" and e.diag.message_hint, (t, q, e.pgcode, str(e))
                    assert not re.search(r"\bc\d+\b|solo", str(e) + str(e.diag.message_hint)), str(e)
                assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before, (t, q)
        workers_charged_nothing(db)
        a.close()
        conn.close()
