"""Privacy units on Citus tables (issue 27): each unit's rows are bounded (dx._unit_rank, the rule of
core/unit_bound.h) on the workers when the table is distributed by the unit column (a unit's rows
are on one shard), through an intermediate result on the coordinator otherwise; the noise is drawn
once on the coordinator. Noiseless answers equal native SQL, seeded answers equal the local table's,
one ledger row per statement on the coordinator, and an analyst on a worker reads no shard and
releases nothing."""
import psycopg2

from citus_common import citus_db, connect, create_role, execute, port, rows, scalar

ANALYST = "units_analyst"
COLUMNS = [
    ("age", '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}'),
    ("region", '{"values": ["north", "south", "east", "west", "none"]}', '{"type": "discrete", "weight": 1}'),
    ("income", '{"min": 0, "max": 200000, "step": 100}', '{"type": "none"}'),
]
NOISELESS = [(c, d, '{"type": "none"}') for c, d, _ in COLUMNS]


def rows_sql(persons, most=3):
    """Person p has 1 + p % most rows (at most `most`), each with its own age, region and income."""
    return f"""SELECT row_number() OVER (), p, 18 + (p * 37 + k * 11) % 73,
                      (ARRAY['north','south','east','west'])[1 + (p * 7 + k) % 4], ((p::bigint * 7919 + k * 101) % 2000) * 100
               FROM generate_series(1, {persons}) p, generate_series(1, {most}) k WHERE k <= 1 + p % {most}"""


def make_table(conn, name, by, persons=3000, most=3, k=3, presence="1.0", columns=COLUMNS, shards=8, analyst=None):
    """A visits table distributed by `by` ('person': co-located with the unit; 'id': not; None: local)."""
    execute(conn, f"CREATE TABLE {name} (id bigint, person int, age int, region text, income int)")
    if by:
        execute(conn, f"SELECT create_distributed_table('{name}', '{by}', shard_count => {shards})")
    execute(conn, f"INSERT INTO {name} {rows_sql(persons, most)}")
    execute(conn, f"SELECT dx.protect_table('{name}', '{presence}')")
    for col, domain, metric in columns:
        execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (name, col, domain, metric))
    execute(conn, f"SELECT dx.set_privacy_unit('{name}', 'person', {k})")
    execute(conn, f"SELECT dx.grant_budget('postgres', '{name}', 100000)")
    if analyst:
        execute(conn, f"SELECT dx.grant_budget(%s::regrole, '{name}', 1000)", (analyst,))


def norm(rs):
    return [tuple(round(float(v), 6) if not isinstance(v, str) and v is not None else v for v in r) for r in rs]


EXACT = [  # dx on the noiseless table, native on the same rows (every unit holds at most k rows)
    ("SELECT dx.count(*) FROM {t}", "SELECT count(*) FROM {t}"),
    ("SELECT dx.sum(income) FROM {t} WHERE age > 40", "SELECT sum(income) FROM {t} WHERE age > 40"),
    ("SELECT round(dx.avg(age)::numeric, 6) FROM {t} WHERE region = 'east'",
     "SELECT round(avg(age)::numeric, 6) FROM {t} WHERE region = 'east'"),
    ("SELECT dx.count(DISTINCT person) FROM {t}", "SELECT count(DISTINCT person) FROM {t}"),
    ("SELECT dx.count_units(person) FROM {t} WHERE age < 50", "SELECT count(DISTINCT person) FROM {t} WHERE age < 50"),
    ("SELECT region, dx.count(*), dx.sum(income) FROM {t} GROUP BY region ORDER BY 1",
     "SELECT r, count(v.id), coalesce(sum(v.income), 0) FROM unnest(ARRAY['east','none','north','south','west']) r "
     "LEFT JOIN {t} v ON v.region = r GROUP BY r ORDER BY 1"),
    ("SELECT region, dx.count(DISTINCT person) FROM {t} WHERE age > 30 GROUP BY region ORDER BY 1",
     "SELECT r, count(DISTINCT v.person) FROM unnest(ARRAY['east','none','north','south','west']) r "
     "LEFT JOIN {t} v ON v.region = r AND v.age > 30 GROUP BY r ORDER BY 1"),
]


