"""No dx function crashes the backend on NULL or odd arguments (a crash restarts every session).

On a throwaway database with one protected table (fuzz_t), as an analyst (dx.add_analyst, with a
budget) and then as superuser, every function of schema dx is called with arguments generated from pg_proc, so that new functions are covered without editing
this file: every C function (strict or not), every other function, every aggregate (on one row and
over fuzz_t) and every support function of the dx aggregates. Per function: all arguments plausible
for their type; each argument position in turn a typed NULL (the others plausible); all arguments
NULL; and each position in turn each odd value of its type (empty bytea/text/array, an array holding
NULL, a 2-D array, NaN and infinite floats, extreme and negative integers, JSON null, regclass 0, ...).
Functions with VARIADIC "any" get 0..4 trailing arguments of types int4/float8/text. Then the calls
dxpriv places on rows, harvested from EXPLAIN VERBOSE of a few dx statements with their real per-point
tables and layouts, are fuzzed the same way, with forged tables (cut short, a byte changed) and
layouts (numbers replaced, cut short). Each call is its own statement under statement_timeout; an
ERROR is fine, a lost connection (backend crash, FATAL, server restart) or a call running far past
the timeout (deaf to cancels) is a failure and is reported with the call.

Support functions taking internal cannot be called from SQL at all (PostgreSQL refuses even a NULL of
type internal); the test checks that, and they run inside their aggregates.
"""
import contextlib
import os
import re
import time

import psycopg2

from e2e_common import connect, execute

# Functions not called, with the reason (none so far: a ledger write or a catalog change is harmless
# on a throwaway database).
SKIPPED = {}

STATEMENT_TIMEOUT = "3s"
SLOW = 10.0  # seconds: a call running longer ignores cancels (a CPU denial of service)

# Plausible value (SQL literal, already typed) per type name of pg_type; arrays use '{}' of their type.
PLAUSIBLE = {
    "bool": "true", "int2": "0::int2", "int4": "0::int4", "int8": "0::int8", "oid": "0::oid",
    "float4": "1.0::float4", "float8": "1.0::float8", "numeric": "1.0::numeric",
    "text": "'r'::text", "varchar": "'r'::varchar", "bpchar": "'r'::bpchar", "name": "'r'::name",
    "cstring": "'r'::cstring", "bytea": "'\\x00'::bytea", "jsonb": "'{}'::jsonb", "json": "'{}'::json",
    "regclass": "'fuzz_t'::regclass", "regrole": "'postgres'::regrole", "regtype": "'int4'::regtype",
    "regproc": "'now'::regproc", "regprocedure": "'now()'::regprocedure", "regnamespace": "'dx'::regnamespace",
    "tid": "'(0,1)'::tid", "interval": "'1 day'::interval", "date": "'2024-01-01'::date",
    "timestamp": "'2024-01-01'::timestamp", "timestamptz": "'2024-01-01'::timestamptz",
    "anyelement": "1::int4", "anynonarray": "1::int4",
    "anycompatible": "1::int4", "anyarray": "'{1}'::int4[]", "anycompatiblearray": "'{1}'::int4[]",
    "any": "1::int4", "record": "ROW(1)", "uuid": "'00000000-0000-0000-0000-000000000000'::uuid",
}
# Odd values per type (besides NULL).
ODD = {
    "int2": ["-1::int2", "32767::int2"],
    "int4": ["-1::int4", "(-2147483648)::int4", "2147483647::int4"],
    "int8": ["9223372036854775807::int8", "(-9223372036854775808)::int8", "-1::int8"],
    "oid": ["4294967295::oid"],
    "float4": ["'NaN'::float4", "'Infinity'::float4", "-1::float4"],
    "float8": ["'NaN'::float8", "'Infinity'::float8", "'-Infinity'::float8", "0::float8", "-1::float8",
               "1e308::float8"],
    "numeric": ["'NaN'::numeric", "-1::numeric"],
    "text": ["''::text"], "varchar": ["''::varchar"], "name": ["''::name"], "cstring": ["''::cstring"],
    "bytea": ["'\\x'::bytea", "'\\xffffffffffffffffffffffffffffffff'::bytea"],
    "jsonb": ["'null'::jsonb", "'[]'::jsonb", "'\"\"'::jsonb", "'{\"min\": null}'::jsonb"],
    "json": ["'null'::json", "'[]'::json"],
    "regclass": ["'pg_class'::regclass", "0::oid::regclass"],
    "regrole": ["0::oid::regrole"], "regtype": ["0::oid::regtype"],
    "interval": ["'-1 day'::interval", "'0'::interval"],
    "anyelement": ["'NaN'::float8", "''::text"], "any": ["'NaN'::float8", "''::text"],
}
# Trailing arguments for VARIADIC "any": 0..4 of these types, in this order.
VARIADIC_ANY = ["1::int4", "1.0::float8", "'r'::text", "2::int4"]


