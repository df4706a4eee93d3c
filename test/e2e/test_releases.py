"""Synthetic releases (issue 14) attacked by the analyst: dx.release_mwem / dx.release_smalldb on
undeclared tables or columns, workload or target strings that try to reach stored rows, releases
without or beyond budget, huge universes (DoS), tampering with the release catalog, rollbacks that
try to refund; and the normal path (charged exactly once, the target owned by the analyst).
"""
from attack_fixture import ANALYST, analyst_conn, spent
from e2e_common import execute, scalar
from test_attacks import PRIV, Custom, Reject, run_category, run_expect_error, run_fetch, attack

C = "releases"
REL = "dx.release_mwem"
COLS = "ARRAY['sex', 'zip', 'diagnosis']"
ADMIN_SETUP = (
    # protected, declared, but mallory holds no budget on it
    "CREATE TABLE nobudget (id int, sex text)",
    "INSERT INTO nobudget SELECT i, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END FROM generate_series(1, 100) i",
    "SELECT dx.protect_table('nobudget', 1.0)",
    """SELECT dx.set_column('nobudget', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}')""",
    "GRANT SELECT ON nobudget TO PUBLIC",
)


def refused_nothing_written(state, target="mallory_ws.nope"):
    """Refused with `state` (and a hint), nothing charged, no target table."""
    def check(ctx, conn, attempt):
        before = spent(ctx.admin)
        last = ctx.last_ledger_id()
        err = run_expect_error(conn, attempt.sql)
        assert err.pgcode == state, f"{err.pgcode} {err.diag.message_primary}, expected {state}"
        assert err.diag.message_hint, f"no hint on {err.diag.message_primary!r}"
        assert spent(ctx.admin) == before and not ctx.ledger_since(last), "a refused release was charged"
        assert scalar(ctx.admin, "SELECT to_regclass(%s) IS NULL", (target,)), "the target was written"
        return f"rejected {state}, nothing charged or written"
    return check


def charged_once(epsilon, target, rows):
    """Answered: one ledger row of `epsilon` for mallory, the target owned by her with `rows` rows,
    readable by her, whose weights are not the raw data (a release is noisy)."""
    def check(ctx, conn, attempt):
        last = ctx.last_ledger_id()
        run_fetch(conn, attempt.sql)
        charges = ctx.ledger_since(last)
        assert [e for e, _ in charges] == [epsilon], f"charges {charges}"
        assert scalar(ctx.admin, "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = %s::regclass",
                      (target,)) == ANALYST
        assert scalar(conn, f"SELECT count(*) FROM {target}") == rows
        assert scalar(ctx.admin, "SELECT count(*) FROM dx.releases WHERE target = %s::regclass AND role = %s::regrole",
                      (target, ANALYST)) == 1
        assert scalar(conn, "SELECT count(*) FROM dx.my_releases WHERE target = %s::regclass", (target,)) == 1
        return f"released, charged {epsilon} once"
    return check


def refused(category, name, sql, state, target="mallory_ws.nope"):
    """An attempt refused with `state` before anything is charged or written."""
    attack(category, name, sql, Custom(refused_nothing_written(state, target)))


# the normal path, as the analyst (writes to her own schema)
attack(C, "mwem_release_is_charged_once",
       f"SELECT {REL}('people', {COLS}, 'marginals:2', 0.5, 'mallory_ws.syn1')",
       Custom(charged_once(0.5, "mallory_ws.syn1", 2 * 10 * 2)))
attack(C, "smalldb_release_is_charged_once",
       "SELECT dx.release_smalldb('people', ARRAY['sex', 'diagnosis'], 'marginals:1', 0.5, 'mallory_ws.syn2')",
       Custom(charged_once(0.5, "mallory_ws.syn2", 4)))
# workloads of WHERE predicates: evaluated on the declared points, never on rows
attack(C, "predicate_workload_is_charged_once",
       f"SELECT {REL}('people', ARRAY['sex', 'diagnosis'], ARRAY['sex = ''F''', 'diagnosis <> sex'], 0.5, "
       "'mallory_ws.syn_pred')",
       Custom(charged_once(0.5, "mallory_ws.syn_pred", 2 * 2)))