def test_units_noiseless_answers_equal_native_sql():
    """Co-located (distributed by the unit) and not (by id): exact answers equal PostgreSQL's; the
    bound is applied (a table whose units hold up to 6 rows, k = 3: the count is sum(least(n, 3)))."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_table(conn, "by_unit", "person", presence="Infinity", columns=NOISELESS)
        make_table(conn, "by_id", "id", presence="Infinity", columns=NOISELESS)
        make_table(conn, "heavy", "person", persons=2000, most=6, presence="Infinity", columns=NOISELESS)
        make_table(conn, "heavy_by_id", "id", persons=2000, most=6, presence="Infinity", columns=NOISELESS)
        for t in ("by_unit", "by_id"):
            for dx_sql, native in EXACT:
                got, want = norm(rows(conn, dx_sql.format(t=t))), norm(rows(conn, native.format(t=t)))
                assert got == want, (t, dx_sql, got, want)
        for t in ("heavy", "heavy_by_id"):
            bounded = scalar(conn, f"SELECT sum(least(n, 3)) FROM (SELECT count(*) n FROM {t} GROUP BY person) s")
            assert bounded < scalar(conn, f"SELECT count(*) FROM {t}")
            assert float(scalar(conn, f"SELECT dx.count(*) FROM {t}")) == float(bounded), t
            assert float(scalar(conn, f"SELECT dx.count(DISTINCT person) FROM {t}")) == 2000.0, t
            # grouped: each unit keeps 3 of its rows, in whatever groups they are
            got = rows(conn, f"SELECT region, dx.count(*) FROM {t} GROUP BY region")
            assert sum(float(n) for _, n in got) == float(bounded), (t, got)
        conn.close()


def test_units_bounded_on_the_workers_when_co_located():
    """Distributed by the unit column: the shards' task queries hold the ranking (the window of the
    bound runs on the workers) and the coordinator only releases; distributed by another column, the
    bound reads the rows through an intermediate result."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_table(conn, "by_unit", "person", persons=300)
        make_table(conn, "by_id", "id", persons=300)
        for q in ("SELECT dx.count(*) FROM {t}", "SELECT region, dx.sum(income) FROM {t} GROUP BY region"):
            plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + q.format(t="by_unit")))
            tasks = [line for line in plan.splitlines() if "Query: " in line and "by_unit_" in line]
            # (citusunit) each shard's task bounds its own rows by the shard's unit profile: a row-local
            # qual, no sort, no coordinator OID or profile byte in the task
            assert tasks and all("_unit_keep_shard(person, tableoid, ctid, 3, 'person'::text)" in t for t in tasks), plan
            assert not any("OVER" in t or "_unit_rank" in t or "_unit_profile" in t for t in tasks), plan
            oid = scalar(conn, "SELECT 'by_unit'::regclass::oid")
            assert not any(str(oid) in t for t in tasks), plan
            # the window path stays for comparison (superusers only)
            execute(conn, "SET dxpriv.unit_bounding = sort")
            plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + q.format(t="by_unit")))
            execute(conn, "RESET dxpriv.unit_bounding")
            tasks = [line for line in plan.splitlines() if "Query: " in line and "by_unit_" in line]
            assert tasks and all("row_number() OVER" in t and "_unit_rank" in t for t in tasks), plan
            plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + q.format(t="by_id")))
            assert "intermediate_result" in plan, plan
        conn.close()


def test_units_seeded_answers_equal_the_local_table():
    with citus_db() as db:
        conn = connect("coord", db)
        make_table(conn, "by_unit", "person")
        make_table(conn, "by_id", "id")
        make_table(conn, "local_copy", None)
        for q in ["SELECT dx.count(*) FROM {t}",
                  "SELECT dx.count(*), dx.sum(income), dx.avg(age) FROM {t} WHERE age > 30",
                  "SELECT dx.count(DISTINCT person) FROM {t}",
                  "SELECT region, dx.count(*), dx.avg(income) FROM {t} WHERE age > 60 GROUP BY region ORDER BY 1",
                  "SELECT region, dx.count_units(person) FROM {t} GROUP BY region ORDER BY 1"]:
            answers = []
            for t in ("by_unit", "by_id", "local_copy"):
                execute(conn, "SET dxpriv.test_seed = 5")
                answers.append(rows(conn, q.format(t=t)))
            if "GROUP BY" in q:  # a distributed plan draws the groups' noise in another order (as without units)
                assert [r[0] for r in answers[0]] == [r[0] for r in answers[2]] == [r[0] for r in answers[1]], answers
            else:
                assert answers[0] == answers[2] and answers[1] == answers[2], (q, answers)
        conn.close()


