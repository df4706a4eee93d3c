"""BI-tool SQL through real clients, as the analyst `mallory` (issue: analyst roles).

SHAPES are the statements Metabase (quoted, schema-qualified identifiers, AS aliases, LIMIT 2000) and
Superset (unquoted identifiers, metric labels such as "SUM(income)", LIMIT 10000/50000) generate for
count, sum and avg questions. Each one runs through psycopg2 and through the PostgreSQL JDBC driver
(JdbcShapes.java, plain Statement.executeQuery; a PreparedStatement with parameters sends $1,
which dxpriv analyses with the bound values at every execution) and must succeed with the right number of rows (a GROUP BY returns every group
of the declared domain, clipped by LIMIT) and numeric aggregate columns.

Catalog introspection that psql and the tools run (\\d, \\dt, information_schema, SQLAlchemy's
reflection, Metabase's sync, JDBC DatabaseMetaData) must work for the analyst too.
"""
import decimal

import psycopg2
import os
import shutil
import subprocess
import tempfile
import uuid

from attack_fixture import ANALYST, DOMAIN_SIZES, analyst_conn, attack_db, ledger_rows

P = '"public"."people"'


def q(col):
    return f'{P}."{col}"'


# (name, sql, expected rows: int or (min, max), number of leading group-by columns)
SHAPES = [
    # ---- Metabase
    ("mb_count_by_sex", f'SELECT {q("sex")} AS "sex", count(*) AS "count" FROM {P} GROUP BY {q("sex")} '
                        f'ORDER BY {q("sex")} ASC LIMIT 2000', 2, 1),
    ("mb_count_rows", f'SELECT count(*) AS "count" FROM {P}', 1, 0),
    ("mb_sum_income", f'SELECT sum({q("income")}) AS "sum" FROM {P}', 1, 0),
    ("mb_avg_age", f'SELECT avg({q("age")}) AS "avg" FROM {P}', 1, 0),
    ("mb_count_col", f'SELECT count({q("age")}) AS "count" FROM {P}', 1, 0),
    ("mb_count_by_zip_order_by_count", f'SELECT {q("zip")} AS "zip", count(*) AS "count" FROM {P} '
                                       f'GROUP BY {q("zip")} ORDER BY "count" DESC, {q("zip")} ASC LIMIT 2000', 10, 1),
    ("mb_filter_ge_lt", f'SELECT count(*) AS "count" FROM {P} WHERE ({q("age")} >= 30 AND {q("age")} < 40)', 1, 0),
    ("mb_filter_between", f'SELECT count(*) AS "count" FROM {P} WHERE {q("age")} BETWEEN 18 AND 65', 1, 0),
    ("mb_filter_quoted_literal_grouped", f'SELECT {q("diagnosis")} AS "diagnosis", count(*) AS "count" FROM {P} '
                                         f"WHERE {q('sex')} = 'F' GROUP BY {q('diagnosis')} "
                                         f'ORDER BY {q("diagnosis")} ASC LIMIT 2000', 2, 1),
    ("mb_group_two_columns", f'SELECT {q("sex")} AS "sex", {q("diagnosis")} AS "diagnosis", count(*) AS "count" '
                             f'FROM {P} GROUP BY {q("sex")}, {q("diagnosis")} '
                             f'ORDER BY {q("sex")} ASC, {q("diagnosis")} ASC LIMIT 2000', 4, 2),
    ("mb_multiple_aggregates", f'SELECT {q("sex")} AS "sex", count(*) AS "count", sum({q("income")}) AS "sum", '
                               f'avg({q("age")}) AS "avg" FROM {P} GROUP BY {q("sex")} '
                               f'ORDER BY {q("sex")} ASC LIMIT 2000', 2, 1),
    ("mb_filter_in_grouped", f'SELECT {q("zip")} AS "zip", count(*) AS "count" FROM {P} '
                             f"WHERE {q('zip')} IN ('10001', '10002', '10003') GROUP BY {q('zip')} "
                             f'ORDER BY {q("zip")} ASC LIMIT 2000', 3, 1),  # the zips WHERE keeps (dxpriv.postprocess)
    ("mb_group_age", f'SELECT {q("age")} AS "age", count(*) AS "count" FROM {P} GROUP BY {q("age")} '
                     f'ORDER BY {q("age")} ASC LIMIT 2000', DOMAIN_SIZES["age"], 1),
    ("mb_group_income_clipped_by_limit", f'SELECT {q("income")} AS "income", count(*) AS "count" FROM {P} '
                                         f'GROUP BY {q("income")} ORDER BY {q("income")} ASC LIMIT 2000', 2000, 1),
    ("mb_not_equal_or_null", f'SELECT count(*) AS "count" FROM {P} '
                             f"WHERE ({q('diagnosis')} <> 'yes' OR {q('diagnosis')} IS NULL)", 1, 0),
    ("mb_contains_case_insensitive", f'SELECT count(*) AS "count" FROM {P} '
                                     f"WHERE lower({q('zip')}) LIKE '%100%'", 1, 0),
    ("mb_not_empty", f'SELECT sum({q("income")}) AS "sum" FROM {P} '
                     f"WHERE ({q('zip')} IS NOT NULL AND {q('zip')} <> '')", 1, 0),
    ("mb_row_limit_5", f'SELECT {q("zip")} AS "zip", avg({q("income")}) AS "avg" FROM {P} GROUP BY {q("zip")} '
                       f'ORDER BY {q("zip")} ASC LIMIT 5', 5, 1),
    ("mb_filter_yes_group_zip", f'SELECT {q("zip")} AS "zip", count(*) AS "count" FROM {P} '
                                f"WHERE {q('diagnosis')} = 'yes' GROUP BY {q('zip')} "
                                f'ORDER BY "count" DESC, {q("zip")} ASC LIMIT 2000', 10, 1),
    # ---- Superset
    ("ss_big_number", "SELECT COUNT(*) AS count FROM public.people LIMIT 50000", 1, 0),
    ("ss_bar_by_sex", "SELECT sex AS sex, COUNT(*) AS count FROM public.people GROUP BY sex "
                      "ORDER BY count DESC LIMIT 10000", 2, 1),
    # (a filter on age here would span zip x income x age = 2.4M domain points, over dxpriv's 2M limit: 54000)
    ("ss_sum_by_zip_filtered", 'SELECT zip AS zip, SUM(income) AS "SUM(income)" FROM public.people '
                               "WHERE sex = 'F' AND diagnosis = 'no' GROUP BY zip ORDER BY \"SUM(income)\" DESC "
                               'LIMIT 10000', 10, 1),
    ("ss_avg_by_sex", 'SELECT sex AS sex, AVG(age) AS "AVG(age)" FROM public.people GROUP BY sex LIMIT 50000', 2, 1),
    ("ss_filter_in_single", "SELECT diagnosis AS diagnosis, COUNT(*) AS count FROM public.people "
                            "WHERE sex IN ('F') GROUP BY diagnosis ORDER BY count DESC LIMIT 10000", 2, 1),
    ("ss_having", "SELECT zip AS zip, COUNT(*) AS count FROM public.people GROUP BY zip "
                  "HAVING COUNT(*) > 100 ORDER BY count DESC LIMIT 10000", (0, 10), 1),
    ("ss_two_groups_three_metrics", 'SELECT sex AS sex, diagnosis AS diagnosis, COUNT(*) AS count, '
                                    'SUM(income) AS "SUM(income)", AVG(income) AS "AVG(income)" FROM public.people '
                                    'GROUP BY sex, diagnosis ORDER BY count DESC LIMIT 10000', 4, 2),
    ("ss_table_two_zips", "SELECT zip AS zip, COUNT(*) AS count FROM public.people "
                          "WHERE zip IN ('10001', '10002') AND age BETWEEN 20 AND 60 GROUP BY zip "
                          "ORDER BY count DESC LIMIT 1000", 2, 1),  # the zips WHERE keeps (dxpriv.postprocess)
    # ---- letter case and spelling
    ("lowercase_keywords", 'select count(*) as "count" from "public"."people"', 1, 0),
    ("uppercase_unquoted_identifiers", 'SELECT COUNT(*) AS "COUNT" FROM PUBLIC.PEOPLE WHERE AGE >= 65', 1, 0),
    ("mixed_case_sum", "Select Sum(Income) As total From People Where Sex = 'M'", 1, 0),
]


