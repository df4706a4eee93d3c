#!/usr/bin/env bash
# make test-upgrade: ALTER EXTENSION dxpriv UPDATE from the released 0.1.0 (built from its git tag)
# to the current version keeps every row of dx's tables (policies, budgets, ledger, privacy units,
# releases), keeps charging, and leaves the same catalog as a fresh CREATE EXTENSION; then a
# pg_dump of the upgraded database restores with policies and ledger and no raw read mid-restore,
# and pg_upgrade of the cluster keeps them too.
# Needs the current build installed (make install). The 0.1.0 build is cached under
# build/v0.1.0/<commit> (first run: a few minutes). Port: DXPRIV_UPGRADE_PORT (default 55741).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pg-env.sh"
port=$(free_port "${DXPRIV_UPGRADE_PORT:-55741}")
old=0.1.0
new=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$root/extension/dxpriv.control")
started=$(date +%s)

# ---- the 0.1.0 build (cached by commit) ------------------------------------------------------
# CI clones may lack tags: fall back to the tag's full hash (the commit object must be present).
commit=$(git -C "$root" rev-parse -q --verify "v$old^{commit}" 2>/dev/null || echo 6f80e7fbae579d8dc585758ae60c3248a94ea239)
if ! git -C "$root" cat-file -e "$commit^{commit}" 2>/dev/null; then
	echo "test-upgrade: commit $commit (tag v$old) is not in this clone (a shallow clone?): run" \
	     "'git fetch --unshallow' or 'git fetch origin tag v$old', then retry" >&2
	exit 1
fi
cache=${DXPRIV_UPGRADE_CACHE:-$root/build/v$old/$commit}
if [ ! -f "$cache/dxpriv.so" ] || [ ! -f "$cache/dxpriv--$old.sql" ]; then
	echo "test-upgrade: building dxpriv $old from $commit into $cache (once)"
	rm -rf "$cache/src" && mkdir -p "$cache/src"
	git -C "$root" archive "$commit" | tar -x -C "$cache/src"
	# the extension needs only the core library, not the unit tests the old Makefile also built
	sed -i 's|cmake --build $(BUILD_DIR)/core -j2$|cmake --build $(BUILD_DIR)/core -j2 --target dxpriv_core|' "$cache/src/Makefile"
	make -C "$cache/src" -j2 all >"$cache/build.log" 2>&1 || { tail -n 30 "$cache/build.log" >&2; exit 1; }
	cp "$cache/src/dxpriv.so" "$cache/src/sql/dxpriv--$old.sql" "$cache/src/extension/dxpriv.control" "$cache/"
	rm -rf "$cache/src"
fi

# ---- a private copy of the PostgreSQL installation, to swap dxpriv's files in -----------------
bindir=$(pg_config --bindir) libdir=$(pg_config --pkglibdir) sharedir=$(pg_config --sharedir)
for f in "$libdir/dxpriv.so" "$sharedir/extension/dxpriv--$new.sql" "$sharedir/extension/dxpriv--$old--$new.sql"; do
	[ -f "$f" ] || { echo "test-upgrade: $f is missing: run 'make install' first" >&2; exit 1; }
done
work=$(owned_tmpdir upgrade)
pg=$work/pg
mkdir -p "$pg$bindir" "$pg$libdir" "$pg$sharedir"
cp -a "$bindir/." "$pg$bindir/"                 # real files: postgres finds lib/ and share/ from its own path
cp -as "$libdir/." "$pg$libdir/"                # symbolic links for the rest
cp -as "$sharedir/." "$pg$sharedir/"
rm -f "$pg$libdir"/dxpriv.so "$pg$sharedir"/extension/dxpriv*
export PATH="$pg$bindir:$PATH"

cleanup() {
	local status=$?
	if [ $status -ne 0 ]; then
		echo "test-upgrade FAILED (exit $status); last lines of the server log:" >&2
		tail -n 20 "$work/server.log" 2>/dev/null >&2 || true
	fi
	stop_cluster "$work" 2>/dev/null
	[ ! -d "$work/new" ] || as_cluster_owner "pg_ctl -D '$work/new' -m fast -w stop >/dev/null 2>&1" || true
	rm -rf "$work"
	exit $status
}
trap cleanup EXIT

