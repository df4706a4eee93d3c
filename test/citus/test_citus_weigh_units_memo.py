"""The workers' dx._weigh_units on integer columns declared in integral steps (issue 23, the Citus
GROUP BY count + sum): the row's index by integer arithmetic (core/range_index.h int_grid_index) and
each point's grid units kept per call site as rows meet it (executor/lookup.cpp UnitsMemo). What it
must keep: every answer equals the local table's (the one-pass path, which indexes by the double
arithmetic) and native SQL's own rounding of the values to the grid (half away from zero, clamped),
off-grid values, exact ties, values outside the domain and NULLs included; points a condition leaves
out contribute nothing however often rows meet them; a call's grid that differs from the one kept is
answered afresh; units beyond 2^62 are never kept and units beyond bigint raise at every row."""
import re
from fractions import Fraction

import psycopg2

from citus_common import citus_db, connect, execute, rows, scalar

NOISELESS = '{"type": "none"}'
# v: int on -1000..995 in steps of 7 (odd: no ties); s: smallint on -40..40 in steps of 4 (ties at +-2)
V_LO, V_STEP, V_LAST = -1000, 7, 285
S_LO, S_STEP, S_LAST = -40, 4, 20


def _table(conn, name, distributed):
    execute(conn, f"CREATE TABLE {name} (id bigint, k int, v int, s smallint)")
    if distributed:
        execute(conn, f"SELECT create_distributed_table('{name}', 'id', shard_count => 8)")
    # v: on and off the grid, outside it (beyond both ends, the int4 extremes) and NULL; s likewise with ties
    execute(conn, f"""INSERT INTO {name} SELECT g, g % 10,
                      CASE WHEN g % 101 = 0 THEN NULL WHEN g % 97 = 0 THEN 2147483647 WHEN g % 89 = 0 THEN -2147483648
                           WHEN g % 83 = 0 THEN 1000 + g % 50 WHEN g % 3 = 0 THEN -1000 + 7 * (g % 300)
                           ELSE ((g::bigint * 7919) % 2600)::int - 1300 END,
                      CASE WHEN g % 103 = 0 THEN NULL WHEN g % 2 = 0 THEN (-42 + 4 * (g % 23))::smallint
                           ELSE ((g * 31) % 101 - 50)::smallint END
                      FROM generate_series(1, 30000) g""")
    execute(conn, f"SELECT dx.protect_table('{name}', 'Infinity')")
    execute(conn, f"""SELECT dx.set_column('{name}', 'k', '{{"min": 0, "max": 9}}', '{NOISELESS}')""")
    execute(conn, f"""SELECT dx.set_column('{name}', 'v', '{{"min": {V_LO}, "max": 1000, "step": {V_STEP}}}', '{NOISELESS}')""")
    execute(conn, f"""SELECT dx.set_column('{name}', 's', '{{"min": {S_LO}, "max": 40, "step": {S_STEP}}}', '{NOISELESS}')""")
    execute(conn, f"SELECT dx.grant_budget('postgres'::regrole, '{name}', 1e6)")


def _grid(col, lo, step, last):
    """native SQL's value of a row's point: lo + step * (the rounded quotient, half away from zero, clamped)."""
    return f"({lo} + {step} * LEAST(GREATEST(round((coalesce({col}, {lo})::numeric - {lo}) / {step}), 0), {last}))"


V, S = _grid("v", V_LO, V_STEP, V_LAST), _grid("s", S_LO, S_STEP, S_LAST)
# (dx statement, native SQL over the grid values)
PAIRS = [
    ("SELECT dx.sum(v) FROM {t}", f"SELECT sum({V}) FROM {{t}}"),
    ("SELECT k, dx.count(*), dx.sum(v) FROM {t} GROUP BY k", f"SELECT k, count(*), sum({V}) FROM {{t}} GROUP BY k"),
    ("SELECT k, dx.sum(s), dx.avg(v) FROM {t} GROUP BY k", f"SELECT k, sum({S}), avg({V}) FROM {{t}} GROUP BY k"),
    # a condition on the summed column: points below 100 contribute nothing (absent cells)
    ("SELECT dx.sum(v) FROM {t} WHERE v > 100", f"SELECT sum({V}) FROM {{t}} WHERE {V} > 100"),
    ("SELECT k, dx.sum(s) FROM {t} WHERE s <= -2 GROUP BY k", f"SELECT k, sum({S}) FROM {{t}} WHERE {S} <= -2 GROUP BY k"),
]


