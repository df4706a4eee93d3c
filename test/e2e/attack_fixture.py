"""A realistic protected table and an analyst role, for the attack and BI-shape suites.

`people` holds ~2000 deterministic rows (no random()):

    id int PRIMARY KEY   undeclared
    name text            undeclared; row 5 is SECRET_NAME, the value attacks try to extract
    age int              0..120, absolute metric, scale 10
    sex text             F/M, discrete
    zip text             ten enumerated values (ZIPS), discrete
    diagnosis text       no/yes, per_value (yes is the sensitive value)
    income int           0..200000 step 100, metric none

`zips(zip, city)` is an ordinary table everyone may read. `mallory` (LOGIN) is made an analyst with
dx.add_analyst and gets a large budget; she also owns a schema `mallory_ws`, so that attempts to
create views, tables or functions fail because of dxpriv, not because PostgreSQL 15 refuses CREATE
on schema public.
"""
import contextlib
import uuid

import psycopg2

from e2e_common import connect, execute, fresh_db, scalar

ANALYST = "mallory"
BUDGET = 100000.0
SECRET_NAME = "Zebulon Quixote"
SECRET_ID = 5
ZIPS = ["10001", "10002", "10003", "10004", "10005", "10006", "10007", "10008", "10009", "10010"]
CITIES = ["Avalon", "Brigadoon", "Camelot", "Dunwich", "Eldorado", "Fairhaven", "Gotham", "Hogsmeade",
          "Innsmouth", "Jericho"]
FIRST_NAMES = ["Ada", "Bram", "Cleo", "Dov", "Edith", "Farid", "Greta", "Hugo", "Ines", "Jonas", "Kemal", "Lena"]

# declared domains (the sizes a GROUP BY returns, whatever the data)
DOMAIN_SIZES = {"age": 121, "sex": 2, "zip": len(ZIPS), "diagnosis": 2, "income": 2001}

COLUMNS = [
    ("age", '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}'),
    ("sex", '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}'),
    ("zip", '{"values": [%s]}' % ", ".join(f'"{z}"' for z in ZIPS), '{"type": "discrete", "weight": 1}'),
    ("diagnosis", '{"values": ["no", "yes"]}', '{"type": "per_value", "weights": {"yes": 1, "no": 4}}'),
    ("income", '{"min": 0, "max": 200000, "step": 100}', '{"type": "none"}'),
]


def ensure_analyst_role(conn, role=ANALYST):
    """Creates the LOGIN role once per cluster (roles outlive the per-test databases)."""
    execute(conn, f"""DO $$ BEGIN
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN
            CREATE ROLE {role} LOGIN;
        END IF; END $$""")


def create_people(conn, table="people", rows=2000, variant=0):
    """Creates and protects one people-shaped table. variant 0 is the realistic data; variant 1 is
    different data with the same policy (everyone in zip 10001, aged 40, female, no diagnosis)."""
    execute(conn, f"""CREATE TABLE {table} (
        id int PRIMARY KEY, name text NOT NULL, age int, sex text, zip text, diagnosis text, income int)""")
    if rows > 0 and variant == 0:
        first = "ARRAY[" + ", ".join(f"'{n}'" for n in FIRST_NAMES) + "]"
        zips = "ARRAY[" + ", ".join(f"'{z}'" for z in ZIPS) + "]"
        execute(conn, f"""INSERT INTO {table}
            SELECT i,
                   CASE WHEN i = {SECRET_ID} THEN '{SECRET_NAME}'
                        ELSE ({first})[1 + (i * 7) % {len(FIRST_NAMES)}] || ' Person' || i END,
                   18 + (i * 37) % 73,
                   CASE WHEN (i * 13) % 5 < 3 THEN 'F' ELSE 'M' END,
                   ({zips})[1 + (i * 31) % {len(ZIPS)}],
                   CASE WHEN i % 19 = 0 THEN 'yes' ELSE 'no' END,
                   ((i * 7919) % 2000) * 100
            FROM generate_series(1, {rows}) AS i""")
        # the secret row is unique in its neighbourhood: a 30-year-old in zip 10007 with the diagnosis
        execute(conn, f"UPDATE {table} SET age = 30, zip = '10007', diagnosis = 'yes', income = 187300 "
                      f"WHERE id = {SECRET_ID}")
    elif rows > 0:
        execute(conn, f"""INSERT INTO {table}
            SELECT i, 'Other Person' || i, 40, 'F', '10001', 'no', 50000 FROM generate_series(1, {rows}) AS i""")
    execute(conn, f"ANALYZE {table}")  # fills pg_statistic: the side channel exists for real
    execute(conn, f"SELECT dx.protect_table('{table}', 1.0)")
    for col, domain, metric in COLUMNS:
        execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (table, col, domain, metric))


def build(conn, analyst=ANALYST, budget=BUDGET):
    """people + zips + the analyst with her budget and workspace, in the database of conn (superuser)."""
    ensure_analyst_role(conn, analyst)
    create_people(conn, "people")
    execute(conn, "CREATE TABLE zips (zip text PRIMARY KEY, city text NOT NULL)")
    execute(conn, "INSERT INTO zips VALUES " + ", ".join(f"('{z}', '{c}')" for z, c in zip(ZIPS, CITIES)))
    execute(conn, "GRANT SELECT ON zips TO PUBLIC")
    execute(conn, f"CREATE SCHEMA {analyst}_ws AUTHORIZATION {analyst}")
    execute(conn, "SELECT dx.add_analyst(%s::regrole)", (analyst,))
    execute(conn, "SELECT dx.grant_budget(%s::regrole, 'people', %s)", (analyst, budget))


def protect_extra(conn, table, rows, variant, analyst=ANALYST, budget=BUDGET):
    """Another protected table with the same policy (for comparisons with different data)."""
    create_people(conn, table, rows=rows, variant=variant)
    execute(conn, "SELECT dx.grant_budget(%s::regrole, %s::regclass, %s)", (analyst, table, budget))


@contextlib.contextmanager
def attack_db():
    """Yields (dbname, admin connection) of a fresh database holding the fixture."""
    with fresh_db() as db:
        admin = connect(db)
        try:
            build(admin)
            yield db, admin
        finally:
            admin.close()


def analyst_conn(db, user=ANALYST):
    conn = connect(db, user=user)
    execute(conn, f"SET search_path = public, {user}_ws")
    return conn


def tag():
    """A unique comment marker: the ledger stores the statement text, so a tagged query can be
    matched with its ledger rows."""
    return "/* t" + uuid.uuid4().hex + " */ "


def ledger_rows(admin, marker):
    """(epsilon, scales) of the ledger rows whose statement text contains marker."""
    with admin.cursor() as cur:
        cur.execute("SELECT epsilon, scales FROM dx.ledger WHERE strpos(query, %s) > 0 ORDER BY id",
                    (marker.strip(),))
        return cur.fetchall()


def spent(admin, table="people", role=ANALYST):
    return scalar(admin, "SELECT spent FROM dx.budget_grants WHERE role = %s::regrole AND relid = %s::regclass",
                  (role, table))


def sqlstate_of(conn, sql):
    """Runs sql; returns None on success, else the psycopg2 error."""
    try:
        execute(conn, sql)
        return None
    except psycopg2.Error as e:
        return e
