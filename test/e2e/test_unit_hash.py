"""Privacy units without a sort (issue 23, dxpriv.unit_bounding): on random tables and random
statements, the hash bounding (the default) and the window-function bounding ('sort') keep the same
rows, so under one test seed (one rank key, one noise stream) every released answer is identical,
noiseless or noisy, in serial and parallel plans. Also checks the kept rows directly against the
rule (each unit's k rows of smallest dx._unit_rank). Grouped noisy statements run with
enable_hashagg off: a hash aggregate finalises (and draws the noise of) its groups in the order it
first met them, which follows the row source's order and so differs between the two plans; the
cells' draws are then the same stream's in another order, equal in distribution (each cell's noise is
independent of the data given its scale), but not identical. Sorted grouping finalises the groups
in key order on both paths."""
import random

from e2e_common import connect, execute, fresh_db, scalar

SEED = 2323
STATEMENTS = [
    "SELECT dx.count(*) FROM t",
    "SELECT dx.count(*), dx.sum(a), dx.avg(b) FROM t",
    "SELECT dx.sum(b) FROM t WHERE a >= {x}",
    "SELECT dx.count(*) FILTER (WHERE g = 'p'), dx.sum(a) FILTER (WHERE b < {x}) FROM t",
    "SELECT dx.count_units(u) FROM t",
    "SELECT dx.count(DISTINCT u), dx.count(*) FROM t WHERE b > {x}",
    "SELECT dx.count_units(u) FILTER (WHERE a < {x}), dx.count_units(u) FILTER (WHERE g = 'q') FROM t",
    "SELECT g, dx.count(*), dx.avg(a) FROM t GROUP BY g",
    "SELECT g, dx.count_units(u), dx.sum(b) FROM t WHERE a <> {x} GROUP BY g",
    "SELECT g, a / 25 AS band, dx.count(*), dx.count_units(u) FILTER (WHERE b >= {x}) FROM t GROUP BY g, a / 25",
]
PARALLEL = ["SET parallel_setup_cost = 0", "SET parallel_tuple_cost = 0", "SET min_parallel_table_scan_size = 0",
            "SET max_parallel_workers_per_gather = 2"]


def make_table(conn, rng, unit_type, k, noisy):
    execute(conn, f"CREATE TABLE t (u {unit_type}, g text, a int, b int)")
    rows = []
    for p in range(rng.randint(50, 400)):
        n = 1 + int(rng.expovariate(1 / 4)) if rng.random() < 0.9 else rng.randint(20, 200)
        for _ in range(n):
            g = rng.choice(["p", "q", "r", None])
            a = rng.randint(0, 100) if rng.random() > 0.05 else None
            rows.append((p if unit_type == "int" else f"unit{p}", g, a, rng.randint(0, 50)))
    rng.shuffle(rows)  # units' rows interleaved in the physical order
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO t VALUES (%s, %s, %s, %s)", rows)
    execute(conn, "ANALYZE t")
    execute(conn, f"SELECT dx.protect_table('t', '{1.0 if noisy else 'Infinity'}')")
    metric = '{"type": "absolute", "scale": 10}' if noisy else '{"type": "none"}'
    execute(conn, """SELECT dx.set_column('t', 'g', '{"values": ["p","q","r"]}', '{"type": "none"}')""")
    execute(conn, f"""SELECT dx.set_column('t', 'a', '{{"min": 0, "max": 100}}', '{metric}')""")
    execute(conn, """SELECT dx.set_column('t', 'b', '{"min": 0, "max": 50}', '{"type": "none"}')""")
    execute(conn, f"SELECT dx.set_privacy_unit('t', 'u', {k})")
    execute(conn, "SELECT dx.grant_budget(current_user::regrole, 't', 1e12)")
    return len(rows)


def answer(conn, sql, bounding):
    execute(conn, "SELECT dx.clear_cache()")
    execute(conn, f"SET dxpriv.unit_bounding = {bounding}")
    execute(conn, f"SET dxpriv.test_seed = {SEED}")
    execute(conn, "SET enable_hashagg = off")
    with conn.cursor() as cur:
        cur.execute(sql)
        return sorted(cur.fetchall(), key=repr)


def test_hash_and_sort_release_the_same_answers():
    rng = random.Random(23)
    compared = 0
    for case in range(4):
        unit_type, k, noisy = [("int", 3, False), ("text", 1, False), ("int", 5, True), ("text", 10, True)][case]
        with fresh_db() as db:
            conn = connect(db)
            n = make_table(conn, rng, unit_type, k, noisy)
            # 64 kB: the hash bounding spills partitions of units to a tape set (issue 23)
            for parallel, work_mem in ((False, "4MB"), (True, "4MB"), (False, "64kB"), (True, "64kB")):
                for s in (PARALLEL if parallel else ["RESET max_parallel_workers_per_gather"]):
                    execute(conn, s)
                execute(conn, f"SET work_mem = '{work_mem}'")
                for template in STATEMENTS:
                    sql = template.format(x=rng.randint(0, 50))
                    h, s_ = answer(conn, sql, "hash"), answer(conn, sql, "sort")
                    assert h == s_, f"{unit_type} k={k} noisy={noisy} parallel={parallel} work_mem={work_mem}: {sql}\n hash {h}\n sort {s_}"
                    compared += 1
            execute(conn, "RESET work_mem")
            # the rule itself: the bounded count is sum over units of min(rows, k); the kept sum of a
            # is the reference's over each unit's k rows of smallest rank (same seed: same key)
            execute(conn, "RESET dxpriv.unit_bounding")
            if not noisy:
                execute(conn, f"SET dxpriv.test_seed = {SEED}")
                ref = scalar(conn, f"""SELECT sum(a) FROM (SELECT a, row_number() OVER (PARTITION BY u
                    ORDER BY dx._unit_rank(t.tableoid, t.ctid)) AS r FROM t) s WHERE r <= {k}""")
                execute(conn, f"SET dxpriv.test_seed = {SEED}")
                execute(conn, "SELECT dx.clear_cache()")
                assert float(scalar(conn, "SELECT dx.sum(a) FROM t")) == float(ref)
                bounded = scalar(conn, f"SELECT sum(least(c, {k})) FROM (SELECT count(*) c FROM t GROUP BY u) s")
                execute(conn, "SELECT dx.clear_cache()")
                assert int(scalar(conn, "SELECT dx.count(*) FROM t")) == int(bounded)
            print(f"  {unit_type} units, k = {k}, {'noisy' if noisy else 'noiseless'}, {n} rows: equal")
            conn.close()
    assert compared == 4 * 4 * len(STATEMENTS)