def test_units_one_ledger_row_on_the_coordinator():
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
        make_table(conn, "by_unit", "person", persons=500, analyst=ANALYST)
        make_table(conn, "by_id", "id", persons=500, analyst=ANALYST)
        a = connect("coord", db, user=ANALYST)
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        for t in ("by_unit", "by_id"):
            scalar(a, f"SELECT dx.count(*) FROM {t} WHERE age > 30")
            rows(a, f"SELECT region, dx.count(*), dx.count(DISTINCT person) FROM {t} GROUP BY region")
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") - before == 4
        led = rows(conn, "SELECT role::text, array_length(scales, 1) FROM dx.ledger ORDER BY id DESC LIMIT 2")
        assert led == [(ANALYST, 10), (ANALYST, 1)], led
        for w in ("w1", "w2"):
            wc = connect(w, db)
            if scalar(wc, "SELECT count(*) FROM pg_extension WHERE extname = 'dxpriv'"):
                assert scalar(wc, "SELECT count(*) FROM dx.ledger") == 0
            wc.close()
        a.close()
        conn.close()


def _refused(conn, sql, code=None):
    try:
        rows(conn, sql)
    except psycopg2.Error as e:
        assert code is None or e.pgcode == code, f"{sql}: {e.pgcode} {e.pgerror}"
        return e
    raise AssertionError(f"not refused: {sql}")


def test_units_attacks_on_the_coordinator_and_the_workers():
    """The analyst reads no row on the coordinator, cannot call the ranking or a release herself, and
    on a worker (where operators reject her in pg_hba.conf; here she logs in) reads no shard and
    cannot run the workers' share of a statement (the rank, the units' window) to skip the charge."""
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
        make_table(conn, "by_unit", "person", persons=300, analyst=ANALYST)
        a = connect("coord", db, user=ANALYST)
        _refused(a, "SELECT * FROM by_unit", "42501")
        _refused(a, "SELECT person, count(*) FROM by_unit GROUP BY person", "42501")
        _refused(a, "SELECT dx._unit_rank(tableoid, ctid) FROM by_unit", "42501")
        before = scalar(conn, "SELECT count(*) FROM dx.ledger")
        shards = [r[0] for r in rows(conn, "SELECT shard_name FROM citus_shards WHERE table_name = 'by_unit'::regclass")]
        for node in ("w1", "w2"):
            w = connect(node, db, user=ANALYST)
            local = [s for s in shards if scalar(w, "SELECT to_regclass(%s) IS NOT NULL", (s,))]
            assert local, node
            for s in local:
                _refused(w, f"SELECT count(*) FROM {s}", "42501")
                _refused(w, f"SELECT person, count(*) FROM {s} GROUP BY person", "42501")
                _refused(w, f"SELECT sum(dx._units(1.0, 1.0)) FROM {s}")
                _refused(w, f"SELECT dx._unit_rank(tableoid, ctid) FROM {s}")
                _refused(w, f"SELECT dx.count(*) FROM {s}")
            w.close()
        assert scalar(conn, "SELECT count(*) FROM dx.ledger") == before
        a.close()
        conn.close()


def per_person_sql(persons, most, text_unit=False):
    """Person p holds 1 + p % most rows; every column but `flag` depends on the person only, so the
    answers over any choice of at most k rows per person are known natively: sum(least(n, k) * v)."""
    unit = "'u' || p" if text_unit else "p"
    return f"""SELECT row_number() OVER (), {unit}, 18 + (p * 37) % 73,
                      (ARRAY['north','south','east','west'])[1 + (p * 7) % 4], ((p::bigint * 7919) % 2000) * 100,
                      k % 2 = 0
               FROM generate_series(1, {persons}) p, generate_series(1, {most}) k WHERE k <= 1 + p % {most}"""