sql() { psql -X -q -v ON_ERROR_STOP=1 "$@"; }
val() { psql -X -q -At -v ON_ERROR_STOP=1 "$@"; }
# SQLSTATE of the last statement given with -c (00000: it succeeded).
sqlstate() { psql -X -q -At "$@" -c '\echo :LAST_ERROR_SQLSTATE' 2>/dev/null | tail -n 1; }
fail() { echo "test-upgrade FAILED: $*" >&2; exit 1; }

# Every row of every table of dx and the values of its sequences, in a stable text form.
snapshot() {
	local db=$1 t
	for t in $(val -d "$db" -c "SELECT c.oid::regclass FROM pg_class c WHERE c.relnamespace = 'dx'::regnamespace
	                            AND c.relkind IN ('r', 'S', 'p') ORDER BY c.oid::regclass::text"); do
		echo "== $t"
		if [ "$(val -d "$db" -c "SELECT relkind FROM pg_class WHERE oid = '$t'::regclass")" = S ]; then
			val -d "$db" -c "SELECT last_value, is_called FROM $t"
		elif [ "$t" = dx.contents_changes ]; then
			# relid 0: the policy version (sql/57_analysis_memo.sql); a restore writes the policy
			# tables, a new policy version (a new analysis, nothing else). Rows of transactions from
			# $snapshot_since on (the restore's own): its CREATE TRIGGER / ALTER TABLE ... ENABLE ALWAYS
			# TRIGGER of the contents triggers count as writes of the protected tables (dx_tree_change),
			# a new contents version (nothing cached before is reused), no row of the dump changed
			val -d "$db" -c "SELECT x::text FROM $t x WHERE x.relid <> 0
			                 ${snapshot_since:+AND x.xid < '$snapshot_since'::xid8} ORDER BY 1"
		else
			val -d "$db" -c "SELECT x::text FROM $t x ORDER BY 1"
		fi
	done
}

# stdin, a snapshot, without the tables that are not in snapshot $1 and hold no row (tables the
# update creates start empty; a new table with rows still shows in the diff).
without_new_empty() {
	python3 -c '
import sys
old = {l for l in open(sys.argv[1]).read().split("\n") if l.startswith("== ")}
sections, cur = [], None
for line in sys.stdin.read().rstrip("\n").split("\n"):
    if line.startswith("== "):
        cur = [line]
        sections.append(cur)
    else:
        cur.append(line)
for sec in sections:
    if sec[0] in old or len(sec) > 1:
        print("\n".join(sec))' "$1"
}

# The extension's catalog as pg_dump --binary-upgrade writes it (every member object with its
# grants, pg_init_privs and comments; OIDs and xids removed, blocks sorted), its member list
# (pg_depend) and its configuration tables.
catalog() {
	local db=$1
	pg_dump -d "$db" --schema-only --binary-upgrade --extension=dxpriv --schema=dx --no-owner | python3 -c '
import re, sys
# one block per TOC entry (pg_dump starts each with "-- Name: ..."), sorted: pg_dump orders
# objects partly by OID; per-database values (OIDs, xids, sequence positions, restrict keys) go
text = sys.stdin.read()
text = re.sub(r"UPDATE pg_catalog.pg_class\nSET relfrozenxid = .*?;\n", "", text, flags=re.S)
blocks = re.split(r"\n(?=--\n-- (?:Name|Data for Name): )", text)
out = []
for b in blocks:
    lines = [l for l in b.split("\n")
             if not re.match(r"(--|SET |SELECT pg_catalog\.set_config|SELECT pg_catalog\.setval|\\(un)?restrict )", l)
             and "binary_upgrade_set_next" not in l and "binary_upgrade_create_empty_extension" not in l
             and "binary_upgrade_set_record_init_privs" not in l]
    body = "\n".join(lines).strip()
    if body:
        out.append(body)
print("\n\n".join(sorted(out)))'
	echo "== members (pg_depend)"
	val -d "$db" -c "SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
	                 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
	                   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'dxpriv') ORDER BY 1"
	echo "== configuration tables"
	val -d "$db" -c "SELECT c::regclass::text || ' ' || coalesce(w, '') FROM pg_extension e,
	                 unnest(e.extconfig, e.extcondition) AS u(c, w) WHERE e.extname = 'dxpriv' ORDER BY 1"
	echo "== event triggers"
	val -d "$db" -c "SELECT evtname, evtevent, evtfoid::regprocedure, evtenabled, evttags FROM pg_event_trigger ORDER BY 1"
}

