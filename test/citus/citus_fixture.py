"""The Citus tests' data: `people` distributed over 32 shards and `people_local`, a plain table
with the same rows and the same policy (the reference for exact answers), an analyst with budget."""
from citus_common import connect, create_role, execute

ANALYST = "citus_analyst"
COLUMNS = [
    ("age", '{"min": 0, "max": 120}', '{"type": "absolute", "scale": 10}'),
    ("sex", '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}'),
    ("region", '{"values": ["north", "south", "east", "west", "none"]}', '{"type": "discrete", "weight": 1}'),
    ("income", '{"min": 0, "max": 200000, "step": 100}', '{"type": "none"}'),
]


# COLUMNS with presence Infinity and metric none: sensitivity 0, the answers are exact
NOISELESS = [(c, d, '{"type": "none"}') for c, d, _ in COLUMNS]


def rows_sql(n):
    return f"""SELECT g, 18 + (g * 37) % 73, CASE WHEN (g * 13) % 5 < 3 THEN 'F' ELSE 'M' END,
                (ARRAY['north','south','east','west'])[1 + (g * 7) % 4], ((g::bigint * 7919) % 2000) * 100
         FROM generate_series(1, {n}) g"""


def protect(conn, table):
    execute(conn, f"SELECT dx.protect_table('{table}', 1.0)")
    for col, domain, metric in COLUMNS:
        execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (table, col, domain, metric))
    execute(conn, "SELECT dx.grant_budget(%s::regrole, %s::regclass, 1000)", (ANALYST, table))
    execute(conn, "SELECT dx.grant_budget('postgres'::regrole, %s::regclass, 100000)", (table,))


def exact_table(conn, name, shards, rows):
    """`name` distributed by id over `shards` shards with `rows` rows, protected noiselessly
    (NOISELESS) for the owner postgres: its answers equal native SQL's."""
    execute(conn, f"CREATE TABLE {name} (id bigint PRIMARY KEY, age int, sex text, region text, income int)")
    execute(conn, f"SELECT create_distributed_table('{name}', 'id', shard_count => {shards})")
    execute(conn, f"INSERT INTO {name} {rows_sql(rows)}")
    execute(conn, f"SELECT dx.protect_table('{name}', 'Infinity')")
    for col, domain, metric in NOISELESS:
        execute(conn, "SELECT dx.set_column(%s::regclass, %s, %s::jsonb, %s::jsonb)", (name, col, domain, metric))
    execute(conn, f"SELECT dx.grant_budget('postgres'::regrole, '{name}', 1000)")


def build(db, rows=100000, shards=32):
    """people (distributed by id over `shards` shards) and people_local, both protected."""
    create_role(ANALYST)
    conn = connect("coord", db)
    for t in ("people", "people_local"):
        execute(conn, f"CREATE TABLE {t} (id bigint PRIMARY KEY, age int, sex text, region text, income int)")
    execute(conn, "SELECT create_distributed_table('people', 'id', shard_count => %s)", (shards,))
    execute(conn, f"INSERT INTO people {rows_sql(rows)}")
    execute(conn, f"INSERT INTO people_local {rows_sql(rows)}")
    execute(conn, "SELECT dx.add_analyst(%s::regrole)", (ANALYST,))
    for t in ("people", "people_local"):
        protect(conn, t)
    conn.close()