def make_person_table(conn, name, by, persons=2000, most=6, k=3, text_unit=False, shards=8):
    ptype = "text" if text_unit else "int"
    execute(conn, f"CREATE TABLE {name} (id bigint, person {ptype}, age int, region text, income int, flag bool)")
    if by:
        execute(conn, f"SELECT create_distributed_table('{name}', '{by}', shard_count => {shards})")
    execute(conn, f"INSERT INTO {name} {per_person_sql(persons, most, text_unit)}")
    execute(conn, f"SELECT dx.protect_table('{name}', 'Infinity')")
    for col, domain, metric in NOISELESS + [("flag", '{"values": [true, false]}', '{"type": "none"}')]:
        execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (name, col, domain, metric))
    execute(conn, f"SELECT dx.set_privacy_unit('{name}', 'person', {k})")
    execute(conn, f"SELECT dx.grant_budget('postgres', '{name}', 100000)")


def bounded_native(t, k):
    """Native SQL of the bounded answers of per_person tables (each unit keeps least(n, k) rows)."""
    per = f"(SELECT person, count(*) n, min(age) age, min(region) region, min(income) income FROM {t} GROUP BY person) u"
    return [
        ("SELECT dx.count(*) FROM {t}", f"SELECT sum(least(n, {k})) FROM {per}"),
        ("SELECT dx.sum(income) FROM {t} WHERE age > 40", f"SELECT sum(least(n, {k}) * income) FROM {per} WHERE age > 40"),
        ("SELECT round(dx.avg(age)::numeric, 6) FROM {t} WHERE region = 'east'",
         f"SELECT round((sum(least(n, {k}) * age)::numeric / sum(least(n, {k})))::numeric, 6) FROM {per} WHERE region = 'east'"),
        ("SELECT dx.count(*) FILTER (WHERE age < 50), dx.sum(income) FILTER (WHERE region = 'west') FROM {t}",
         f"SELECT sum(least(n, {k})) FILTER (WHERE age < 50), coalesce(sum(least(n, {k}) * income) FILTER (WHERE region = 'west'), 0) FROM {per}"),
        ("SELECT region, dx.count(*), dx.sum(income) FROM {t} GROUP BY region ORDER BY 1",
         f"SELECT r, coalesce(sum(least(coalesce(n, 0), {k})), 0), coalesce(sum(least(n, {k}) * income), 0) FROM "
         f"unnest(ARRAY['east','none','north','south','west']) r LEFT JOIN {per} ON u.region = r GROUP BY r ORDER BY 1"),
        ("SELECT dx.count(DISTINCT person) FROM {t} WHERE age > 30", f"SELECT count(*) FROM {per} WHERE age > 30"),
        ("SELECT region, dx.count_units(person) FROM {t} GROUP BY region ORDER BY 1",
         f"SELECT r, count(u.person) FROM unnest(ARRAY['east','none','north','south','west']) r "
         f"LEFT JOIN {per} ON u.region = r GROUP BY r ORDER BY 1"),
    ]


def check_bounded(conn, t, k):
    for dx_sql, native in bounded_native(t, k):
        got, want = norm(rows(conn, dx_sql.format(t=t))), norm(rows(conn, native))
        assert got == want, (t, dx_sql, got, want)


