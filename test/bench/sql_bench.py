#!/usr/bin/env python3
"""SQL benchmark: dx aggregates against the native aggregates, measured in the same run.

Run through scripts/run-bench.sh (make bench), which starts a throwaway cluster with dxpriv
preloaded and exports PGHOST/PGPORT/PGUSER. This script creates the data, protects it, times
each (native, dx) pair and writes:

  results/sql_bench.csv          query, mode, native_ms, dx_ms, ratio, parallel_plan
  results/sql_bench_details.csv  the same rows plus server-side times, the clamp-only proxy,
                                 spreads, answers and errors
  results/sql_bench_plans.txt    EXPLAIN VERBOSE of every dx query (rewritten plan), and
                                 EXPLAIN ANALYZE VERBOSE of both queries of a pair with ratio > 2
  results/sql_bench_env.txt      versions, settings and parameters of the run

Timing: the median of --runs runs after one warm-up, native and dx runs interleaved (the order
alternates each round). Client-side times are full round trips (time.perf_counter around
execute + fetchall over the Unix socket); server-side times are EXPLAIN (ANALYZE, TIMING OFF)
Execution Time. A dx query's analysis (sensitivity computation) runs at parse analysis, so only
the client-side time includes it; charging runs at ExecutorStart and is in both.

The "clamp proxy" columns stay empty since execution by lookup (dx._weigh maps each row to its
domain point and reads its weight from the analysis' table; there is no separate clamp call left to
time natively).
"""

import argparse
import csv
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import psycopg2

ROWS_DEFAULT = 2_000_000

# The 10-aggregate query of the issue 23 goal table (counts with FILTERs, sums, avgs); {p} is "dx." or "".
TEN_AGGREGATES = ("{p}count(*), {p}count(*) FILTER (WHERE sex = 'M'), {p}count(*) FILTER (WHERE age > 40), "
                  "{p}count(*) FILTER (WHERE qty > 25), {p}sum(qty), {p}sum(age), "
                  "{p}sum(qty) FILTER (WHERE sex = 'F'), {p}avg(qty), {p}avg(age), "
                  "{p}avg(age) FILTER (WHERE sex = 'M')")

# (label, native SQL, dx SQL, clamp proxy SQL or None[, dxpriv.noise; default laplace])
BENCH_PAIRS = [
    ("count(*)",
     "SELECT count(*) FROM bench",
     "SELECT dx.count(*) FROM bench",
     None),  # no column is read: dx differs from native only by its transition function
    ("count(*) WHERE age > 40 AND sex='M'",
     "SELECT count(*) FROM bench WHERE age > 40 AND sex = 'M'",
     "SELECT dx.count(*) FROM bench WHERE age > 40 AND sex = 'M'",
     None),
    ("sum(income)",
     "SELECT sum(income) FROM bench",
     "SELECT dx.sum(income) FROM bench",
     None),
    ("sum(score)",
     "SELECT sum(score) FROM bench",
     "SELECT dx.sum(score) FROM bench",
     None),
    # issue 23 per-row goal rows (dx/native <= 1.10 each; the 10-aggregate query <= 0.8)
    ("sum(qty) [int]",
     "SELECT sum(qty) FROM bench",
     "SELECT dx.sum(qty) FROM bench",
     None),
    ("avg(income)",
     "SELECT avg(income) FROM bench",
     "SELECT dx.avg(income) FROM bench",
     None),
    ("GROUP BY sex [2 groups]: count(*), sum(qty)",
     "SELECT sex, count(*), sum(qty) FROM bench GROUP BY sex",
     "SELECT sex, dx.count(*), dx.sum(qty) FROM bench GROUP BY sex",
     None),
    ("GROUP BY g73 [73 groups]: count(*), sum(qty)",
     "SELECT g73, count(*), sum(qty) FROM bench GROUP BY g73",
     "SELECT g73, dx.count(*), dx.sum(qty) FROM bench GROUP BY g73",
     None),
    ("10 aggregates GROUP BY grp [10 groups]",
     "SELECT grp, " + TEN_AGGREGATES.format(p="") + " FROM bench GROUP BY grp",
     "SELECT grp, " + TEN_AGGREGATES.format(p="dx.") + " FROM bench GROUP BY grp",
     None),
    # (epsilon, delta) families: the same aggregation, another final-function sampler
    ("sum(income) [gaussian]",
     "SELECT sum(income) FROM bench",
     "SELECT dx.sum(income) FROM bench",
     None, "gaussian"),
    ("count(*) WHERE age > 40 AND sex='M' [truncated_laplace]",
     "SELECT count(*) FROM bench WHERE age > 40 AND sex = 'M'",
     "SELECT dx.count(*) FROM bench WHERE age > 40 AND sex = 'M'",
     None, "truncated_laplace"),
]