# Protected tables with policies, budgets, an analyst and a privacy unit (as the owner).
policies() {
	cat <<'SQL'
CREATE TABLE people (id int, age int, sex text);
INSERT INTO people SELECT i, 18 + i % 70, CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END FROM generate_series(1, 500) i;
CREATE TABLE visits (person int, age int);
INSERT INTO visits SELECT i % 100, 18 + i % 70 FROM generate_series(1, 400) i;
GRANT SELECT ON people, visits TO upgrade_analyst;      -- taken away by dx.add_analyst
SELECT dx.protect_table('people', 'Infinity');
SELECT dx.set_column('people', 'age', '{"min":18,"max":90}', '{"type":"absolute","scale":10}');
SELECT dx.set_column('people', 'sex', '{"values":["F","M"]}', '{"type":"discrete","weight":2}');
SELECT dx.set_query_cap('people', 1.0);
SELECT dx.protect_table('visits', 1.0);
SELECT dx.set_column('visits', 'age', '{"min":18,"max":90}', '{"type":"absolute","scale":10}');
SELECT dx.set_privacy_unit('visits', 'person', 3);
SELECT dx.add_analyst('upgrade_analyst');
SELECT dx.grant_budget('upgrade_analyst', 'people', 5.0);
SELECT dx.grant_budget('upgrade_analyst', 'visits', 5.0, refresh => '1 day');
SQL
}

# The protected tables as pg_dump shows them (privileges, triggers); OIDs (5+ digits, e.g. in trigger
# names and arguments) replaced.
tables() {
	pg_dump -d "$1" --schema-only --schema=public --no-owner \
	| grep -v -e '^--' -e '^SET ' -e '^SELECT pg_catalog.set_config' -e '^\\restrict' -e '^\\unrestrict' \
	| sed -E 's/[0-9]{5,}/<oid>/g' | cat -s
}

# ---- 1. a 0.1.0 database in use ------------------------------------------------------------------
cp "$cache/dxpriv.so" "$pg$libdir/"
cp "$cache/dxpriv.control" "$cache/dxpriv--$old.sql" "$pg$sharedir/extension/"
start_cluster "$work" "$port"
export PGDATABASE=up
sql -d postgres -c "CREATE DATABASE up" -c "CREATE ROLE upgrade_analyst LOGIN"
sql >/dev/null -c "CREATE EXTENSION dxpriv VERSION '$old'"
policies | sql >/dev/null
# a protected table dropped under 0.1.0 (no DDL triggers then) leaves its row: the update must cope
sql >/dev/null -c "CREATE TABLE gone (x int)" -c "SELECT dx.protect_table('gone')" -c "DROP TABLE gone"
sql >/dev/null -c "CREATE SCHEMA upgrade_analyst AUTHORIZATION upgrade_analyst"   # where releases are written
asql() { PGUSER=upgrade_analyst val "$@"; }
asql -c "SELECT dx.count(*) FROM people" -c "SELECT dx.sum(age, 0.2) FROM people WHERE sex = 'F'" \
     -c "SELECT dx.count(*) FROM visits" -c "SELECT dx.avg(age) FROM visits" \
     -c "SELECT dx.release_mwem('people', ARRAY['sex'], 'marginals:1', 0.5, 'synth')" >/dev/null
[ "$(val -c "SELECT count(*) FROM dx.ledger")" -ge 5 ] || fail "0.1.0 did not charge the queries"
[ "$(val -c "SELECT count(*) FROM dx.releases")" = 1 ] || fail "0.1.0 made no release"
snapshot up >"$work/before.txt"
echo "0.1.0: $(val -c "SELECT count(*) FROM dx.ledger") ledger rows; budgets (role, table, granted, spent):"
val -F ' ' -c "SELECT role, relid, granted, spent FROM dx.budget_grants ORDER BY 2"
stop_cluster "$work"

# ---- 2. the current build over it: ALTER EXTENSION ... UPDATE -------------------------------------
cp "$libdir/dxpriv.so" "$pg$libdir/dxpriv.so"
rm -f "$pg$sharedir"/extension/dxpriv*
cp "$sharedir/extension/dxpriv.control" "$sharedir/extension/dxpriv--$new.sql" \
   "$sharedir/extension/dxpriv--$old--$new.sql" "$pg$sharedir/extension/"
