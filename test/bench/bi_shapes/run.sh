#!/usr/bin/env bash
# Issue 24 shapes through three real drivers (psycopg2: client-side literals; node-postgres and JDBC:
# $1 bound on the server), and dbplyr's own SQL for its verbs (run_dbplyr.R, when Rscript with
# r-cran-dbplyr and r-cran-rpostgresql is installed), against a running cluster whose database postgres holds the bw/cz fixture
# of fixture.sql and a LOGIN analyst bw_analyst. Prints name <TAB> ok|wrong|error <TAB> detail per
# driver. Usage: test/bench/bi_shapes/run.sh HOST PORT (node-postgres from build/node, see
# test_bi_clients.py; JDBC from /usr/share/java/postgresql.jar).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "== psycopg2"
/usr/bin/python3 "$here/run_psycopg2.py" "$here/shapes.json" "$1" "$2"
echo "== node-postgres"
NODE_PATH="$root/build/node/node_modules" node "$here/run_pg.js" "$here/shapes.json" "$1" "$2"
echo "== jdbc"
javac -d "$work" -cp /usr/share/java/postgresql.jar "$here/RunJdbc.java"
java -cp "/usr/share/java/postgresql.jar:$work" RunJdbc "$here/shapes.json" "$1" "$2"
if command -v Rscript >/dev/null && Rscript -e 'library(dbplyr); library(RPostgreSQL)' >/dev/null 2>&1; then
	echo "== dbplyr (RPostgreSQL)"
	Rscript "$here/run_dbplyr.R" "$1" "$2" 2>/dev/null | grep -v '^    '
fi