def _array_values(elem, type_sql):
    """Plausible and odd values of an array type with element type name `elem`."""
    plausible = f"'{{}}'::{type_sql}"
    odd = [f"'{{NULL}}'::{type_sql}"]
    if elem in ("int2", "int4", "int8", "float4", "float8", "numeric", "oid"):
        odd += [f"'{{1}}'::{type_sql}", f"'{{{{1,2}},{{3,4}}}}'::{type_sql}"]
        if elem.startswith("float"):
            odd.append(f"'{{NaN,Infinity}}'::{type_sql}")
    elif elem in ("text", "name", "varchar"):
        odd += [f"'{{\"\"}}'::{type_sql}", f"'{{r}}'::{type_sql}"]
    elif elem == "bytea":
        odd += [f"ARRAY['\\x'::bytea]", f"ARRAY['\\x00'::bytea]"]
    elif elem == "regclass":
        odd += ["ARRAY['fuzz_t'::regclass]"]
    return plausible, odd


class Arg:
    """One argument position: its typed NULL, a plausible value and odd values."""

    def __init__(self, typname, type_sql, elem):
        self.typname = typname
        if elem is not None:
            self.plausible, self.odd = _array_values(elem, type_sql)
        else:
            self.plausible = PLAUSIBLE.get(typname, f"NULL::{type_sql}")
            self.odd = ODD.get(typname, [])
        self.null = f"NULL::{type_sql}"
        if typname == "any":
            self.null = "NULL::int4"
        if typname in ("anyelement", "anynonarray", "anycompatible"):
            self.null = "NULL::int4"
        if typname in ("anyarray", "anycompatiblearray"):
            self.null = "NULL::int4[]"


def _functions(conn):
    """(oid, signature, prokind, qualified name, [Arg], provariadic, language) of every dx function
    and every support function of a dx aggregate."""
    with conn.cursor() as cur:
        cur.execute("""
            WITH support AS (
                SELECT unnest(ARRAY[aggtransfn, aggfinalfn, aggcombinefn, aggserialfn, aggdeserialfn,
                                    aggmtransfn, aggminvtransfn, aggmfinalfn])::oid AS oid
                FROM pg_aggregate a JOIN pg_proc p ON p.oid = a.aggfnoid
                JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'dx'),
            fns AS (
                SELECT p.oid FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'dx'
                UNION SELECT oid FROM support WHERE oid <> 0)
            SELECT p.oid, p.oid::regprocedure::text, p.prokind, quote_ident(n.nspname) || '.' || quote_ident(p.proname),
                   p.provariadic::regtype::text,
                   ARRAY(SELECT t.typname::text FROM unnest(p.proargtypes) WITH ORDINALITY u(t, i)
                         JOIN pg_type t ON t.oid = u.t ORDER BY u.i),
                   ARRAY(SELECT format_type(u.t, NULL) FROM unnest(p.proargtypes) WITH ORDINALITY u(t, i) ORDER BY u.i),
                   ARRAY(SELECT coalesce(e.typname::text, '') FROM unnest(p.proargtypes) WITH ORDINALITY u(t, i)
                         JOIN pg_type t ON t.oid = u.t LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
                         ORDER BY u.i),
                   l.lanname
            FROM fns JOIN pg_proc p ON p.oid = fns.oid JOIN pg_namespace n ON n.oid = p.pronamespace
            JOIN pg_language l ON l.oid = p.prolang
            ORDER BY 2""")
        rows = cur.fetchall()
    out = []
    for oid, sig, kind, name, variadic, typnames, type_sqls, elems, lang in rows:
        args = [Arg(t, s, e or None) for t, s, e in zip(typnames, type_sqls, elems)]
        out.append((oid, sig, kind, name, args, variadic, lang))
    return out


