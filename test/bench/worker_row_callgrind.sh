#!/usr/bin/env bash
# Instructions per row that a Citus worker's count + sum task costs beyond native SQL (issue 23,
# "Citus: the workers' per-row weighing"), counted by valgrind's callgrind in a single-user backend:
# deterministic, unlike wall or CPU time on a shared machine.
#
# Usage: test/bench/worker_row_callgrind.sh [task.sql] [rows]
#   task.sql: a worker's task query as Citus sends it (default: results/session19/worker_task_count_sum.sql,
#   citus_stage_bench.py's g70 count + sum: income declared 0..200000 in steps of 100); its shard name
#   is replaced by a local table t of `rows` rows (default 100000) with the same columns and values.
# Runs the installed dxpriv (pg_config on PATH). Prints native's and dx's instructions per row and the
# difference: (Ir of 3 statements - Ir of an empty session) / (3 rows).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/pg-env.sh"
. "$root/test/bench/callgrind_session.sh"
task=${1:-$root/test/bench/results/session19/worker_task_count_sum.sql}
rows=${2:-100000}
require_valgrind worker_row_callgrind
callgrind_cluster callgrind
psql -h 127.0.0.1 -p "$port" -U postgres -d vg -q \
	-c "CREATE TABLE t AS SELECT g AS id, (g % 70)::int AS k, ((g::bigint * 7919) % 2000)::int * 100 AS income FROM generate_series(1, $rows) g" \
	-c "VACUUM ANALYZE t"
stop_cluster "$work" >/dev/null
dx_task=$(sed -E 's/FROM public\.[a-z0-9_]+ [a-z0-9_]+ WHERE/FROM t WHERE/' "$task")
printf 'SET max_parallel_workers_per_gather = 0;\n' >"$work/empty.sql"
cp "$work/empty.sql" "$work/native.sql"
cp "$work/empty.sql" "$work/dx.sql"
for _ in 1 2 3; do
	echo "SELECT sum(c), sum(s) FROM (SELECT k, count(*) c, sum(income) s FROM t GROUP BY k) x;" >>"$work/native.sql"
	echo "SELECT sum(u1), sum(u2) FROM ($dx_task) x;" >>"$work/dx.sql"
done
empty=$(callgrind_ir "$work" vg "$work/empty.sql")
native=$(callgrind_ir "$work" vg "$work/native.sql")
dx=$(callgrind_ir "$work" vg "$work/dx.sql")
awk -v e="$empty" -v n="$native" -v d="$dx" -v r="$rows" 'BEGIN {
	printf "instructions per row: native %.1f, dx %.1f, dx beyond native %.1f\n", (n - e) / (3 * r), (d - e) / (3 * r), (d - n) / (3 * r) }'
