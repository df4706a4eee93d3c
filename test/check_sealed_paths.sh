#!/usr/bin/env bash
# The one sealed path for elevated execution (src/pg/elevated/sealed_execution.h): fails when an owner
# switch, an SPI entry, a change of settings, a table scan, the opening of a user relation or an
# unlisted fmgr call or expression evaluation appears in src/pg outside src/pg/elevated, or when a SECURITY DEFINER function of the install script does
# not fix its search_path. Run by `make regress` (hence `make test`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Files allowed to use the patterns below, each with its reason.
declare -A allowed=(
	# a background worker: its own session as the extension owner, never an analyst's; it reads no
	# analyst setting and runs constant statements over dx.ledger/dx.budget_grants only
	[src/pg/ledger/ledger_worker.cpp]=1
)

pattern='SetUserIdAndSecContext|SetSessionAuthorization|SetCurrentRoleId|SPI_connect|SPI_execute|SPI_prepare|SPI_cursor_open|set_config_option|NewGUCNestLevel|AtEOXact_GUC'
status=0
while IFS= read -r hit; do
	file=${hit%%:*}
	case "$file" in src/pg/elevated/*) continue ;; esac
	if [ -n "${allowed[$file]:-}" ]; then continue; fi
	echo "elevated execution outside src/pg/elevated: $hit" >&2
	status=1
done < <(grep -rnE "$pattern" src/pg --include='*.cpp' --include='*.h' || true)

# Reads of stored rows by C code: a table scan, or the opening of a relation that is not a system
# catalog (table_open(...RelationId...) opens a catalog), outside src/pg/elevated. A scan of a user
# table belongs in elevated/sealed_scan.h (as the owner, sealed settings). Each exception is one exact
# line of code (file|line, spaces trimmed) with its reason; an entry that matches no line is stale
# and fails too.
declare -A read_allowed=(
	# the protected table's tuple descriptor only (its column types for an empty row source): no row is read
	["src/pg/planner/probes.cpp|Relation rel = relation_open(relid, AccessShareLock);"]=1
	# the protected table's tuple descriptor only (a virtual slot filled with declared domain points): no row is read
	["src/pg/planner/universe_eval.cpp|Relation rel = relation_open(relid, AccessShareLock);"]=1
	# dx.contents_changes, dxpriv's own table of write counts (no analyst data), by its primary key index
	["src/pg/ledger/contents_version.cpp|Relation r = table_open(changes, AccessShareLock);"]=1
	["src/pg/ledger/contents_version.cpp|SysScanDesc scan = systable_beginscan(r, index, true, snapshot, 1, &key);"]=1
	# pg_trigger, a system catalog opened by its RelationId above (a member's or ancestor's contents
	# trigger, by the (tgrelid, tgname) index: no row of the table is read)
	["src/pg/ledger/contents_version.cpp|SysScanDesc scan = systable_beginscan(tr, TriggerRelidNameIndexId, true, nullptr, name ? 2 : 1, key);"]=1
	# pg_subscription_rel, a system catalog opened by its RelationId above (the tables subscriptions write into)
	["src/pg/ledger/contents_version.cpp|SysScanDesc scan = systable_beginscan(r, InvalidOid, false, nullptr, 0, nullptr);"]=1
	# pg_inherits, a system catalog opened by its RelationId above (a relation's parents: the analyst
	# guard's protected ancestors, the ancestors' contents triggers)
	["src/pg/metadata/inheritance_parents.cpp|SysScanDesc scan = systable_beginscan(rel, InheritsRelidSeqnoIndexId, true, nullptr, 1, &key);"]=1
)
read_pattern='\b(table_beginscan[a-z_]*|heap_beginscan|index_beginscan|systable_beginscan[a-z_]*|table_index_fetch_begin|heap_getnext|table_open|table_openrv[a-z_]*|try_table_open|relation_open|relation_openrv[a-z_]*|try_relation_open|heap_open|index_open)\b'
declare -A read_used=()
while IFS= read -r hit; do
	file=${hit%%:*}
	rest=${hit#*:}
	code=${rest#*:}
	code=$(echo "$code" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
	case "$file" in src/pg/elevated/*) continue ;; esac
	case "$code" in //*) continue ;; esac
	# a system catalog opened by its RelationId
	if [[ "$code" =~ (table_open|relation_open)\([A-Za-z]+RelationId, ]]; then continue; fi
	key="$file|$code"
	if [ -n "${read_allowed[$key]:-}" ]; then read_used[$key]=1; continue; fi
	echo "table read or relation open outside src/pg/elevated (use elevated/sealed_scan.h): $hit" >&2
	status=1
done < <(grep -rnE "$read_pattern" src/pg --include='*.cpp' --include='*.h' || true)
for key in "${!read_allowed[@]}"; do
	if [ -z "${read_used[$key]:-}" ]; then
		echo "stale entry of read_allowed in test/check_sealed_paths.sh: $key" >&2
		status=1
	fi
done

# Calls of functions through fmgr (the functions a type, an operator class, a DBA or an analyst may
# have chosen) and evaluations of expressions outside src/pg/elevated: each exact line is listed with
# why it needs no sealing; a new call fails until it is sealed or justified here.
declare -A call_allowed=(
	# dx.* functions of the extension (LookupFuncName of "dx"), in the DBA's own DDL statement
	["src/pg/metadata/ddl_events.cpp|OidFunctionCall4(fn, ObjectIdGetDatum(relid), an, DirectFunctionCall1(namein, CStringGetDatum(b)),"]=1
	["src/pg/metadata/ddl_events.cpp|OidFunctionCall3(fn, ObjectIdGetDatum(relid), an, BoolGetDatum(recurse));"]=1
	# the column type's input function on the declared labels, under push_sealed_settings (domain_datums)
	["src/pg/metadata/policy_domain.cpp|out[i] = OidInputFunctionCall(input, const_cast<char *>(labels[i].c_str()), ioparam, typmod);"]=1
	# analysis: comparisons and output of GROUP BY key values computed on declared (public) points, and
	# the analyst's own expressions evaluated on declared points, with her rights; no stored row
	["src/pg/planner/group_keys.cpp|const int32 c = DatumGetInt32(FunctionCall2Coll(cmp[k], collation[k], d.value[k][a], d.value[k][b]));"]=1
	["src/pg/planner/group_keys.cpp|return OidOutputFunctionCall(output, value[k][g]);"]=1
	["src/pg/planner/join_cells.cpp|const int32 c = DatumGetInt32(FunctionCall2Coll(cmp_[k], collation_[k], va[k], vb[k]));"]=1
	["src/pg/planner/universe_eval.cpp|states[e] = ExecPrepareExpr(exprs[e], estate);"]=1
	["src/pg/planner/universe_eval.cpp|on_states.push_back(inner->steps[s].on ? ExecPrepareExpr(inner->steps[s].on, estate) : nullptr);"]=1
	["src/pg/planner/universe_eval.cpp|Datum r = ExecEvalExprSwitchContext(states[e], econtext, &isnull);"]=1
	["src/pg/planner/universe_eval.cpp|const Datum ok = ExecEvalExprSwitchContext(on_states[step], econtext, &isnull);"]=1
	# a unit type's hash and equality on stored units: inside sealed_call when the function is not
	# built in (unit_type_call_sealed), else PostgreSQL's own C function of the value and collation
	["src/pg/executor/unit_hash.h|h = DatumGetUInt64(FunctionCall2Coll(const_cast<FmgrInfo *>(&u->fn), u->collation, v, Int64GetDatum(u->seed)));"]=1
	["src/pg/executor/unit_hash.h|return mix64(DatumGetUInt64(FunctionCall2Coll(const_cast<FmgrInfo *>(&u->fn), u->collation, v, Int64GetDatum(u->seed))));"]=1
	["src/pg/executor/unit_bound.cpp|sealed_call(InvalidOid, [&] { eq = DatumGetBool(FunctionCall2Coll(&s->eq_fn, s->hasher.collation, u->key, key)); },"]=1
	["src/pg/executor/unit_bound.cpp|return DatumGetBool(FunctionCall2Coll(&s->eq_fn, s->hasher.collation, u->key, key));"]=1
	# pg_catalog.citus_* size functions (looked up qualified) as the analyst, with her rights
	["src/pg/analyst/citus_surface.cpp|result = nargs == 2 ? OidFunctionCall2(fn, ObjectIdGetDatum(rel), PG_GETARG_DATUM(1))"]=1
	["src/pg/analyst/citus_surface.cpp|: OidFunctionCall1(fn, ObjectIdGetDatum(rel));"]=1
	# dx.* helpers of the extension (SECURITY DEFINER, search_path fixed: checked below) and built-in
	# size functions by their fixed OIDs (F_PG_*)
	["src/pg/analyst/catalog_sizes.cpp|Datum r = FunctionCallInvoke(call);"]=1
	["src/pg/analyst/catalog_sizes.cpp|pg_call([&] { result = OidFunctionCall1(F_PG_DATABASE_SIZE_OID, ObjectIdGetDatum(db)); });"]=1
	["src/pg/analyst/catalog_sizes.cpp|pg_call([&] { result = OidFunctionCall1(F_PG_TABLESPACE_SIZE_OID, ObjectIdGetDatum(spc)); });"]=1
	["src/pg/analyst/catalog_sizes.cpp|result = OidFunctionCall2(F_PG_RELATION_SIZE_REGCLASS_TEXT, ObjectIdGetDatum(rel), PG_GETARG_DATUM(1));"]=1
	["src/pg/analyst/catalog_sizes.cpp|result = OidFunctionCall1(F_PG_RELATION_SIZE_REGCLASS, ObjectIdGetDatum(rel));"]=1
	["src/pg/analyst/catalog_sizes.cpp|result = OidFunctionCall1(F_PG_TABLE_SIZE, ObjectIdGetDatum(rel));"]=1
	["src/pg/analyst/catalog_sizes.cpp|result = OidFunctionCall1(F_PG_TOTAL_RELATION_SIZE, ObjectIdGetDatum(rel));"]=1
	["src/pg/analyst/catalog_sizes.cpp|result = OidFunctionCall1(F_PG_INDEXES_SIZE, ObjectIdGetDatum(rel));"]=1
)
call_pattern='\b(OidFunctionCall[0-9]+(Coll)?|FunctionCall[0-9]+(Coll)?|FunctionCallInvoke|OidInputFunctionCall|OidOutputFunctionCall|InputFunctionCall|OutputFunctionCall|OidReceiveFunctionCall|ReceiveFunctionCall|OidSendFunctionCall|SendFunctionCall|ExecEvalExpr[A-Za-z]*|ExecPrepareExpr|ExecInitExpr)\b'
declare -A call_used=()
while IFS= read -r hit; do
	file=${hit%%:*}
	rest=${hit#*:}
	code=${rest#*:}
	code=$(echo "$code" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//')
	case "$file" in src/pg/elevated/*) continue ;; esac
	case "$code" in //*) continue ;; esac
	key="$file|$code"
	if [ -n "${call_allowed[$key]:-}" ]; then call_used[$key]=1; continue; fi
	echo "function call outside src/pg/elevated, neither sealed nor justified in test/check_sealed_paths.sh: $hit" >&2
	status=1
done < <(grep -rnE "$call_pattern" src/pg --include='*.cpp' --include='*.h' || true)
for key in "${!call_allowed[@]}"; do
	if [ -z "${call_used[$key]:-}" ]; then
		echo "stale entry of call_allowed in test/check_sealed_paths.sh: $key" >&2
		status=1
	fi
done

# SECURITY DEFINER functions run as the extension owner: each fixes search_path to pg_catalog, pg_temp.
python3 - "$root"/sql/[0-9]*.sql <<'PY' || status=1
import re, sys
bad = []
for path in sys.argv[1:]:
    text = open(path).read()
    for m in re.finditer(r"CREATE (?:OR REPLACE )?FUNCTION\s+([\w.]+)\s*\((.*?)\bAS\b", text, re.S | re.I):
        head = m.group(2)
        if re.search(r"SECURITY\s+DEFINER", head, re.I) and not re.search(
                r"SET\s+search_path\s*=\s*pg_catalog\s*,\s*pg_temp", head, re.I):
            bad.append(f"{path}: {m.group(1)} is SECURITY DEFINER without SET search_path = pg_catalog, pg_temp")
for b in bad:
    print(b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

if [ $status -eq 0 ]; then echo "sealed paths: ok"; fi
exit $status