refused(C, "predicate_on_unreleased_column",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['zip = ''10001'''], 1, 'mallory_ws.nope')", "22023")
refused(C, "predicate_on_undeclared_column",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['name = ''alice'''], 1, 'mallory_ws.nope')", PRIV)
refused(C, "predicate_subquery_on_rows",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['sex IN (SELECT sex FROM people WHERE name = ''alice'')'], 1, "
        "'mallory_ws.nope')", "22023")
refused(C, "predicate_closing_parenthesis",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['true) FROM people WHERE (name = ''alice'''], 1, 'mallory_ws.nope')",
        "42601")
refused(C, "predicate_comment_injection",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['true) FROM pg_authid --'], 1, 'mallory_ws.nope')", "22023")
refused(C, "predicate_other_table",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['pg_authid.rolname IS NULL'], 1, 'mallory_ws.nope')", "42P01")
refused(C, "predicate_system_column",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['ctid IS NULL'], 1, 'mallory_ws.nope')", PRIV)
refused(C, "predicate_volatile_file_read",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['pg_read_file(''/etc/passwd'') IS NULL'], 1, 'mallory_ws.nope')",
        "0A000")
refused(C, "predicate_stable_setting",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['current_setting(''dxpriv.epsilon'') = sex'], 1, 'mallory_ws.nope')",
        "0A000")
refused(C, "predicate_aggregate",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['count(*) > 3'], 1, 'mallory_ws.nope')", "22023")
refused(C, "predicate_row_lock",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY['true FOR UPDATE'], 1, 'mallory_ws.nope')", "42601")


def cancelled_quickly(ctx, conn, attempt):
    """Predicates are evaluated at every declared point before anything is charged: 40 predicates
    with 1200-value IN lists over age x income (242121 points) are 1.2e10 comparisons. The evaluation
    must obey statement_timeout (no uncancellable backend), charging nothing."""
    import time
    before = spent(ctx.admin)
    last = ctx.last_ledger_id()
    execute(conn, "SET statement_timeout = '1s'")
    try:
        start = time.time()
        err = run_expect_error(conn, attempt.sql)
        took = time.time() - start
    finally:
        execute(conn, "RESET statement_timeout")
    assert err.pgcode == "57014", f"{err.pgcode} {err.diag.message_primary}"
    assert took < 5, f"cancelled only after {took:.1f}s"
    assert spent(ctx.admin) == before and not ctx.ledger_since(last), "a cancelled release was charged"
    return f"cancelled after {took:.1f}s, nothing charged"


IN_LIST = "income IN (" + ", ".join(str(100 * i + 50) for i in range(1200)) + ")"  # under 10000 characters
attack(C, "predicate_evaluation_obeys_statement_timeout",
       f"SELECT {REL}('people', ARRAY['age', 'income'], "
       f"array_fill('{IN_LIST}'::text, ARRAY[40]), 1, 'mallory_ws.nope')",
       Custom(cancelled_quickly))
# predicates x points over the workload cap: refused before any predicate is parsed or evaluated
# (each of these fails at age = 7 if evaluated)
refused(C, "predicate_workload_too_large",
        f"SELECT {REL}('people', ARRAY['age', 'income'], array_fill('1 / (age - 7) > 0'::text, ARRAY[300]), 1, "
        "'mallory_ws.nope')", "54000")


def rollback_keeps_charge(ctx, conn, attempt):
    before = spent(ctx.admin)
    conn.autocommit = False
    try:
        run_fetch(conn, attempt.sql)
        conn.rollback()
    finally:
        conn.autocommit = True
    assert abs(spent(ctx.admin) - before - 0.25) < 1e-9, "a rolled-back release was refunded"
    assert scalar(ctx.admin, "SELECT to_regclass('mallory_ws.syn_rb') IS NULL")
    return "rolled back: table gone, charge kept"


