#!/usr/bin/env bash
# Instructions per row of the one-pass transition (issue 23, "dx/native 2M rows: sum(int), sum(float8)"):
# native sum(int) / sum(float8) against dx's per-row transition dx._onepass_transfn over the same
# column and layout as the analyzer places for dx.sum, counted by valgrind's callgrind in a
# single-user backend (deterministic, unlike wall or CPU time on a shared machine).
#
# Usage: test/bench/onepass_row_callgrind.sh [rows]
#   rows: of a local table (default 200000) with qty int in 0..50 and score float8 in 0..0.999 (as
#   sql_bench.py's bench: layouts 'd|q0:50:1;' and 'd|q0:1:0.001;'). The transition runs inside a
#   test aggregate (dx._onepass_transfn with dx._onepass_serialize as its final function): dx.sum
#   itself needs the ledger's background worker, which a single-user backend has not; its final
#   function runs once per statement and is not a per-row cost.
# Runs the installed dxpriv (pg_config on PATH). Prints each pair's instructions per row:
# (Ir of 3 statements - Ir of the session without them) / (3 rows).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/pg-env.sh"
. "$root/test/bench/callgrind_session.sh"
rows=${1:-200000}
require_valgrind onepass_row_callgrind
callgrind_cluster onepasscg
psql -h 127.0.0.1 -p "$port" -U postgres -d vg -q -v ON_ERROR_STOP=1 \
	-c "CREATE TABLE t AS SELECT g AS id, ((g::bigint * 7919) % 51)::int AS qty, ((g::bigint * 104729) % 1000) / 1000.0::float8 AS score FROM generate_series(1, $rows) g" \
	-c "VACUUM ANALYZE t" \
	-c "CREATE AGGREGATE vg_onepass(text, VARIADIC \"any\") (SFUNC = dx._onepass_transfn, STYPE = internal, FINALFUNC = dx._onepass_serialize)"
stop_cluster "$work" >/dev/null
printf 'SET max_parallel_workers_per_gather = 0;\nSET jit = off;\n' >"$work/empty.sql"
names=(native_int dx_int native_float8 dx_float8)
stmts=("SELECT sum(qty) FROM t;"
	"SELECT length(vg_onepass('d|q0:50:1;'::text, qty)) FROM t;"
	"SELECT sum(score) FROM t;"
	"SELECT length(vg_onepass('d|q0:1:0.001;'::text, score)) FROM t;")
declare -A ir
ir[empty]=$(callgrind_ir "$work" vg "$work/empty.sql")
for i in "${!names[@]}"; do
	cp "$work/empty.sql" "$work/${names[$i]}.sql"
	for _ in 1 2 3; do echo "${stmts[$i]}" >>"$work/${names[$i]}.sql"; done
	ir[${names[$i]}]=$(callgrind_ir "$work" vg "$work/${names[$i]}.sql")
	[ -n "${DXPRIV_CALLGRIND_KEEP:-}" ] && cp "$work/${names[$i]}.sql.cg" "$DXPRIV_CALLGRIND_KEEP/cg.${names[$i]}.out"
done
for col in int float8; do
	awk -v e="${ir[empty]}" -v n="${ir[native_$col]}" -v d="${ir[dx_$col]}" -v r="$rows" -v c="$col" 'BEGIN {
		printf "sum(%s): instructions per row: native %.1f, dx transition %.1f, dx beyond native %.1f\n", c, (n - e) / (3 * r), (d - e) / (3 * r), (d - n) / (3 * r) }'
done
