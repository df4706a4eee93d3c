#!/usr/bin/env python3
"""Error of consistent vs raw ROLLUP/CUBE releases over a public join (issue 24).

Usage: test/bench/join_rollup/rmse.py HOST PORT [RELEASES]   (default 200 releases per mode)
Creates database jr_rmse (dropped at the end) with a protected table jn (800 rows) and two public
tables: jn_zones (one zone per city) and jn_tags (city a joins two tags, d none: a fan-out). Runs
each query RELEASES times with dxpriv.postprocess on (consistent totals) and off (raw), answer cache
off, and prints per grouping set the RMSE against PostgreSQL's exact answer, and whether every
consistent release added up.
"""
import math
import sys

import psycopg2

host, port = sys.argv[1], sys.argv[2]
releases = int(sys.argv[3]) if len(sys.argv) > 3 else 200
QUERIES = {
    "rollup_zone_sex": "SELECT GROUPING(z.zone, j.sex) AS g, z.zone, j.sex, {agg} AS n FROM jn j "
                       "JOIN jn_zones z ON z.city = j.city GROUP BY ROLLUP (z.zone, j.sex)",
    "cube_tag_sex_fanout": "SELECT GROUPING(t.tag, j.sex) AS g, t.tag, j.sex, {agg} AS n FROM jn j "
                           "JOIN jn_tags t ON t.city = j.city GROUP BY CUBE (t.tag, j.sex)",
}


def connect(db):
    c = psycopg2.connect(host=host, port=port, user="postgres", dbname=db)
    c.autocommit = True
    return c


admin = connect("postgres")
admin.cursor().execute("DROP DATABASE IF EXISTS jr_rmse")
admin.cursor().execute("CREATE DATABASE jr_rmse")
try:
    conn = connect("jr_rmse")
    cur = conn.cursor()
    for sql in [
        "CREATE EXTENSION dxpriv",
        "CREATE TABLE jn (age int, sex text, city text)",
        "INSERT INTO jn SELECT 20 + (i * 7) % 60, (ARRAY['M','F'])[1 + i % 2], (ARRAY['a','b','c','d'])[1 + i % 4] "
        "FROM generate_series(1, 800) AS i",
        "SELECT dx.protect_table('jn', 1)",
        """SELECT dx.set_column('jn', 'age', '{"min": 0, "max": 100, "step": 1}', '{"type": "absolute", "scale": 1}')""",
        """SELECT dx.set_column('jn', 'sex', '{"values": ["M", "F"]}', '{"type": "discrete", "weight": 2}')""",
        """SELECT dx.set_column('jn', 'city', '{"values": ["a", "b", "c", "d"]}', '{"type": "discrete", "weight": 1}')""",
        "SELECT dx.grant_budget(current_user::regrole, 'jn', 1e9)",
        "CREATE TABLE jn_zones (city text, zone text)",
        "INSERT INTO jn_zones VALUES ('a', 'n'), ('b', 'n'), ('c', 's'), ('d', 's')",
        "CREATE TABLE jn_tags (city text, tag text)",
        "INSERT INTO jn_tags VALUES ('a', 'x'), ('a', 'y'), ('b', 'x'), ('c', 'z')",
        "SELECT dx.set_public('jn_zones')",
        "SELECT dx.set_public('jn_tags')",
        "SET dxpriv.cache_lifetime = 0",
    ]:
        cur.execute(sql)
    print(f"releases per mode: {releases}")
    for name, q in QUERIES.items():
        cur.execute(q.format(agg="count(*)"))
        exact = {(g, a, b): n for g, a, b, n in cur.fetchall()}
        err = {}  # (mode, set) -> squared errors
        adds_up = True
        for mode in ("on", "off"):
            cur.execute(f"SET dxpriv.postprocess = {mode}")
            for _ in range(releases):
                cur.execute(q.format(agg="dx.count(1, 0.5)"))
                rows = cur.fetchall()
                by_set = {}
                for g, a, b, n in rows:
                    err.setdefault((mode, g), []).append((n - exact.get((g, a, b), 0)) ** 2)
                    by_set.setdefault(g, 0)
                    by_set[g] += n
                if mode == "on" and len(set(by_set.values())) != 1:
                    adds_up = False
        cur.execute("RESET dxpriv.postprocess")
        print(f"== {name}: every consistent release adds up: {adds_up}")
        print("set(GROUPING)  cells  rmse_raw  rmse_consistent  ratio")
        allr = {"on": [], "off": []}
        for g in sorted({g for _, g in err}):
            raw = math.sqrt(sum(err[("off", g)]) / len(err[("off", g)]))
            con = math.sqrt(sum(err[("on", g)]) / len(err[("on", g)]))
            cells = len(err[("on", g)]) // releases
            allr["on"] += err[("on", g)]
            allr["off"] += err[("off", g)]
            print(f"{g:13d}  {cells:5d}  {raw:8.2f}  {con:15.2f}  {con / raw:5.2f}")
        raw = math.sqrt(sum(allr["off"]) / len(allr["off"]))
        con = math.sqrt(sum(allr["on"]) / len(allr["on"]))
        print(f"{'all':>13s}  {'':5s}  {raw:8.2f}  {con:15.2f}  {con / raw:5.2f}")
    conn.close()
finally:
    admin.cursor().execute("DROP DATABASE IF EXISTS jr_rmse WITH (FORCE)")
    admin.close()
