# cpu_per_node.py N ROUNDS label=query ...: wall and CPU per node (/proc) per statement, interleaved rounds, medians (WORK: the run-citus.sh folder, DB: a database with g70, e.g. from ../citusgb2/setup_g70.py)
import os, sys, time, statistics, psycopg2
WORK = os.environ.get("WORK", ""); N = int(sys.argv[1]); ROUNDS = int(sys.argv[2])
QS = [a.split("=", 1) for a in sys.argv[3:]]
nodes = ("coord", "w1", "w2")
pms = {n: int(open(f"{WORK}/{n}/data/postmaster.pid").readline()) for n in nodes}
tck = os.sysconf("SC_CLK_TCK")
def pids(pm):
    return [pm] + [int(x) for x in open(f"/proc/{pm}/task/{pm}/children").read().split()]
def cpu_of(pid):
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])) * 1000.0 / tck
    except OSError:
        return 0.0
def snap():
    return {n: {p: cpu_of(p) for p in pids(pm)} for n, pm in pms.items()}
def delta(a, b):
    return {n: sum(v - a[n].get(p, 0.0) for p, v in b[n].items()) for n in nodes}
c = psycopg2.connect(host="127.0.0.1", port=int(os.environ.get("COORD", "56620")), user="postgres", dbname=os.environ.get("DB", "gb")); c.autocommit = True
cur = c.cursor(); cur.execute("SET dxpriv.epsilon = 1")
for s in os.environ.get("SETS", "").split(";"):
    if s.strip(): cur.execute(s)
cur.execute("SELECT pg_backend_pid()"); me = cur.fetchone()[0]
def run(q):
    cur.execute(q); cur.fetchall()
for _, q in QS:
    run(q); run(q)
res = {}
for r in range(ROUNDS):
    for name, q in QS:
        mine0 = cpu_of(me); a = snap(); t0 = time.perf_counter()
        for _ in range(N): run(q)
        wall = (time.perf_counter() - t0) * 1000 / N
        d = delta(a, snap()); mine = (cpu_of(me) - mine0) / N
        res.setdefault(name, []).append((wall, mine, d["coord"] / N, d["w1"] / N, d["w2"] / N))
for name, _ in QS:
    v = res[name]
    med = [statistics.median(x[i] for x in v) for i in range(5)]
    print(f"{name:14s} wall {med[0]:6.1f} | my backend {med[1]:5.1f} | coord {med[2]:5.1f} w1 {med[3]:5.1f} w2 {med[4]:5.1f} total {med[2]+med[3]+med[4]:6.1f} ms/stmt")
print("load", os.getloadavg())
