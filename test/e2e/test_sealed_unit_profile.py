"""The unit profile build runs inside the sealed path (issue 23, sealedbuild; elevated/sealed_scan.h):
the leader's scan of the protected table for dx._unit_profile, and every call of the unit type's
hash function (the DBA's default hash opclass, here PL/pgSQL over json units), run as the table's
owner with the sealed settings, never under the analyst's identity, search path or settings; so do
the hash calls of the per-row dx._unit_keep. An analyst with a hostile search path (their own
schema's lower() before pg_catalog, a temporary lower() and json operator), hostile settings
(extra_float_digits, DateStyle, lc_numeric, IntervalStyle, TimeZone) gets the profile of a clean
session: the same kept rows (the noiseless bounded count and sum, equal to the rule's reference
computed by the superuser) and the same seeded noisy answer; the DBA's hash function records the
owner and the sealed settings on every call, and the analyst's lower() is never called."""
import os

import psycopg2

from e2e_common import connect, execute, fresh_db, scalar

K = 4
SEED = 7475
SUFFIX = str(os.getpid())
ANALYST = f"sb_analyst_{SUFFIX}"
OWNER = f"sb_owner_{SUFFIX}"
HOSTILE = ["SET search_path = sb_evil, pg_catalog, public", "SET extra_float_digits = -15",
           "SET DateStyle = 'SQL, DMY'", "SET lc_numeric = 'C.utf8'", "SET IntervalStyle = 'sql_standard'",
           "SET TimeZone = 'Pacific/Chatham'"]
# (answers cast to numeric: the client's text of a float8 follows the session's extra_float_digits)
STATEMENTS = ["SELECT dx.count(*)::numeric, dx.sum(age)::numeric FROM sb_visits",
              "SELECT ward, dx.count(*)::numeric, dx.avg(age)::numeric FROM sb_visits GROUP BY ward ORDER BY ward",
              "SELECT dx.sum(age)::numeric FROM sb_visits WHERE age >= 30"]

SETUP = [
    f"CREATE ROLE {ANALYST} LOGIN",
    f"CREATE ROLE {OWNER}",
    f"SELECT dx.add_analyst('{ANALYST}')",
    f"CREATE SCHEMA sb_evil AUTHORIZATION {ANALYST}",
    "CREATE TABLE public.sb_calls (who text, search_path text, datestyle text, efd text, lc_numeric text, tz text)",
    "GRANT INSERT ON public.sb_calls TO PUBLIC",
    "CREATE TABLE public.sb_evil_calls (v text)",
    "GRANT INSERT ON public.sb_evil_calls TO PUBLIC",
    # the DBA's hash opclass for json: its hash lowers the text (an unqualified lower()) and prints a
    # float8 (text that depends on extra_float_digits); both functions record the context of the call
    """CREATE FUNCTION public.sb_note() RETURNS void LANGUAGE sql AS $$
       INSERT INTO public.sb_calls SELECT current_user, current_setting('search_path'), current_setting('DateStyle'),
              current_setting('extra_float_digits'), current_setting('lc_numeric'), current_setting('TimeZone') $$""",
    """CREATE FUNCTION public.sb_json_eq(a json, b json) RETURNS boolean LANGUAGE plpgsql AS $$
       BEGIN PERFORM public.sb_note(); RETURN lower(a::text) = lower(b::text); END $$""",
    """CREATE FUNCTION public.sb_json_hash(v json) RETURNS int4 LANGUAGE sql IMMUTABLE AS
       $$ SELECT pg_catalog.hashtext(v::text) $$""",
    """CREATE FUNCTION public.sb_json_hash_ext(v json, seed int8) RETURNS int8 LANGUAGE plpgsql AS $$
       BEGIN PERFORM public.sb_note();
             RETURN pg_catalog.hashtextextended(lower(v::text) || ((v ->> 'w')::float8)::text, seed); END $$""",
    "CREATE OPERATOR public.= (LEFTARG = json, RIGHTARG = json, FUNCTION = public.sb_json_eq)",
    """CREATE OPERATOR CLASS public.sb_json_ops DEFAULT FOR TYPE json USING hash AS OPERATOR 1 public.=(json, json),
       FUNCTION 1 public.sb_json_hash(json), FUNCTION 2 public.sb_json_hash_ext(json, int8)""",
    # 300 persons with 1..13 visits; person 1 has 200 (heavy); w = 1 + p/7 prints alike for many p
    # with extra_float_digits = -15 (a build under the analyst's settings would merge those units)
    "CREATE TABLE sb_visits (person json, ward text, age int)",
    """INSERT INTO sb_visits SELECT json_build_object('p', p, 'w', 1 + p / 7.0),
              (ARRAY['a','b','c'])[1 + (p + i) % 3], (p * 7 + i * 11) % 100
       FROM generate_series(1, 300) p, generate_series(1, CASE WHEN p = 1 THEN 200 ELSE 1 + (p * p) % 13 END) i""",
    f"ALTER TABLE sb_visits OWNER TO {OWNER}",
    "SELECT dx.protect_table('sb_visits', 'Infinity')",
    """SELECT dx.set_column('sb_visits', 'ward', '{"values": ["a","b","c"]}', '{"type": "none"}')""",
    """SELECT dx.set_column('sb_visits', 'age', '{"min": 0, "max": 100}', '{"type": "none"}')""",
    f"SELECT dx.set_privacy_unit('sb_visits', 'person', {K})",
    f"SELECT dx.grant_budget('{ANALYST}', 'sb_visits', 1e9)",
    # the seeded answers of the analyst's sessions (a superuser-only setting, set for the role)
    f"ALTER ROLE {ANALYST} SET dxpriv.test_seed = {SEED}",
    f"ALTER ROLE {ANALYST} SET max_parallel_workers_per_gather = 0",  # (the recording INSERT: serial)
]
EVIL = [
    """CREATE OR REPLACE FUNCTION sb_evil.lower(t text) RETURNS text LANGUAGE sql AS
       $$ INSERT INTO public.sb_evil_calls VALUES (t) RETURNING 'one unit' $$""",
    """CREATE FUNCTION pg_temp.lower(t text) RETURNS text LANGUAGE sql AS
       $$ INSERT INTO public.sb_evil_calls VALUES (t) RETURNING 'one unit' $$""",
    """CREATE FUNCTION pg_temp.sb_same(a json, b json) RETURNS boolean LANGUAGE sql AS
       $$ INSERT INTO public.sb_evil_calls VALUES (a::text) RETURNING true $$""",
    "CREATE OPERATOR pg_temp.= (LEFTARG = json, RIGHTARG = json, FUNCTION = pg_temp.sb_same)",
]


