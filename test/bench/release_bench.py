#!/usr/bin/env python3
"""Synthetic releases against direct answers (issue 14): workload error of dx.release_mwem over all
2-way marginals of a health-like table, versus answering every workload query directly with dx
aggregates at the same total epsilon, and the crossover (how many workload queries it takes before
a release beats direct answers).

Needs a running cluster with dxpriv installed and preloaded (PGHOST/PGPORT/PGUSER or --dsn), as a
superuser (it creates the table, protects it, grants itself a budget and turns the answer cache
off). Writes:

  results/release_bench.csv          epsilon, method, run, max_error, mean_error, seconds, detail
  results/release_bench_summary.csv  epsilon, method, mean over runs of max and mean error, crossover
  results/release_bench.png          max and mean workload error against epsilon

Data: n rows over age band (9) x sex (2) x diagnosis (5) x region (4) = 360 points, drawn from a
fixed-seed joint distribution (diagnosis depends on age and sex; region skewed and mildly related to
diagnosis). Policy: presence 1 (adding or removing a row costs epsilon), discrete metric weight 1 on
sex, diagnosis and region, absolute metric of scale 1 on the age band; every marginal cell has
generalized sensitivity 1, i.e. this is epsilon-DP on the add/remove neighbourhood.

Methods at each total epsilon:
  mwem    dx.release_mwem(..., 'marginals:2', epsilon, ...) with the default iteration count of
          MECHANISMS.md §3.11; the 137 marginal cells are then read from the synthetic table.
  mwem_last  the same with average => false (the last iterate instead of the average).
  mwem_t40_last  iterations => 40, average => false (fewer, less noisy measurements).
  direct  the 6 two-way marginal tables as 6 GROUP BY statements with dx.count(*) at epsilon/6 each (SET dxpriv.epsilon)
          (the multi-linear engine allocates each statement's epsilon over its cells).
Errors are absolute count errors over the 137 cells, max and mean, averaged over --runs runs.

Crossover: the direct error grows linearly with the number of statements k sharing the epsilon
(Laplace scale ∝ k/epsilon), while the release's error is fixed once it is made. With err6 the
measured direct mean error at k = 6, direct mean error at k tables is err6 * k / 6; the release
(the better of its two outputs) wins from k* = 6 * mwem_mean / err6 marginal tables on, i.e. k* * 137/6 cells. For single-cell
statements (one dx.count per cell, epsilon/q each, scale q/epsilon, mean absolute error
q/epsilon) the release wins from q* = epsilon * mwem_mean queries on.
"""

import argparse
import csv
import itertools
import os
import time

import numpy as np
import psycopg2

AGE = list(range(9))  # age bands 0-9, ..., 80+
SEX = ["F", "M"]
DIAG = ["healthy", "diabetes", "hypertension", "asthma", "cancer"]
REGION = ["north", "south", "east", "west"]
COLS = ["age_band", "sex", "diagnosis", "region"]
DOMAINS = {"age_band": AGE, "sex": SEX, "diagnosis": DIAG, "region": REGION}


def synthetic_rows(n, seed):
    rng = np.random.default_rng(seed)
    age = rng.choice(9, size=n, p=np.array([11, 12, 13, 14, 14, 13, 11, 8, 4]) / 100)
    sex = rng.choice(2, size=n, p=[0.51, 0.49])
    region = rng.choice(4, size=n, p=[0.35, 0.25, 0.25, 0.15])
    diag = np.empty(n, dtype=int)
    for i in range(n):
        a, s = age[i], sex[i]
        p = np.array([
            max(0.2, 0.85 - 0.08 * a),        # healthy
            0.01 + 0.02 * a,                  # diabetes
            0.005 + 0.035 * a * (1.1 if s == 1 else 0.9),  # hypertension
            0.08 - 0.005 * a,                 # asthma
            0.002 + 0.006 * a + (0.01 if region[i] == 0 else 0),  # cancer (registry artefact)
        ])
        diag[i] = rng.choice(5, p=p / p.sum())
    return age, sex, diag, region


def setup(conn, n, seed):
    age, sex, diag, region = synthetic_rows(n, seed)
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS health CASCADE")
        cur.execute("CREATE TABLE health (id int, age_band int, sex text, diagnosis text, region text)")
        rows = "\n".join(f"{i}\t{age[i]}\t{SEX[sex[i]]}\t{DIAG[diag[i]]}\t{REGION[region[i]]}" for i in range(n))
        import io
        cur.copy_expert("COPY health FROM STDIN", io.StringIO(rows + "\n"))
        cur.execute("SELECT dx.protect_table('health', 1.0)")
        cur.execute("""SELECT dx.set_column('health', 'age_band', '{"min": 0, "max": 8}', '{"type": "absolute", "scale": 1}')""")
        for c in ("sex", "diagnosis", "region"):
            vals = ", ".join(f'"{v}"' for v in DOMAINS[c])
            cur.execute(f"""SELECT dx.set_column('health', '{c}', '{{"values": [{vals}]}}', '{{"type": "discrete", "weight": 1}}')""")
        cur.execute("SELECT dx.grant_budget(current_user::regrole, 'health', 1e6)")
        cur.execute("SET dxpriv.cache_lifetime = 0")
        cur.execute("SET dxpriv.test_seed = -1")


def true_marginals(conn):
    out = {}
    with conn.cursor() as cur:
        for a, b in itertools.combinations(COLS, 2):
            cur.execute(f"SELECT {a}, {b}, count(*) FROM health GROUP BY 1, 2")
            got = {(x, y): c for x, y, c in cur.fetchall()}
            for x in DOMAINS[a]:
                for y in DOMAINS[b]:
                    out[(a, b, x, y)] = got.get((x, y), 0)
    return out


