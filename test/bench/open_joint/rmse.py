#!/usr/bin/env python3
"""Error of the joint open ROLLUP against the per-set release at the same charge (issue 26, openjoint).

Usage: test/bench/open_joint/rmse.py HOST PORT [RELEASES] [EPSILON] [WEIGHT]
(defaults 300 releases, 6, open weight 1)
Creates database oj_rmse (dropped at the end) with a protected table oj (4 cities x 2 wards x 100
rows, city open with discrete weight WEIGHT, ward declared, presence 1, delta 1e-6) and answers
ROLLUP (city, ward) with dx.count(*) and dx.sum(v) RELEASES times in two ways, both charged EPSILON
in total (answer cache off):

* joint: one statement GROUP BY ROLLUP (city, ward) at dxpriv.epsilon = EPSILON / 3 (two
  aggregates and the selection: charged EPSILON, delta once);
* per set: what the per-set release does, one release per set: GROUP BY city, ward and GROUP BY
  city (each two aggregates and a selection) and the ungrouped total (two aggregates), at
  dxpriv.epsilon = EPSILON / 8 (charged EPSILON, delta twice).

Prints, per grouping set and aggregate, the RMSE against PostgreSQL's exact answer over the kept
partitions (all of them are kept in both modes: 100 rows or more each).
"""
import math
import sys

import psycopg2

host, port = sys.argv[1], sys.argv[2]
releases = int(sys.argv[3]) if len(sys.argv) > 3 else 300
budget = float(sys.argv[4]) if len(sys.argv) > 4 else 6.0
weight = float(sys.argv[5]) if len(sys.argv) > 5 else 1.0


def connect(db):
    c = psycopg2.connect(host=host, port=port, user="postgres", dbname=db)
    c.autocommit = True
    return c


JOINT = ("SELECT GROUPING(city, ward) AS g, city, ward, dx.count(*) AS n, dx.sum(v) AS s FROM oj "
         "GROUP BY ROLLUP (city, ward)")
PER_SET = [
    "SELECT 0 AS g, city, ward, dx.count(*) AS n, dx.sum(v) AS s FROM oj GROUP BY city, ward",
    "SELECT 1 AS g, city, NULL::text AS ward, dx.count(*) AS n, dx.sum(v) AS s FROM oj GROUP BY city",
    "SELECT 3 AS g, NULL::text AS city, NULL::text AS ward, dx.count(*) AS n, dx.sum(v) AS s FROM oj",
]
NATIVE = ("SELECT GROUPING(city, ward) AS g, city, ward, count(*) AS n, sum(v) AS s FROM oj "
          "GROUP BY ROLLUP (city, ward)")

admin = connect("postgres")
admin.cursor().execute("DROP DATABASE IF EXISTS oj_rmse")
admin.cursor().execute("CREATE DATABASE oj_rmse")
try:
    conn = connect("oj_rmse")
    cur = conn.cursor()
    for sql in [
        "CREATE EXTENSION dxpriv",
        "CREATE TABLE oj (city text, ward text, v int)",
        "INSERT INTO oj SELECT 'c' || (1 + i % 4), (ARRAY['A','B'])[1 + (i / 4) % 2], i % 10 "
        "FROM generate_series(1, 800) AS i",
        "SELECT dx.protect_table('oj', 1)",
        """SELECT dx.set_column('oj', 'ward', '{"values": ["A", "B"]}', '{"type": "discrete", "weight": 1}')""",
        """SELECT dx.set_column('oj', 'v', '{"min": 0, "max": 9}', '{"type": "absolute", "scale": 1}')""",
        f"""SELECT dx.set_column('oj', 'city', '{{"open": true}}', '{{"type": "discrete", "weight": {weight}}}')""",
        "SELECT dx.set_delta('oj', 1e-6)",
        "SELECT dx.grant_budget(current_user::regrole, 'oj', 1e9, delta => 1)",
        "SET dxpriv.cache_lifetime = 0",
    ]:
        cur.execute(sql)
    cur.execute(NATIVE)
    exact = {(g, c, w): (float(n), float(s)) for g, c, w, n, s in cur.fetchall()}

    def run(mode):
        sq = {}
        count = {}
        last = None
        cur.execute("SELECT coalesce(max(id), 0) FROM dx.ledger")
        last = cur.fetchone()[0]
        for _ in range(releases):
            rows = []
            if mode == "joint":
                cur.execute(f"SET dxpriv.epsilon = {budget / 3}")
                cur.execute(JOINT)
                rows = cur.fetchall()
            else:
                cur.execute(f"SET dxpriv.epsilon = {budget / 8}")
                for q in PER_SET:
                    cur.execute(q)
                    rows += cur.fetchall()
            for g, c, w, n, s in rows:
                key = (g, c, w)
                for agg, val, ex in (("count", n, exact[key][0]), ("sum", s, exact[key][1])):
                    sq[(g, agg)] = sq.get((g, agg), 0.0) + (float(val) - ex) ** 2
                    count[(g, agg)] = count.get((g, agg), 0) + 1
        cur.execute(f"SELECT sum(epsilon), sum(delta), count(*) FROM dx.ledger WHERE id > {last}")
        eps, delta, n = cur.fetchone()
        return {k: math.sqrt(sq[k] / count[k]) for k in sq}, {k: count[k] for k in count}, \
            (float(eps) / releases, float(delta) / releases, n / releases)

    joint, jn, jc = run("joint")
    per, pn, pc = run("per_set")
    print(f"open weight {weight:g}; releases per mode: {releases}; charge per release: joint eps {jc[0]:g} delta {jc[1]:g} "
          f"({jc[2]:g} ledger rows), per set eps {pc[0]:g} delta {pc[1]:g} ({pc[2]:g} ledger rows)")
    names = {0: "(city, ward)", 1: "(city)", 3: "()"}
    print(f"{'set':14} {'aggregate':9} {'joint RMSE':>11} {'per-set RMSE':>13} {'ratio':>7}  cells (joint/per set)")
    for g in (0, 1, 3):
        for agg in ("count", "sum"):
            k = (g, agg)
            print(f"{names[g]:14} {agg:9} {joint[k]:11.2f} {per[k]:13.2f} {per[k] / joint[k]:7.2f}  {jn[k]}/{pn[k]}")
finally:
    conn.close() if "conn" in dir() else None
    admin.cursor().execute("DROP DATABASE IF EXISTS oj_rmse")
