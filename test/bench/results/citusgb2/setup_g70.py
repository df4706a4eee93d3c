import os, sys
sys.path.insert(0, "/work/wt/citusgb2/test/citus")
from citus_common import connect, execute, port, HOST
import citus_fixture as fx
name = "gb"
for n in ("coord", "w1", "w2"):
    a = connect(n); execute(a, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"); execute(a, f"CREATE DATABASE {name}")
    execute(a, f"ALTER DATABASE {name} SET dxpriv.cache_lifetime = 0"); a.close()
    c = connect(n, name); execute(c, "CREATE EXTENSION citus"); c.close()
c = connect("coord", name)
execute(c, "SELECT citus_set_coordinator_host(%s, %s)", (HOST, port("coord")))
for w in ("w1", "w2"):
    execute(c, "SELECT citus_add_node(%s, %s)", (HOST, port(w)))
execute(c, "CREATE EXTENSION dxpriv")
n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
execute(c, "CREATE TABLE g70 (id bigint, k int, income int)")
execute(c, "SELECT create_distributed_table('g70', 'id', shard_count => 32)")
execute(c, f"INSERT INTO g70 SELECT g, (g % 70)::int, ((g::bigint * 7919) % 2000) * 100 FROM generate_series(1, {n}) g")
t = "g70"
execute(c, f"SELECT dx.protect_table('{t}', 1.0)")
execute(c, f"""SELECT dx.set_column('{t}', 'income', '{{"min": 0, "max": 200000, "step": 100}}', '{{"type": "none"}}')""")
execute(c, f"""SELECT dx.set_column('{t}', 'id', '{{"min": 0, "max": 999999}}', '{{"type": "none"}}')""")
execute(c, f"SELECT dx.grant_budget('postgres', '{t}', 100000)")
execute(c, """SELECT dx.set_column('g70', 'k', '{"min": 0, "max": 69}', '{"type": "absolute", "scale": 10}')""")
execute(c, "ANALYZE g70")
print("ok")
