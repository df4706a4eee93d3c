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


# ---- Issue 25: the group release (dx.release_synthetic) against the previous MWEM and direct answers ----
# Run: ./scripts/pg-env.sh cluster, then
#   python3 test/bench/release_bench.py --suite groups --rows 200000 --runs 3
# Writes results/release_groups.csv (every run), results/release_groups_summary.csv (means) and
# results/release_groups.png. Table `wide`: 8 columns drawn from a fixed-seed Bayesian network
# (the law of test/bench/group_rounds.cpp): age_band 8 and income 8 (absolute metric, scale 1),
# region 10, sex 2, diagnosis 6, education 6, employment 4, smoker 2 (discrete metric, weight 1);
# presence 1 (adding or removing a row costs epsilon). Workloads:
#   cells80   age_band x region (80 cells; one group)            direct: one GROUP BY at epsilon
#   marg2of4  all 2-way marginals of 4 columns (236 cells, 6 tables)   direct: 6 GROUP BYs at eps/6
#   marg2of8  all 2-way marginals of 8 columns (896 cells, 28 tables)  direct: 28 GROUP BYs at eps/28
#   marg3of8  all 3-way marginals of 8 columns (9616 cells, 56 tables) direct: 56 GROUP BYs at eps/56
# Methods: synthetic (dx.release_synthetic, rounds by the rule), mwem_avg / mwem_last (the previous
# dx.release_mwem, default T; only where its universe is at most 20000 points: its run time grows
# with T^2 x universe), direct (dx.count GROUP BY statements). Errors: RMSE and max absolute error
# over the workload's cells (rows).
WIDE = [("age_band", 8), ("region", 10), ("sex", 2), ("diagnosis", 6), ("income", 8), ("education", 6),
        ("employment", 4), ("smoker", 2)]
WORKLOADS = {"cells80": ([0, 1], 2), "marg2of4": ([0, 1, 2, 3], 2), "marg2of8": (list(range(8)), 2),
             "marg3of8": (list(range(8)), 3)}


def wide_rows(n, seed):
    rng = np.random.default_rng(seed)

    def draw(p):  # p: n x k unnormalised probabilities
        p = p / p.sum(axis=1, keepdims=True)
        u = rng.random((p.shape[0], 1))
        return np.minimum((u > np.cumsum(p, axis=1)).sum(axis=1), p.shape[1] - 1)

    ones = np.ones((n, 1))
    age = draw(ones * np.array([11, 12, 13, 14, 14, 13, 11, 8.0]))
    region = draw(ones * np.array([18, 14, 12, 10, 9, 9, 8, 8, 7, 5.0]))
    sex = draw(ones * np.array([51, 49.0]))
    a = age[:, None].astype(float)
    edu = draw(np.hstack([3 + a, 20 * ones, 30 - a, 20 * ones, 12 * ones, 6 + 4 * (a >= 2)]))
    diag = draw(np.hstack([np.maximum(0.2, 0.85 - 0.08 * a), 0.01 + 0.02 * a,
                           0.005 + 0.035 * a * np.where(sex[:, None] == 1, 1.1, 0.9), 0.08 - 0.005 * a,
                           0.002 + 0.006 * a + 0.01 * (region[:, None] == 0), 0.03 * ones]))
    centre = 1.0 + 0.6 * edu + ((age > 1) & (age < 6)) + 0.7 * (region < 3)
    inc = draw(np.exp(-0.5 * ((np.arange(8)[None, :] - centre[:, None]) / 1.3) ** 2))
    e = edu[:, None].astype(float)
    emp = draw(np.hstack([np.where(age[:, None] < 7, 60 + 3 * e, 10), 8 * ones, 10 * ones,
                          np.where(age[:, None] >= 6, 40.0, 4.0)]))
    smoker = draw(np.hstack([70 + 4 * e, 30 + 8 * (sex[:, None] == 1)]))
    return np.vstack([age, region, sex, diag, inc, edu, emp, smoker]).T


