-- Private partition selection for GROUP BY keys of open domains (src/pg/executor/partition_select.cpp,
-- src/pg/planner/open_keys.h): placed by the analyzer in HAVING, never written by analysts.
CREATE FUNCTION dx._partition_select_transfn(internal, float8, int4, float8[], float8[]) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_transfn';
CREATE FUNCTION dx._partition_select_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_combinefn';
CREATE FUNCTION dx._partition_select_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_serialize';
CREATE FUNCTION dx._partition_select_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_deserialize';
CREATE FUNCTION dx._partition_select_finalfn(internal) RETURNS boolean
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_partition_select_finalfn';
CREATE AGGREGATE dx._partition_select(float8, int4, float8[], float8[]) (
	SFUNC = dx._partition_select_transfn, STYPE = internal, SSPACE = 64,
	FINALFUNC = dx._partition_select_finalfn,
	COMBINEFUNC = dx._partition_select_combinefn, SERIALFUNC = dx._partition_select_serialize,
	DESERIALFUNC = dx._partition_select_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._partition_select(float8, int4, float8[], float8[]) IS 'internal: placed by the dxpriv analyzer only (private partition selection of an open GROUP BY key)';
-- the aggregate stays executable by PUBLIC (analysts' rewritten statements call it); its support
-- functions are checked against the aggregate's owner
REVOKE EXECUTE ON FUNCTION dx._partition_select_transfn(internal, float8, int4, float8[], float8[]) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._partition_select_finalfn(internal) FROM PUBLIC;
-- dx.last_release() for releases grouped by an open key (src/pg/executor/release_log.cpp,
-- planner/open_release_log.h): placed in the release's HAVING after dx._partition_select; it
-- labels the answers of a partition the selection kept and drops those of one it withheld. It stays
-- executable by PUBLIC (analysts' rewritten statements call it); called by hand it labels nothing.
-- PARALLEL SAFE so that the release's HAVING lets PostgreSQL aggregate partial states in parallel
-- workers: the HAVING runs in the leader's finalising aggregate; in a worker it would label nothing.
CREATE FUNCTION dx._open_cells(boolean, text[], text[]) RETURNS boolean
LANGUAGE c VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_open_cells';
COMMENT ON FUNCTION dx._open_cells(boolean, text[], text[]) IS 'internal: placed by the dxpriv analyzer only (dx.last_release of a release grouped by an open key)';