as_cluster_owner "pg_ctl -D '$work/data' -l '$work/server.log' -w start >/dev/null"
sql -c "ALTER EXTENSION dxpriv UPDATE TO '$new'"
[ "$(val -c "SELECT extversion FROM pg_extension WHERE extname = 'dxpriv'")" = "$new" ] || fail "extversion is not $new"
snapshot up | without_new_empty "$work/before.txt" >"$work/after.txt"
if ! diff -u "$work/before.txt" "$work/after.txt"; then
	fail "ALTER EXTENSION UPDATE changed rows of dx's tables (diff above)"
fi
echo "$new (after ALTER EXTENSION dxpriv UPDATE): every row of dx's $(grep -c '^== ' "$work/after.txt") tables and sequences identical"

# ---- 3. the upgraded catalog equals a fresh install --------------------------------------------
sql -d postgres -c "CREATE DATABASE fresh"
sql -d fresh -c "CREATE EXTENSION dxpriv"
policies | sql -d fresh >/dev/null
catalog up >"$work/catalog-upgraded.txt"
catalog fresh >"$work/catalog-fresh.txt"
if ! diff -u "$work/catalog-fresh.txt" "$work/catalog-upgraded.txt"; then
	fail "the upgraded catalog differs from a fresh CREATE EXTENSION dxpriv (- fresh, + upgraded):" \
	     "update sql/upgrade/dxpriv--$old--$new.sql (see its header)"
fi
tables up >"$work/tables-upgraded.txt"
tables fresh >"$work/tables-fresh.txt"
if ! diff -u "$work/tables-fresh.txt" "$work/tables-upgraded.txt"; then
	fail "the protected tables of the upgraded database differ from the same policies declared on $new" \
	     "(- fresh, + upgraded; e.g. a trigger or grant protect_table now sets up): update sql/upgrade/dxpriv--$old--$new.sql"
fi
echo "catalog: upgraded = fresh ($(grep -c . "$work/catalog-fresh.txt") lines of pg_dump --binary-upgrade, members, config tables, event triggers; protected tables: $(grep -c . "$work/tables-fresh.txt") lines of pg_dump)"

# ---- 4. still charged after the upgrade ------------------------------------------------------------
ledger() { val -c "SELECT count(*) FROM dx.ledger"; }
spent() { val -c "SELECT spent FROM dx.budget_grants WHERE relid = '$1'::regclass"; }
l0=$(ledger) p0=$(spent people) v0=$(spent visits)
asql -c "SELECT dx.count(*) FROM people WHERE age > 40" >/dev/null
asql -c "SELECT dx.count(*) FROM visits" >/dev/null
asql -c "SELECT dx.release_mwem('people', ARRAY['sex'], 'marginals:1', 0.5, 'synth2')" >/dev/null
[ "$(ledger)" -eq $((l0 + 3)) ] || fail "answers after the upgrade were not all charged (ledger $l0 -> $(ledger))"
awk -v a="$p0" -v b="$(spent people)" 'BEGIN { exit !(b > a) }' || fail "people budget not charged ($p0 -> $(spent people))"
awk -v a="$v0" -v b="$(spent visits)" 'BEGIN { exit !(b > a) }' || fail "visits budget not charged ($v0 -> $(spent visits))"
[ "$(val -c "SELECT count(*) FROM dx.releases")" = 2 ] || fail "the release after the upgrade is not recorded"
# the ledger stays append-only, raw rows stay closed, the cap still holds
state=$(PGUSER=upgrade_analyst sqlstate -c "SELECT age FROM people LIMIT 1")
[ "$state" = 42501 ] || fail "raw SELECT by the analyst after the upgrade: $state"
state=$(PGUSER=upgrade_analyst sqlstate -c "SELECT dx.count(age, 2.0) FROM people")
[ "$state" = 22023 ] || fail "per-query cap after the upgrade: $state"
state=$(sqlstate -c "DELETE FROM dx.ledger")
[ "$state" = 42501 ] || fail "DELETE FROM dx.ledger after the upgrade: $state"
echo "after: $(ledger) ledger rows; budgets (role, table, granted, spent):"
val -F ' ' -c "SELECT role, relid, granted, spent FROM dx.budget_grants ORDER BY 2"