def expected_ok(expected, n):
    return lo_hi(expected)[0] <= n <= lo_hi(expected)[1]


def lo_hi(expected):
    return expected if isinstance(expected, tuple) else (expected, expected)


def test_bi_shape_list():
    assert len(SHAPES) >= 20, len(SHAPES)
    assert len({s[0] for s in SHAPES}) == len(SHAPES)
    assert all("\n" not in s[1] and "\t" not in s[1] for s in SHAPES)


def test_bi_shapes_through_psycopg2():
    failures = []
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        for name, sql, expected, groups in SHAPES:
            try:
                with conn.cursor() as cur:
                    cur.execute(sql)
                    rows = cur.fetchall()
            except Exception as e:  # noqa: BLE001 - report every shape
                failures.append(f"{name}: {getattr(e, 'pgcode', '')} {e}".strip())
                continue
            if not expected_ok(expected, len(rows)):
                failures.append(f"{name}: {len(rows)} rows, expected {expected}")
                continue
            if len({r[:groups] for r in rows}) != len(rows):
                failures.append(f"{name}: a group appears twice: {rows[:5]}")
                continue
            for r in rows:
                # None: an average withheld because its count's interval reaches 0 (dxpriv.postprocess)
                bad = [v for v in r[groups:]
                       if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float, decimal.Decimal)))]
                if bad or len(r) <= groups:
                    failures.append(f"{name}: non-numeric aggregate values {r}")
                    break
            print(f"  psycopg2 {name}: {len(rows)} rows", flush=True)
        conn.close()
    assert not failures, f"{len(failures)} of {len(SHAPES)} shapes failed through psycopg2:\n  " + "\n  ".join(failures)