def answers(db, hostile, profiles, noisy):
    """The analyst's answers to STATEMENTS in a new session (hostile: EVIL objects and HOSTILE
    settings), each statement after an empty write (a new contents version: the statement builds
    its profile) and with the answer cache cleared."""
    admin = connect(db)
    conn = connect(db, user=ANALYST)
    out = []
    try:
        execute(admin, f"SELECT dx.protect_table('sb_visits', '{1.0 if noisy else 'Infinity'}')")
        execute(admin, f"ALTER ROLE {ANALYST} SET dxpriv.unit_profiles = {'on' if profiles else 'off'}")
        conn.close()
        conn = connect(db, user=ANALYST)
        if hostile:
            for s in EVIL + HOSTILE:
                execute(conn, s)
            assert scalar(conn, "SELECT lower('X')") == "one unit"  # their own statements use it
            execute(admin, "TRUNCATE public.sb_evil_calls")
        for sql in STATEMENTS:
            execute(admin, "UPDATE sb_visits SET age = age WHERE false")
            execute(admin, "SELECT dx.clear_cache()")
            with conn.cursor() as cur:
                cur.execute(sql)
                out.append(cur.fetchall())
    finally:
        conn.close()
        admin.close()
    return out


def reference(db):
    """The rule's rows, by the superuser: each person's K rows of smallest dx._unit_rank under the
    seed (the profile's key), grouped by the person's text."""
    admin = connect(db)
    try:
        execute(admin, f"SET dxpriv.test_seed = {SEED}")
        with admin.cursor() as cur:
            cur.execute(f"""SELECT count(*), sum(age) FROM (SELECT age, row_number() OVER (PARTITION BY person::text
                            ORDER BY dx._unit_rank(v.tableoid, v.ctid)) AS r FROM sb_visits v) s WHERE r <= {K}""")
            return cur.fetchone()
    finally:
        admin.close()


def test_unit_profile_build_is_sealed():
    with fresh_db() as db:
        admin = connect(db)
        try:
            for s in SETUP:
                execute(admin, s)
            ref_n, ref_s = reference(db)
            for profiles in (True, False):
                for noisy in (False, True):
                    clean = answers(db, False, profiles, noisy)
                    execute(admin, "TRUNCATE public.sb_calls")
                    hostile = answers(db, True, profiles, noisy)
                    what = f"profiles {'on' if profiles else 'off'}, {'noisy' if noisy else 'noiseless'}"
                    assert clean == hostile, f"{what}: clean {clean} != hostile {hostile}"
                    if not noisy:
                        n, s = clean[0][0]
                        assert (int(n), int(s)) == (int(ref_n), int(ref_s)), f"{what}: {clean[0]} vs rule {ref_n, ref_s}"
                    with admin.cursor() as cur:
                        cur.execute("""SELECT who, search_path, datestyle, efd, lc_numeric, tz, count(*)
                                       FROM public.sb_calls GROUP BY 1, 2, 3, 4, 5, 6""")
                        calls = cur.fetchall()
                    # the profile: the build and dx._unit_keep as the owner; the hash pass (the
                    # analyst's statement) as the analyst; every call with the sealed settings
                    who = OWNER if profiles else ANALYST
                    assert calls and all(c[:6] == (who, "pg_catalog, pg_temp", "ISO, MDY", "3", "C", "UTC")
                                         for c in calls), f"{what}: {calls}"
                    assert scalar(admin, "SELECT count(*) FROM public.sb_evil_calls") == 0, what
            # sorting or grouping the units in the analyst's statement would call the DBA's PL/pgSQL
            # equality there, unsealed: count_units (by the profile, the default) is refused (0A000)
            # before any row is read (with profiles off the hash pass flags each unit's first counted
            # row itself, through the sealed calls checked above)
            execute(admin, f"ALTER ROLE {ANALYST} RESET dxpriv.unit_profiles")
            execute(admin, "TRUNCATE public.sb_calls")
            conn = connect(db, user=ANALYST)
            try:
                for s in EVIL + HOSTILE:
                    execute(conn, s)
                try:
                    execute(conn, "SELECT dx.count_units(person) FROM sb_visits")
                    raise AssertionError("count_units over a unit type with PL/pgSQL operators was answered")
                except psycopg2.Error as e:
                    assert e.pgcode == "0A000", (e.pgcode, e.pgerror)
            finally:
                conn.close()
            assert scalar(admin, "SELECT count(*) FROM public.sb_calls") == 0
        finally:
            execute(admin, f"DROP OWNED BY {ANALYST}, {OWNER}")
            admin.close()
            root = connect()
            try:
                execute(root, f"DROP ROLE IF EXISTS {ANALYST}")
                execute(root, f"DROP ROLE IF EXISTS {OWNER}")
            finally:
                root.close()
