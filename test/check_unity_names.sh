#!/usr/bin/env bash
# File-local names must be unique across the .cpp files of src/core and of src/pg, because the unity
# build (`make UNITY=1`, which `make demo` uses; doc/development.md) compiles each library as a few
# concatenated translation units: two file-local functions, constants or types of one name either
# stop that build (redefinition, ambiguous call) or, worse, let one file's call silently pick the
# other file's overload, or shadow a name of a header. Fails when a name defined file-locally (in
# `namespace {` or `static`, at the start of a line) is also defined at the start of a line in
# another .cpp file of the same library, is declared at namespace scope in a header the library may
# include, or (src/pg) is a PostgreSQL node type. Run by the unity build before it compiles and by
# `make regress` next to check_layers.sh. Fix a clash by renaming the file-local name.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

python3 - <<'PY'
import collections, glob, re, subprocess, sys

FUNC = re.compile(r"^([A-Za-z_]\w*)\(")
TYPE = re.compile(r"^(?:struct|class|union|enum(?: class)?)\s+([A-Za-z_]\w*)\b(?!.*;\s*$)")
VAR = re.compile(r"^(?:(?:static|constexpr|const|inline|thread_local)\s+)*[A-Za-z_][\w:<>, ]*?[\s*&]+([A-Za-z_]\w*)"
                 r"\s*(?:=|;|\[|\{)")
# `type name(` on one line (src/core's style; src/pg puts the type on the line before)
FUNC_TYPED = re.compile(r"^(?:(?:static|inline|constexpr)\s+)*[A-Za-z_][\w:<>, ]*?[\s*&]+([A-Za-z_]\w*)\s*\(")
SKIP_START = ("return", "using", "typedef", "namespace", "extern", "template", "PG_", "DX_", "#", "//",
              "friend", "public", "private", "protected", "case", "default", "else", "static_assert")
# Names every extension file may define (PostgreSQL's module entry points, V1 function macros).
ALLOWED = {"DX_FUNCTION", "_PG_init", "_PG_fini"}


def collect(sources):
    """name -> files defining it at the start of a line; name -> files where it is file-local"""
    defs, local = collections.defaultdict(set), collections.defaultdict(set)
    for path in sources:
        anonymous = False
        for line in open(path, encoding="utf-8"):
            if line.startswith("namespace {"):
                anonymous = True
            elif anonymous and line.startswith("}") and "namespace" in line:
                anonymous = False
            if not (line[:1].isalpha() or line[:1] == "_") or line.startswith(SKIP_START):
                continue
            for pattern in (FUNC, TYPE, VAR, FUNC_TYPED):
                m = pattern.match(line)
                if m:
                    defs[m.group(1)].add(path)
                    if anonymous or line.startswith("static "):
                        local[m.group(1)].add(path)
                    break
    return defs, local


def declared_names(pattern):
    """names the headers declare at namespace scope (lines not indented, comments removed):
    functions, extern variables, types"""
    code = "\n".join(open(h, encoding="utf-8").read() for h in sorted(glob.glob(pattern, recursive=True)))
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.S)
    names = set()
    for line in code.split("\n"):
        if not line[:1].isalpha() and line[:1] != "_":
            continue
        names.update(re.findall(r"\b(\w+)\s*\(", line))
        if line.startswith("extern"):
            names.update(re.findall(r"\w+", line))
        names.update(re.findall(r"^(?:struct|class|union|enum(?: class)?)\s+(\w+)", line))
    return names


# PostgreSQL's node types (nodes/nodes.h: T_Result...): a file-local type of that name hides the node
# type from the files after it (IsA(plan, Result) no longer compiles, or a cast takes the wrong type)
pg_nodes = set()
try:
    inc = subprocess.run(["pg_config", "--includedir-server"], capture_output=True, text=True).stdout.strip()
    pg_nodes = set(re.findall(r"\bT_(\w+)", open(inc + "/nodes/nodes.h", encoding="utf-8").read()))
except OSError:
    pass

bad, counts = [], []
# each library with the headers its files may include
for library, headers in (("src/core/*.cpp", declared_names("src/core/*.h")),
                         ("src/pg/**/*.cpp", declared_names("src/**/*.h") | pg_nodes)):
    sources = sorted(glob.glob(library, recursive=True))
    defs, local = collect(sources)
    counts.append("%s: %d files, %d file-local names" % (library.split("/*")[0], len(sources), len(local)))
    for name, files in sorted(local.items()):
        where = ", ".join(sorted(files))
        if name in ALLOWED:
            continue
        if len(defs[name]) > 1:
            bad.append("%s: defined in %s (file-local in %s)" % (name, ", ".join(sorted(defs[name])), where))
        elif name in headers:
            bad.append("%s: file-local in %s and declared in a header (or a PostgreSQL node type)" % (name, where))
if bad:
    print("check_unity_names: file-local names that clash in the unity build (rename the file-local one):")
    for b in bad:
        print("  " + b)
    sys.exit(1)
print("check_unity_names: no clash (%s)" % "; ".join(counts))
PY
