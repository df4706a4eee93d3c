#!/usr/bin/env bash
# Runs the client-driven end-to-end tests (test/e2e/test_*.py) against a throwaway cluster.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/pg-env.sh"
work=$(owned_tmpdir e2e)
trap 'stop_cluster "$work"; rm -rf "$work"' EXIT
port=${DXPRIV_E2E_PORT:-$(free_port 55497)}
start_cluster "$work" "$port"
export DXPRIV_E2E_DATADIR="$work/data"
# Debian's interpreter: python3-psycopg2 is installed for it, not for a pyenv/venv python on PATH
/usr/bin/python3 "$root/test/e2e/run_all.py" "$root/test/e2e"