attack(C, "rollback_refunds_nothing", f"SELECT {REL}('people', {COLS}, 'marginals:1', 0.25, 'mallory_ws.syn_rb')",
       Custom(rollback_keeps_charge))

# undeclared tables and columns, and strings that try to reach stored rows
refused(C, "undeclared_column", f"SELECT {REL}('people', ARRAY['name'], 'marginals:1', 1, 'mallory_ws.nope')", PRIV)
refused(C, "undeclared_column_among_declared",
        f"SELECT {REL}('people', ARRAY['sex', 'id'], 'marginals:1', 1, 'mallory_ws.nope')", PRIV)
refused(C, "unprotected_table", f"SELECT {REL}('zips', ARRAY['zip'], 'marginals:1', 1, 'mallory_ws.nope')", PRIV)
refused(C, "column_name_injection",
        f"SELECT {REL}('people', ARRAY['sex\" FROM people UNION SELECT name FROM people --'], 'marginals:1', 1, "
        "'mallory_ws.nope')", PRIV)
refused(C, "workload_subquery",
        f"SELECT {REL}('people', {COLS}, '(SELECT count(*) FROM people)', 1, 'mallory_ws.nope')", "22023")
refused(C, "workload_predicate_on_rows",
        f"SELECT {REL}('people', {COLS}, 'marginals:1; SELECT name FROM people', 1, 'mallory_ws.nope')", "22023")
refused(C, "workload_wrong_length",
        f"SELECT {REL}('people', {COLS}, ARRAY[[1, 0]]::float8[], 1, 'mallory_ws.nope')", "22023")
refused(C, "workload_nan_weight",
        f"SELECT {REL}('people', ARRAY['sex'], ARRAY[[1, 'NaN']]::float8[], 1, 'mallory_ws.nope')", "22023")
refused(C, "release_from_a_release",
        f"SELECT {REL}('mallory_ws.syn1', ARRAY['sex'], 'marginals:1', 1, 'mallory_ws.nope')", PRIV)

# budget
refused(C, "no_budget_on_table",
        f"SELECT {REL}('nobudget', ARRAY['sex'], 'marginals:1', 0.1, 'mallory_ws.nope')", PRIV)
refused(C, "beyond_budget", f"SELECT {REL}('people', {COLS}, 'marginals:1', 1e9, 'mallory_ws.nope')", "53000")
refused(C, "epsilon_infinite",
        f"SELECT {REL}('people', {COLS}, 'marginals:1', 'Infinity', 'mallory_ws.nope')", "22023")
refused(C, "epsilon_negative", f"SELECT {REL}('people', {COLS}, 'marginals:1', -1, 'mallory_ws.nope')", "22023")
refused(C, "epsilon_null", f"SELECT {REL}('people', {COLS}, 'marginals:1', NULL, 'mallory_ws.nope')", "22004")

# huge universes and workloads (DoS): refused before anything is charged
refused(C, "universe_too_large",
        f"SELECT {REL}('people', ARRAY['age', 'income', 'zip', 'sex', 'diagnosis'], 'marginals:1', 1, 'mallory_ws.nope')", "54000")
refused(C, "workload_too_large",
        f"SELECT {REL}('people', ARRAY['age', 'income'], 'marginals:2', 1, 'mallory_ws.nope')", "54000")
refused(C, "iterations_too_many",
        f"SELECT {REL}('people', {COLS}, 'marginals:1', 1, 'mallory_ws.nope', 100000)", "22023")
refused(C, "work_too_large",
        f"SELECT {REL}('people', ARRAY['age', 'income', 'zip'], 'marginals:1', 1, 'mallory_ws.nope', 10000)", "54000")
refused(C, "smalldb_universe_too_large",
        "SELECT dx.release_smalldb('people', ARRAY['age', 'zip', 'sex'], 'marginals:1', 1, 'mallory_ws.nope', 5)", "54000")

# targets
refused(C, "overwrite_public_table",
        f"SELECT {REL}('people', {COLS}, 'marginals:1', 1, 'public.zips')", "42P07", target="mallory_ws.nope")