def _norm(rs):
    return sorted(tuple(None if x is None else round(float(x), 6) for x in r) for r in rs)


def test_answers_equal_the_local_table_and_native_rounding():
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        _table(conn, "loc", False)
        for dx_sql, native_sql in PAIRS:
            plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + dx_sql.format(t="dist")))
            assert re.search(r"dx\._weigh_units(_cached)?\(", plan), plan  # the workers' fused lookup runs
            got = _norm(rows(conn, dx_sql.format(t="dist")))
            assert got == _norm(rows(conn, dx_sql.format(t="loc"))), dx_sql
            assert got == _norm(rows(conn, native_sql.format(t="loc"))), dx_sql
            # a second run in the same session (its connections' call sites start empty again)
            assert _norm(rows(conn, dx_sql.format(t="dist"))) == got, dx_sql
        conn.close()


# (x, grid) rows of one call site: points met again under the same and under another grid
VALUES = [(500, 1.0), (500, 1.0), (503, 2.0), (500, 2.0), (500, 1.0), (50, 1.0), (50, 1.0), (None, 1.0),
          (2147483647, 1.0), (2147483647, 0.5), (101, 1.0), (104, 1.0), (104, 3.0), (-5, 1.0), (898, 4.0), (898, 1.0)]


def _half_away(q):
    return int(q + Fraction(1, 2)) if q >= 0 else -int(-q + Fraction(1, 2))


def _expected(x, g, above=100):
    """The reference's units of x on v's grid where `v > above` holds at its point (None elsewhere)."""
    i = 0 if x is None else min(max(_half_away(Fraction(x - V_LO, V_STEP)), 0), V_LAST)
    point = V_LO + V_STEP * i
    return _half_away(Fraction(point) / Fraction(g)) if point > above else None


def _fused_call(conn, sql, col):
    """The table, layout and the domain constants of the workers' dx._weigh_units for `col` in sql."""
    plan = "\n".join(r[0] for r in rows(conn, "EXPLAIN (VERBOSE) " + sql))
    m = re.search(r"dx\._weigh_units\(('[^']*'::bytea, '[^']*'::text), '[^']*'::double precision, " + col + r"((?:, [^,)]*)*)\)", plan)
    assert m, plan
    return m.group(1), m.group(2)


def _refused(conn, sql, code):
    try:
        rows(conn, sql)
    except psycopg2.Error as e:
        assert e.pgcode == code, (sql, e.pgcode, str(e))
    else:
        raise AssertionError(f"ran: {sql}")


def _float_table(conn, name, domain):
    """A distributed noiseless table with one float8 column w on `domain`: its sum's fused call."""
    execute(conn, f"CREATE TABLE {name} (id bigint, w float8)")
    execute(conn, f"SELECT create_distributed_table('{name}', 'id', shard_count => 2)")
    execute(conn, f"SELECT dx.protect_table('{name}', 'Infinity')")
    execute(conn, f"SELECT dx.set_column('{name}', 'w', '{domain}', '{NOISELESS}')")
    execute(conn, f"SELECT dx.grant_budget('postgres'::regrole, '{name}', 1e6)")
    return _fused_call(conn, f"SELECT dx.sum(w) FROM {name}", "w")


