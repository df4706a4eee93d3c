#!/usr/bin/env bash
# Runs the pg_regress suite (test/sql, test/expected) on a temporary instance with dxpriv preloaded.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pg-env.sh"
regress="$(dirname "$(pg_config --pgxs)")/../test/regress/pg_regress"
work=$(owned_tmpdir regress)
cp -r "$root/test/sql" "$root/test/expected" "$root/test/regress.conf" "$work/"
[ "$(id -u)" -ne 0 ] || chown -R postgres:postgres "$work"
# DXPRIV_REGRESS_TESTS="00_setup 31_sealed_execution" runs a selection
tests=${DXPRIV_REGRESS_TESTS:-$(cd "$root/test/sql" && ls ./*.sql | sed -e 's#^\./##' -e 's/\.sql$//' | sort | tr '\n' ' ')}
status=0
as_cluster_owner "cd '$work' && '$regress' --temp-instance='$work/instance' --temp-config='$work/regress.conf' \
	--bindir='$PG_BINDIR' --inputdir=. --outputdir=. --dbname=dxpriv_regress $tests" || status=$?
if [ $status -ne 0 ]; then
	mkdir -p "$root/build/regress"
	cp -r "$work/results" "$work/regression.diffs" "$root/build/regress/" 2>/dev/null || true
	echo "pg_regress failed; diffs in build/regress/regression.diffs:"
	head -c 20000 "$work/regression.diffs" 2>/dev/null || true
fi
rm -rf "$work"
exit $status
