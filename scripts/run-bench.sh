#!/usr/bin/env bash
# SQL benchmark (make bench): dx aggregates against native aggregates on a throwaway cluster.
# Starts a cluster with dxpriv preloaded on port $DXPRIV_BENCH_PORT (default 55498), runs
# test/bench/sql_bench.py (extra arguments are passed on, e.g. --rows 200000 --runs 3) and
# writes test/bench/results/sql_bench.csv (+ _details.csv, _plans.txt, _env.txt), then runs
# test/bench/unit_bench.py (privacy units), test/bench/dashboard_bench.py (8 BI tiles), test/bench/plot_rowspeed.py (the per-row goal table:
# rowspeed_goals.csv + .png), test/bench/ledger_bench.py (charging throughput and latency, test/bench/results/ledger_bench.csv)
# and build/core/dxpriv_noise_families (noise of each family per query shape, noise_families.csv),
# test/bench/analysis_bench.py (analysis + plan and the cached statement per domain size,
# analysis_bench.csv + .png), test/bench/open_key_bench.py (50,000-value open GROUP BY key,
# open_key_bench.csv), with DXPRIV_BENCH_CITUS=1 and Citus installed test/bench/citus_bench.py on
# the clusters of scripts/run-citus.sh (citus_bench.csv; DXPRIV_BENCH_CITUS_ROWS, default 1000000),
# and last test/bench/goal_table.py: issue 23's goal table from those CSVs (goals.csv + goals.png).
# DXPRIV_BENCH_RESULTS: another results directory. DXPRIV_BENCH_QUICK=1: a smoke run at small sizes
# (20,000 rows, one run each; no noise families): checks the chain, not the speed.
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

# the plots need matplotlib (Debian's python3-matplotlib is in /usr/bin/python3)
plot_py=$py
for candidate in /usr/bin/python3 python3; do
	if "$candidate" -c 'import psycopg2, matplotlib' 2>/dev/null; then
		plot_py=$candidate
		break
	fi
done
plot_flag=""
"$plot_py" -c 'import matplotlib' 2>/dev/null && plot_flag=--plot
results=${DXPRIV_BENCH_RESULTS:-$root/test/bench/results}
mkdir -p "$results"
quick=${DXPRIV_BENCH_QUICK:-0}
small() { if [ "$quick" = 1 ]; then echo "$@"; fi; }

work=$(owned_tmpdir bench)
work_stopped=""
citus_work=""
stop_citus() {
	[ -n "$citus_work" ] || return 0
	for n in coord w1 w2; do [ -d "$citus_work/$n/data" ] && stop_cluster "$citus_work/$n"; done
	rm -rf "$citus_work"
	citus_work=""
}
cleanup() {
	local status=$?
	stop_citus
	if [ -z "$work_stopped" ]; then stop_cluster "$work"; fi
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
# shellcheck disable=SC2046 # small prints nothing or the smoke sizes
"$py" "$root/test/bench/sql_bench.py" --out-dir "$results" $(small --rows 20000 --runs 1 --skip-tiny) "$@"
# privacy units (k = 10) on ~2.4M visits, serial and parallel (unit_bench.csv), then the per-row goal
# table of issue 23 (rowspeed_goals.csv and .png: dx/native of every per-row goal row)
# shellcheck disable=SC2046
"$py" "$root/test/bench/unit_bench.py" --out "$results/unit_bench.csv" --runs 7 $(small --persons 10000 --runs 1)
# the 8-tile BI dashboard, first refresh (analysis, charge, rows) and cached refresh (dashboard_bench.csv)
# shellcheck disable=SC2046
"$py" "$root/test/bench/dashboard_bench.py" --out "$results/dashboard_bench.csv" $(small --runs 1)
"$plot_py" "$root/test/bench/plot_rowspeed.py" --results "$results"
# charged queries/s and latency vs native, 1/8/32 clients, fsync off and on (ledger_bench.csv)
# shellcheck disable=SC2046
"$py" "$root/test/bench/ledger_bench.py" --out-dir "$results" $(small --seconds 1 --clients 1 --fsync off)
# noise of each family (laplace, gaussian, truncated_laplace) on typical query shapes, from the
# calibrations alone (noise_families.csv)
if [ "$quick" != 1 ]; then
	cmake --build "$root/build/core" --target dxpriv_noise_families >/dev/null
	"$root/build/core/dxpriv_noise_families" > "$results/noise_families.csv"
fi
# analysis + plan (dx.explain) and the cached statement for 200,001 / 10^6 / 10^5-point domains and the
# l2 domains, median of 11 (of 33 new sessions for the new-session lines; analysis_bench.csv, .png)
# shellcheck disable=SC2046
"$plot_py" "$root/test/bench/analysis_bench.py" --out "$results/analysis_bench.csv" --goals $plot_flag \
	--runs 11 $(small --rows 10000 --runs 1)
# 2M rows grouped by a 50,000-value open key (open_key_bench.csv)
# shellcheck disable=SC2046
"$py" "$root/test/bench/open_key_bench.py" --out "$results/open_key_bench.csv" $(small --rows 20000 --keys 500 --runs 1)
stop_cluster "$work"
work_stopped=1
# Citus (on request): a coordinator and two workers of scripts/run-citus.sh, stopped afterwards
if [ "${DXPRIV_BENCH_CITUS:-0}" = 1 ]; then
	if [ -f "$(pg_config --pkglibdir)/citus.so" ]; then
		citus_out=$(KEEP=1 NO_TESTS=1 "$root/scripts/run-citus.sh")
		citus_work=$(sed -n 's/^clusters kept in //p' <<<"$citus_out")
		read -r coord w1 w2 < <(sed -n 's/^coordinator :\([0-9]*\), workers :\([0-9]*\) :\([0-9]*\)$/\1 \2 \3/p' \
			<<<"$citus_out")
		PGHOST=127.0.0.1 PGUSER=postgres DXPRIV_CITUS_COORD=$coord DXPRIV_CITUS_W1=$w1 DXPRIV_CITUS_W2=$w2 \
			DXPRIV_BENCH_OUT="$results/citus_bench.csv" \
			"$py" "$root/test/bench/citus_bench.py" "${DXPRIV_BENCH_CITUS_ROWS:-$([ "$quick" = 1 ] && echo 20000 || echo 1000000)}"
		stop_citus
	else
		echo "run-bench: DXPRIV_BENCH_CITUS=1 but citus is not installed ($(pg_config --pkglibdir)/citus.so): Citus rows not measured" >&2
	fi
fi
# issue 23's goal table from the CSVs above (goals.csv, goals.png); rows without a CSV: "not measured"
"$plot_py" "$root/test/bench/goal_table.py" --results "$results"
