-- Who may call what (issue 10). Every function of the extension is listed here with its audience;
-- test/sql/15_privileges.sql fails when an internal function (name starting with "_") is
-- executable by PUBLIC without appearing in its list of exceptions below.
--
-- Stay executable by PUBLIC, because analysts' statements call them with their own privileges:
--   dx._noisy_count, dx._noisy_sum, dx._noisy_avg (both), dx._noisy_part, dx._onepass_count/_sum/_avg,
--   dx._fold_state, dx._fold_count/_sum/_avg (aggregates) and dx._fold_slices (a folded GROUP BY),
--   dx._em_select (aggregates),
--   dx._dispersion (it only computes a statistic from released parts; one written by an analyst is
--   refused by the analyzer like the aggregates), dx._weigh,
--   dx._weigh_int, dx._group_key, dx._group_key_int, dx._partition_select (aggregate; sql/27_open_domains.sql revokes its support functions),
--   dx._open_cells (it labels only the answers of a partition the selection has just kept),
--   dx._indicator, dx._em_point, dx._unit_rank, dx._unit_bound (aggregate), dx._unit_rows: placed by the analyzer in the statements it rewrites, which run as
--   the analyst; an analyst who writes them herself is refused by the analyzer (42501).
--   dx._partial (aggregate), dx._release_count/_sum/_avg, dx._linear_partial_in/_out: the same on
--   distributed tables (sql/50_distributed.sql); dx._partial_transfn and dx._partial_combinefn stay
--   executable because Citus's worker_partial_agg/coord_combine_agg check EXECUTE on an aggregate's
--   support functions against the caller (unlike PostgreSQL, which checks the aggregate's owner);
--   called outside an aggregate they refuse (no aggregate context). dx._units, dx._weigh_units and
--   dx._weigh_units_cached (dx._units(dx._weigh(...)) in one call), dx._state_of and
--   dx._collect and dx._em_collect (aggregates): the native partial sums and candidate counts of
--   distributed releases, likewise placed by the
--   analyzer (dx._units only computes a number; dx._state_of and dx._collect are refused by the
--   analyzer unless the running statement was charged for their parameters).
--   dx._period: called by the view dx.budgets, and functions in a view run as the view's reader.
--   dx._analyst_can_see: called by dx.analyst_columns / dx.analyst_tables (SECURITY DEFINER,
--   fixed search_path; it tells only whether a table or column is declared, not a value).
--   dx._holds_protected_rows, dx._protected_rows_in: called by the dx.analyst_*_size functions
--   (which analysts' statements call in place of pg_table_size etc.); SECURITY DEFINER, fixed
--   search_path; they tell only whether a relation or tablespace holds protected rows.
--   dx._analyst_stat_user_tables: behind the view dx.analyst_stat_user_tables (pg_stat_user_tables
--   as analysts see it: protected tables' and dxpriv's own tables' counters NULL).
-- Public views filtered per reader (security barriers): dx.budgets, dx.my_ledger, dx.my_columns.
-- Public interface (checks inside): the DBA functions (SECURITY DEFINER, owner or superuser
-- checks), dx.explain, dx.last_release (the caller's own releases only), dx.is_analyst, dx.clear_cache, the dx
-- aggregates and the local-model
-- functions; the attribute-privacy releases dx.attr_avg / dx.attr_sum (they read the table as its
-- owner with dxpriv's own fixed statement, only after charging the caller's budgets),
-- dx.explain_attribute and dx.wasserstein_scale (sql/55_attribute.sql, which revokes its helpers);
-- the synthetic releases (dx.release_mwem, dx.release_smalldb, dx.release_synthetic and its free
-- dx.release_synthetic_error) and the median sessions
-- (dx.median_session_open/_query/_queries): they charge the caller's budget on the source table
-- before reading it, and a session is queried only by the role that opened it (sql/60_releases.sql).
--
-- Revoked below: the DBA helpers (called only by the SECURITY DEFINER DBA functions, which run as
-- the extension owner) and the support functions of aggregates (PostgreSQL checks them against the
-- aggregate's owner, never against the caller).

-- DBA helpers (dx._validate_column and dx._validate_group, which read the tables a declaration
-- names, are revoked in 10_dba.sql); dx._revoke_from_analysts is SECURITY DEFINER and changes
-- privileges.
REVOKE EXECUTE ON FUNCTION dx._invalidate(regclass) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._check_owner(regclass) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._check_protected(regclass) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._check_grant(regrole, regclass, float8, text) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._check_table_delta(float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._revoke_from_analysts(regclass) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._caller_is_superuser() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ledger_append_only() FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._stats_hidden(oid) FROM PUBLIC; -- called by dx._analyst_stat_user_tables as the owner

-- Support functions of the marker aggregates (dx.count, dx.sum, dx.avg, dx.linear, dx.mode,
-- dx.quantile, dx.median).
REVOKE EXECUTE ON FUNCTION dx._marker_transfn(internal, "any") FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_transfn(internal, "any", float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_transfn(internal, "any", float8, float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_star_transfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_count_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_sum_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_avg_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_em_finalfn(internal, anyelement) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_em_finalfn(internal, anyelement, float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._marker_em_finalfn(internal, anyelement, float8, float8) FROM PUBLIC;

-- Support functions of the internal noisy aggregates (the aggregates themselves stay executable).
REVOKE EXECUTE ON FUNCTION dx._linear_transfn(internal, float8, int4, float8[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_transfn(internal, float8, int4, float8[], float8) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_count_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_sum_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_avg_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._linear_part_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_transfn(internal, text, "any") FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_count_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_sum_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._onepass_avg_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._fold_transfn(internal, bytea) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._em_transfn(internal, int4, int4, float8[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._em_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._em_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._em_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._em_finalfn(internal) FROM PUBLIC;

-- Support functions of dx.ibu (the aggregate itself is public).
REVOKE EXECUTE ON FUNCTION dx._ibu_transfn(internal, int, int, int, float8, text, int) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ibu_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ibu_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ibu_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._ibu_finalfn(internal) FROM PUBLIC;

-- Views that show per-role rows are security barriers: a caller's (possibly leaky) WHERE
-- functions only ever see the rows the view's own filter admitted (dx.budgets is one from its
-- CREATE VIEW in 00_catalog.sql).
ALTER VIEW dx.analyst_columns SET (security_barrier = true);
ALTER VIEW dx.analyst_tables SET (security_barrier = true);

-- dx._collect runs only on the coordinator (never through Citus's worker_partial_agg): PostgreSQL
-- checks its support function against the aggregate's owner.
REVOKE EXECUTE ON FUNCTION dx._collect_transfn(dx._linear_partial, int4, numeric, int8, float8[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._em_collect_transfn(internal, int4, int4, float8[], int8) FROM PUBLIC;