# ---- 5. pg_dump / pg_restore of the upgraded database --------------------------------------------
# pg_restore creates tables without any grant, loads data, and applies ACLs in a last pass (the
# dumped ACLs are the revoked ones). Checked at each stage: after pre-data, after data (no ACL
# entries yet), and after the full restore, the analyst cannot read a protected table.
snapshot up >"$work/dumped.txt"
pg_dump -Fc -d up -f "$work/up.dump"
raw_read() { PGUSER=upgrade_analyst sqlstate -d "$1" -c "SELECT age, sex FROM people LIMIT 1"; }
pg_restore -l "$work/up.dump" | grep -v -e ' ACL ' -e ' DEFAULT ACL ' >"$work/noacl.list"
sql -d postgres -c "CREATE DATABASE mid TEMPLATE template0"
pg_restore --exit-on-error --section=pre-data -d mid "$work/up.dump"
[ "$(raw_read mid)" = 42501 ] || fail "the analyst reads people after pre-data: $(raw_read mid)"
pg_restore --exit-on-error --section=data -L "$work/noacl.list" -d mid "$work/up.dump"
[ "$(raw_read mid)" = 42501 ] || fail "the analyst reads people after the data, before the ACLs: $(raw_read mid)"
sql -d postgres -c "CREATE DATABASE restored TEMPLATE template0"
restore_xid=$(val -d postgres -c "SELECT pg_current_xact_id()")
pg_restore --exit-on-error -d restored "$work/up.dump"
[ "$(raw_read restored)" = 42501 ] || fail "the analyst reads people after the restore: $(raw_read restored)"
snapshot_since=$restore_xid snapshot restored >"$work/restored.txt"
diff -u "$work/dumped.txt" "$work/restored.txt" || fail "pg_restore changed rows of dx's tables (diff above)"
l1=$(val -d restored -c "SELECT count(*) FROM dx.ledger")
PGUSER=upgrade_analyst val -d restored -c "SELECT dx.count(*) FROM people" >/dev/null
[ "$(val -d restored -c "SELECT count(*) FROM dx.ledger")" -eq $((l1 + 1)) ] || fail "the restored database does not charge"
echo "pg_dump/pg_restore: dx's rows identical, no raw read after pre-data, data or ACLs, charging continues"

# ---- 6. pg_upgrade of the cluster (same major version: pg_dump --binary-upgrade and restore) -------
snapshot up >"$work/pre-pg_upgrade.txt"
stop_cluster "$work"
new_port=$(free_port $((port + 1)))
as_cluster_owner "initdb -D '$work/new' -A trust -U postgres --no-sync >'$work/initdb-new.log' 2>&1"
grep -E '^(shared_preload_libraries|listen_addresses|unix_socket_directories|fsync) ' "$work/data/postgresql.conf" >>"$work/new/postgresql.conf"
echo "port = $port" >>"$work/new/postgresql.conf"
as_cluster_owner "cd '$work' && pg_upgrade -U postgres -b '$pg$bindir' -B '$pg$bindir' -d '$work/data' -D '$work/new' \
	-p $port -P $new_port -s '$work' >'$work/pg_upgrade.log' 2>&1" || { grep -h -B 12 -A 4 -i 'error' "$work"/new/pg_upgrade_output.d/*/log/*.log "$work/pg_upgrade.log" 2>/dev/null | head -n 60 >&2; fail "pg_upgrade failed"; }
as_cluster_owner "pg_ctl -D '$work/new' -l '$work/server.log' -w start >/dev/null"
snapshot up >"$work/post-pg_upgrade.txt"
diff -u "$work/pre-pg_upgrade.txt" "$work/post-pg_upgrade.txt" || fail "pg_upgrade changed rows of dx's tables (diff above)"
[ "$(raw_read up)" = 42501 ] || fail "the analyst reads people after pg_upgrade: $(raw_read up)"
l2=$(ledger)
asql -c "SELECT dx.count(*) FROM people" >/dev/null
[ "$(ledger)" -eq $((l2 + 1)) ] || fail "the pg_upgrade'd cluster does not charge"
catalog up >"$work/catalog-pg_upgrade.txt"
diff -u "$work/catalog-fresh.txt" "$work/catalog-pg_upgrade.txt" || fail "pg_upgrade changed dxpriv's catalog (- fresh, + after pg_upgrade)"
echo "pg_upgrade: dx's rows and catalog identical, raw reads refused, charging continues"
echo "test-upgrade: ok ($(($(date +%s) - started)) s)"
