import os, sys, time, statistics, psycopg2
WORK = sys.argv[1]; ROUNDS = int(sys.argv[2])
QS = [("count", "SELECT k, count(*) FROM g70 GROUP BY k", "SELECT k, dx.count(*) FROM g70 GROUP BY k"),
      ("count, sum", "SELECT k, count(*), sum(income) FROM g70 GROUP BY k", "SELECT k, dx.count(*), dx.sum(income) FROM g70 GROUP BY k")]
pms = [int(open(f"{WORK}/{n}/data/postmaster.pid").readline()) for n in ("coord", "w1", "w2")]
tck = os.sysconf("SC_CLK_TCK")
def cpu():
    tot = 0
    for pm in pms:
        f = open(f"/proc/{pm}/stat").read().rsplit(")", 1)[1].split()
        tot += sum(int(x) for x in f[11:15])
        for ch in open(f"/proc/{pm}/task/{pm}/children").read().split():
            try:
                f = open(f"/proc/{ch}/stat").read().rsplit(")", 1)[1].split(); tot += int(f[11]) + int(f[12])
            except OSError:
                pass
    return tot * 1000.0 / tck
c = psycopg2.connect(host="127.0.0.1", port=56400, user="postgres", dbname="gb"); c.autocommit = True
cur = c.cursor(); cur.execute("SET dxpriv.epsilon = 1")
def run(q):
    t0, c0 = time.perf_counter(), cpu(); cur.execute(q); cur.fetchall(); return (time.perf_counter() - t0) * 1000, cpu() - c0
first = {}
for name, nat, dx in QS:
    first[name] = run(dx)[0]
    run(nat)
res = {(n, k): [] for n, _, _ in QS for k in ("nat", "dx")}
for r in range(ROUNDS):
    for name, nat, dx in QS:
        res[(name, "nat")].append(run(nat)); res[(name, "dx")].append(run(dx))
for name, _, _ in QS:
    nw = statistics.median(x[0] for x in res[(name, "nat")]); dw = statistics.median(x[0] for x in res[(name, "dx")])
    nc = statistics.median(x[1] for x in res[(name, "nat")]); dc = statistics.median(x[1] for x in res[(name, "dx")])
    print(f"{name}: wall native {nw:.1f} dx {dw:.1f} ratio {dw/nw:.2f} | cpu native {nc:.0f} dx {dc:.0f} ratio {dc/nc:.2f} | first dx {first[name]:.0f} ms | load {os.getloadavg()[0]:.1f}")
