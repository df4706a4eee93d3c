#!/usr/bin/env bash
# Instructions per row of a privacy-unit count (issue 23, "privacy unit (k = 10) count, dx/native"):
# native count(*) against dx.count(*) whose scan carries the keep qual dx._unit_keep, counted by
# valgrind's callgrind in a single-user backend (deterministic, unlike time on a shared machine).
#
# Usage: test/bench/unit_keep_callgrind.sh [rows-step] [--all]
#   The table is unit_bench.py's visits (person p has min(500, 1 + 150000 / (p + 99)) rows, unit
#   person, k = 10) for every step-th person of its 1M (default 10: 196,908 rows, the same share of
#   rows in heavy units and the same physical order). --all also counts the decomposition rows of
#   doc/performance.md's unitqual table (a deform of the unit, quals on it, the hand-written keep qual).
# Runs the installed dxpriv (pg_config on PATH). Every session first sets the epsilon and runs one
# dx.count(*) (the profile's build and the caches); a statement's instructions per row are
# (Ir of the session with it 3 times - Ir of that warm-up session) / (3 rows). Leaves cg.<name>.out
# files in $DXPRIV_CALLGRIND_KEEP when set (for callgrind_annotate).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/pg-env.sh"
. "$root/test/bench/callgrind_session.sh"
step=${1:-10}
all=${2:-}
require_valgrind unit_keep_callgrind
callgrind_cluster unitkeepcg
psql -h 127.0.0.1 -p "$port" -U postgres -d vg -q -v ON_ERROR_STOP=1 \
	-c "CREATE TABLE bench_visits (person int NOT NULL, ward text, age int, cost int)" \
	-c "INSERT INTO bench_visits
	    SELECT p, (ARRAY['a','b','c','d','e'])[1 + (p * 7 + i * 3) % 5], (p * 13 + i * 7) % 101, (p * 31 + i * 17) % 1001
	    FROM generate_series(1, 1000000, $step) p, generate_series(1, least(500, 1 + 150000 / (p + 99))) i" \
	-c "VACUUM ANALYZE bench_visits" \
	-c "SELECT dx.protect_table('bench_visits', 1.0)" \
	-c "SELECT dx.set_column('bench_visits', 'ward', '{\"values\": [\"a\",\"b\",\"c\",\"d\",\"e\"]}', '{\"type\": \"discrete\"}')" \
	-c "SELECT dx.set_column('bench_visits', 'age', '{\"min\": 0, \"max\": 100}', '{\"type\": \"absolute\", \"scale\": 10}')" \
	-c "SELECT dx.set_column('bench_visits', 'cost', '{\"min\": 0, \"max\": 1000}', '{\"type\": \"none\"}')" \
	-c "SELECT dx.grant_budget(current_user::regrole, 'bench_visits', 1e9)" \
	-c "SELECT dx.set_privacy_unit('bench_visits', 'person', 10, 3, 4)" >/dev/null
rows=$(psql -h 127.0.0.1 -p "$port" -U postgres -d vg -Atc "SELECT count(*) FROM bench_visits")
plan=$(psql -h 127.0.0.1 -p "$port" -U postgres -d vg -Atc "SET dxpriv.epsilon = 0.1; SET max_parallel_workers_per_gather = 0; EXPLAIN (COSTS OFF) SELECT dx.count(*) FROM bench_visits")
grep -q "_unit_keep" <<<"$plan" || { echo "unit_keep_callgrind: dx.count(*) has no keep qual:" >&2; echo "$plan" >&2; exit 1; }
echo "dx.count(*) scan: $(grep -m1 Filter <<<"$plan" | sed "s/^ *//")"
oid=$(psql -h 127.0.0.1 -p "$port" -U postgres -d vg -Atc "SELECT 'bench_visits'::regclass::oid")
stop_cluster "$work" >/dev/null

profile="(SELECT dx._unit_profile('bench_visits'::regclass, true, 1::int2, 10, 0))"
keep="dx._unit_keep($profile, person, '$oid'::oid, ctid)"
names=(native keep_qual)
stmts=("SELECT count(*) FROM bench_visits;" "SELECT count(*) FROM bench_visits WHERE $keep;")
if [ "$all" = "--all" ]; then
	names+=(deform person_qual call_qual)
	stmts+=("SELECT count(person) FROM bench_visits;"
		"SELECT count(*) FROM bench_visits WHERE person IS NOT NULL;"
		"SELECT count(*) FROM bench_visits WHERE int4eq(person, person);")
fi
printf 'SET max_parallel_workers_per_gather = 0;\nSET jit = off;\nSET dxpriv.test_seed = 7;\nSELECT count(*) FROM bench_visits WHERE %s;\n' "$keep" >"$work/warm.sql"
for i in "${!names[@]}"; do
	cp "$work/warm.sql" "$work/${names[$i]}.sql"
	for _ in 1 2 3; do echo "${stmts[$i]}" >>"$work/${names[$i]}.sql"; done
done
ir() { # instructions of a single-user session reading $work/$1.sql (its profile kept as cg.$1.out)
	callgrind_ir "$work" vg "$work/$1.sql" || return 1
	if [ -n "${DXPRIV_CALLGRIND_KEEP:-}" ]; then cp "$work/$1.sql.cg" "$DXPRIV_CALLGRIND_KEEP/cg.$1.out"; fi
}
warm=$(ir warm)
declare -A per
for n in "${names[@]}"; do
	s=$(ir "$n")
	per[$n]=$(awk -v e="$warm" -v s="$s" -v r="$rows" 'BEGIN { printf "%.1f", (s - e) / (3 * r) }')
	echo "$n: ${per[$n]} instructions per row"
done
awk -v n="${per[native]}" -v d="${per[keep_qual]}" -v r="$rows" 'BEGIN {
	printf "rows %d: native count(*) %.1f, with the unit keep qual %.1f instructions per row, difference %.1f (%.2f of native)\n", r, n, d, d - n, d / n }'
