#!/usr/bin/env bash
# The one sealed path for elevated execution (src/pg/elevated/sealed_execution.h): fails when an owner
# switch, an SPI entry, or a change of settings appears in src/pg outside src/pg/elevated, or when a
# SECURITY DEFINER function of the install script does not fix its search_path. Run by `make regress`.
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
