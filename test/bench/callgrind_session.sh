# Shared by the callgrind benchmarks (worker_row_callgrind.sh, unit_keep_callgrind.sh,
# onepass_row_callgrind.sh): instructions
# of a single-user backend, counted by valgrind's callgrind (deterministic, unlike time on a shared
# machine). Source it after scripts/pg-env.sh.

# Exits with a message naming the caller $1 when valgrind is missing.
require_valgrind() {
	command -v valgrind >/dev/null || { echo "$1: valgrind is not installed (apt install valgrind)" >&2; exit 1; }
}

# Prints the instructions (callgrind's Ir) of `postgres --single` on the stopped cluster in $1
# (dxpriv preloaded), database $2, reading the statements of the file $3; leaves its output in
# $3.log and its profile in $3.cg (for callgrind_annotate). Fails when a statement raised an ERROR.
callgrind_ir() {
	local work=$1 db=$2 sql=$3
	chmod 644 "$sql"
	su postgres -c "cd /tmp && valgrind --tool=callgrind --callgrind-out-file=$sql.cg $(pg_config --bindir)/postgres --single \
		-D $work/data -c shared_preload_libraries=dxpriv $db < $sql" >"$sql.log" 2>&1
	if grep -q "ERROR" "$sql.log"; then
		echo "callgrind_ir: $sql failed:" >&2
		grep -m3 -A2 ERROR "$sql.log" >&2
		return 1
	fi
	sed -n 's/.*Collected : *//p' "$sql.log"
}

# Starts the scratch cluster of the benchmark named $1 (dxpriv preloaded, a database vg with the
# extension created), sets `work` (its directory) and `port`, and stops and removes it at exit.
callgrind_cluster() {
	work=$(owned_tmpdir "$1")
	trap 'stop_cluster "$work" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
	port=$(free_port 56890)
	start_cluster "$work" "$port" >/dev/null
	psql -h 127.0.0.1 -p "$port" -U postgres -qc "CREATE DATABASE vg"
	psql -h 127.0.0.1 -p "$port" -U postgres -d vg -qc "CREATE EXTENSION dxpriv"
}