refused(C, "write_into_public_schema",
        f"SELECT {REL}('people', {COLS}, 'marginals:1', 1, 'public.syn_public')", PRIV, target="public.syn_public")
refused(C, "write_into_dx_schema",
        f"SELECT {REL}('people', {COLS}, 'marginals:1', 1, 'dx.syn')", PRIV, target="dx.syn")
attack(C, "target_injection",
       f"SELECT {REL}('people', {COLS}, 'marginals:1', 1, 'mallory_ws.x(a int); DROP TABLE people; --')",
       Reject("42602", "22P02", "42P01", "3F000", PRIV, hint=False))

# the release catalog cannot be tampered with
attack(C, "delete_release_record", "DELETE FROM dx.releases", Reject(PRIV, hint=False))
attack(C, "forge_release_record",
       "INSERT INTO dx.releases (role, source, target, columns, mechanism, epsilon, details) "
       "VALUES ('mallory', 'people', 'zips', '{sex}', 'mwem', 0, '{}')", Reject(PRIV, hint=False))
attack(C, "read_all_release_records", "SELECT * FROM dx.releases", Reject(PRIV, hint=False))


def only_own_releases(ctx):
    # what the analyst spent is exactly the successful releases (MWEM, SmallDB, predicates 0.5 each,
    # the rolled-back 0.25), people unharmed
    assert abs(spent(ctx.admin) - 1.75) < 1e-9, f"spent {spent(ctx.admin)}"
    assert scalar(ctx.admin, "SELECT count(*) FROM people") == 2000
    assert scalar(ctx.admin, "SELECT count(*) FROM dx.releases") == 3


def test_release_attacks():
    run_category(C, admin_setup=ADMIN_SETUP, post=only_own_releases)


# ================================================================ median-mechanism sessions

M = "median_sessions"
MEDIAN_ADMIN_SETUP = (
    # a session of another role (the superuser, with its own budget): session id 1
    "SELECT dx.grant_budget(current_user::regrole, 'people', 10)",
    "SELECT dx.median_session_open('people', ARRAY['sex', 'diagnosis'], 'marginals:1', 0.5)",
)


def session_flow(ctx, conn, attempt):
    """Opens a session, answers every query (hard ones charged, easy ones free), then from a new
    connection gets the same answers back for free."""
    last = ctx.last_ledger_id()
    sid = scalar(conn, attempt.sql)
    answers = {}
    for q in range(1, 5):
        answers[q] = run_fetch(conn, f"SELECT answer, hard, epsilon, reused FROM dx.median_session_query({sid}, {q})")[0]
    charges = ctx.ledger_since(last)
    hard = sum(1 for a in answers.values() if a[1])
    assert len(charges) == 1 + hard, f"{len(charges)} ledger rows for {hard} hard queries"
    assert all(a[2] == (0.4 if a[1] else 0) for a in answers.values()), answers
    other = analyst_conn(ctx.db)
    try:
        for q in range(1, 5):
            again = run_fetch(other, f"SELECT answer, reused, epsilon FROM dx.median_session_query({sid}, {q})")[0]
            assert again == (answers[q][0], True, 0.0), f"query {q}: {again} after reconnecting"
    finally:
        other.close()
    assert len(ctx.ledger_since(last)) == 1 + hard, "a reused answer was charged"
    return f"{hard} hard, {4 - hard} easy; answers survive a reconnect"


def refused_in_transaction(ctx, conn, attempt):
    conn.autocommit = False
    try:
        err = run_expect_error(conn, attempt.sql)
    finally:
        conn.rollback()
        conn.autocommit = True
    assert err.pgcode == "25001" and err.diag.message_hint, f"{err.pgcode} {err.diag.message_primary}"
    return "refused inside a transaction block"


