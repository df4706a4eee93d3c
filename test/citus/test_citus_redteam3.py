"""redteam3: the Small shape's inline matching of short enumerated columns (executor/row_point.h) in
dx._weigh on the workers of a distributed table: char(3) (its labels padded to the column's typmod,
read from the worker query's column), text with a PLAIN-storage column (4-byte headers), a domain
over text, an enum type, int8 values sharing the low 32 bits of a label, NULLs and long toasted
values. Every noiseless answer equals a native reference of the mapping rule (a value that is not
a label, by its bytes, at the first label), WHERE and GROUP BY alike (regress 84 and 91 for local
tables)."""
from citus_common import citus_db, connect, execute, rows

COLUMNS = [
    ("a", '{"min": 0, "max": 9}'),
    ("c", '{"values": ["x", "ab"]}'),
    ("s", '{"values": ["F", "M", "MM", "", "é", "abcdefgh"]}'),
    ("d", '{"values": ["F", "M", "X"]}'),
    ("en", '{"values": ["sad", "ok", "happy"]}'),
    ("i8", '{"values": [0, -1, 4294967296]}'),
    ("p", '{"values": ["MM", "M", "F"]}'),
]
POINTS = """(SELECT a,
 CASE WHEN c = ANY (ARRAY['x', 'ab']::char(3)[]) THEN c ELSE 'x' END AS c,
 CASE WHEN s = ANY (ARRAY['F', 'M', 'MM', '', 'é', 'abcdefgh']) THEN s ELSE 'F' END AS s,
 CASE WHEN d::text = ANY (ARRAY['F', 'M', 'X']) THEN d::text ELSE 'F' END AS d,
 CASE WHEN en = ANY (ARRAY['sad', 'ok', 'happy']::rt3_mood[]) THEN en ELSE 'sad' END AS en,
 CASE WHEN i8 IN (0, -1, 4294967296) THEN i8 ELSE 0 END AS i8,
 CASE WHEN p = ANY (ARRAY['MM', 'M', 'F']) THEN p ELSE 'MM' END AS p
FROM rt3_small) pts"""
CASES = [
    ("SELECT dx.count(*) FROM rt3_small WHERE a > 2 AND c = 'ab'", "SELECT count(*) FROM {p} WHERE a > 2 AND c = 'ab'"),
    ("SELECT dx.count(*) FROM rt3_small WHERE a > 2 AND s = 'F'", "SELECT count(*) FROM {p} WHERE a > 2 AND s = 'F'"),
    ("SELECT dx.count(*) FROM rt3_small WHERE a > 2 AND d = 'M'", "SELECT count(*) FROM {p} WHERE a > 2 AND d = 'M'"),
    ("SELECT dx.count(*) FROM rt3_small WHERE a > 2 AND en = 'sad'", "SELECT count(*) FROM {p} WHERE a > 2 AND en = 'sad'"),
    ("SELECT dx.count(*) FROM rt3_small WHERE a > 2 AND i8 = 0", "SELECT count(*) FROM {p} WHERE a > 2 AND i8 = 0"),
    ("SELECT dx.count(*) FROM rt3_small WHERE a > 2 AND p = 'MM' AND s <> 'M'",
     "SELECT count(*) FROM {p} WHERE a > 2 AND p = 'MM' AND s <> 'M'"),
    ("SELECT c::text, dx.count(*), dx.sum(a) FROM rt3_small WHERE s IN ('M', 'F') AND en = 'ok' GROUP BY c ORDER BY 1",
     "SELECT k, count(pts.a), coalesce(sum(pts.a), 0) FROM unnest(ARRAY['ab', 'x']) k LEFT JOIN {p} "
     "ON pts.c::text = k AND pts.s IN ('M', 'F') AND pts.en = 'ok' GROUP BY k ORDER BY 1"),
]


def _num(v):
    return v if isinstance(v, str) else float(v or 0)


def test_short_enumerated_columns_on_workers_match_the_rule():
    with citus_db() as db:
        c = connect("coord", db)
        execute(c, "CREATE DOMAIN rt3_text AS text")
        execute(c, "CREATE TYPE rt3_mood AS ENUM ('sad', 'ok', 'happy', 'e4')")
        execute(c, "CREATE TABLE rt3_small (id int, a int, c char(3), s text, d rt3_text, en rt3_mood, i8 int8, p text)")
        execute(c, "ALTER TABLE rt3_small ALTER COLUMN p SET STORAGE PLAIN")
        execute(c, """INSERT INTO rt3_small SELECT i, i % 10,
            (ARRAY['ab', 'x', 'ab ', 'y', NULL])[1 + i % 5],
            (ARRAY['M', 'F', 'MM', '', 'é', 'abcdefgh', 'm', 'abcdefghi'])[1 + i % 8],
            (ARRAY['F', 'M', 'X', 'm', 'M '])[1 + i % 5],
            (ARRAY['sad', 'ok', 'happy', 'e4', NULL])[1 + i % 5]::rt3_mood,
            (ARRAY[0, 4294967296, -1, 1, 8589934592])[1 + i % 5],
            (ARRAY['M', 'F', 'MM', 'Q'])[1 + i % 4]
            FROM generate_series(1, 4000) i""")
        execute(c, "INSERT INTO rt3_small (id, a, s, p) VALUES (5001, 5, repeat('M', 5000), repeat('M', 600))")
        execute(c, "SELECT create_distributed_table('rt3_small', 'id')")
        execute(c, "SELECT dx.protect_table('rt3_small', 'Infinity')")
        for col, domain in COLUMNS:
            execute(c, "SELECT dx.set_column('rt3_small', %s, %s::jsonb, '{\"type\": \"none\"}')", (col, domain))
        execute(c, "SELECT dx.grant_budget('postgres', 'rt3_small', 1e6)")
        for dx_sql, ref in CASES:
            plan = "\n".join(r[0] for r in rows(c, "EXPLAIN (VERBOSE, COSTS OFF) " + dx_sql))
            assert "dx._weigh" in plan and "Citus" in plan, plan  # (the rows are weighed on the workers)
            got = [tuple(map(_num, r)) for r in rows(c, dx_sql)]
            want = [tuple(map(_num, r)) for r in rows(c, ref.format(p=POINTS))]
            assert got == want, (dx_sql, got, want)
        c.close()
