#!/usr/bin/env bash
# SQL benchmark (make bench): dx aggregates against native aggregates on a throwaway cluster.
# Starts a cluster with dxpriv preloaded on port $DXPRIV_BENCH_PORT (default 55498), runs
# test/bench/sql_bench.py (extra arguments are passed on, e.g. --rows 200000 --runs 3) and
# writes test/bench/results/sql_bench.csv (+ _details.csv, _plans.txt, _env.txt), then runs
# test/bench/unit_bench.py (privacy units), test/bench/dashboard_bench.py (8 BI tiles), test/bench/plot_rowspeed.py (the per-row goal table:
# rowspeed_goals.csv + .png), test/bench/ledger_bench.py (charging throughput and latency, test/bench/results/ledger_bench.csv)
# and build/core/dxpriv_noise_families (noise of each family per query shape, noise_families.csv).
# Needs the extension installed (make install) and python3 with psycopg2 (make deps).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pg-env.sh"
port=${DXPRIV_BENCH_PORT:-55498}

# The Debian interpreter has python3-psycopg2; a python3 earlier on PATH (pyenv, venv) may not.
py=""
for candidate in python3 /usr/bin/python3; do
	if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import psycopg2' 2>/dev/null; then
		py=$candidate
		break
	fi
done
if [ -z "$py" ]; then
	echo "run-bench: no python3 with psycopg2 found; run 'make deps' (installs python3-psycopg2)" >&2
	exit 1
fi

work=$(owned_tmpdir bench)
cleanup() {
	local status=$?
	stop_cluster "$work"
	if [ $status -ne 0 ] && [ -f "$work/server.log" ]; then
		echo "run-bench: failed (exit $status); last lines of the server log:" >&2
		tail -n 30 "$work/server.log" >&2 || true
	fi
	rm -rf "$work"
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_cluster "$work" "$port"
"$py" "$root/test/bench/sql_bench.py" --out-dir "$root/test/bench/results" "$@"
# privacy units (k = 10) on ~2.4M visits, serial and parallel (unit_bench.csv), then the per-row goal
# table of issue 23 (rowspeed_goals.csv and .png: dx/native of every per-row goal row)
"$py" "$root/test/bench/unit_bench.py" --out "$root/test/bench/results/unit_bench.csv"
# the 8-tile BI dashboard, first refresh (analysis, charge, rows) and cached refresh (dashboard_bench.csv)
"$py" "$root/test/bench/dashboard_bench.py" --out "$root/test/bench/results/dashboard_bench.csv"
"$py" "$root/test/bench/plot_rowspeed.py" --results "$root/test/bench/results"
# charged queries/s and latency vs native, 1/8/32 clients, fsync off and on (ledger_bench.csv)
"$py" "$root/test/bench/ledger_bench.py" --out-dir "$root/test/bench/results"
# noise of each family (laplace, gaussian, truncated_laplace) on typical query shapes, from the
# calibrations alone (noise_families.csv)
cmake --build "$root/build/core" --target dxpriv_noise_families >/dev/null
"$root/build/core/dxpriv_noise_families" > "$root/test/bench/results/noise_families.csv"
