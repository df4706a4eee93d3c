#!/usr/bin/env bash
# Guard audit (src/pg/guard.h): fails when C++ code calls PostgreSQL outside pg_call/pg_value while a
# C++ object it declared is alive, so that an ereport(ERROR) would longjmp over that object's
# destructor. Run by `make regress` (and so by `make test`), next to check_layers.sh.
#
# What it covers (a sound subset of "every PostgreSQL call from C++ with live C++ objects is
# guarded"; `test/check_guarded_calls.sh -v` lists what it checks):
#   * every function, method and lambda body in src/pg/**/*.cpp;
#   * C++ objects: named local variables, range-for variables and by-value parameters (of functions
#     and lambdas) whose type is an owning std:: type (string, vector, map, set, unordered_*, deque,
#     list, shared_ptr, unique_ptr, function, optional, exception_ptr, tuple, pair, variant,
#     string streams) or a struct/class of src/ that holds one or declares a destructor
#     (transitively), alive from the end of their declaration to the end of their block; `static`
#     locals are not destroyed by unwinding and are not counted;
#   * PostgreSQL calls: every function and function-like macro declared in PostgreSQL's server
#     headers (pg_config --includedir-server), except those listed in NO_ORDINARY_ERROR below (they
#     raise an ERROR only when memory runs out or PostgreSQL's own state is inconsistent, e.g.
#     "cache lookup failed"), the errmsg/errhint/... arguments of ereport, and ereport/elog at a
#     level below ERROR; a name dxpriv defines itself is dxpriv's;
#   * temporaries: a std::string, std::to_string, std::vector, std::map or std::set built earlier in
#     the same statement (closed before the call, and not in the other branch of a ?:), e.g.
#     `std::string("type ") + format_type_be(t)`;
#   * guarded: the lambda passed to pg_call or pg_value, except for objects declared inside that
#     lambda (its own frame is skipped by the longjmp too).
# Not covered (documented gaps, not checked): C++ objects of the callers (the check is within one
# function: a helper holding no object that calls PostgreSQL unguarded, called by a function that
# holds one, is not found; `-v --callers` counts such call sites by name), temporaries of other
# types, variables declared with `auto`, objects held through members of `this`, and out-of-memory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
PG_INCLUDE_SERVER=$(pg_config --includedir-server) python3 - "$@" <<'PY'
import glob, os, re, sys

VERBOSE = "-v" in sys.argv
CALLERS = "--callers" in sys.argv
PG = os.environ["PG_INCLUDE_SERVER"]