# Fixed per-query overhead on a 10-row protected table: (label, native, dx, runs option name[, noise])
TINY_PAIRS = [
    ("tiny: count(*) WHERE age > 40",
     "SELECT count(*) FROM tiny WHERE age > 40",
     "SELECT dx.count(*) FROM tiny WHERE age > 40",
     "tiny_runs"),
    ("tiny: sum(income) [100001-point domain]",
     "SELECT sum(income) FROM tiny",
     "SELECT dx.sum(income) FROM tiny",
     "tiny_sum_runs"),
    ("tiny: count(*) WHERE age > 40 [gaussian]",
     "SELECT count(*) FROM tiny WHERE age > 40",
     "SELECT dx.count(*) FROM tiny WHERE age > 40",
     "tiny_runs", "gaussian"),
    ("tiny: count(*) WHERE age > 40 [truncated_laplace]",
     "SELECT count(*) FROM tiny WHERE age > 40",
     "SELECT dx.count(*) FROM tiny WHERE age > 40",
     "tiny_runs", "truncated_laplace"),
]

COLUMNS = {
    "age": ('{"min":0,"max":120}', '{"type":"absolute","scale":10}'),
    "sex": ('{"values":["M","F"]}', '{"type":"discrete","weight":1}'),
    "income": ('{"min":0,"max":100000,"step":1}', '{"type":"none"}'),
    "score": ('{"min":0,"max":1,"step":0.001}', '{"type":"none"}'),
    "qty": ('{"min":0,"max":50}', '{"type":"none"}'),
    "grp": ('{"min":0,"max":9}', '{"type":"discrete"}'),
    "g73": ('{"min":0,"max":72}', '{"type":"discrete"}'),
}

MODES = [("serial", 0), ("parallel", 2)]


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def connect():
    conn = psycopg2.connect(dbname=os.environ.get("PGDATABASE", "postgres"))
    conn.autocommit = True  # every statement is its own transaction, as an analyst's would be
    return conn


def setup(cur, rows):
    """Creates and protects bench (rows rows, deterministic) and tiny (10 rows)."""
    t0 = time.perf_counter()
    cur.execute("CREATE EXTENSION IF NOT EXISTS dxpriv")
    cur.execute("DROP TABLE IF EXISTS bench, tiny")
    cur.execute("CREATE TABLE bench(age int, sex text, income numeric, score float8, qty int, grp int, g73 int)")
    # Deterministic values (no random()): multiplicative patterns spread each column over its
    # whole declared domain; sex alternates in runs of three rows so it is not tied to age.
    cur.execute(
        "INSERT INTO bench "
        "SELECT (g * 37) %% 121, "
        "       CASE WHEN (g / 3) %% 2 = 0 THEN 'M' ELSE 'F' END, "
        "       ((g::bigint * 7919) %% 100001)::numeric, "
        "       ((g::bigint * 104729) %% 1001) / 1000.0::float8, "
        "       (g * 13) %% 51, g %% 10, (g / 7) %% 73 "
        "FROM generate_series(1, %s) g", (rows,))
    cur.execute("CREATE TABLE tiny AS SELECT * FROM bench ORDER BY ctid LIMIT 10")
    cur.execute("VACUUM ANALYZE bench")
    cur.execute("VACUUM ANALYZE tiny")
    for table in ("bench", "tiny"):
        cur.execute("SELECT dx.protect_table(%s, 1.0)", (table,))
        for col, (domain, metric) in COLUMNS.items():
            cur.execute("SELECT dx.set_column(%s, %s, %s, %s)", (table, col, domain, metric))
        cur.execute("SELECT dx.set_delta(%s, 1e-9)", (table,))  # allows the (epsilon, delta) families
        cur.execute("SELECT dx.grant_budget('postgres', %s, 1e9, delta => 1.0)", (table,))
    cur.execute("SELECT pg_size_pretty(pg_table_size('bench'))")
    size = cur.fetchone()[0]
    log(f"setup: bench has {rows} rows ({size}), setup took {time.perf_counter() - t0:.1f} s")
    return size


