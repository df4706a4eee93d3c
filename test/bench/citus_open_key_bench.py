#!/usr/bin/env python3
"""Open GROUP BY keys on a Citus distributed table (issue 26): dx against native in the same run.

Usage (clusters from `KEEP=1 NO_TESTS=1 ./scripts/run-citus.sh`, coordinator and two workers):
  DXPRIV_CITUS_COORD=... DXPRIV_CITUS_W1=... DXPRIV_CITUS_W2=... test/bench/citus_open_key_bench.py \
      [--rows 2000000] [--keys 50000] [--runs 3] [--shards 8] [--by id|city]
Creates bench_open(id, city, qty, sex) distributed by --by over --shards shards (row i in city
i % keys), protects it as test/bench/open_key_bench.py does (city open, qty 0..99 absolute scale 10,
sex discrete, presence 1, delta 1e-6, dxpriv.epsilon = 1), and times native and dx interleaved (median
of --runs after a warm-up; client round trips). The workers compute the per-key partial sums, the
coordinator selects and adds the noise (planner/distributed_open.h). Writes
test/bench/results/citus_open_key_bench.csv: query, native_ms, dx_ms, ratio, released keys, and the
coordinator backend's CPU time of the dx statement (ms, from /proc when the coordinator is local).
"""
import argparse
import csv
import os
import pathlib
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "citus"))
from citus_common import citus_db, connect, execute, rows, scalar  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--rows", type=int, default=2_000_000)
parser.add_argument("--keys", type=int, default=50_000)
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--shards", type=int, default=8)
parser.add_argument("--by", default="id")
args = parser.parse_args()

PAIRS = [
    ("GROUP BY open key: count, sum, avg",
     "SELECT city, count(*), sum(qty), avg(qty) FROM bench_open GROUP BY city",
     "SELECT city, dx.count(*), dx.sum(qty), dx.avg(qty) FROM bench_open GROUP BY city"),
    ("... WHERE sex = 'F'",
     "SELECT city, count(*), sum(qty), avg(qty) FROM bench_open WHERE sex = 'F' GROUP BY city",
     "SELECT city, dx.count(*), dx.sum(qty), dx.avg(qty) FROM bench_open WHERE sex = 'F' GROUP BY city"),
    ("GROUP BY open key, sex: count",
     "SELECT city, sex, count(*) FROM bench_open GROUP BY city, sex",
     "SELECT city, sex, dx.count(*) FROM bench_open GROUP BY city, sex"),
]


def cpu_ms(pid):
    """utime + stime of a local backend, in ms (None when /proc cannot show it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def main():
    with citus_db() as db:
        conn = connect("coord", db)
        execute(conn, "CREATE TABLE bench_open (id bigint, city text, qty int, sex text)")
        execute(conn, f"SELECT create_distributed_table('bench_open', '{args.by}', shard_count => {args.shards})")
        start = time.perf_counter()
        execute(conn, f"INSERT INTO bench_open SELECT i, 'city' || (i % {args.keys}), (i * 7) % 100, "
                      f"CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END FROM generate_series(1, {args.rows}) AS i")
        execute(conn, "VACUUM ANALYZE bench_open")
        print(f"loaded {args.rows} rows in {time.perf_counter() - start:.0f} s", flush=True)
        execute(conn, "SELECT dx.protect_table('bench_open', 1.0)")
        execute(conn, """SELECT dx.set_column('bench_open', 'city', '{"open": true}', '{"type": "discrete", "weight": 1}')""")
        execute(conn, """SELECT dx.set_column('bench_open', 'qty', '{"min": 0, "max": 99}', '{"type": "absolute", "scale": 10}')""")
        execute(conn, """SELECT dx.set_column('bench_open', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete"}')""")
        execute(conn, "SELECT dx.set_delta('bench_open', 1e-6)")
        execute(conn, "SELECT dx.grant_budget(current_user::regrole, 'bench_open', 1e9, delta => 1)")
        execute(conn, "SET dxpriv.epsilon = 1")
        pid = scalar(conn, "SELECT pg_backend_pid()")

        def timed(sql):
            c0 = cpu_ms(pid)
            t = time.perf_counter()
            n = len(rows(conn, sql))
            c1 = cpu_ms(pid)
            return (time.perf_counter() - t) * 1000, n, (c1 - c0 if c0 is not None and c1 is not None else None)

        out = []
        for label, native, dx in PAIRS:
            timed(native)
            timed(dx)
            tn, td, cn, cd, kept = [], [], [], [], 0
            for r in range(args.runs):
                order = [(native, tn, cn), (dx, td, cd)] if r % 2 == 0 else [(dx, td, cd), (native, tn, cn)]
                for sql, acc, cpu in order:
                    ms, n, c = timed(sql)
                    acc.append(ms)
                    if c is not None:
                        cpu.append(c)
                    if sql is dx:
                        kept = n
            mn, md = statistics.median(tn), statistics.median(td)
            ccn = round(statistics.median(cn)) if cn else ""
            ccd = round(statistics.median(cd)) if cd else ""
            out.append((label, round(mn, 1), round(md, 1), round(md / mn, 2), kept, ccn, ccd))
            print(f"{label}: native {mn:.0f} ms, dx {md:.0f} ms, ratio {md / mn:.2f}, released keys {kept}, "
                  f"coordinator CPU native {ccn} ms, dx {ccd} ms", flush=True)
        conn.close()
    path = pathlib.Path(__file__).resolve().parent / "results/citus_open_key_bench.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["query", "native_ms", "dx_ms", "ratio", "released_keys", "coord_cpu_native_ms", "coord_cpu_dx_ms"])
        w.writerows(out)
    print(f"wrote {path} ({args.rows} rows, {args.keys} keys, {args.shards} shards by {args.by}, "
          f"median of {args.runs})")


if __name__ == "__main__":
    main()