# PostgreSQL names that raise an ERROR only when memory runs out or PostgreSQL's own state is
# inconsistent ("cache lookup failed", an unrecognized node type), or never: not covered.
NO_ORDINARY_ERROR = set("""
IsA castNode nodeTag lfirst lfirst_node lfirst_oid lfirst_int linitial linitial_node linitial_oid lsecond
lsecond_node lthird lthird_node llast list_length list_nth list_nth_node rt_fetch strVal intVal NameStr
OidIsValid HeapTupleIsValid GETSTRUCT RelationGetDescr RelationGetRelid RelationGetRelationName
ARR_HASNULL ARR_NDIM ARR_DIMS ARR_LBOUND ARR_ELEMTYPE ARR_DATA_PTR ARR_NULLBITMAP ArrayGetNItems
PointerGetDatum ObjectIdGetDatum Int16GetDatum Int32GetDatum Int64GetDatum Float8GetDatum BoolGetDatum
CharGetDatum UInt32GetDatum UInt64GetDatum CStringGetDatum
DatumGetPointer DatumGetObjectId DatumGetInt16 DatumGetInt32 DatumGetInt64 DatumGetFloat8 DatumGetBool
DatumGetChar DatumGetUInt32 DatumGetUInt64 DatumGetCString DatumGetName
PG_ARGISNULL PG_NARGS PG_GETARG_DATUM PG_GETARG_OID PG_GETARG_INT16 PG_GETARG_INT32 PG_GETARG_INT64
PG_GETARG_FLOAT8 PG_GETARG_BOOL PG_GETARG_NAME PG_GETARG_POINTER PG_GETARG_CSTRING
PG_RETURN_VOID PG_RETURN_NULL PG_RETURN_FLOAT8 PG_RETURN_OID PG_RETURN_INT32 PG_RETURN_INT64
PG_RETURN_BOOL PG_RETURN_DATUM PG_RETURN_POINTER PG_RETURN_JSONB_P PG_RETURN_TEXT_P PG_RETURN_ARRAYTYPE_P
GetUserId GetOuterUserId GetSessionUserId GetCurrentTimestamp IsParallelWorker IsInParallelMode
MemoryContextSwitchTo hash_combine hash_combine64 hash_bytes hash_bytes_extended hash_bytes_uint32
hash_bytes_uint32_extended hash_uint32 JsonContainerIsArray JsonContainerIsObject JsonContainerIsScalar
JsonContainerSize DO_AGGSPLIT_SKIPFINAL DO_AGGSPLIT_COMBINE DO_AGGSPLIT_SERIALIZE DO_AGGSPLIT_DESERIALIZE
unpack_sql_state IsCatalogNamespace IsToastNamespace get_float8_infinity get_float8_nan
exprType exprTypmod exprCollation exprLocation
query_tree_walker expression_tree_walker query_or_expression_tree_walker range_table_walker equal
pull_var_clause strip_implicit_coercions flatten_join_alias_vars get_sortgroupclause_tle
get_sortgroupclause_expr SET_VARSIZE VARDATA VARSIZE VARSIZE_ANY VARDATA_ANY VARSIZE_ANY_EXHDR makeBoolConst
quote_identifier quote_literal_cstr nodeToString get_rel_name get_namespace_name get_func_name
get_rel_namespace get_func_namespace get_rel_relispartition get_typlenbyval func_volatile
ReleaseSysCache table_close relation_close systable_endscan MemoryContextDelete FreeExecutorState
ExecDropSingleTupleTableSlot ExecClearTuple ExecStoreVirtualTuple ResetExprContext MemoryContextStrdup
datumCopy get_fn_expr_argtype get_fn_expr_rettype MemoryContextRegisterResetCallback SPI_getbinval JsonbIteratorInit JsonbIteratorNext getKeyJsonValueFromContainer HeapTupleGetDatum strnlen bind
makeNode makeVar makeConst makeNullConst makeTargetEntry makeFuncExpr makeFromExpr makeAlias makeString
makeBoolExpr make_andclause make_orclause makeRangeVar makeTypeName makeInteger makeFloat
lappend lappend_oid lappend_int lcons list_make1 list_make2 list_make3 list_make4 list_make1_oid
list_make2_oid list_make3_oid list_make1_int list_copy list_concat list_delete_first list_free
copyObject copyObjectImpl palloc palloc0 pstrdup psprintf pnstrdup repalloc pfree MemoryContextAlloc
MemoryContextAllocZero CStringGetTextDatum cstring_to_text initStringInfo appendStringInfo
appendStringInfoString appendStringInfoChar resetStringInfo
""".split())
# Calls the check cannot see are guarded, each with why ((file, called name) -> reason). A stale entry
# (the call is no longer reported) fails too.
ALLOWED = {
    ("src/pg/planner/group_keys.cpp", "FunctionCall2Coll"):
        "the comparison lambda of key_tuple_runs runs only inside pg_call (the sort and the run numbering); "
        "a guard per comparison would cost a sigsetjmp each",
}
GUARDS = ("pg_call", "pg_value")  # guard.h: a PostgreSQL error inside their lambda becomes a PgError
REPORT_ARGS = {"errmsg", "errdetail", "errhint", "errcode", "errmsg_internal", "errdetail_internal", "errcontext"}
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "catch", "static_cast", "reinterpret_cast",
            "const_cast", "dynamic_cast", "decltype", "alignof", "new", "delete", "throw", "case", "do", "else"}
STD_OWNING = (r"std::(?:string|vector|map|multimap|set|multiset|unordered_map|unordered_set|deque|list|shared_ptr|"
              r"unique_ptr|function|optional|exception_ptr|tuple|pair|ostringstream|stringstream|basic_string|variant)\b")