def test_direct_calls_grids_absent_points_and_large_units():
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        table, rest = _fused_call(conn, "SELECT dx.sum(v) FROM dist WHERE v > 100", "v")
        call = f"dx._weigh_units({table}, g, x{rest})"
        ref = f"dx._units(dx._weigh({table}, x{rest}), g)"
        # one call site, rows meeting the same points again, with the grid changing between rows:
        # every row's units are the reference's (dx._units of the looked-up weight), NULL where the
        # condition leaves the point out (v <= 100), however often
        values = "(VALUES " + ", ".join(f"({'NULL::int' if x is None else x}, {g}::float8)" for x, g in VALUES) + ") t(x, g)"
        got = rows(conn, f"SELECT {call}, {ref} FROM {values}")
        assert all(a == b for a, b in got), got
        assert [a for a, _ in got] == [_expected(x, g) for x, g in VALUES], got
        # a bad grid is refused at the row it reaches, after rows that kept their units
        for bad in ("'NaN'::float8", "0::float8", "-1::float8", "NULL::float8"):
            _refused(conn, f"SELECT dx._weigh_units({table}, g, x{rest}) FROM (VALUES (500, 1.0::float8), (500, {bad})) t(x, g)",
                     "22023")
        # a NULL table: refused (it crashed the backend before), alone and after rows of a valid one
        for f in ("_weigh_units", "_weigh_units_cached"):
            _refused(conn, f"SELECT dx.{f}(NULL::bytea, 'r', 1.0, 5, 0::float8, 10::float8, 1::float8)", "22023")
        for f in ("_weigh", "_weigh_int", "_weigh_cached", "_weigh_int_cached"):
            _refused(conn, f"SELECT dx.{f}(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)", "22023")
        _refused(conn, f"SELECT dx._weigh_units(tb, 'r', 1.0, x{rest}) FROM (VALUES ({table.split(', ')[0]}, 500), "
                       f"({table.split(', ')[0]}, 500), (NULL::bytea, 500)) t(tb, x)", "22023")
        # a layout declaring more points than its table (a forged call): refused at the row past the
        # table, also after rows that kept their units
        wider = rest.replace("'995'::double precision", "'6998993'::double precision", 1)
        assert wider != rest, rest
        _refused(conn, f"SELECT dx._weigh_units({table}, 1.0, x{wider}) FROM (VALUES (500), (500), (6998993), (3000000)) t(x)", "22023")
        # units beyond 2^62 are answered, not kept; beyond bigint they raise at every row that meets them
        table, rest = _float_table(conn, "big", '{"min": 0, "max": 2e19, "step": 1e18}')
        call = f"dx._weigh_units({table}, 1.0, x{rest})"
        got = [r[0] for r in rows(conn, f"SELECT {call} FROM (VALUES (5e18::float8), (5e18), (1e18), (5e18), (1e18)) t(x)")]
        assert got == [5 * 10**18, 5 * 10**18, 10**18, 5 * 10**18, 10**18], got
        # the smallest bigint itself (a point at -2^63): answered at every row
        low, low_rest = _float_table(conn, "low", '{"min": -9223372036854775808, "max": 0, "step": 9223372036854775808}')
        got = [r[0] for r in rows(conn, f"SELECT dx._weigh_units({low}, 1.0, x{low_rest}) "
                                        "FROM (VALUES (-1e19::float8), (-1e19), (0), (-1e19)) t(x)")]
        assert got == [-2**63, -2**63, 0, -2**63], got
        for values in ("(1e18::float8), (1e19)", "(1e19::float8), (1e18), (1e19)"):
            _refused(conn, f"SELECT {call} FROM (VALUES {values}) t(x)", "22003")
        conn.close()


def test_a_table_per_row_gets_its_own_units():
    """Direct calls whose table changes from row to row (a column, not a plan constant): each row is
    answered from its own table, never from the units another table's rows left at the call site."""
    with citus_db() as db:
        conn = connect("coord", db)
        _table(conn, "dist", True)
        above100, rest = _fused_call(conn, "SELECT dx.sum(v) FROM dist WHERE v > 100", "v")
        above500, rest2 = _fused_call(conn, "SELECT dx.sum(v) FROM dist WHERE v > 500", "v")
        assert rest == rest2
        t100, t500 = above100.split(", '")[0], above500.split(", '")[0]
        layout = "'" + above100.split(", '", 1)[1]
        pairs = [(t100, 300), (t500, 300), (t100, 300), (t500, 700), (t100, 700), (t500, 300), (t500, 300)]
        values = "(VALUES " + ", ".join(f"({tb}, {x})" for tb, x in pairs) + ") t(tb, x)"
        got = [r[0] for r in rows(conn, f"SELECT dx._weigh_units(tb, {layout}, 1.0, x{rest}) FROM {values}")]
        want = [_expected(x, 1.0, 100 if tb == t100 else 500) for tb, x in pairs]
        assert got == want, (got, want)
        assert got[0] is not None and got[1] is None, got  # the two tables differ at 300
        conn.close()