def setup_wide(conn, n, seed):
    data = wide_rows(n, seed)
    import io
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS wide CASCADE")
        cur.execute("CREATE TABLE wide (" + ", ".join(f"{c} int" for c, _ in WIDE) + ")")
        buf = io.StringIO("\n".join("\t".join(str(v) for v in r) for r in data) + "\n")
        cur.copy_expert("COPY wide FROM STDIN", buf)
        cur.execute("SELECT dx.protect_table('wide', 1.0)")
        for i, (c, k) in enumerate(WIDE):
            metric = '{"type": "absolute", "scale": 1}' if c in ("age_band", "income") else '{"type": "discrete", "weight": 1}'
            cur.execute("SELECT dx.set_column('wide', %s, %s, %s)", (c, f'{{"min": 0, "max": {k - 1}}}', metric))
        cur.execute("SELECT dx.grant_budget(current_user::regrole, 'wide', 1e9)")
        cur.execute("SET dxpriv.cache_lifetime = 0")
        cur.execute("SET dxpriv.test_seed = -1")
        cur.execute("SET dxpriv.progress_interval = 0")
    return data


def marginal_keys(cols, k):
    return list(itertools.combinations(cols, k))


def true_cells(data, cols, k):
    out = {}
    for sub in marginal_keys(cols, k):
        sizes = [WIDE[c][1] for c in sub]
        flat = np.ravel_multi_index(tuple(data[:, c] for c in sub), sizes)
        counts = np.bincount(flat, minlength=int(np.prod(sizes)))
        for idx, v in enumerate(counts):
            out[(sub, np.unravel_index(idx, sizes))] = float(v)
    return {(s, tuple(int(x) for x in v)): c for (s, v), c in out.items()}


def synthetic_cells(conn, target, cols, k):
    names = [WIDE[c][0] for c in cols]
    with conn.cursor() as cur:
        cur.execute(f"SELECT {', '.join(names)}, weight FROM {target}")
        rows = np.array(cur.fetchall(), dtype=float)
    est = {}
    for sub in marginal_keys(cols, k):
        pos = [cols.index(c) for c in sub]
        sizes = [WIDE[c][1] for c in sub]
        flat = np.ravel_multi_index(tuple(rows[:, p].astype(int) for p in pos), sizes)
        sums = np.bincount(flat, weights=rows[:, -1], minlength=int(np.prod(sizes)))
        for idx, v in enumerate(sums):
            est[(sub, tuple(int(x) for x in np.unravel_index(idx, sizes)))] = float(v)
    return est


def run_release(conn, sql, args, target):
    with conn.cursor() as cur:
        cur.execute(f"DROP TABLE IF EXISTS {target}")
        t0 = time.perf_counter()
        cur.execute(sql, args)
        sec = time.perf_counter() - t0
        cur.execute("SELECT iterations, details ->> 'output' FROM dx.my_releases WHERE target = %s::regclass", (target,))
        it, out = cur.fetchone()
    return sec, f"T={it} {out}"


def direct_cells(conn, cols, k, eps):
    subs = marginal_keys(cols, k)
    est = {}
    t0 = time.perf_counter()
    with conn.cursor() as cur:
        cur.execute("SELECT set_config('dxpriv.epsilon', %s, false)", (repr(eps / len(subs)),))
        for sub in subs:
            names = [WIDE[c][0] for c in sub]
            cur.execute(f"SELECT {', '.join(names)}, dx.count(*) FROM wide GROUP BY {', '.join(names)}")
            for r in cur.fetchall():
                est[(sub, tuple(int(x) for x in r[:-1]))] = float(r[-1])
    return est, time.perf_counter() - t0, f"{len(subs)} statements at {eps / len(subs):.4g}"


def cell_errors(truth, est):
    e = np.array([est.get(key, 0.0) - v for key, v in truth.items()], dtype=float)
    return float(np.sqrt(np.mean(e ** 2))), float(np.abs(e).max())