attack(M, "open_query_reconnect",
       "SELECT dx.median_session_open('people', ARRAY['sex', 'zip'], ARRAY[[1,1,1,1,1,1,1,1,1,1,0,0,0,0,0,0,0,0,0,0],"
       "[0,0,0,0,0,0,0,0,0,0,1,1,1,1,1,1,1,1,1,1],[1,0,0,0,0,0,0,0,0,0,1,0,0,0,0,0,0,0,0,0],"
       "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]]::float8[], 0.4, size => 2)",
       Custom(session_flow))
attack(M, "query_in_transaction_block", "SELECT dx.median_session_query(2, 1)", Custom(refused_in_transaction))
attack(M, "query_other_roles_session", "SELECT dx.median_session_query(1, 1)", Reject(PRIV))
attack(M, "list_other_roles_session", "SELECT * FROM dx.median_session_queries(1)", Reject(PRIV))
attack(M, "read_session_state", "SELECT state FROM dx.median_sessions", Reject(PRIV, hint=False))
attack(M, "reopen_exhausted_session", "UPDATE dx.median_sessions SET status = 'open', charges = 0",
       Reject(PRIV, hint=False))
attack(M, "see_other_sessions", "SELECT count(*) FROM dx.my_median_sessions WHERE id = 1",
       Custom(lambda ctx, conn, a: run_fetch(conn, a.sql) == [(0,)] and "own sessions only"))
refused(M, "open_on_undeclared_column",
        "SELECT dx.median_session_open('people', ARRAY['name'], 'marginals:1', 0.4)", PRIV)
refused(M, "open_on_huge_universe",
        "SELECT dx.median_session_open('people', ARRAY['age', 'income', 'zip'], 'marginals:1', 0.4)", "54000")
refused(M, "open_beyond_budget", "SELECT dx.median_session_open('people', ARRAY['sex'], 'marginals:1', 1e9)", "53000")
attack(M, "forged_session_id", "SELECT dx.median_session_query(999999, 1)", Reject("22023"))


def test_median_session_attacks():
    run_category(M, admin_setup=MEDIAN_ADMIN_SETUP)


# ================================================================ dx.explain's statistical-query row

S = "statistical_query"
SQ_ADMIN_SETUP = (
    "CREATE TABLE public_n (age int, sex text)",
    "INSERT INTO public_n SELECT i % 50, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END FROM generate_series(1, 40) i",
    "SELECT dx.protect_table('public_n', 'Infinity')",
    """SELECT dx.set_column('public_n', 'age', '{"min": 0, "max": 49}', '{"type": "absolute", "scale": 5}')""",
    """SELECT dx.set_column('public_n', 'sex', '{"values": ["F", "M"]}', '{"type": "discrete", "weight": 1}')""",
    "SELECT dx.grant_budget('mallory', 'public_n', 1)",
)


def explain_rows(expected):
    """dx.explain answers with `expected` rows and charges nothing."""
    def check(ctx, conn, attempt):
        last = ctx.last_ledger_id()
        rows = run_fetch(conn, attempt.sql)
        assert len(rows) == expected, f"{len(rows)} rows: {rows}"
        assert not ctx.ledger_since(last), "dx.explain charged"
        return f"{expected} row(s), nothing charged"
    return check


# the row count is private under presence 1: no surrogate row (it would be computed from n)
attack(S, "no_surrogate_when_row_count_is_private",
       "SELECT * FROM dx.explain('SELECT dx.count(*) FROM people WHERE sex = ''F'' AND zip = ''10007''')",
       Custom(explain_rows(1)))
# public row count (presence +inf): the surrogate row, free
attack(S, "surrogate_when_row_count_is_public",
       "SELECT * FROM dx.explain('SELECT dx.count(*) FROM public_n WHERE age = 10 AND sex = ''F''')",
       Custom(explain_rows(2)))
attack(S, "surrogate_on_undeclared_column",
       "SELECT * FROM dx.explain('SELECT dx.count(*) FROM people WHERE name = ''Zebulon Quixote''')", Reject(PRIV))


def test_statistical_query_explain_attacks():
    run_category(S, admin_setup=SQ_ADMIN_SETUP)