def test_units_per_shard_bounding_answers():
    """(citusunit) Distributed by the unit column, bounded per shard on the workers: heavy units (up to
    6 rows) keep exactly k rows whatever the statement (count, sum, avg, WHERE, FILTER, GROUP BY,
    COUNT(DISTINCT unit), count_units), for int and text units, k = 1 and 3, and the rows are kept before
    WHERE (a unit's k rows are drawn from all its rows, then WHERE applies)."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_person_table(conn, "pu3", "person")
        make_person_table(conn, "pu1", "person", k=1)
        make_person_table(conn, "put", "person", text_unit=True, shards=4)
        make_person_table(conn, "local3", None)
        for t, k in (("pu3", 3), ("pu1", 1), ("put", 3), ("local3", 3)):
            check_bounded(conn, t, k)
        for t in ("pu3", "pu1", "put"):
            plan = "\n".join(r[0] for r in rows(conn, f"EXPLAIN (VERBOSE) SELECT dx.count(*) FROM {t}"))
            assert "_unit_keep_shard" in plan, plan
            # count_units / COUNT(DISTINCT unit): one row per (unit, group) of each shard's kept rows, in
            # the shard's task (DISTINCT ON the unit, the distribution column), no window
            for q in (f"SELECT region, dx.count(DISTINCT person) FROM {t} GROUP BY region",
                      f"SELECT dx.count_units(person) FROM {t} WHERE age > 30"):
                plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + q))
                tasks = [line for line in plan.splitlines() if "Query: " in line and f"{t}_" in line]
                assert tasks and all("_unit_keep_shard" in x and "DISTINCT ON" in x for x in tasks), plan
                assert not any("OVER" in x or "intermediate_result" in x for x in tasks), plan
        # before WHERE: flag holds on every other row (floor(n/2) of a unit's n rows). Kept first (3 of n at
        # random), filtered after, the units of 1..6 rows count 0, 1, 1, 1.5, 1.2, 1.5 flagged rows in
        # expectation (6.2 per person of each size); filtered first, they would count 0, 1, 1, 2, 2, 3 (9)
        for t in ("pu3", "local3"):
            m = scalar(conn, f"SELECT count(*) FROM (SELECT person FROM {t} GROUP BY person HAVING count(*) = 6) s")
            flagged = float(scalar(conn, f"SELECT dx.count(*) FROM {t} WHERE flag"))
            assert abs(flagged - 6.2 * m) < 0.3 * m, (t, flagged, m)
        conn.close()


def test_units_per_shard_fresh_after_writes_and_moves():
    """(citusunit) A write between statements (a new heavy unit, rows added to a light unit, a delete,
    inside a transaction too) gives answers of the new rows; a shard moved to the other worker keeps
    its units whole, so the answers stay exact."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_person_table(conn, "pw", "person", persons=600)
        check_bounded(conn, "pw", 3)  # (shards without a version: profiles built per statement)
        assert scalar(conn, "SELECT dx.version_shards('pw')") == 8  # (then cached per shard version)
        check_bounded(conn, "pw", 3)
        check_bounded(conn, "pw", 3)
        execute(conn, "INSERT INTO pw SELECT 100000 + g, 100000, 30, 'north', 1000, true FROM generate_series(1, 9) g")
        execute(conn, "INSERT INTO pw SELECT 200000 + g, person, age, region, income, flag "
                      "FROM (SELECT * FROM pw WHERE person = 6 LIMIT 1) s, generate_series(1, 4) g")
        check_bounded(conn, "pw", 3)
        execute(conn, "DELETE FROM pw WHERE person % 7 = 0")
        check_bounded(conn, "pw", 3)
        tx = connect("coord", db, autocommit=False)
        execute(tx, "INSERT INTO pw SELECT 300000 + g, 300000, 30, 'south', 500, false FROM generate_series(1, 8) g")
        check_bounded(tx, "pw", 3)
        execute(tx, "UPDATE pw SET income = 600 WHERE person = 300000")  # (new ctids for a heavy unit's rows)
        check_bounded(tx, "pw", 3)
        tx.rollback()
        tx.close()
        check_bounded(conn, "pw", 3)
        # move a shard of pw to the other worker (its rows, units whole, get new ctids and a new OID)
        shard, node, port_ = rows(conn, "SELECT shardid, nodename, nodeport FROM citus_shards WHERE table_name = 'pw'::regclass "
                                        "ORDER BY shardid LIMIT 1")[0]
        other = rows(conn, "SELECT nodename, nodeport FROM pg_dist_node WHERE noderole = 'primary' AND groupid > 0 "
                           "AND nodeport <> %s LIMIT 1", (port_,))[0]
        execute(conn, "SELECT citus_move_shard_placement(%s, %s, %s, %s, %s, shard_transfer_mode => 'block_writes')",
                (shard, node, port_, other[0], other[1]))
        check_bounded(conn, "pw", 3)
        assert scalar(conn, "SELECT dx.version_shards('pw')") == 8
        check_bounded(conn, "pw", 3)
        execute(conn, "INSERT INTO pw SELECT 400000 + g, 400000, 30, 'west', 700, true FROM generate_series(1, 5) g")
        check_bounded(conn, "pw", 3)
        conn.close()