def run_timed(cur, sql):
    """Full round trip in ms and the answer."""
    t0 = time.perf_counter()
    cur.execute(sql)
    result = cur.fetchall()
    return (time.perf_counter() - t0) * 1000.0, result[0][0]


def find_key(node, key):
    """First value of key anywhere in an EXPLAIN JSON tree."""
    if isinstance(node, dict):
        if key in node:
            return node[key]
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        found = find_key(child, key)
        if found is not None:
            return found
    return None


def run_server(cur, sql):
    """Server-side Execution Time (ms), Planning Time (ms) and workers launched."""
    cur.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + sql)
    doc = cur.fetchone()[0]
    if isinstance(doc, str):
        doc = json.loads(doc)
    top = doc[0]
    return top["Execution Time"], top["Planning Time"], find_key(top["Plan"], "Workers Launched")


def explain(cur, sql, analyze=False):
    cur.execute(("EXPLAIN (ANALYZE, VERBOSE) " if analyze else "EXPLAIN (VERBOSE) ") + sql)
    return "\n".join(r[0] for r in cur.fetchall())


def is_parallel(plan_text):
    return "Gather" in plan_text and ("Partial Aggregate" in plan_text or "Partial HashAggregate" in plan_text
                                      or "Partial GroupAggregate" in plan_text)


def error_text(exc):
    return (exc.pgerror or str(exc)).strip().splitlines()[0] if exc else ""


def stats(xs):
    if not xs:
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def measure_pair(cur, native_sql, dx_sql, runs, server=True):
    """Interleaved timings of a native/dx pair. A dx query that fails its warm-up is not repeated."""
    out = {"native": [], "dx": [], "native_srv": [], "dx_srv": [], "native_plan_ms": [], "dx_plan_ms": [],
           "dx_error": "", "native_value": None, "dx_value": None, "workers_native": None, "workers_dx": None}
    _, out["native_value"] = run_timed(cur, native_sql)  # warm-up
    dx_ok = True
    try:
        _, out["dx_value"] = run_timed(cur, dx_sql)  # warm-up
    except psycopg2.Error as exc:
        dx_ok = False
        out["dx_error"] = error_text(exc)
    phases = [("client", run_timed)] + ([("server", run_server)] if server else [])
    for phase, runner in phases:
        for i in range(runs):
            order = [("native", native_sql), ("dx", dx_sql)]
            if i % 2:
                order.reverse()
            for kind, sql in order:
                if kind == "dx" and not dx_ok:
                    continue
                try:
                    res = runner(cur, sql)
                except psycopg2.Error as exc:
                    if kind == "native":
                        raise
                    dx_ok = False
                    out["dx_error"] = f"{phase} run {i + 1}: {error_text(exc)}"
                    continue
                if phase == "client":
                    out[kind].append(res[0])
                    out[kind + "_value"] = res[1]
                else:
                    out[kind + "_srv"].append(res[0])
                    out[kind + "_plan_ms"].append(res[1])
                    out["workers_" + kind] = res[2]
    return out


def ratio(a, b):
    return a / b if a is not None and b else None


