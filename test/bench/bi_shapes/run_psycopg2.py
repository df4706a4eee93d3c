# Issue 24 shapes (test/bench/bi_shapes/run.sh): sends each shape through psycopg2 (client-side interpolation), prints name<TAB>ok|error<TAB>detail.
import json, sys, psycopg2
shapes = json.load(open(sys.argv[1]))
conn = psycopg2.connect(host=sys.argv[2], port=sys.argv[3], user="bw_analyst", dbname="postgres")
conn.autocommit = True
for s in shapes:
    sql = s["sql"].replace("$1", "%s")
    try:
        with conn.cursor() as cur:
            cur.execute(sql, s["params"] or None)
            rows = cur.fetchall()
            cur.execute("SELECT count(*) FROM dx.last_release()")
            cells = cur.fetchone()[0]
        ok = True
        detail = f"{len(rows)} rows, {cells} cells"
        if "cells" in s and cells != s["cells"]:
            ok, detail = False, f"{cells} cells (want {s['cells']}: identical aggregates not merged)"
        if s.get("consistent"):
            total = [r[1] for r in rows if r[0] is None]
            parts = sum(r[1] for r in rows if r[0] is not None)
            if not total or abs(total[0] - parts) > 1e-6:
                ok, detail = False, f"total {total} != parts {parts}"
        print(f"{s['name']}\t{'ok' if ok else 'wrong'}\t{detail}")
    except psycopg2.Error as e:
        print(f"{s['name']}\terror\t{e.pgcode} {e.diag.message_primary}")
