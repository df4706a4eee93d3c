"""Review of intgrid (the workers' dx._weigh_units: int_grid_index and the per-call-site UnitsMemo):
attacks on the fused lookups' per-call-site caches through direct calls. Each test fails if its
attack works. The caches (executor/lookup.cpp) keep the decoded table, the layout's map, the group
keys and the table's units per call site; a plan constant is the same Datum at every row, but a
value computed per row (or a PL/pgSQL variable) can bring other bytes at the address the previous
row's value had, and a NULL table must be refused, never read."""
from fractions import Fraction

import psycopg2

from citus_common import citus_db, connect, execute, rows, scalar
from test_citus_weigh_units_memo import _expected, _fused_call, _table

NULL_CALLS = [
    "dx._weigh(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)",
    "dx._weigh_int(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)",
    "dx._weigh_cached(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)",
    "dx._weigh_int_cached(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)",
    "dx._weigh_units(NULL::bytea, 'r', 1.0, 5, 0::float8, 10::float8, 1::float8)",
    "dx._weigh_units_cached(NULL::bytea, 'r', 1.0, 5, 0::float8, 10::float8, 1::float8)",
]


def test_a_null_table_is_refused_not_read():
    """The fused lookups are not strict: a NULL table reached the detoasting of a null pointer
    (the backend crashed, and the whole node restarted). Each is refused (22023), alone and at a
    row after rows that had a table; the session goes on."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        table, rest = _fused_call(conn, "SELECT dx.sum(v) FROM dist WHERE v > 100", "v")
        calls = NULL_CALLS + [f"dx._weigh_units(tb, {table.split(', ', 1)[1]}, 1.0, 300{rest})"]
        for call in calls:
            sql = (f"SELECT {call} FROM (VALUES ({table.split(', ', 1)[0]}), (NULL::bytea)) t(tb)" if "tb" in call
                   else f"SELECT {call}")
            try:
                rows(conn, sql)
            except psycopg2.Error as e:
                assert e.pgcode == "22023", (call, e.pgcode, str(e))
            else:
                raise AssertionError(f"a NULL table ran: {call}")
            assert scalar(conn, "SELECT 1") == 1
        conn.close()


def _two_tables(conn):
    """Two tables of one layout (v > 100 and v > 500 on v's grid), the layout, the columns' rest."""
    above100, rest = _fused_call(conn, "SELECT dx.sum(v) FROM dist WHERE v > 100", "v")
    above500, rest2 = _fused_call(conn, "SELECT dx.sum(v) FROM dist WHERE v > 500", "v")
    assert rest == rest2
    t100, t500 = above100.split(", '")[0], above500.split(", '")[0]
    return t100, t500, "'" + above100.split(", '", 1)[1], rest


def test_a_table_computed_per_row_is_its_own():
    """A table computed per row lands in per-tuple memory, at the address the previous row's table
    had: the caches compared the pointer and answered the second table's rows from the first table
    (its decoded view, and dx._weigh_units' kept units). Each row is answered from its own table."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        t100, t500, layout, rest = _two_tables(conn)
        pairs = [(t100, 300), (t500, 300), (t100, 300), (t500, 700), (t100, 700), (t500, 300), (t100, 300)]
        values = "(VALUES " + ", ".join(f"({tb}, {x})" for tb, x in pairs) + ") t(tb, x)"
        want = [_expected(x, 1.0, 100 if tb == t100 else 500) for tb, x in pairs]
        assert want[0] is not None and want[1] is None  # the two tables differ at 300
        for computed in ("tb || ''::bytea", "decode(encode(tb, 'hex'), 'hex')", "substring(tb from 1)"):
            got = [r[0] for r in rows(conn, f"SELECT dx._weigh_units({computed}, {layout}, 1.0, x{rest}) FROM {values}")]
            assert got == want, (computed, got, want)
            got = [None if r[0] is None else int(r[0])
                   for r in rows(conn, f"SELECT dx._weigh({computed}, {layout}, x{rest}) FROM {values}")]
            assert got == want, (computed, got, want)
        conn.close()


def test_a_layout_computed_per_row_is_its_own():
    """The same for the layout: a layout computed per row ('q' constants in its text) is read anew
    when its text differs from the previous row's, wherever it lies."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        t100, _, _, _ = _two_tables(conn)
        a, b = "q-1000:995:7;", "q-1000:995:14;"  # v's grid, and a coarser one (fewer points: still inside the table)
        seq = [a, b, a, b, b, a]
        values = "(VALUES " + ", ".join(f"('{lay}')" for lay in seq) + ") t(lay)"
        got = [r[0] for r in rows(conn, f"SELECT dx._weigh_units({t100}, lay || '', 1.0, 300) FROM {values}")]
        want = [r[0] for r in rows(conn, f"""SELECT CASE WHEN lay = '{a}' THEN dx._weigh_units({t100}, '{a}', 1.0, 300)
                                                ELSE dx._weigh_units({t100}, '{b}', 1.0, 300) END FROM {values}""")]
        assert want[0] == 302 and want[1] is None, want  # point 186 (302) on v's grid; 93 (-349) on the coarse one
        assert got == want, (got, want)
        conn.close()


def test_group_keys_computed_per_row_are_their_own():
    """dx._group_key with its values array computed per row: each row's group reads its own array."""
    with citus_db() as db:
        conn = connect("coord", db)
        got = [r[0] for r in rows(conn, """SELECT dx._group_key(1, array_append(k, 0))
                                           FROM (VALUES ('{1,2,3}'::int[]), ('{7,8,9}'), ('{1,2,3}'), ('{7,8,9}')) t(k)""")]
        assert got == [2, 8, 2, 8], got
        got = [r[0] for r in rows(conn, """SELECT dx._group_key(g, array_append(k, 0))
                                           FROM (VALUES (1, '{1,2,3}'::int[]), (2, '{7,8}'), (1, '{1,2,3}')) t(g, k)""")]
        assert got == [2, 0, 2], got  # (the second array's third value is its own appended 0)
        conn.close()


def test_plpgsql_variable_table_and_a_caught_error():
    """A PL/pgSQL loop: the table is a variable reassigned at each turn, computed in the simple
    expression (per-tuple memory, reset at each evaluation), and one turn's call raises (a NaN grid)
    inside an EXCEPTION block. The simple expression's call site lives across the turns: each turn's
    units are its own table's."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        t100, t500, layout, rest = _two_tables(conn)
        execute(conn, f"""CREATE FUNCTION r8_loop(a bytea, b bytea) RETURNS int8[] LANGUAGE plpgsql AS $$
            DECLARE t bytea; g float8; r int8; acc int8[] := '{{}}';
            BEGIN
              FOR i IN 1..8 LOOP
                t := CASE WHEN i % 2 = 1 THEN a ELSE b END;
                g := CASE WHEN i = 5 THEN 'NaN'::float8 ELSE 1.0 END;
                BEGIN
                  r := dx._weigh_units(t || ''::bytea, {layout}, g, 300{rest});
                EXCEPTION WHEN invalid_parameter_value THEN r := -1;
                END;
                acc := acc || r;
              END LOOP;
              RETURN acc;
            END $$""")
        got = scalar(conn, f"SELECT r8_loop({t100}, {t500})")
        assert got == [302, None, 302, None, -1, None, 302, None], got
        conn.close()


def _peak_kb(db, sql):
    """The peak resident memory (VmHWM, kB) of a fresh coordinator backend that ran sql (the
    clusters run on this machine: its /proc is readable)."""
    conn = connect("coord", db)
    pid = scalar(conn, "SELECT pg_backend_pid()")
    scalar(conn, sql)
    with open(f"/proc/{pid}/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    conn.close()
    return peak


def test_a_layout_or_group_keys_per_row_keep_memory_bounded():
    """A call site whose layout or group keys change at every row rebuilt its map (and indexers) or
    copied the array in the call site's memory without freeing the previous one: 40000 rows took
    ~6 kB (a layout) and ~8 kB (500 keys) each, for the statement's life. The previous copies are
    freed: ten times the rows costs no more than 64 MB more at peak."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        t100, _, _, _ = _two_tables(conn)
        conn.close()
        layout = (f"SELECT sum(dx._weigh_units({t100}, CASE WHEN g % 2 = 0 THEN 'q-1000:995:7;' ELSE 'q-1000:995:14;' END"
                  " || '', 1.0, g % 2000 - 1000)) FROM generate_series(1, {n}) g")
        keys = ("SELECT sum(dx._group_key(1, array_append(CASE WHEN g % 2 = 0 THEN a ELSE b END, 0)))"
                " FROM (SELECT array_agg(i) a, array_agg(-i) b FROM generate_series(1, 500) i) x, generate_series(1, {n}) g")
        for sql in (layout, keys):
            small, large = _peak_kb(db, sql.format(n=4000)), _peak_kb(db, sql.format(n=40000))
            assert large - small < 64 * 1024, (sql, small, large)


# integral grids at int_grid_of's edges (lo, hi, step): the int32 range in 10^6 points; lo at -2^40
# with steps of 2^31 (ties at +-2^30 from the points); a 3-point grid of a prime step; int2's range
# in steps of 2 (ties at every odd value)
EDGE_GRIDS = [(-2147483648, 2147483647, 4295), (-1099511627776, 1099511627776, 2147483648),
              (-1000000, 1000000, 999983), (-32768, 32767, 2)]


def _edge_values(lo, step, last, small):
    """int32 (int16 when small) values around the points and half-way points int values reach."""
    lim = 32767 if small else 2147483647
    out = {-lim - 1, -lim, -1, 0, 1, lim - 1, lim}
    for i in range(last + 1):
        p = lo + i * step
        if p < -lim - 1 - step or p > lim + step:
            continue
        for base in (p, p + step // 2, p + (step + 1) // 2):
            out.update(v for v in range(base - 2, base + 3) if -lim - 1 <= v <= lim)
        if len(out) > 3000:
            break
    return sorted(out)


def _native_point(v, lo, step, last):
    q = Fraction(v - lo, step)
    i = int(q + Fraction(1, 2)) if q >= 0 else -int(-q + Fraction(1, 2))
    return lo + step * min(max(i, 0), last)


def test_int_columns_on_edge_grids_match_the_double_path_and_native_rounding():
    """Direct calls with int4 and int2 arguments (the integer path) on grids at int_grid_of's edges
    give the same point as the float8 argument (the double path) and as exact rounding (half away
    from zero, clamped), at the int extremes, grid points, ties and their neighbours."""
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE eg (id bigint, " + ", ".join(f"c{i} bigint" for i in range(len(EDGE_GRIDS))) + ")")
        execute(conn, "SELECT create_distributed_table('eg', 'id', shard_count => 2)")
        execute(conn, "SELECT dx.protect_table('eg', 'Infinity')")
        for i, (lo, hi, step) in enumerate(EDGE_GRIDS):
            execute(conn, f"""SELECT dx.set_column('eg', 'c{i}', '{{"min": {lo}, "max": {hi}, "step": {step}}}', '{{"type": "none"}}')""")
        execute(conn, "SELECT dx.grant_budget('postgres'::regrole, 'eg', 1e6)")
        checked = 0
        for i, (lo, hi, step) in enumerate(EDGE_GRIDS):
            last = (hi - lo) // step
            table, rest = _fused_call(conn, f"SELECT dx.sum(c{i}) FROM eg", f"c{i}")
            for typ, small in (("int4", False), ("int2", True)):
                vals = _edge_values(lo, step, last, small)
                got = rows(conn, f"""SELECT x, dx._weigh_units({table}, 1.0, x::{typ}{rest}),
                                            dx._weigh_units({table}, 1.0, x::float8{rest})
                                     FROM unnest(%s::bigint[]) x""", (vals,))
                for x, by_int, by_double in got:
                    want = _native_point(x, lo, step, last)
                    assert by_int == by_double == want, (lo, step, typ, x, by_int, by_double, want)
                    checked += 1
        assert checked > 5000, checked
        conn.close()


def test_local_grouped_int_columns_on_edge_grids():
    """The one-pass transition's grouped shapes (local tables: the integer path through
    range_column_index) and the workers' dx._weigh_units (distributed) give native SQL's rounding on
    int4 and int2 columns declared on edge grids, with the int extremes, ties and NULLs in the rows."""
    with citus_db() as db:
        conn = connect("coord", db)
        # (an int column's bounds must fit its type both ways: -2^31 and -2^15 are refused)
        a_lo, a_hi, a_step = -2147483647, 2147483647, 42950  # (ties 21475 past each point)
        b_lo, b_hi, b_step = -32767, 32767, 2  # (points at odd values: ties at every even one)
        for name, dist in (("eloc", False), ("edist", True)):
            execute(conn, f"CREATE TABLE {name} (id bigint, k int, a int, b smallint)")
            if dist:
                execute(conn, f"SELECT create_distributed_table('{name}', 'id', shard_count => 4)")
            execute(conn, f"""INSERT INTO {name} SELECT g, g % 5,
                   CASE WHEN g % 53 = 0 THEN NULL WHEN g % 31 = 0 THEN 2147483647 WHEN g % 29 = 0 THEN -2147483648
                        WHEN g % 3 = 0 THEN {a_lo} + {a_step} * (g % 99990) + {a_step // 2} + g % 7 - 3
                        ELSE ((g::bigint * 2654435761) % 4294967296 - 2147483648)::int END,
                   CASE WHEN g % 59 = 0 THEN NULL WHEN g % 37 = 0 THEN 32767 WHEN g % 41 = 0 THEN -32768
                        WHEN g % 2 = 0 THEN (2 * ((g * 7919) % 32767) - 32766)::smallint
                        ELSE ((g * 7919) % 65536 - 32768)::smallint END
                   FROM generate_series(1, 20000) g""")
            execute(conn, f"SELECT dx.protect_table('{name}', 'Infinity')")
            execute(conn, f"""SELECT dx.set_column('{name}', 'k', '{{"min": 0, "max": 4}}', '{{"type": "none"}}')""")
            execute(conn, f"""SELECT dx.set_column('{name}', 'a', '{{"min": {a_lo}, "max": {a_hi}, "step": {a_step}}}', '{{"type": "none"}}')""")
            execute(conn, f"""SELECT dx.set_column('{name}', 'b', '{{"min": {b_lo}, "max": {b_hi}, "step": {b_step}}}', '{{"type": "none"}}')""")
            execute(conn, f"SELECT dx.grant_budget('postgres'::regrole, '{name}', 1e6)")

        def grid(col, lo, step, last):
            return f"({lo} + {step} * LEAST(GREATEST(round((coalesce({col}, {lo})::numeric - ({lo})) / {step}), 0), {last}))"
        A = grid("a", a_lo, a_step, (a_hi - a_lo) // a_step)
        B = grid("b", b_lo, b_step, (b_hi - b_lo) // b_step)
        norm = lambda rs: sorted(tuple(None if x is None else round(float(x), 3) for x in r) for r in rs)  # noqa: E731
        # (each query references at most 2 * 10^6 combinations of declared values)
        for dx_sql, native in [("SELECT k, dx.sum(a) FROM {t} GROUP BY k", f"SELECT k, sum({A}) FROM {{t}} GROUP BY k"),
                               ("SELECT k, dx.sum(b), dx.avg(b) FROM {t} GROUP BY k", f"SELECT k, sum({B}), avg({B}) FROM {{t}} GROUP BY k"),
                               ("SELECT k, dx.count(*) FROM {t} WHERE b <= -1 GROUP BY k",
                                f"SELECT k, count(*) FROM {{t}} WHERE {B} <= -1 GROUP BY k"),
                               ("SELECT dx.sum(a) FROM {t} WHERE k > 2", f"SELECT sum({A}) FROM {{t}} WHERE k > 2")]:
            want = norm(rows(conn, native.format(t="eloc")))
            assert norm(rows(conn, dx_sql.format(t="eloc"))) == want, dx_sql
            assert norm(rows(conn, dx_sql.format(t="edist"))) == want, dx_sql
        conn.close()


def test_grids_beside_the_kept_one_and_parallel_workers():
    """After rows that kept a point's units for grid 1, a row of that point with -0, +-Infinity or a
    subnormal grid is answered afresh (and refused: 22023 / the weight beyond the grid), never from
    the kept units. Parallel workers (each its own call site) give the serial answer."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        t100, _, layout, rest = _two_tables(conn)
        for bad, codes in (("'-0'::float8", {"22023"}), ("'Infinity'::float8", {"22023"}),
                           ("'-Infinity'::float8", {"22023"}), ("'5e-324'::float8", {"22000", "22003"})):
            try:
                rows(conn, f"""SELECT dx._weigh_units({t100}, {layout}, g, x{rest})
                               FROM (VALUES (300, 1.0::float8), (300, 1.0), (300, {bad})) t(x, g)""")
            except psycopg2.Error as e:
                assert e.pgcode in codes, (bad, e.pgcode, str(e))
            else:
                raise AssertionError(f"grid {bad} was answered")
        execute(conn, "CREATE TABLE big AS SELECT g, (g % 2000 - 1000)::int v FROM generate_series(1, 100000) g")
        execute(conn, "ANALYZE big")
        q = f"SELECT sum(u), count(u) FROM (SELECT dx._weigh_units({t100}, {layout}, 1.0, v{rest}) u FROM big) s"
        serial = rows(conn, q)
        execute(conn, "SET max_parallel_workers_per_gather = 2")
        for s in ("parallel_setup_cost", "parallel_tuple_cost", "min_parallel_table_scan_size"):
            execute(conn, f"SET {s} = 0")
        plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN " + q))
        assert "Gather" in plan, plan
        assert rows(conn, q) == serial, serial
        want = sum(w for w in (_expected(x, 1.0) for x in range(-1000, 1000)) if w is not None) * 50
        assert serial[0][0] == want, (serial, want)
        conn.close()