def _calls(kind, name, args, variadic):
    """Every statement for one function."""
    variadic_any = variadic == '"any"'
    variadic_array = variadic not in ("-", '"any"')
    fixed = args[:-1] if variadic_any else args

    def render(values, source=""):
        parts = list(values)
        if variadic_array and parts:
            parts[-1] = "VARIADIC " + parts[-1]
        body = f"{name}({', '.join(parts)})"
        return f"CALL {body}" if kind == "p" else f"SELECT {body}{source}"

    tails = [[]]
    if variadic_any:
        tails = [VARIADIC_ANY[:k] for k in range(0, 5)]
    calls = []
    for tail in tails:
        plausible = [a.plausible for a in fixed] + tail
        nulls = [a.null for a in fixed] + [f"NULL::{v.split('::')[1]}" for v in tail]
        odds = [a.odd for a in fixed] + [ODD.get(v.split("::")[1], []) for v in tail]
        calls.append(render(plausible))
        if plausible:
            calls.append(render(nulls))
        if kind == "a":  # an aggregate also over the protected table's rows
            calls.append(render(plausible, " FROM fuzz_t"))
            if plausible:
                calls.append(render(nulls, " FROM fuzz_t"))
        for i in range(len(plausible)):
            calls.append(render(plausible[:i] + [nulls[i]] + plausible[i + 1:]))
            for odd in odds[i]:
                calls.append(render(plausible[:i] + [odd] + plausible[i + 1:]))
    if variadic_any and fixed:  # three NULL text trailing arguments
        calls.append(render([a.plausible for a in fixed] + ["NULL::text"] * 3))
    return list(dict.fromkeys(calls))