def group_suite(args):
    epsilons = [float(e) for e in args.eps.split(",")]
    names = args.workloads.split(",")
    conn = psycopg2.connect(args.dsn)
    conn.autocommit = True
    data = setup_wide(conn, args.rows, args.seed)
    rows = []
    summary = []
    for wl in names:
        cols, k = WORKLOADS[wl]
        truth = true_cells(data, cols, k)
        colnames = [WIDE[c][0] for c in cols]
        universe = int(np.prod([WIDE[c][1] for c in cols]))
        for eps in epsilons:
            res = {}
            for run in range(args.runs):
                tag = f"{wl}_{str(eps).replace('.', '_')}_{run}"
                methods = ["synthetic", "direct"] + (["mwem_avg", "mwem_last"] if universe <= 20000 else [])
                for m in methods:
                    if m == "direct":
                        est, sec, detail = direct_cells(conn, cols, k, eps)
                    elif m == "synthetic":
                        target = f"syn_{tag}"
                        sec, detail = run_release(conn, "SELECT dx.release_synthetic('wide', %s, %s, %s, %s)",
                                                  (colnames, f"marginals:{k}", eps, target), target)
                        est = synthetic_cells(conn, target, cols, k)
                    else:
                        target = f"mw_{tag}_{m}"
                        sec, detail = run_release(conn, "SELECT dx.release_mwem('wide', %s, %s, %s, %s, NULL, %s)",
                                                  (colnames, f"marginals:{k}", eps, target, m == "mwem_avg"), target)
                        est = synthetic_cells(conn, target, cols, k)
                    if m != "direct":
                        with conn.cursor() as cur:
                            cur.execute(f"DROP TABLE {target}")
                    rmse, mx = cell_errors(truth, est)
                    res.setdefault(m, []).append((rmse, mx))
                    rows.append([wl, len(truth), eps, m, run, round(rmse, 3), round(mx, 3), round(sec, 3), detail])
                    print(f"{wl} eps={eps} {m} run={run}: rmse={rmse:.2f} max={mx:.1f} ({sec:.2f}s, {detail})", flush=True)
            for m, v in res.items():
                r, x = np.mean(v, axis=0)
                summary.append([wl, len(truth), eps, m, round(float(r), 3), round(float(x), 3)])
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "release_groups.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "cells", "epsilon", "method", "run", "rmse", "max_error", "seconds", "detail"])
        w.writerows(rows)
    with open(os.path.join(args.out_dir, "release_groups_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["workload", "cells", "epsilon", "method", "rmse", "max_error"])
        w.writerows(summary)
    plot_groups(args.out_dir, args.rows)


def plot_groups(out_dir, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    with open(os.path.join(out_dir, "release_groups_summary.csv")) as f:
        summary = list(csv.reader(f))[1:]
    wls = sorted({s[0] for s in summary}, key=lambda w: list(WORKLOADS).index(w))
    fig, ax = plt.subplots(1, len(wls), figsize=(4.2 * len(wls), 4), squeeze=False)
    style = {"synthetic": "o-", "direct": "s-", "mwem_avg": "v--", "mwem_last": "^--"}
    for i, wl in enumerate(wls):
        for m in style:
            pts = [(float(s[2]), float(s[4])) for s in summary if s[0] == wl and s[3] == m]
            if pts:
                ax[0][i].loglog([p[0] for p in pts], [p[1] for p in pts], style[m], label=m)
        cells = next(s[1] for s in summary if s[0] == wl)
        ax[0][i].set_title(f"{wl} ({cells} cells), n = {rows}")
        ax[0][i].set_xlabel("total epsilon")
        ax[0][i].set_ylabel("RMSE over the cells (rows)")
        ax[0][i].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "release_groups.png"), dpi=100)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", default="")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--eps", default="0.1,0.5,1,2")
    ap.add_argument("--plot-only", action="store_true", help="redraw the PNG from the summary CSV")
    ap.add_argument("--suite", default="marginals", choices=["marginals", "groups"],
                    help="marginals: the issue-14 comparison; groups: dx.release_synthetic (issue 25)")
    ap.add_argument("--workloads", default="cells80,marg2of4,marg2of8,marg3of8", help="--suite groups only")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args()
    if args.suite == "groups":
        if args.plot_only:
            plot_groups(args.out_dir, args.rows)
        else:
            group_suite(args)
        return
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