def fmt(x, digits=2):
    if x is None:
        return ""
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, float):
        return f"{x:.{digits}f}"
    return str(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=ROWS_DEFAULT)
    ap.add_argument("--runs", type=int, default=7, help="timed runs per query (after one warm-up)")
    ap.add_argument("--tiny-runs", type=int, default=200)
    ap.add_argument("--tiny-sum-runs", type=int, default=30)
    ap.add_argument("--skip-tiny", action="store_true", help="leave out the 10-row table pairs")
    ap.add_argument("--no-server", action="store_true", help="client-side round trips only (no EXPLAIN ANALYZE runs)")
    ap.add_argument("--only", default=None, help="run only the pairs whose label contains this text")
    ap.add_argument("--out-dir", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting for the session (repeatable), e.g. dxpriv.one_pass=off for the previous plan")
    ap.add_argument("--no-setup", action="store_true", help="reuse the bench and tiny tables of an earlier run")
    args = ap.parse_args()
    started = time.perf_counter()

    conn = connect()
    cur = conn.cursor()
    cur.execute("SET statement_timeout = '120s'")
    # Plan costs stay below jit_above_cost (100000) for every query here; JIT is switched off so a
    # cost-threshold flip between a native query and its (costlier) rewritten dx query cannot
    # distort a ratio.
    cur.execute("SET jit = off")
    # every dx run reads its rows: no replay from the answer cache (doc/performance.md)
    cur.execute("SET dxpriv.cache_lifetime = 0")
    for setting in args.set:
        name, _, value = setting.partition("=")
        cur.execute("SELECT set_config(%s, %s, false)", (name.strip(), value.strip()))
    if args.no_setup:
        cur.execute("SELECT pg_size_pretty(pg_table_size('bench'))")
        table_size = cur.fetchone()[0]
    else:
        table_size = setup(cur, args.rows)

    results = []  # dicts, one per (query, mode)
    plans = []
    for mode, workers in MODES:
        cur.execute("SET max_parallel_workers_per_gather = %s", (workers,))
        for label, native_sql, dx_sql, proxy_sql, *noise in BENCH_PAIRS:
            if args.only and args.only not in label:
                continue
            cur.execute("SET dxpriv.noise = %s", (noise[0] if noise else "laplace",))
            t0 = time.perf_counter()
            dx_plan = explain(cur, dx_sql)
            native_plan = explain(cur, native_sql)
            plans.append(f"-- [{mode}] {dx_sql}\n{dx_plan}\n")
            m = measure_pair(cur, native_sql, dx_sql, args.runs, server=not args.no_server)
            proxy = []
            if proxy_sql:
                run_timed(cur, proxy_sql)  # warm-up
                proxy = [run_timed(cur, proxy_sql)[0] for _ in range(args.runs)]
            row = {
                "query": label, "mode": mode,
                "native": stats(m["native"]), "dx": stats(m["dx"]),
                "native_srv": stats(m["native_srv"]), "dx_srv": stats(m["dx_srv"]),
                "native_plan_ms": stats(m["native_plan_ms"]), "dx_plan_ms": stats(m["dx_plan_ms"]),
                "proxy": stats(proxy),
                "parallel_plan": is_parallel(dx_plan), "native_parallel_plan": is_parallel(native_plan),
                "workers_native": m["workers_native"], "workers_dx": m["workers_dx"],
                "native_value": m["native_value"], "dx_value": m["dx_value"], "dx_error": m["dx_error"],
                "runs": args.runs,
            }
            nat, dxm = row["native"]["median"], row["dx"]["median"]
            if nat and dxm and dxm / nat > 2:  # evidence for the anomaly: where the time goes
                for kind, sql in (("native", native_sql), ("dx", dx_sql)):
                    plans.append(f"-- [{mode}] ratio {dxm / nat:.2f}: EXPLAIN (ANALYZE, VERBOSE) of the {kind} query\n"
                                 + explain(cur, sql, analyze=True) + "\n")
            results.append(row)
            log(f"{mode:8s} {label:40s} native {fmt(row['native']['median'])} ms, dx "
                f"{fmt(row['dx']['median']) or 'ERROR: ' + row['dx_error']} ms "
                f"({time.perf_counter() - t0:.1f} s)")

    cur.execute("SET max_parallel_workers_per_gather = 0")
    for label, native_sql, dx_sql, runs_opt, *noise in ([] if args.skip_tiny else TINY_PAIRS):
        cur.execute("SET dxpriv.noise = %s", (noise[0] if noise else "laplace",))
        runs = getattr(args, runs_opt)
        t0 = time.perf_counter()
        dx_plan = explain(cur, dx_sql)
        plans.append(f"-- [tiny] {dx_sql}\n{dx_plan}\n")
        for _ in range(4):  # extra warm-ups: catalog caches, first SPI plans of the charging code
            run_timed(cur, native_sql)
            run_timed(cur, dx_sql)
        m = measure_pair(cur, native_sql, dx_sql, runs)
        row = {
            "query": label, "mode": "serial",
            "native": stats(m["native"]), "dx": stats(m["dx"]),
            "native_srv": stats(m["native_srv"]), "dx_srv": stats(m["dx_srv"]),
            "native_plan_ms": stats(m["native_plan_ms"]), "dx_plan_ms": stats(m["dx_plan_ms"]),
            "proxy": stats([]), "parallel_plan": is_parallel(dx_plan), "native_parallel_plan": False,
            "workers_native": None, "workers_dx": None,
            "native_value": m["native_value"], "dx_value": m["dx_value"], "dx_error": m["dx_error"],
            "runs": runs,
        }
        results.append(row)
        log(f"tiny     {label:40s} native {fmt(row['native']['median'], 3)} ms, dx "
            f"{fmt(row['dx']['median'], 3)} ms ({time.perf_counter() - t0:.1f} s)")

    cur.execute("RESET dxpriv.noise")
    cur.execute("SELECT version()")
    version = cur.fetchone()[0]
    settings = {}
    for name in ("max_parallel_workers_per_gather", "max_parallel_workers", "max_worker_processes",
                 "parallel_setup_cost", "parallel_tuple_cost", "min_parallel_table_scan_size",
                 "shared_buffers", "work_mem", "jit", "dxpriv.epsilon", "dxpriv.one_pass", "dxpriv.cache_lifetime"):
        cur.execute("SELECT current_setting(%s)", (name,))
        settings[name] = cur.fetchone()[0]
    cur.execute("SELECT count(*), sum(epsilon) FROM dx.ledger")
    ledger_rows, ledger_eps = cur.fetchone()
    conn.close()

    # ---- output ----
    os.makedirs(args.out_dir, exist_ok=True)
    for r in results:
        r["ratio"] = ratio(r["dx"]["median"], r["native"]["median"])
        r["srv_ratio"] = ratio(r["dx_srv"]["median"], r["native_srv"]["median"])
        r["proxy_ratio"] = ratio(r["proxy"]["median"], r["native"]["median"])

    with open(os.path.join(args.out_dir, "sql_bench.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["query", "mode", "native_ms", "dx_ms", "ratio", "parallel_plan"])
        for r in results:
            w.writerow([r["query"], r["mode"], fmt(r["native"]["median"], 3), fmt(r["dx"]["median"], 3),
                        fmt(r["ratio"], 3), fmt(r["parallel_plan"])])

    with open(os.path.join(args.out_dir, "sql_bench_details.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["query", "mode", "native_ms", "dx_ms", "ratio", "parallel_plan",
                    "native_min_ms", "native_max_ms", "dx_min_ms", "dx_max_ms",
                    "native_server_exec_ms", "dx_server_exec_ms", "server_ratio",
                    "native_server_plan_ms", "dx_server_plan_ms",
                    "clamp_proxy_ms", "clamp_proxy_ratio", "native_parallel_plan",
                    "native_workers_launched", "dx_workers_launched", "runs",
                    "native_answer", "dx_answer", "dx_error"])
        for r in results:
            w.writerow([r["query"], r["mode"], fmt(r["native"]["median"], 3), fmt(r["dx"]["median"], 3),
                        fmt(r["ratio"], 3), fmt(r["parallel_plan"]),
                        fmt(r["native"]["min"], 3), fmt(r["native"]["max"], 3),
                        fmt(r["dx"]["min"], 3), fmt(r["dx"]["max"], 3),
                        fmt(r["native_srv"]["median"], 3), fmt(r["dx_srv"]["median"], 3), fmt(r["srv_ratio"], 3),
                        fmt(r["native_plan_ms"]["median"], 3), fmt(r["dx_plan_ms"]["median"], 3),
                        fmt(r["proxy"]["median"], 3), fmt(r["proxy_ratio"], 3), fmt(r["native_parallel_plan"]),
                        fmt(r["workers_native"]), fmt(r["workers_dx"]), r["runs"],
                        fmt(r["native_value"]), fmt(r["dx_value"]), r["dx_error"]])

    with open(os.path.join(args.out_dir, "sql_bench_plans.txt"), "w") as f:
        f.write("\n".join(plans))

    try:
        commit = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe",
                                 "--always", "--dirty"], capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = ""
    with open(os.path.join(args.out_dir, "sql_bench_env.txt"), "w") as f:
        f.write(f"date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}\n")
        f.write(f"commit: {commit}\n")
        f.write(f"server: {version}\n")
        f.write(f"host: {platform.machine()}, {os.cpu_count()} cpus, python {platform.python_version()}, "
                f"psycopg2 {psycopg2.__version__.split()[0]}\n")
        f.write(f"bench: {args.rows} rows ({table_size}); runs {args.runs} (+1 warm-up); "
                f"tiny runs {args.tiny_runs}, tiny sum runs {args.tiny_sum_runs}\n")
        f.write("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()) + "\n")
        f.write(f"ledger: {ledger_rows} charged queries, epsilon spent {ledger_eps}\n")

    # Printed table.
    header = ["query", "mode", "native_ms", "dx_ms", "ratio", "parallel_plan",
              "native_srv_ms", "dx_srv_ms", "srv_ratio", "clamp_proxy_ms", "note"]
    table = []
    for r in results:
        small = r["native"]["median"] is not None and r["native"]["median"] < 5
        d = 3 if small else 1
        note = ("dx FAILED: " + r["dx_error"]) if r["dx_error"] else ""
        if r["mode"] == "parallel" and not r["parallel_plan"]:
            note = (note + "; " if note else "") + "dx plan not parallel"
        table.append([r["query"], r["mode"], fmt(r["native"]["median"], d), fmt(r["dx"]["median"], d),
                      fmt(r["ratio"]), fmt(r["parallel_plan"]), fmt(r["native_srv"]["median"], d),
                      fmt(r["dx_srv"]["median"], d), fmt(r["srv_ratio"]), fmt(r["proxy"]["median"], d), note])
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) if i in (0, 1, 5, 10) else c.rjust(w)
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    print()
    print(f"dxpriv SQL benchmark: {args.rows} rows, median of {args.runs} runs (tiny: "
          f"{args.tiny_runs} / {args.tiny_sum_runs}); ms; client-side round trip unless _srv")
    print(line(header))
    print(line(["-" * w for w in widths]))
    for row in table:
        print(line(row))
    anomalies = [r for r in results if r["dx_error"] or (r["ratio"] or 0) > 2 or
                 (r["mode"] == "parallel" and not r["parallel_plan"])]
    if anomalies:
        print()
        print("anomalies (dx failed, ratio > 2, or parallel mode without a parallel dx plan):")
        for r in anomalies:
            why = r["dx_error"] or f"ratio {fmt(r['ratio'])}" + ("" if r["parallel_plan"] or r["mode"] != "parallel"
                                                                  else ", plan not parallel")
            print(f"  - {r['query']} [{r['mode']}]: {why}")
    print(f"\nresults in {args.out_dir}/sql_bench.csv (+ _details.csv, _plans.txt, _env.txt); "
          f"took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
