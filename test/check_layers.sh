#!/usr/bin/env bash
# The layer order of src/pg (src/pg/LAYERS.md): fails when a file of src/core or src/pg includes a
# dxpriv header of a higher layer, or when a file sits where no layer is assigned. Run by
# `make regress` (and so by `make test`), next to check_sealed_paths.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

python3 - <<'PY'
import glob, re, sys

# Lowest first; a file may include headers of its own layer and of the layers below it.
ORDER = ["core", "base", "elevated", "metadata", "contract", "statement", "ledger", "executor", "analyst",
         "planner", "release", "hooks"]
RANK = {name: i for i, name in enumerate(ORDER)}
FOLDERS = {"elevated", "metadata", "contract", "statement", "ledger", "executor", "analyst", "planner", "release"}
# Files directly in src/pg: the utilities every layer may use, and the top (hooks, _PG_init).
TOP_FILES = {
    "guard.h": "base", "guard.cpp": "base",          # C++/PostgreSQL error boundary
    "settings.h": "base",                            # GUC variables (defined in dxpriv.cpp)
    "plan_walk.h": "base", "plan_walk.cpp": "base",  # walks plan trees, knows no dxpriv object
    "stand_in.h": "base", "stand_in.cpp": "base",    # a planner stand-in's bytes, refused by every reader
    "node_build.h": "base",                          # query-tree node builders
    "progress.h": "base", "progress.cpp": "base",    # progress notices and cancel of long work
    "analysis_heap.h": "base", "analysis_heap.cpp": "base",  # malloc thresholds during an analysis
    "dxpriv.cpp": "hooks", "hooks.h": "hooks", "hooks.cpp": "hooks",
}

# Includes against the order that remain, each with why (file -> included header). Keep it empty
# unless a reason is written here; a stale entry (the include is gone) fails too.
ALLOWED = {
}

def layer_of(path):
    parts = path.split("/")
    if parts[:2] == ["src", "core"]:
        return "core"
    if parts[:2] != ["src", "pg"]:
        return None
    if len(parts) == 3:
        return TOP_FILES.get(parts[2])
    if len(parts) == 4 and parts[2] in FOLDERS:
        return parts[2]
    return None

files = sorted(glob.glob("src/core/**/*.h", recursive=True) + glob.glob("src/core/**/*.cpp", recursive=True) +
               glob.glob("src/pg/**/*.h", recursive=True) + glob.glob("src/pg/**/*.cpp", recursive=True))
errors, used = [], set()
for f in files:
    mine = layer_of(f)
    if mine is None:
        errors.append(f"{f}: no layer (place it in src/pg/LAYERS.md and test/check_layers.sh)")
        continue
    for n, line in enumerate(open(f, encoding="utf-8"), 1):
        m = re.match(r'\s*#\s*include\s+"((?:pg|core)/[^"]+)"', line)
        if not m:
            continue
        inc = m.group(1)
        theirs = layer_of("src/" + inc)
        if theirs is None:
            errors.append(f"{f}:{n}: includes {inc}, which has no layer")
        elif RANK[theirs] > RANK[mine]:
            if (f, inc) in ALLOWED:
                used.add((f, inc))
                continue
            errors.append(f"{f}:{n}: {mine} includes {inc} ({theirs}), a higher layer")
for entry in sorted(set(ALLOWED) - used):
    errors.append(f"test/check_layers.sh: stale allow-list entry {entry[0]} -> {entry[1]}")
for e in errors:
    print(e, file=sys.stderr)
if errors:
    print("layers: see src/pg/LAYERS.md for the order and what each layer may include", file=sys.stderr)
    sys.exit(1)
print(f"layers: ok ({len(files)} files, {len(ALLOWED)} allowed exceptions)")
PY