def strip(text):
    """Comments, string and character literals and preprocessor lines blanked (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        elif c == "#" and (i == 0 or text[i - 1] == "\n"):
            j = i
            while True:
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            out.append("\n" * text.count("\n", i, k))
            i = k
        else:
            out.append(c)
            i += 1
    return "".join(out)


# PostgreSQL's functions and function-like macros
pg_names = set()
for h in glob.glob(PG + "/**/*.h", recursive=True):
    raw = open(h, errors="replace").read()
    for m in re.finditer(r"^\s*#\s*define\s+(\w+)\(", raw, re.M):
        pg_names.add(m.group(1))
    t = strip(raw)
    for m in re.finditer(r"\b(?:extern|static\s+inline)\s+[^;{}()]*?\b(\w+)\s*\(", t):
        pg_names.add(m.group(1))
if len(pg_names) < 1000:
    sys.exit(f"guarded calls: found only {len(pg_names)} PostgreSQL names under {PG}")

# C++ types that own something (a destructor runs when they leave scope)
sources = sorted(glob.glob("src/pg/**/*.cpp", recursive=True) + glob.glob("src/pg/**/*.h", recursive=True) +
                 glob.glob("src/core/**/*.h", recursive=True))
stripped = {f: strip(open(f).read()) for f in sources}
bodies = {}
for t in stripped.values():
    for m in re.finditer(r"\b(?:struct|class)\s+(\w+)\b[^;{()]*\{", t):
        depth, j = 1, m.end()
        while j < len(t) and depth:
            depth += {"{": 1, "}": -1}.get(t[j], 0)
            j += 1
        bodies.setdefault(m.group(1), []).append(t[m.end():j])
owning, changed = set(), True
while changed:
    changed = False
    for name, bs in bodies.items():
        if name not in owning and any(
                re.search(STD_OWNING, b) or re.search(r"~\s*" + name + r"\s*\(", b) or
                any(re.search(r"\b" + o + r"\b(?!\s*[*&])", b) for o in owning) for b in bs):
            owning.add(name)
            changed = True
ours = set()  # functions dxpriv defines: a name it shares with PostgreSQL is dxpriv's
for t in stripped.values():
    for m in re.finditer(r"^[\w:<>,\s\*&]*?\b(\w+)\s*\([^;{}]*\)\s*(?:const\s*)?(?:noexcept\s*)?\{", t, re.M):
        ours.add(m.group(1))
decl_re = re.compile(r"\s*(?:const\s+)?((?:" + STD_OWNING + r"|(?:[\w:]*::)?(?:" + "|".join(sorted(owning)) +
                     r")\b)(?:<[^;{}]*?>)?(?:::\w+)*)\s+(\w+)\s*(?=[;=({:,)\[])")
param_re = re.compile(r"(?:^|[(,])\s*(?:const\s+)?((?:" + STD_OWNING + r"|(?:[\w:]*::)?(?:" + "|".join(sorted(owning)) +
                      r")\b)(?:<[^()]*?>)?(?:::\w+)*)\s+(\w+)\s*(?=[,)=])")
FN_HEAD = re.compile(r"\)\s*(?:const\s*)?(?:override\s*)?(?:final\s*)?(?:noexcept\s*)?(?:->[^{;]*)?$")


def check(path, raising):
    """(findings, {function name: makes an unguarded covered call}) of one file."""
    t = stripped[path]
    line_of = lambda pos: t.count("\n", 0, pos) + 1
    out, fn_raises, fn_name = [], {}, "?"
    stack = [("ns", [], False)]  # frames: (kind 'ns' | 'fn' | 'blk', live declarations, guarded)
    pending_guard, pending_decls = False, []
    i, n, stmt_start = 0, len(t), 0
    while i < n:
        c = t[i]
        if c == "{":
            head = t[stmt_start:i]
            if all(k == "ns" for k, _, _ in stack):
                if FN_HEAD.search(head.strip()):
                    params = head[head.find("("):] if "(" in head else ""
                    stack.append(("fn", [(m.group(2), line_of(stmt_start + head.find("(") + m.start(2)))
                                         for m in param_re.finditer(params)], False))
                    nm = re.search(r"(~?\w+)\s*\((?:[^()]|\([^()]*\))*\)[^()]*$", head)
                    fn_name = nm.group(1) if nm else "?"
                    fn_raises.setdefault(fn_name, False)
                else:
                    stack.append(("ns", [], False))
            else:
                decls = []
                m = re.search(r"\]\s*(\([^()]*\))\s*(?:mutable\s*)?(?:->[^{]*)?$", head)
                if m:  # a lambda's by-value parameters
                    decls = [(d.group(2), line_of(stmt_start + m.start(1) + d.start(2))) for d in param_re.finditer(m.group(1))]
                # a range-for variable lives in the loop's body; other pending declarations (a lambda in
                # an initializer) wait for the end of their statement
                depth = len(stack)
                moved = [d for dd, d in pending_decls if dd == depth and re.match(r"\s*for\b", head)]
                pending_decls = [(dd, d) for dd, d in pending_decls if not (dd == depth and re.match(r"\s*for\b", head))]
                stack.append(("blk", decls + moved, pending_guard or stack[-1][2]))
                pending_guard = False
            i += 1
            stmt_start = i
            continue
        if c == "}":
            if len(stack) > 1:
                stack.pop()
            pending_decls = [(dd, d) for dd, d in pending_decls if dd <= len(stack)]
            i += 1
            stmt_start = i
            continue
        if c == ";":
            depth = len(stack)  # alive from the end of its declaration
            stack[-1][1].extend(d for dd, d in pending_decls if dd == depth)
            pending_decls = [(dd, d) for dd, d in pending_decls if dd != depth]
            i += 1
            stmt_start = i
            continue
        if stack[-1][0] == "ns" or not (c.isalpha() or c == "_"):
            i += 1
            continue
        word = re.match(r"\w+", t[i:]).group(0)
        prefix = t[stmt_start:i]
        if re.fullmatch(r"\s*(?:for\s*\(\s*)?(?:const\s+)?", prefix) or re.fullmatch(r"\s*", prefix):
            d = decl_re.match(t, i - len(prefix) + len(re.match(r"\s*(?:for\s*\(\s*)?", prefix).group(0)))
            if d and d.start(1) <= i and not re.match(r"\s*static\b", prefix):
                pending_decls.append((len(stack), (d.group(2), line_of(d.start(2)))))
                i = d.end(2)
                continue
        rest = t[i + len(word):]
        if word in GUARDS and re.match(r"\s*\(", rest):
            pending_guard = True
        if word in ("ereport", "elog") and re.match(r"\s*\(\s*(?:NOTICE|WARNING|LOG|INFO|DEBUG\d|LOG_SERVER_ONLY)\b", rest):
            i += len(word)
            continue
        member = i > 0 and (t[i - 1] in ".>" or (t[i - 2:i] == "::" and not re.search(r"(?<![\w>])::$", t[:i])))
        pg_raise = (word in pg_names and word not in NO_ORDINARY_ERROR and word not in REPORT_ARGS and
                    word not in ours and not member)
        own_raise = word in raising and word != fn_name and word not in KEYWORDS
        if re.match(r"\s*\(", rest) and (pg_raise or own_raise):
            frames = [fr for fr in stack if fr[0] != "ns"]
            guarded = [fr for fr in frames if fr[2]]
            if not guarded:
                fn_raises[fn_name] = True
            live = [d for fr in (guarded or frames) for d in fr[1]]
            if not live:  # a temporary built earlier in the statement (not one whose argument this is)
                stmt = t[stmt_start:i]
                for tm in re.finditer(r"std::(?:string|to_string|vector|map|set)\b\s*(?:<[^;]*?>)?\s*[({]", stmt):
                    depth, j = 0, tm.end() - 1
                    while j < len(stmt):
                        depth += {"(": 1, "{": 1, ")": -1, "}": -1}.get(stmt[j], 0)
                        if depth == 0:
                            break
                        j += 1
                    # closed before the call (not in the other branch of a ?: ): alive at the call
                    if j < len(stmt) and not re.search(r"(?<!:):(?!:)", stmt[j:]):
                        live = [("a temporary " + tm.group(0).rstrip("({") + " of the same statement",
                                 line_of(stmt_start + tm.start()))]
                        break
            if live:
                out.append((line_of(i), word, pg_raise, live[-1]))
        i += len(word)
    return out, fn_raises


cpp = sorted(f for f in sources if f.endswith(".cpp"))
errors, used = [], set()
for path in cpp:
    for line, word, _, (obj, oline) in check(path, set())[0]:
        if (path, word) in ALLOWED:
            used.add((path, word))
            continue
        errors.append(f"{path}:{line}: {word}() can raise a PostgreSQL ERROR while C++ object '{obj}' "
                      f"(line {oline}) is alive: call it inside pg_call/pg_value (src/pg/guard.h)")
errors += [f"stale entry in ALLOWED of test/check_guarded_calls.sh: {k}" for k in ALLOWED if k not in used]
for e in errors:
    print(e, file=sys.stderr)
if VERBOSE:
    print(f"guarded calls: {len(pg_names)} PostgreSQL names, {len(NO_ORDINARY_ERROR)} not covered, "
          f"{len(owning)} owning types of src/: {' '.join(sorted(owning))}")
if CALLERS:  # the gap: callers' objects (by function name, over-approximated), informational only
    raising = set()
    while True:
        new = {k for path in cpp for k, v in check(path, raising)[1].items() if v}
        if new <= raising:
            break
        raising |= new
    sites = [(p, f) for p in cpp for f in check(p, raising)[0] if not f[2]]
    print(f"not covered: {len(sites)} call sites with live C++ objects into {len(raising)} dxpriv functions "
          f"(by name) that make an unguarded covered call")
if errors:
    sys.exit(1)
print(f"guarded calls: ok ({len(cpp)} files, {len(ALLOWED)} allowed exceptions)")
PY
