#!/usr/bin/env bash
# Starts a cluster without dxpriv and one with dxpriv preloaded, then runs hook_overhead.py (see there).
# Usage: PATH=<pg bin with dxpriv installed>:$PATH bash test/bench/hook_overhead.sh [hook_overhead.py options]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/pg-env.sh
dx=$(owned_tmpdir hookbench-dx)
base=$(owned_tmpdir hookbench-base)
trap 'stop_cluster "$dx"; stop_cluster "$base"; rm -rf "$dx" "$base"' EXIT
start_cluster "$dx" "$(free_port 56100)"
dxport=$PGPORT
start_cluster "$base" "$(free_port $((dxport + 1)))"
baseport=$PGPORT
# the baseline: the same initdb, dxpriv removed from shared_preload_libraries
sed -i "s/^shared_preload_libraries = 'dxpriv'/#&/" "$base/data/postgresql.conf"
as_cluster_owner "pg_ctl -D '$base/data' -l '$base/server.log' -w restart >/dev/null"
psql -X -q -h "$dx" -p "$dxport" -U postgres -c "CREATE DATABASE noext" -c "CREATE DATABASE withext"
psql -X -q -h "$dx" -p "$dxport" -U postgres -d withext -c "CREATE EXTENSION dxpriv"
/usr/bin/python3 test/bench/hook_overhead.py \
	--base "host=$base port=$baseport user=postgres dbname=postgres" \
	--noext "host=$dx port=$dxport user=postgres dbname=noext" \
	--ext "host=$dx port=$dxport user=postgres dbname=withext" "$@"
