import psycopg2, time, statistics, sys
def conn(p, db="profdb"):
    c = psycopg2.connect(host="127.0.0.1", port=p, user="postgres", dbname=db); c.autocommit = True; return c
co = conn(56710); w = [conn(56711), conn(56712)]
def sessions():
    r = []
    for c in w:
        cur = c.cursor(); cur.execute("SELECT pg_stat_clear_snapshot(); SELECT sessions FROM pg_stat_database WHERE datname='profdb'"); r.append(cur.fetchone()[0])
    return r
cur = co.cursor(); cur.execute("SET dxpriv.epsilon = 1")
Q = {"native": "SELECT k, count(*), sum(income) FROM g70 GROUP BY k",
     "native+call": "SELECT k, count(*), sum((income+0)::int8) FROM g70 GROUP BY k",
     "native+2call": "SELECT k, count(*), sum(((income+0)*1)::int8) FROM g70 GROUP BY k",
     "dx": "SELECT k, dx.count(*), dx.sum(income) FROM g70 GROUP BY k"}
res = {k: [] for k in Q}; ses = {k: [] for k in Q}
for rnd in range(int(sys.argv[1]) if len(sys.argv) > 1 else 3):
  for name, q in Q.items():
    cur.execute(q); cur.fetchall()
    s0 = sessions(); ts = []
    for i in range(10):
        t = time.time(); cur.execute(q); cur.fetchall(); ts.append((time.time() - t) * 1000)
    time.sleep(0.3); s1 = sessions()
    res[name].append(statistics.median(ts)); ses[name].append(sum(b - a for a, b in zip(s0, s1)) / 10)
for name in Q:
    print(f"{name:14s} ms {statistics.median(res[name]):7.1f} ratio {statistics.median(res[name])/statistics.median(res['native']):.2f} new sessions/stmt (both workers) {statistics.median(ses[name]):.1f}")
