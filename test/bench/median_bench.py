#!/usr/bin/env python3
"""Median-mechanism sessions against direct answers (issue 14): a tiny universe (band 4 x sex 2 =
8 points) whose workload is the 8 cells, the 4 band marginals and the 2 sex marginals (14 queries),
answered by a dx.median_session (the cells first, then the marginals), and by 3 direct GROUP BY
statements with dx.count (cells, band, sex) at the same total epsilon as the session spent.

Needs a running cluster with dxpriv preloaded (--dsn), as a superuser. Writes
results/median_bench.csv (epsilon_hard, run, method, spent, hard, max_error, mean_error) and
results/median_bench_summary.csv. The median mechanism needs tiny universes: it enumerates every
database of `size` rows (here 10 rows: C(17, 10) = 19448 candidates), so its easy answers have the
granularity n/size.
"""
import argparse
import csv
import os

import numpy as np
import psycopg2

CELLS = [(b, s) for b in range(4) for s in ("F", "M")]
WORKLOAD = ([[1 if i == j else 0 for j in range(8)] for i in range(8)]
            + [[1 if j // 2 == b else 0 for j in range(8)] for b in range(4)]
            + [[1 if j % 2 == s else 0 for j in range(8)] for s in range(2)])


def setup(cur, n, seed):
    rng = np.random.default_rng(seed)
    band = rng.choice(4, size=n, p=[0.55, 0.2, 0.15, 0.1])
    male = rng.random(n) < np.where(band == 0, 0.2, 0.45)
    cur.execute("DROP TABLE IF EXISTS med_bench CASCADE")
    cur.execute("CREATE TABLE med_bench (band int, sex text)")
    cur.execute("INSERT INTO med_bench SELECT * FROM unnest(%s::int[], %s::text[])",
                ([int(b) for b in band], ["M" if m else "F" for m in male]))
    cur.execute("SELECT dx.protect_table('med_bench', 'Infinity')")
    cur.execute("""SELECT dx.set_column('med_bench', 'band', '{"min": 0, "max": 3}', '{"type": "discrete", "weight": 1}')""")
    cur.execute("""SELECT dx.set_column('med_bench', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}')""")
    cur.execute("SELECT dx.grant_budget(current_user::regrole, 'med_bench', 1e6)")
    cur.execute("SET dxpriv.cache_lifetime = 0")
    cur.execute("SET dxpriv.test_seed = -1")
    counts = {c: 0 for c in CELLS}
    for b, m in zip(band, male):
        counts[(int(b), "M" if m else "F")] += 1
    cells = [counts[c] for c in CELLS]
    return [sum(w * c for w, c in zip(q, cells)) for q in WORKLOAD]


def session(cur, eps_hard, alpha, size):
    cur.execute("SELECT dx.median_session_open('med_bench', ARRAY['band', 'sex'], %s::float8[], %s, %s, %s)",
                (WORKLOAD, eps_hard, alpha, size))
    sid = cur.fetchone()[0]
    answers, hard = [], 0
    for q in range(1, len(WORKLOAD) + 1):
        cur.execute("SELECT answer, hard FROM dx.median_session_query(%s, %s)", (sid, q))
        a, h = cur.fetchone()
        answers.append(a)
        hard += bool(h)
    cur.execute("SELECT sum(epsilon) FROM dx.ledger WHERE fingerprint = %s", (f"median:{sid}",))
    return answers, hard, cur.fetchone()[0]


def direct(cur, eps):
    cur.execute("SELECT set_config('dxpriv.epsilon', %s, false)", (repr(eps / 3),))
    cur.execute("SELECT band, sex, dx.count(*) FROM med_bench GROUP BY 1, 2")
    cells = {(b, s): c for b, s, c in cur.fetchall()}
    cur.execute("SELECT band, dx.count(*) FROM med_bench GROUP BY 1")
    bands = dict(cur.fetchall())
    cur.execute("SELECT sex, dx.count(*) FROM med_bench GROUP BY 1")
    sexes = dict(cur.fetchall())
    return [cells[c] for c in CELLS] + [bands[b] for b in range(4)] + [sexes[s] for s in ("F", "M")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsn", default="")
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--size", type=int, default=10)
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args()
    conn = psycopg2.connect(args.dsn)
    conn.autocommit = True
    cur = conn.cursor()
    truth = setup(cur, args.rows, 14)
    rows, summary = [], []
    for eps_hard in (0.1, 0.5, 1.0, 2.0):
        res = {"median": [], "direct": []}
        for run in range(args.runs):
            answers, hard, spent = session(cur, eps_hard, args.alpha, args.size)
            err = [abs(a - t) if a is not None else float("nan") for a, t in zip(answers, truth)]
            res["median"].append((np.nanmax(err), np.nanmean(err), spent, hard))
            rows.append([eps_hard, run, "median", spent, hard, round(np.nanmax(err), 2), round(np.nanmean(err), 2)])
            d = direct(cur, spent)
            derr = [abs(a - t) for a, t in zip(d, truth)]
            res["direct"].append((max(derr), float(np.mean(derr)), spent, 0))
            rows.append([eps_hard, run, "direct", spent, 0, round(max(derr), 2), round(float(np.mean(derr)), 2)])
            print(f"eps_hard={eps_hard} run={run}: session spent {spent:g} ({hard} hard): max {np.nanmax(err):.1f} "
                  f"mean {np.nanmean(err):.1f}; direct max {max(derr):.1f} mean {np.mean(derr):.1f}", flush=True)
        m = np.mean(res["median"], axis=0)
        d = np.mean(res["direct"], axis=0)
        summary.append([eps_hard, round(m[2], 3), round(m[3], 2), round(m[0], 2), round(m[1], 2), round(d[0], 2),
                        round(d[1], 2)])
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "median_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epsilon_hard", "run", "method", "epsilon_spent", "hard_queries", "max_error", "mean_error"])
        w.writerows(rows)
    with open(os.path.join(args.out_dir, "median_bench_summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epsilon_hard", "mean_epsilon_spent", "mean_hard_queries", "median_max", "median_mean",
                    "direct_max", "direct_mean"])
        w.writerows(summary)
    for s in summary:
        print("summary", s)


if __name__ == "__main__":
    main()