def test_units_per_shard_attacks():
    """(citusunit) The worker-side keep function is refused to an analyst everywhere: by hand on the
    coordinator (on the table or a constant row), inside her dx statement, and on a worker on a shard;
    her charged statement still bounds each unit to k rows (noiseless count = sum(least(n, k))), and
    its noisy answer under one seed equals the window path's (same sensitivity, hence same scale)."""
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
        make_person_table(conn, "pa", "person", persons=900)
        execute(conn, f"SELECT dx.grant_budget(%s::regrole, 'pa', 1000)", (ANALYST,))
        a = connect("coord", db, user=ANALYST)
        _refused(a, "SELECT dx._unit_keep_shard(person, tableoid, ctid, 1000, 'person') FROM pa", "42501")
        _refused(a, "SELECT dx._unit_keep_shard(5, 'pa'::regclass::oid, '(0,1)'::tid, 1, 'person')", "42501")
        _refused(a, "SELECT dx.count(*) FROM pa WHERE dx._unit_keep_shard(person, tableoid, ctid, 1000, 'person')")
        _refused(a, "SELECT dx._unit_keep_shard(5, 'pa'::regclass::oid, '(0,1)'::tid, 1, 'person'), dx.count(*) FROM pa")
        _refused(a, "SELECT dx.version_shards('pa')", "42501")
        _refused(a, "SELECT dx._contents_trigger_on_shard('pa')", "42501")
        bounded = float(scalar(conn, "SELECT sum(least(n, 3)) FROM (SELECT count(*) n FROM pa GROUP BY person) s"))
        assert float(scalar(a, "SELECT dx.count(*) FROM pa")) == bounded  # (noiseless table: exact)
        # no grant lets her SELECT a distributed table (it would reach the shards); on a local table
        # with such a grant the keep function refuses her as an analyst (test_attacks units
        # unit_keep_shard_*)
        _refused(conn, f"GRANT SELECT ON pa TO {ANALYST}", "42501")
        shards = [r[0] for r in rows(conn, "SELECT shard_name FROM citus_shards WHERE table_name = 'pa'::regclass")]
        for node in ("w1", "w2"):
            w = connect(node, db, user=ANALYST)
            for s in [s for s in shards if scalar(w, "SELECT to_regclass(%s) IS NOT NULL", (s,))]:
                _refused(w, f"SELECT dx._unit_keep_shard(5, '{s}'::regclass::oid, '(0,1)'::tid, 1, 'person')", "42501")
                _refused(w, f"SELECT count(*) FROM {s} WHERE dx._unit_keep_shard(person, tableoid, ctid, 3, 'person')", "42501")
            w.close()
        a.close()
        conn.close()


def test_units_per_shard_same_noise_as_the_window_path():
    """(citusunit) Under one seed, the per-shard bounding and the window path release the same noisy
    count of a table with heavy units (the count of bounded rows does not depend on which rows are
    kept): the sensitivity is the unit's k on both paths."""
    with citus_db() as db:
        conn = connect("coord", db)
        make_table(conn, "noisy", "person", persons=2000, most=6)
        answers = []
        for bounding in ("hash", "sort"):
            execute(conn, f"SET dxpriv.unit_bounding = {bounding}")
            execute(conn, "SET dxpriv.test_seed = 11")
            answers.append(rows(conn, "SELECT dx.count(*), dx.count(*) FILTER (WHERE age > 200) FROM noisy"))
        execute(conn, "RESET dxpriv.unit_bounding")
        assert answers[0] == answers[1], answers
        conn.close()


def test_units_shard_on_the_coordinator_keeps_the_window():
    """(citusunit) A table distributed by its unit column with a shard on the coordinator: Citus reads
    that shard in the analyst's own backend, where the per-shard keep function refuses her, so the
    table keeps the window-function bounding and her statements are answered (bounded to k)."""
    create_role(ANALYST)
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
        execute(conn, "SELECT citus_set_node_property(%s, %s, 'shouldhaveshards', true)", ("127.0.0.1", port("coord")))
        make_person_table(conn, "pc", "person", persons=600)
        execute(conn, f"SELECT dx.grant_budget(%s::regrole, 'pc', 1000)", (ANALYST,))
        assert scalar(conn, "SELECT count(*) FROM citus_shards WHERE table_name = 'pc'::regclass AND nodeport = %s",
                      (port("coord"),)) > 0
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT dx.count(*) FROM pc"))
        assert "_unit_keep_shard" not in plan and "row_number() OVER" in plan, plan
        a = connect("coord", db, user=ANALYST)
        bounded = float(scalar(conn, "SELECT sum(least(n, 3)) FROM (SELECT count(*) n FROM pc GROUP BY person) s"))
        assert float(scalar(a, "SELECT dx.count(*) FROM pc")) == bounded
        a.close()
        conn.close()