def _reconnect(dbname, user="postgres", deadline=60):
    """A working connection once the server accepts again (after a crash it restarts)."""
    start = time.time()
    while True:
        try:
            conn = connect(dbname, user=user)
            execute(conn, f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            execute(conn, "SET client_min_messages = error")
            return conn
        except psycopg2.Error:
            if time.time() - start > deadline:
                raise
            time.sleep(0.5)


ANALYST = "nullfuzz_analyst"
SETUP = [
    f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ANALYST}') THEN CREATE ROLE {ANALYST} LOGIN; END IF;
        END $$""",
    "CREATE TABLE fuzz_t (a int, b float8, c text)",
    "INSERT INTO fuzz_t SELECT i % 10, i / 7.0, 'v' || (i % 3) FROM generate_series(1, 50) i",
    "SELECT dx.protect_table('fuzz_t')",
    """SELECT dx.set_column('fuzz_t', 'a', '{"min": 0, "max": 9}', '{"type": "absolute", "scale": 1}')""",
    """SELECT dx.set_column('fuzz_t', 'b', '{"min": 0, "max": 10}', '{"type": "absolute", "scale": 1}')""",
    """SELECT dx.set_column('fuzz_t', 'c', '{"values": ["v0", "v1", "v2"]}', '{"type": "discrete", "weight": 1}')""",
    "SELECT dx.grant_budget('postgres', 'fuzz_t', 1e9)",
    f"SELECT dx.grant_budget('{ANALYST}', 'fuzz_t', 1e9)",
    f"SELECT dx.add_analyst('{ANALYST}')",
]


# Statements whose plans (EXPLAIN VERBOSE, as superuser) show the calls dxpriv places on rows: the
# calls are harvested with their real per-point tables and layouts, then fuzzed position by position.
HARVEST = [
    "SELECT dx.count(*) FROM fuzz_t",
    "SELECT dx.sum(a) FROM fuzz_t WHERE c = 'v1'",
    "SELECT dx.avg(b) FROM fuzz_t WHERE a > 3",
    "SELECT dx.linear(a * 2 + b) FROM fuzz_t",
    "SELECT c, dx.count(*) FROM fuzz_t GROUP BY c",
    "SELECT a, dx.sum(b), dx.avg(b) FROM fuzz_t GROUP BY a",
    "SELECT dx.mode(c) FROM fuzz_t",
    "SELECT dx.quantile(a, 0.5) FROM fuzz_t",
    "SELECT count(*), sum(a) FROM fuzz_t WHERE b < 5",
]
# Columns of fuzz_t as they appear in plans, and a value of each for a harvested call.
ALIASES = {"double precision": "float8", "integer": "int4", "bigint": "int8", "smallint": "int2",
           "boolean": "bool", "real": "float4", "character varying": "varchar"}
COLUMNS = {"a": ("1::int4", "int4"), "b": ("1.5::float8", "float8"), "c": ("'v1'::text", "text")}


def _split_args(text):
    """Top-level comma-separated arguments of a call's argument list."""
    out, depth, quote, cur = [], 0, False, ""
    for ch in text:
        if quote:
            cur += ch
            quote = ch != "'"
            continue
        if ch == "'":
            quote = True
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _calls_in(plan):
    """dx calls of a plan text whose arguments are literals or fuzz_t columns: [(name, [(value, type)])]."""
    found = []
    for m in re.finditer(r"dx\.(\w+)\(", plan):
        i, depth, quote = m.end(), 1, False
        while i < len(plan) and depth:
            ch = plan[i]
            if quote:
                quote = ch != "'"
            elif ch == "'":
                quote = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            i += 1
        args = []
        for a in _split_args(plan[m.end():i - 1]):
            col = a.split(".")[-1].strip("()")
            lit = re.fullmatch(r"'(?:[^']|'')*'::([\w\[\] ]+)", a)
            if lit:
                t = lit.group(1).strip()
                base = t[:-2] if t.endswith("[]") else t
                t = ALIASES.get(base, base) + t[len(base):]
                args.append((a, t))
            elif re.fullmatch(r"-?\d+", a):
                args.append((f"{a}::int4", "int4"))
            elif re.fullmatch(r"-?[\d.]+(e-?\d+)?", a):
                args.append((f"{a}::numeric", "numeric"))
            elif col in COLUMNS:
                args.append(COLUMNS[col])
            else:
                break
        else:
            found.append((f"dx.{m.group(1)}", args))
    return found


def _harvested_calls(conn):
    """Statements fuzzing every call harvested from the plans of HARVEST."""
    calls, harvested = [], []
    for q in HARVEST:
        with conn.cursor() as cur:
            cur.execute("EXPLAIN (VERBOSE) " + q)
            plan = "\n".join(r[0] for r in cur.fetchall())
        harvested += _calls_in(plan)
    tables = list(dict.fromkeys(args[0][0] for _, args in harvested if args and args[0][1] == "bytea"))
    for name, args in harvested:
        if args and args[0][1] == "bytea":
            # the table changing between rows of one statement (the call site keeps one table's copy,
            # layout and units): its own, every other harvested table, its own again, NULL
            rows = ", ".join(f"({t})" for t in [args[0][0]] + tables + [args[0][0], "NULL::bytea"])
            rest = "".join(", " + v for v, _ in args[1:])
            calls.append(f"SELECT {name}(v.t{rest}) FROM (VALUES {rows}) v(t)")
        values = [v for v, _ in args]

        def render(vals):
            return f"SELECT {name}({', '.join(vals)})"

        calls.append(render(values))
        calls.append(render([f"NULL::{t}" for _, t in args]))
        for i, (v, t) in enumerate(args):
            variants = [f"NULL::{t}"] + ODD.get(t, [])
            if t.endswith("[]"):
                variants += _array_values(t[:-2], t)[1] + [f"'{{}}'::{t}"]
            if t == "bytea":  # forged tables: truncated, one byte short, a byte flipped
                hexs = v[3:-len("'::bytea")]
                variants += [f"'\\x{hexs[:len(hexs) // 2 // 2 * 2]}'::bytea", f"'\\x{hexs[:-2]}'::bytea",
                             f"'\\x{hexs[:8]}ff{hexs[10:]}'::bytea", f"'\\x{hexs}00'::bytea"]
            if t == "text" and v.endswith("'::text"):  # forged layouts: numbers replaced, cut short
                body = v[1:-7]
                variants += ["'r'::text", f"'{body}|'::text", f"'{body[:-1]}'::text",
                             f"'{body[:len(body) // 2]}'::text"]
                variants += [f"'{re.sub(r'[0-9]+', n, body)}'::text"
                             for n in ("0", "-1", "99999999999", "1e308", "nan")]
            for w in variants:
                calls.append(render(values[:i] + [w] + values[i + 1:]))
    return list(dict.fromkeys(calls))


@contextlib.contextmanager
def _fresh_db():
    """A database with dxpriv (answer reuse off, as e2e_common.fresh_db); dropped afterwards over a new
    connection (a crash during the test ends every connection opened before it)."""
    name = f"e2e_nullfuzz_{os.getpid()}"
    admin = connect()
    execute(admin, f"CREATE DATABASE {name}")
    execute(admin, f"ALTER DATABASE {name} SET dxpriv.cache_lifetime = 0")
    admin.close()
    try:
        conn = connect(name)
        execute(conn, "CREATE EXTENSION dxpriv")
        conn.close()
        yield name
    finally:
        admin = _reconnect("postgres")
        execute(admin, f"DROP DATABASE {name} WITH (FORCE)")
        admin.close()


def fuzz(dbname, timings=None):
    """Runs every call as an analyst, then as superuser; returns (functions called, calls, harvested
    calls, [(call, what went wrong)], [internal-taking support functions])."""
    conn = _reconnect(dbname)
    for sql in SETUP:
        execute(conn, sql)
    every = _functions(conn)
    # PostgreSQL lets no SQL statement pass a value of type internal (not even a NULL: "cannot cast
    # type unknown to internal"): such support functions run only inside their aggregates, which are
    # called below. Checked, so that a way to call them would be noticed.
    unreachable = [f for f in every if "internal" in [a.typname for a in f[4]]]
    for f in unreachable:
        try:
            execute(conn, _calls(f[2], f[3], f[4], f[5])[0])
            raise AssertionError(f"{f[1]} takes internal yet was called from SQL: fuzz it")
        except psycopg2.Error as e:
            assert e.pgcode in ("42846", "42883"), (f[1], e.pgcode, str(e))
    functions = [f for f in every if f[1] not in SKIPPED and f not in unreachable]
    # functions that undo the setup (dx.unprotect_table, dx.revoke_budget, ...) last, so that the others
    # meet a protected table with a budget
    functions.sort(key=lambda f: f[3].split(".")[-1].lstrip("_").startswith(("unprotect", "revoke", "drop", "remove")))
    statements = [c for _oid, _sig, kind, name, args, variadic, _lang in functions
                  for c in _calls(kind, name, args, variadic)]
    harvested = _harvested_calls(conn)
    assert len(harvested) > 50, harvested  # the plans still show dx's row calls
    conn.close()
    # an analyst first (the role a denial of service would come from; its calls go through dxpriv's
    # hooks), then the superuser, whose calls reach every function and may undo the setup at the end
    crashes = _run(dbname, ANALYST, statements + harvested, timings)
    crashes += _run(dbname, "postgres", statements + harvested, timings)
    return len(functions), 2 * len(statements + harvested), len(harvested), crashes, [f[1] for f in unreachable]


def _run(dbname, user, calls, timings):
    """Runs each call as user in its own statement; returns [(call, what went wrong)]."""
    conn = _reconnect(dbname, user)
    crashes = []
    for call in calls:
        t0 = time.time()
        try:
            execute(conn, call)
        except psycopg2.Error as e:
            if conn.closed or e.pgcode is None:
                crashes.append((f"[{user}] {call}", str(e).strip().splitlines()[0] if str(e).strip()
                                else type(e).__name__))
                conn = _reconnect(dbname, user)
                continue
        finally:
            took = time.time() - t0
            if timings is not None:
                timings.append((took, call))
            if took > SLOW:
                crashes.append((f"[{user}] {call}", f"took {took:.1f}s: statement_timeout ({STATEMENT_TIMEOUT}) not obeyed"))
        # a FATAL that did not surface as an exception, or an open failed transaction
        try:
            if conn.get_transaction_status() != psycopg2.extensions.TRANSACTION_STATUS_IDLE:
                conn.rollback()
            execute(conn, "SELECT 1")
        except psycopg2.Error as e:
            crashes.append((f"[{user}] {call}", f"connection unusable after the call: {e}".strip()))
            conn = _reconnect(dbname, user)
    conn.close()
    return crashes


def test_no_dx_function_crashes_on_null_or_odd_arguments():
    with _fresh_db() as db:
        start = time.time()
        nfunctions, ncalls, nharvested, crashes, unreachable = fuzz(db)
        admin = _reconnect(db)
        with admin.cursor() as cur:
            cur.execute("""SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                           WHERE nspname = 'dx' AND prolang = (SELECT oid FROM pg_language WHERE lanname = 'c')""")
            nc = cur.fetchone()[0]
        admin.close()
        print(f"  {nfunctions} functions called ({nc} C functions in dx; {len(unreachable)} support functions "
              f"taking internal run inside their aggregates only), {ncalls} calls ({nharvested} on calls harvested "
              f"from plans), {len(crashes)} failures, "
              f"{time.time() - start:.1f}s; skipped: {SKIPPED or 'none'}")
        assert nc > 100 and nfunctions + len(unreachable) >= nc, (nfunctions, nc)
        assert not crashes, "calls that lost the connection or ignored cancels:\n" + "\n".join(
            f"  {c}  -- {w}" for c, w in crashes)