# ---------------------------------------------------------------- JDBC

JAR = "/usr/share/java/postgresql.jar"


def ensure_jdbc():
    """Installs Debian's JDBC driver and a JDK when missing (the e2e run is root; make deps installs them too)."""
    if os.path.exists(JAR) and shutil.which("javac") and shutil.which("java"):
        return
    assert os.geteuid() == 0, f"{JAR} or javac missing: run scripts/install-deps.sh"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "libpostgresql-jdbc-java",
           "default-jdk-headless"]
    if subprocess.run(cmd, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, check=True, capture_output=True)
        subprocess.run(cmd, env=env, check=True, capture_output=True)
    assert os.path.exists(JAR) and shutil.which("javac"), "JDBC driver or JDK still missing"


def run_jdbc(db, tag):
    ensure_jdbc()
    here = os.path.dirname(os.path.abspath(__file__))
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["javac", "-d", tmp, os.path.join(here, "JdbcShapes.java")], check=True,
                       capture_output=True, timeout=120)
        shapes = os.path.join(tmp, "shapes.tsv")
        with open(shapes, "w", encoding="utf-8") as f:
            for name, sql, _, _ in SHAPES:
                f.write(f"{name}\t{sql}\n")
        # PGHOST is a unix socket directory in this harness; JDBC needs TCP, on which the cluster listens
        url = f"jdbc:postgresql://127.0.0.1:{os.environ['PGPORT']}/{db}?user={ANALYST}"
        out = subprocess.run(["java", "-cp", f"{tmp}:{JAR}", "JdbcShapes", url, shapes, tag], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, f"JdbcShapes failed: {out.stderr[-2000:]}"
        return [line.split("\t") for line in out.stdout.splitlines() if line]


NUMERIC_JDBC_TYPES = {"int8", "int4", "int2", "float8", "float4", "numeric"}


def test_bi_shapes_through_jdbc():
    tag = "t" + uuid.uuid4().hex
    with attack_db() as (db, admin):
        lines = run_jdbc(db, tag)
        shapes = {line[1]: line[2:] for line in lines if line[0] == "shape"}
        failures = []
        for name, sql, expected, groups in SHAPES:
            res = shapes.get(name)
            if res is None:
                failures.append(f"{name}: not run")
            elif res[0] != "ok" and not (res[0] == "null-aggregate" and "avg(" in sql.lower()):
                # (an average may be NULL: withheld when its count's interval reaches 0, dxpriv.postprocess)
                failures.append(f"{name}: {' '.join(res)}")
            elif not expected_ok(expected, int(res[1])):
                failures.append(f"{name}: {res[1]} rows, expected {expected}")
            elif not set(res[2].split(",")[groups:]) <= NUMERIC_JDBC_TYPES or len(res[2].split(",")) <= groups:
                failures.append(f"{name}: aggregate column types {res[2]}")
            else:
                print(f"  jdbc {name}: {res[1]} rows ({res[2]})", flush=True)

        meta = {line[1]: line[2:] for line in lines if line[0] == "meta"}
        # DatabaseMetaData (what JVM tools such as Metabase's older sync call) sees the table and its columns
        if int(meta["tables"][0]) != 1:
            failures.append(f"DatabaseMetaData.getTables found {meta['tables']}")
        cols = dict(c.split(":") for c in meta["columns"][1].split(",")) if int(meta["columns"][0]) else {}
        for col, typ in {"age": "int4", "sex": "text", "zip": "text", "diagnosis": "text", "income": "int4"}.items():
            if cols.get(col) != typ:
                failures.append(f"DatabaseMetaData.getColumns: {col} is {cols.get(col)}, expected {typ}")

        # a PreparedStatement with parameters sends $1, $2: each execution is analysed with its bound
        # values, charged and noised (the ledger text carries the reversed tag)
        param = next(line for line in lines if line[0] == "param")
        if param[1] != "ok":
            failures.append(f"PreparedStatement with parameters: {param[1:]}")
        else:
            charges = ledger_rows(admin, tag[::-1])
            if len(charges) != 8 or any(e != 0.1 or min(sc) <= 0 for e, sc in charges):
                failures.append(f"PreparedStatement with parameters: 8 executions, ledger rows {charges}")

        # a parameterless PreparedStatement past prepareThreshold (server-side named statement) is
        # answered and charged at every execution, or replays one cached answer
        prepared = next(line for line in lines if line[0] == "prepared")
        if prepared[1] != "ok":
            failures.append(f"parameterless PreparedStatement: {prepared[1:]}")
        else:
            answers = prepared[2:]
            charges = ledger_rows(admin, tag)
            if not charges or (len(charges) != 6 and len(set(answers)) > len(charges)):
                failures.append(f"PreparedStatement executions: answers {answers}, ledger rows {len(charges)}")
            elif any(min(scales) <= 0 for _, scales in charges):
                failures.append(f"PreparedStatement answered without noise: {charges}")
    assert not failures, f"{len(failures)} JDBC checks failed:\n  " + "\n  ".join(failures)


# ---------------------------------------------------------------- catalog introspection

def psql(db, command):
    env = dict(os.environ, PGDATABASE=db, PGUSER=ANALYST)
    return subprocess.run(["psql", "-X", "-c", command], capture_output=True, text=True, env=env, timeout=30)


def test_psql_describe_and_list_as_analyst():
    with attack_db() as (db, admin):
        out = psql(db, r"\d people")
        assert out.returncode == 0, out.stderr
        for col, typ in (("age", "integer"), ("sex", "text"), ("zip", "text"), ("income", "integer")):
            assert any(line.split("|")[0].strip() == col and line.split("|")[1].strip() == typ
                       for line in out.stdout.splitlines() if "|" in line), (col, out.stdout)
        out = psql(db, r"\dt")
        assert out.returncode == 0, out.stderr
        assert " people " in out.stdout and " zips " in out.stdout, out.stdout
        out = psql(db, r"\d+ people")
        assert out.returncode == 0 and "diagnosis" in out.stdout, out.stderr
        out = psql(db, r"\d")
        assert out.returncode == 0 and "people" in out.stdout, out.stderr


def fetch(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def test_information_schema_as_analyst():
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        cols = fetch(conn, "SELECT column_name, data_type FROM information_schema.columns "
                           "WHERE table_schema = 'public' AND table_name = 'people' ORDER BY ordinal_position")
        got = dict(cols)
        for col, typ in {"age": "integer", "sex": "text", "zip": "text", "diagnosis": "text",
                         "income": "integer"}.items():
            assert got.get(col) == typ, (col, cols)
        tables = fetch(conn, "SELECT table_schema, table_name, table_type FROM information_schema.tables "
                             "WHERE table_schema = 'public' ORDER BY table_name")
        assert ("public", "people", "BASE TABLE") in tables and ("public", "zips", "BASE TABLE") in tables, tables
        conn.close()


# SQLAlchemy's PostgreSQL dialect (1.4) reflection, as Superset runs it to list tables and columns
SQLALCHEMY = {
    "table_names": "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                   "WHERE n.nspname = 'public' AND c.relkind in ('r', 'p')",
    "table_oid": "SELECT c.oid FROM pg_catalog.pg_class c LEFT JOIN pg_catalog.pg_namespace n "
                 "ON n.oid = c.relnamespace WHERE (pg_catalog.pg_table_is_visible(c.oid)) AND c.relname = 'people' "
                 "AND c.relkind in ('r', 'v', 'm', 'f', 'p')",
    "columns": """
        SELECT a.attname,
          pg_catalog.format_type(a.atttypid, a.atttypmod),
          (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid)
           FROM pg_catalog.pg_attrdef d
           WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef) AS DEFAULT,
          a.attnotnull, a.attrelid as table_oid, pgd.description as comment, a.attgenerated as generated,
          (SELECT json_build_object('always', a.attidentity = 'a', 'start', s.seqstart, 'increment', s.seqincrement,
                  'minvalue', s.seqmin, 'maxvalue', s.seqmax, 'cache', s.seqcache, 'cycle', s.seqcycle)
           FROM pg_catalog.pg_sequence s
           JOIN pg_catalog.pg_class c on s.seqrelid = c."oid"
           WHERE c.relkind = 'S' AND a.attidentity != ''
           AND s.seqrelid = pg_catalog.pg_get_serial_sequence(a.attrelid::regclass::text, a.attname)::regclass::oid
          ) as identity_options
        FROM pg_catalog.pg_attribute a
        LEFT JOIN pg_catalog.pg_description pgd ON (pgd.objoid = a.attrelid AND pgd.objsubid = a.attnum)
        WHERE a.attrelid = 'public.people'::regclass AND a.attnum > 0 AND NOT a.attisdropped
        ORDER BY a.attnum""",
    "pk_columns": """
        SELECT a.attname FROM pg_attribute a JOIN (
            SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord
            FROM pg_index ix WHERE ix.indrelid = 'public.people'::regclass AND ix.indisprimary) k
          ON a.attnum = k.attnum
        WHERE a.attrelid = 'public.people'::regclass ORDER BY k.ord""",
    "pk_name": "SELECT conname FROM pg_catalog.pg_constraint r WHERE r.conrelid = 'public.people'::regclass "
               "AND r.contype = 'p' ORDER BY 1",
    "foreign_keys": "SELECT r.conname, pg_catalog.pg_get_constraintdef(r.oid, true) as condef, n.nspname as conschema "
                    "FROM pg_catalog.pg_constraint r, pg_namespace n, pg_class c "
                    "WHERE r.conrelid = 'public.people'::regclass AND r.contype = 'f' AND c.oid = confrelid "
                    "AND n.oid = c.relnamespace ORDER BY 1",
    "indexes": """
        SELECT i.relname as relname, ix.indisunique, ix.indexprs, a.attname, a.attnum, c.conrelid,
               ix.indkey::varchar, ix.indoption::varchar, i.reloptions, am.amname,
               pg_get_expr(ix.indpred, ix.indrelid)
        FROM pg_class t JOIN pg_index ix ON t.oid = ix.indrelid JOIN pg_class i ON i.oid = ix.indexrelid
        LEFT OUTER JOIN pg_attribute a ON t.oid = a.attrelid AND a.attnum = ANY(ix.indkey)
        LEFT OUTER JOIN pg_constraint c ON (ix.indrelid = c.conrelid AND ix.indexrelid = c.conindid
                                            AND c.contype in ('p', 'u', 'x'))
        LEFT OUTER JOIN pg_am am ON i.relam = am.oid
        WHERE t.relkind IN ('r', 'v', 'f', 'm', 'p') AND t.oid = 'public.people'::regclass AND ix.indisprimary = 'f'
        ORDER BY t.relname, i.relname""",
    "table_comment": "SELECT pg_catalog.obj_description(c.oid, 'pg_class') AS table_comment "
                     "FROM pg_catalog.pg_class c WHERE c.oid = 'public.people'::regclass",
    "server_version": "SELECT pg_catalog.version()",
    "current_schema": "SELECT current_schema()",
}


def test_sqlalchemy_reflection_as_analyst():
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        res = {}
        failures = []
        for name, sql in SQLALCHEMY.items():
            try:
                res[name] = fetch(conn, sql)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{name}: {getattr(e, 'pgcode', '')} {e}")
        conn.close()
    assert not failures, "\n  ".join(["SQLAlchemy reflection queries failed:"] + failures)
    assert ("people",) in res["table_names"], res["table_names"]
    assert len(res["table_oid"]) == 1
    types = {r[0]: r[1] for r in res["columns"]}
    assert {"age": "integer", "sex": "text", "zip": "text", "diagnosis": "text", "income": "integer"}.items() \
        <= types.items(), types
    assert res["pk_name"] == [("people_pkey",)], res["pk_name"]


# Metabase's PostgreSQL driver: the table list of describe-database (it LEFT JOINs pg_stat_user_tables for
# an estimated row count), the fields of describe-fields, and the SELECT-privilege check that decides
# which tables it syncs. From the Metabase source (postgres.clj), with the schema filter inlined.
METABASE_TABLES = """
SELECT n.nspname AS schema, c.relname AS name,
       CASE c.relkind WHEN 'r' THEN 'TABLE' WHEN 'p' THEN 'PARTITIONED TABLE' WHEN 'v' THEN 'VIEW'
                      WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'm' THEN 'MATERIALIZED VIEW' ELSE NULL END AS type,
       d.description AS description, stat.n_live_tup AS estimated_row_count
FROM pg_catalog.pg_class AS c
INNER JOIN pg_catalog.pg_namespace AS n ON c.relnamespace = n.oid
LEFT JOIN pg_catalog.pg_description AS d ON (c.oid = d.objoid) AND (d.objsubid = 0) AND (d.classoid = 'pg_class'::regclass)
LEFT JOIN pg_stat_user_tables AS stat ON (n.nspname = stat.schemaname) AND (c.relname = stat.relname)
WHERE (c.relnamespace = n.oid) AND (n.nspname !~ '^pg_') AND (n.nspname <> 'information_schema')
  AND c.relkind in ('r', 'p', 'v', 'f', 'm') AND (n.nspname IN ('public'))
ORDER BY type ASC, schema ASC, name ASC"""

METABASE_FIELDS = """
SELECT c.column_name AS name,
       CASE WHEN c.udt_schema IN ('public', 'pg_catalog') THEN format('%s', c.udt_name)
            ELSE format('"%s"."%s"', c.udt_schema, c.udt_name) END AS "database-type",
       c.ordinal_position - 1 AS "database-position", c.table_schema AS "table-schema",
       c.table_name AS "table-name", pk.column_name IS NOT NULL AS "pk?",
       col_description(CAST(CAST(format('%I.%I', CAST(c.table_schema AS TEXT), CAST(c.table_name AS TEXT)) AS REGCLASS) AS OID),
                       c.ordinal_position) AS "field-comment"
FROM information_schema.columns AS c
LEFT JOIN (SELECT tc.table_schema, tc.table_name, kc.column_name
           FROM information_schema.table_constraints AS tc
           INNER JOIN information_schema.key_column_usage AS kc
             ON (tc.constraint_name = kc.constraint_name) AND (tc.table_schema = kc.table_schema)
            AND (tc.table_name = kc.table_name)
           WHERE tc.constraint_type = 'PRIMARY KEY') AS pk
  ON (c.table_schema = pk.table_schema) AND (c.table_name = pk.table_name) AND (c.column_name = pk.column_name)
WHERE c.table_schema !~ '^information_schema|catalog_history|pg_' AND (c.table_schema IN ('public'))
  AND (c.table_name IN ('people'))
ORDER BY "table-schema" ASC, "table-name" ASC, "database-position" ASC"""

METABASE_PRIVILEGES = """
with table_privileges as (
 select NULL as role, t.schemaname as schema, t.objectname as table,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"', 'update') as update,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"', 'select') as select,
   pg_catalog.has_any_column_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"', 'insert') as insert,
   pg_catalog.has_table_privilege(current_user, '"' || replace(t.schemaname, '"', '""') || '"' || '.' || '"' || replace(t.objectname, '"', '""') || '"', 'delete') as delete
 from (
   select schemaname, tablename as objectname from pg_catalog.pg_tables
   union
   select schemaname, viewname as objectname from pg_catalog.pg_views
   union
   select schemaname, matviewname as objectname from pg_catalog.pg_matviews
 ) t
 where t.schemaname !~ '^pg_'
   and t.schemaname <> 'information_schema'
   and pg_catalog.has_schema_privilege(current_user, t.schemaname, 'usage')
)
select t.* from table_privileges t"""


def test_metabase_sync_table_list_as_analyst():
    # The issue: catalog introspection BI tools need still works for analysts, with no statistics
    # side channel. EXTENSION BUG (reported): Metabase's table list LEFT JOINs pg_stat_user_tables
    # for an estimated row count, and dxpriv refuses the whole statement (42501 "analysts cannot read
    # pg_stat_user_tables"), so Metabase cannot sync the database. Expected: the statement succeeds
    # and the protected table's estimated_row_count is NULL (no row count leaks).
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        try:
            rows = fetch(conn, METABASE_TABLES)
        finally:
            conn.close()
    people = [r for r in rows if r[1] == "people"]
    assert people and people[0][2] == "TABLE", rows
    assert people[0][4] is None, f"the protected table's row count leaked: {people[0][4]}"


def test_metabase_sync_fields_as_analyst():
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        rows = fetch(conn, METABASE_FIELDS)
        conn.close()
    types = {r[0]: r[1] for r in rows}
    assert {"age": "int4", "sex": "text", "zip": "text", "diagnosis": "text", "income": "int4"}.items() \
        <= types.items(), rows


def run_expect_error(conn, sql):
    """The psycopg2 error a statement raises (fails the test when it is accepted)."""
    try:
        with conn.cursor() as cur:
            cur.execute(sql)
    except psycopg2.Error as e:
        return e
    raise AssertionError(f"accepted: {sql}")


def test_metabase_sync_privilege_check_as_analyst():
    # Metabase syncs only the tables for which this query reports a privilege ("select" here).
    # Design (README, "Analysts"): analysts hold no privilege on protected tables, so Metabase hides
    # them until the DBA grants SELECT on the declared columns for BI visibility. That grant opens
    # no raw path: dxpriv checks every analyst statement at analysis and again at executor start.
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        rows = fetch(conn, METABASE_PRIVILEGES)
        assert ("public", "people") not in {(r[1], r[2]) for r in rows if r[4]}, rows
        with admin.cursor() as cur:
            cur.execute("GRANT SELECT (age, sex, zip, diagnosis, income) ON people TO mallory")
        rows = fetch(conn, METABASE_PRIVILEGES)
        for raw in ("SELECT age FROM people", "SELECT * FROM people", "SELECT age FROM people WHERE age = 30"):
            err = run_expect_error(conn, raw)
            assert err.pgcode == "42501" and err.diag.message_hint, (raw, err.pgcode)
        conn.close()
    by_table = {(r[1], r[2]): r for r in rows}
    assert ("public", "zips") in by_table and by_table[("public", "zips")][4] is True, rows
    people = by_table.get(("public", "people"))
    assert people is not None, rows
    assert people[4] is True, f"Metabase would not sync the protected table: {people}"
    assert people[3] is False and people[5] is False and people[6] is False, f"write privileges: {people}"


def test_catalog_introspection_spends_no_budget():
    with attack_db() as (db, admin):
        conn = analyst_conn(db)
        for sql in list(SQLALCHEMY.values()) + [METABASE_FIELDS]:
            fetch(conn, sql)
        conn.close()
        with admin.cursor() as cur:
            cur.execute("SELECT count(*) FROM dx.ledger")
            assert cur.fetchone()[0] == 0, "catalog queries were charged"
