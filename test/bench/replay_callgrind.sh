#!/usr/bin/env bash
# Instructions of a statement answered from the answer cache (issue 23, "a statement answered from the
# answer cache: <= 2 ms"), counted by valgrind's callgrind in the server's backends (deterministic,
# unlike wall or CPU time on a shared machine). A replay needs the ledger's background worker, so the
# whole server runs under callgrind here (not `postgres --single`).
#
# Usage: test/bench/replay_callgrind.sh [rows]
#   rows: of each table of analysis_bench.py's set-up (default 10000; a replay reads no row).
# Runs the installed dxpriv (pg_config on PATH). For avg over 10^6 points and 5 aggregates over 10^5
# l2 points (analysis_bench.py's statements), after one session that answers and caches each:
#   new session  the statement as the third of a new session (SET dxpriv.epsilon, SELECT
#                pg_backend_pid(), the statement): the session's instructions minus those of the
#                same session with SELECT 1 in its place (what analysis_bench.py's new-session line times)
#   same session (instructions of a session replaying it 21 times - of one replaying it once) / 20
# (callgrind's inclusive Ir of PostgresMain in each backend's profile).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
. "$root/scripts/pg-env.sh"
. "$root/test/bench/callgrind_session.sh"
rows=${1:-10000}
require_valgrind replay_callgrind
py=/usr/bin/python3
callgrind_cluster replaycg
PGHOST=127.0.0.1 PGPORT=$port PGUSER=postgres PGDATABASE=vg "$py" -c \
	"import sys; sys.path.insert(0, '$root/test/bench'); import analysis_bench as a; a.setup(a.connect(), $rows)"
stop_cluster "$work" >/dev/null
su postgres -c "cd $work && valgrind --tool=callgrind --callgrind-out-file=$work/cg.%p $(pg_config --bindir)/postgres \
	-D $work/data -c shared_preload_libraries=dxpriv -c port=$port -c listen_addresses=127.0.0.1 \
	-c unix_socket_directories=$work -c autovacuum=off >$work/valgrind.log 2>&1 &"
for _ in $(seq 120); do
	pg_isready -h 127.0.0.1 -p "$port" -q && break
	sleep 1
done
PGPORT=$port "$py" - "$root/test/bench" >"$work/pids" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
import psycopg2
from analysis_bench import ANALYST, L2_FIVE
STATEMENTS = {"avg": "SELECT avg(income) FROM t1m", "l2five": L2_FIVE.replace("cities", "places")}
def session(n, stmt):
    c = psycopg2.connect(host="127.0.0.1", port=int(os.environ["PGPORT"]), dbname="vg", user=ANALYST)
    c.autocommit = True
    cur = c.cursor()
    cur.execute("SET dxpriv.epsilon = 0.1")
    cur.execute("SELECT pg_backend_pid()")
    pid = cur.fetchone()[0]
    for _ in range(n):
        cur.execute(stmt)
        cur.fetchall()
    c.close()
    return pid
for stmt in STATEMENTS.values():
    session(1, stmt)  # answered (charged) and cached
print("select1", session(1, "SELECT 1"))
for label, stmt in STATEMENTS.items():
    print(f"{label}1", session(1, stmt))
    print(f"{label}21", session(21, stmt))
PY
stop_cluster "$work" >/dev/null
sleep 1
declare -A ir
while read -r label pid; do
	ir[$label]=$(callgrind_annotate --inclusive=yes "$work/cg.$pid" 2>/dev/null |
		awk '/\?\?\?:PostgresMain / && !n++ {gsub(",", "", $1); print $1}')
done <"$work/pids"
for pair in "avg:avg over 10^6 points" "l2five:5 aggregates over 10^5 l2 points"; do
	key=${pair%%:*}
	awk -v s="${ir[select1]}" -v one="${ir[${key}1]}" -v many="${ir[${key}21]}" -v l="${pair#*:}" 'BEGIN {
		printf "%s: instructions of a replay: new session %.0f, same session %.0f\n", l, one - s, (many - one) / 20 }'
done