def test_units_partitioned_table_keeps_k_over_all_partitions():
    """A partitioned table distributed by its unit column: a shard task reads the parent's shard, which
    the worker expands into the partitions' shards, so a per-relation profile would bound each unit per
    partition (k rows in each). Such tables keep the window functions, and each unit keeps k rows over
    all its partitions; the per-shard keep function refuses a partition (or a parent) even to a
    superuser on a worker."""
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE pp (id bigint, person int, age int, region text, income int, flag bool, month int) "
                      "PARTITION BY RANGE (month)")
        for m in range(3):
            execute(conn, f"CREATE TABLE pp_{m} PARTITION OF pp FOR VALUES FROM ({m}) TO ({m + 1})")
        execute(conn, "SELECT create_distributed_table('pp', 'person', shard_count => 4)")
        execute(conn, f"INSERT INTO pp SELECT s.*, (s.id % 3)::int FROM ({per_person_sql(600, 6)}) "
                      f"s(id, person, age, region, income, flag)")
        execute(conn, "SELECT dx.protect_table('pp', 'Infinity')")
        for col, domain, metric in NOISELESS + [("flag", '{"values": [true, false]}', '{"type": "none"}'),
                                                ("month", '{"min": 0, "max": 2}', '{"type": "none"}')]:
            execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", ("pp", col, domain, metric))
        execute(conn, "SELECT dx.set_privacy_unit('pp', 'person', 1)")
        execute(conn, "SELECT dx.grant_budget('postgres', 'pp', 100000)")
        # persons whose rows are in two or three partitions: k = 1 per partition would keep 2 or 3 rows
        spread = scalar(conn, "SELECT count(*) FROM (SELECT person FROM pp GROUP BY person "
                              "HAVING count(DISTINCT month) > 1) s")
        assert spread > 50, spread
        check_bounded(conn, "pp", 1)
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) SELECT dx.count(*) FROM pp"))
        assert "_unit_keep_shard" not in plan, plan
        # by hand on a worker, as the superuser, over a partition's shard: refused
        shard = scalar(conn, "SELECT shard_name('pp_0'::regclass, min(shardid)) FROM pg_dist_shard "
                             "WHERE logicalrelid = 'pp_0'::regclass AND shardid IN (SELECT shardid FROM "
                             "pg_dist_placement p JOIN pg_dist_node n USING (groupid) WHERE n.nodeport = %s)",
                       (port("w1"),))
        conn.close()
        if shard:
            w = connect("w1", db)
            _refused(w, f"SELECT count(*) FROM {shard} WHERE dx._unit_keep_shard(person, tableoid, ctid, 1, 'person')",
                     "42501")
            w.close()


def test_version_shards_quotes_the_shard_name():
    """dx.version_shards passes each shard's name to the workers as a literal (%L), so a table whose
    name holds a quote gets its triggers, and the name cannot close the literal and run other SQL on
    the workers as the extension's owner."""
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE canary (x int)")
        execute(conn, "SELECT create_distributed_table('canary', 'x', shard_count => 2)")
        name = "q'); DROP TABLE canary; --"
        execute(conn, f'CREATE TABLE "{name}" (id bigint, person int, age int, region text, income int, flag bool)')
        execute(conn, "SELECT create_distributed_table(%s, 'person', shard_count => 4)", (f'"{name}"',))
        execute(conn, "SELECT dx.protect_table(%s, 'Infinity')", (f'"{name}"',))
        execute(conn, "SELECT dx.set_privacy_unit(%s, 'person', 3)", (f'"{name}"',))
        assert scalar(conn, "SELECT dx.version_shards(%s)", (f'"{name}"',)) == 4
        assert scalar(conn, "SELECT count(*) FROM canary") == 0  # still there on every worker
        # bad inputs with Citus: a table that is not protected (42P01 with a hint), NULL
        e = _refused(conn, "SELECT dx.version_shards('canary')", "42P01")
        assert e.diag.message_hint, e.pgerror
        _refused(conn, "SELECT dx.version_shards(NULL)", "42P01")
        conn.close()