def mwem_marginals(conn, eps, run, average=True, iterations=None):
    target = f"health_mwem_{str(eps).replace('.', '_')}_{run}_{int(average)}_{iterations or 0}"
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {target}")
        t0 = time.perf_counter()
        cur.execute("SELECT dx.release_mwem('health', %s, 'marginals:2', %s, %s, %s, %s)",
                    (COLS, eps, target, iterations, average))
        seconds = time.perf_counter() - t0
        cur.execute("SELECT iterations FROM dx.my_releases WHERE target = %s::regclass", (target,))
        iterations = cur.fetchone()[0]
        out = {}
        for a, b in itertools.combinations(COLS, 2):
            cur.execute(f"SELECT {a}, {b}, sum(weight) FROM {target} GROUP BY 1, 2")
            for x, y, w in cur.fetchall():
                out[(a, b, x, y)] = w
        cur.execute(f"DROP TABLE {target}")
    return out, seconds, f"T={iterations}"


def direct_marginals(conn, eps):
    pairs = list(itertools.combinations(COLS, 2))
    each = eps / len(pairs)
    out = {}
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        cur.execute("SELECT set_config('dxpriv.epsilon', %s, false)", (repr(each),))
        for a, b in pairs:
            cur.execute(f"SELECT {a}, {b}, dx.count(*) FROM health GROUP BY 1, 2")
            for x, y, c in cur.fetchall():
                out[(a, b, x, y)] = c
    return out, time.perf_counter() - t0, f"6 statements at {each:.4g}"


def errors(truth, est):
    e = np.array([abs(est.get(k, 0.0) - v) for k, v in truth.items()], dtype=float)
    return float(e.max()), float(e.mean())


def plot(out_dir, rows):
    """release_bench.png from release_bench_summary.csv."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(os.path.join(out_dir, "release_bench_summary.csv")) as f:
        summary = [[float(v) for v in r] for r in list(csv.reader(f))[1:]]
    cells = 137
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.2))
    e = [s[0] for s in summary]
    for i, (title, mi, li, fi, di) in enumerate((("max error", 1, 3, 5, 7), ("mean error", 2, 4, 6, 8))):
        ax[i].loglog(e, [s[mi] for s in summary], "o-", label="MWEM, default T, average")
        ax[i].loglog(e, [s[li] for s in summary], "^-", label="MWEM, default T, last iterate")
        ax[i].loglog(e, [s[fi] for s in summary], "v-", label="MWEM, T = 40, last iterate")
        ax[i].loglog(e, [s[di] for s in summary], "s-", label="direct dx.count, 6 GROUP BYs")
        ax[i].set_xlabel("total epsilon")
        ax[i].set_ylabel(f"{title} over {cells} cells (rows)")
        ax[i].set_title(f"2-way marginals, {title}, n = {rows}")
        ax[i].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "release_bench.png"), dpi=110)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", default="")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--eps", default="0.1,0.5,1,2")
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNG from the summary CSV")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args()
    epsilons = [float(e) for e in args.eps.split(",")]
    if args.plot_only:
        plot(args.out_dir, args.rows)
        return
    conn = psycopg2.connect(args.dsn)
    conn.autocommit = True
    setup(conn, args.rows, args.seed)
    truth = true_marginals(conn)
    rows, summary = [], []
    for eps in epsilons:
        res = {"mwem": [], "mwem_last": [], "mwem_t40_last": [], "direct": []}
        for run in range(args.runs):
            for method in res:
                if method == "direct":
                    est, sec, detail = direct_marginals(conn, eps)
                else:
                    est, sec, detail = mwem_marginals(conn, eps, run, average=(method == "mwem"),
                                                      iterations=40 if method == "mwem_t40_last" else None)
                mx, mean = errors(truth, est)
                res[method].append((mx, mean))
                rows.append([eps, method, run, round(mx, 3), round(mean, 3), round(sec, 3), detail])
                print(f"eps={eps} {method} run={run}: max={mx:.1f} mean={mean:.2f} ({sec:.2f}s, {detail})", flush=True)
        m_max, m_mean = np.mean(res["mwem"], axis=0)
        l_max, l_mean = np.mean(res["mwem_last"], axis=0)
        f_max, f_mean = np.mean(res["mwem_t40_last"], axis=0)
        d_max, d_mean = np.mean(res["direct"], axis=0)
        best = min(m_mean, l_mean, f_mean)
        k_star = 6 * best / d_mean
        q_star = eps * best
        summary.append([eps, round(m_max, 2), round(m_mean, 2), round(l_max, 2), round(l_mean, 2), round(f_max, 2),
                        round(f_mean, 2), round(d_max, 2),
                        round(d_mean, 2), round(k_star, 2), round(k_star * len(truth) / 6, 1), round(q_star, 1)])
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "release_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epsilon", "method", "run", "max_error", "mean_error", "seconds", "detail"])
        w.writerows(rows)
    with open(os.path.join(args.out_dir, "release_bench_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epsilon", "mwem_max", "mwem_mean", "mwem_last_max", "mwem_last_mean", "mwem_t40_last_max",
                    "mwem_t40_last_mean", "direct_max", "direct_mean",
                    "crossover_marginal_tables", "crossover_cells", "crossover_single_queries"])
        w.writerows(summary)
    for s in summary:
        print("summary", s)
    plot(args.out_dir, args.rows)


if __name__ == "__main__":
    main()
