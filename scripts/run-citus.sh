#!/usr/bin/env bash
# `make test-citus`: builds Citus 13.2.2 from the vendored source when it is not installed, starts a
# coordinator and two workers on loopback (shared_preload_libraries = 'citus,dxpriv'), and runs the
# Citus end-to-end tests (test/citus/test_*.py). With KEEP=1 the clusters stay up (ports printed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pg-env.sh"

# The vendored Citus source lives beside the project, never inside it.
vendor=${DXPRIV_CITUS_VENDOR:-}
for d in "$root/../shared/vendor/citus" /work/shared/vendor/citus; do
	[ -n "$vendor" ] || { [ -x "$d/build-citus.sh" ] && vendor=$d; } || true
done
if [ ! -f "$(pg_config --pkglibdir)/citus.so" ]; then
	[ -n "$vendor" ] || { echo "citus is not installed and no vendored source was found (set DXPRIV_CITUS_VENDOR)" >&2; exit 1; }
	echo "building citus from $vendor (a few minutes)"
	bash "$vendor/build-citus.sh"
fi

work=$(owned_tmpdir citus)
nodes="coord w1 w2"
cleanup() {
	if [ "${KEEP:-0}" = 1 ]; then echo "clusters kept in $work"; return; fi
	for n in $nodes; do [ -d "$work/$n/data" ] && stop_cluster "$work/$n"; done
	rm -rf "$work"
}
trap cleanup EXIT
port=$(free_port ${DXPRIV_CITUS_PORT:-56300})
declare -A ports
for n in $nodes; do
	mkdir -p "$work/$n"; [ "$(id -u)" -ne 0 ] || chown postgres:postgres "$work/$n"
	ports[$n]=$port
	as_cluster_owner "initdb -D '$work/$n/data' -A trust -U postgres --no-sync >'$work/$n/initdb.log' 2>&1"
	cat >>"$work/$n/data/postgresql.conf" <<CONF
shared_preload_libraries = 'citus,dxpriv'
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$work/$n'
fsync = off
max_connections = 200
max_worker_processes = 32
CONF
	as_cluster_owner "pg_ctl -D '$work/$n/data' -l '$work/$n/server.log' -w start >/dev/null"
	port=$(free_port $((port + 1)))
done
export PGUSER=postgres PGHOST=127.0.0.1
export DXPRIV_CITUS_COORD=${ports[coord]} DXPRIV_CITUS_W1=${ports[w1]} DXPRIV_CITUS_W2=${ports[w2]}
export DXPRIV_CITUS_WORK=$work
echo "coordinator :${ports[coord]}, workers :${ports[w1]} :${ports[w2]}"
if [ "${KEEP:-0}" = 1 ] && [ "${NO_TESTS:-0}" = 1 ]; then exit 0; fi
/usr/bin/python3 "$root/test/e2e/run_all.py" "$root/test/citus"
