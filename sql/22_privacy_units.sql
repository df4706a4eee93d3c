-- Privacy units (README "Privacy units"): the record is a unit (a person) with all its rows, and
-- each unit's contribution to a query is bounded by a random row choice independent of the values.

-- One row per protected table with a privacy unit: the unit column, the contribution bounds and a
-- 16-byte key (drawn at declaration; the bounding no longer reads it: rows are ranked under a key
-- drawn per execution, see dx._unit_rank). Readable by superusers only (like every dx table).
CREATE TABLE dx.privacy_units (
	relid regclass PRIMARY KEY REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	unit_column name NOT NULL,
	max_rows_per_unit integer NOT NULL,
	max_groups_per_unit integer,
	max_rows_per_unit_per_group integer,
	hash_key bytea NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	CONSTRAINT max_rows_valid CHECK (max_rows_per_unit BETWEEN 1 AND 100000),
	CONSTRAINT max_groups_valid CHECK (max_groups_per_unit BETWEEN 1 AND 100000),
	CONSTRAINT max_rows_per_group_valid CHECK (max_rows_per_unit_per_group BETWEEN 1 AND 100000),
	CONSTRAINT hash_key_length CHECK (octet_length(hash_key) = 16)
);
COMMENT ON TABLE dx.privacy_units IS 'privacy unit column, contribution bounds and key of protected tables (superusers only)';
SELECT pg_catalog.pg_extension_config_dump('dx.privacy_units', '');
REVOKE ALL ON dx.privacy_units FROM PUBLIC;

-- 16 bytes from the kernel's CSPRNG (getrandom): a new table key.
CREATE FUNCTION dx._unit_key() RETURNS bytea
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_unit_key';
REVOKE EXECUTE ON FUNCTION dx._unit_key() FROM PUBLIC;

-- The rank of a row within its unit: SipHash-2-4 (src/core/siphash.h) of the row's (tableoid, ctid)
-- under a key drawn for each execution of the statement (the kernel CSPRNG; under the superuser-only
-- dxpriv.test_seed, a key derived from the seed). Independent of the row's values, so which rows the
-- bound keeps never depends on them (README "Stable contribution bounding"). Placed by the analyzer
-- in the statements it rewrites; it reads no table. VOLATILE: evaluated once per row, in the level
-- that reads the table.
CREATE FUNCTION dx._unit_rank(tableoid oid, ctid tid) RETURNS bigint
LANGUAGE c VOLATILE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_rank';
COMMENT ON FUNCTION dx._unit_rank(oid, tid) IS 'internal: per-execution keyed SipHash-2-4 of a row''s physical identity (row ranking of privacy units)';

-- Declares (or changes) the privacy unit of a protected table: neighbouring tables then differ in
-- all the rows of one unit, and each unit contributes at most max_rows_per_unit rows to a query.
-- max_groups_per_unit and max_rows_per_unit_per_group (NULL: max_rows_per_unit) are validated and
-- recorded but not applied (README "Stable contribution bounding"). The unit column cannot be a
-- declared column. The key is kept when the unit is declared again.
CREATE FUNCTION dx.set_privacy_unit(rel regclass, column_name name, max_rows_per_unit integer,
	max_groups_per_unit integer DEFAULT NULL, max_rows_per_unit_per_group integer DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	PERFORM dx._check_protected(rel);
	IF column_name IS NULL OR NOT EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = rel
			AND a.attname = set_privacy_unit.column_name AND a.attnum > 0 AND NOT a.attisdropped) THEN
		RAISE EXCEPTION 'column "%" of table "%" does not exist', set_privacy_unit.column_name, rel
			USING ERRCODE = '42703', HINT = 'Name the column that identifies a person, e.g. user_id.';
	END IF;
	IF EXISTS (SELECT 1 FROM dx.protected_columns c WHERE c.relid = rel AND c.column_name = set_privacy_unit.column_name)
	   OR EXISTS (SELECT 1 FROM dx.protected_column_groups g WHERE g.relid = rel AND set_privacy_unit.column_name = ANY (g.columns)) THEN
		RAISE EXCEPTION 'column "%" is declared and cannot be the privacy unit', set_privacy_unit.column_name
			USING ERRCODE = '22023',
			HINT = 'Remove its declaration with dx.unset_column first: analysts must never group by or filter on the unit.';
	END IF;
	IF max_rows_per_unit IS NULL OR max_rows_per_unit < 1 OR max_rows_per_unit > 100000
	   OR max_groups_per_unit < 1 OR max_groups_per_unit > 100000
	   OR max_rows_per_unit_per_group < 1 OR max_rows_per_unit_per_group > 100000 THEN
		RAISE EXCEPTION 'contribution bounds must be between 1 and 100000, got %, %, %', max_rows_per_unit,
			max_groups_per_unit, max_rows_per_unit_per_group USING ERRCODE = '22023',
			HINT = 'Give the most rows one unit may contribute, e.g. dx.set_privacy_unit(''visits'', ''person_id'', 10); '
			       'the noise of every answer grows with it.';
	END IF;
	PERFORM dx._refuse_distributed_unit(rel); -- 47_citus_setup.sql
	INSERT INTO dx.privacy_units AS u (relid, unit_column, max_rows_per_unit, max_groups_per_unit,
		max_rows_per_unit_per_group, hash_key)
	VALUES (rel, set_privacy_unit.column_name, max_rows_per_unit, max_groups_per_unit, max_rows_per_unit_per_group,
		dx._unit_key())
	ON CONFLICT ON CONSTRAINT privacy_units_pkey DO UPDATE SET unit_column = excluded.unit_column,
		max_rows_per_unit = excluded.max_rows_per_unit, max_groups_per_unit = excluded.max_groups_per_unit,
		max_rows_per_unit_per_group = excluded.max_rows_per_unit_per_group;
	PERFORM dx._invalidate(rel);
END $$;
COMMENT ON FUNCTION dx.set_privacy_unit(regclass, name, integer, integer, integer) IS 'declares the privacy unit column of a protected table and its contribution bounds';

-- Removes the privacy unit: the record is one row again.
CREATE FUNCTION dx.unset_privacy_unit(rel regclass)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	DELETE FROM dx.privacy_units u WHERE u.relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table "%" has no privacy unit', rel USING ERRCODE = '22023',
			HINT = 'See dx.privacy_units for the tables with a privacy unit.';
	END IF;
	PERFORM dx._invalidate(rel);
END $$;
COMMENT ON FUNCTION dx.unset_privacy_unit(regclass) IS 'removes the privacy unit of a protected table';

-- dx.count_units(unit) / dx.count_units(unit, epsilon): how many units (people) have a counted row,
-- per group; COUNT(DISTINCT unit) from an analyst is answered by it. Markers, like dx.count.
CREATE AGGREGATE dx.count_units("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.count_units("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.count_units("any") IS 'd_X-private number of privacy units (people) with a counted row, at the session epsilon';
COMMENT ON AGGREGATE dx.count_units("any", float8) IS 'd_X-private number of privacy units with a counted row, at the given epsilon';

-- Privacy units without a sort (src/pg/executor/unit_bound.cpp, planner/unit_source.h): one hash
-- pass keeps each unit's max_rows rows of smallest dx._unit_rank (combinable: parallel workers
-- bound their rows and the leader merges), and dx._unit_rows emits the kept rows' columns. Placed by
-- the analyzer in the statements it rewrites (analysts' statements call them with their own
-- privileges); the support functions are revoked. Arguments: max_rows, the row's rank, then the
-- unit value and the columns kept rows carry.
CREATE FUNCTION dx._unit_bound_transfn(internal, int4, int8, VARIADIC "any") RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_transfn';
CREATE FUNCTION dx._unit_bound_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_combinefn';
CREATE FUNCTION dx._unit_bound_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_serialize';
CREATE FUNCTION dx._unit_bound_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_deserialize';
CREATE FUNCTION dx._unit_bound_finalfn(internal) RETURNS int8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_bound_finalfn';
CREATE AGGREGATE dx._unit_bound(int4, int8, VARIADIC "any") (
	SFUNC = dx._unit_bound_transfn, STYPE = internal,
	FINALFUNC = dx._unit_bound_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._unit_bound_combinefn, SERIALFUNC = dx._unit_bound_serialize,
	DESERIALFUNC = dx._unit_bound_deserialize, PARALLEL = SAFE);
-- The kept rows of the statement's dx._unit_bound (by its random handle, valid only while the
-- statement runs): one value per kept row (kind 0: a column; 1: a count_units flag; 2: true).
-- Its row estimate for the planner: the rows of the table the bounding reads (planner/unit_rows_support.cpp).
CREATE FUNCTION dx._unit_rows_support(internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_rows_support';
COMMENT ON FUNCTION dx._unit_rows_support(internal) IS 'internal: the planner''s row estimate of dx._unit_rows (the table''s rows)';
CREATE FUNCTION dx._unit_rows(int8, int4, int4, int4, anyelement) RETURNS SETOF anyelement
LANGUAGE c PARALLEL RESTRICTED ROWS 1000 SUPPORT dx._unit_rows_support AS 'MODULE_PATHNAME', 'dx_unit_rows';
COMMENT ON AGGREGATE dx._unit_bound(int4, int8, "any") IS 'internal: placed by the dxpriv analyzer only (privacy-unit bounding by hash)';
COMMENT ON FUNCTION dx._unit_rows(int8, int4, int4, int4, anyelement) IS 'internal: the rows kept by dx._unit_bound in the same statement';
REVOKE EXECUTE ON FUNCTION dx._unit_bound_transfn(internal, int4, int8, "any") FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_bound_finalfn(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._unit_rows_support(internal) FROM PUBLIC;

-- Unit profiles (src/pg/executor/unit_profile.h, dxpriv.unit_profiles): the bounded row source of a
-- local table is SELECT cols FROM t WHERE dx._unit_keep((SELECT dx._unit_profile(...)), unit,
-- tableoid, ctid), a row-local predicate. dx._unit_profile (an InitPlan, leader only) returns the
-- profile of the table version under the statement's snapshot (cached in shared memory, or built);
-- it refuses a caller without the backend's token (placed by the planner) or not inside a statement
-- charged on the table, and seals the profile (encrypted, MACed: it tells which units are heavy).
-- dx._unit_keep accepts only profiles dx._unit_profile sealed for its snapshot.
CREATE FUNCTION dx._unit_profile(oid, bool, int2, int4, int8) RETURNS bytea
LANGUAGE c VOLATILE STRICT PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_unit_profile';
COMMENT ON FUNCTION dx._unit_profile(oid, bool, int2, int4, int8) IS 'internal: the unit profile of a table version (placed by the dxpriv analyzer only)';
CREATE FUNCTION dx._unit_keep(bytea, anyelement, oid, tid) RETURNS bool
LANGUAGE c VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_unit_keep';
COMMENT ON FUNCTION dx._unit_keep(bytea, anyelement, oid, tid) IS 'internal: whether a row is among its unit''s kept rows, by a unit profile';

-- unitmixed2 (issue 23): count_units beside other aggregates in one scan (src/pg/executor/unit_count_set.cpp).
-- dx._noisy_count_units(weight, group, params, unit) reads the unit profile's kept rows and counts the
-- distinct units (by their 64-bit unit hash; a NULL unit is one unit) of the rows whose weight is not
-- NULL, in a tuplesort bounded by work_mem; it releases that count as dx._noisy_count does.
CREATE FUNCTION dx._count_units_transfn(internal, float8, int4, float8[], anyelement) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_transfn';
CREATE FUNCTION dx._count_units_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_combinefn';
CREATE FUNCTION dx._count_units_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_serialize';
CREATE FUNCTION dx._count_units_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_deserialize';
CREATE FUNCTION dx._count_units_finalfn(internal, float8, int4, float8[], anyelement) RETURNS bigint
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_count_units_finalfn';
COMMENT ON FUNCTION dx._count_units_transfn(internal, float8, int4, float8[], anyelement) IS 'internal: puts the unit hash of a row whose weight is not NULL';
COMMENT ON FUNCTION dx._count_units_combinefn(internal, internal) IS 'internal: the union of two partial sets of unit hashes';
COMMENT ON FUNCTION dx._count_units_serialize(internal) IS 'internal: a partial set of unit hashes, sorted';
COMMENT ON FUNCTION dx._count_units_deserialize(bytea, internal) IS 'internal: inverse of dx._count_units_serialize';
COMMENT ON FUNCTION dx._count_units_finalfn(internal, float8, int4, float8[], anyelement) IS 'internal: the noisy number of distinct units counted';
CREATE AGGREGATE dx._noisy_count_units(float8, int4, float8[], anyelement) (
	SFUNC = dx._count_units_transfn, STYPE = internal,
	FINALFUNC = dx._count_units_finalfn, FINALFUNC_EXTRA, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._count_units_combinefn, SERIALFUNC = dx._count_units_serialize,
	DESERIALFUNC = dx._count_units_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._noisy_count_units(float8, int4, float8[], anyelement) IS 'internal: placed by the dxpriv analyzer only (count_units beside other aggregates, over a unit profile''s kept rows)';
REVOKE EXECUTE ON FUNCTION dx._count_units_transfn(internal, float8, int4, float8[], anyelement) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_combinefn(internal, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_serialize(internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_deserialize(bytea, internal) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION dx._count_units_finalfn(internal, float8, int4, float8[], anyelement) FROM PUBLIC;
-- citusunit (issue 23): a Citus table distributed by its unit column is bounded per shard on the
-- workers: each shard's task query reads SELECT ... FROM shard WHERE dx._unit_keep_shard(unit,
-- tableoid, ctid, k, 'unit column'), whose worker backend finds (shared memory, by the shard's OID
-- and contents version) or builds (the sealed scan) the unit profile of that shard. Refused unless
-- the session user and the current user may both SELECT the relation (the table owner on a worker).
CREATE FUNCTION dx._unit_keep_shard(anyelement, oid, tid, int4, text) RETURNS bool
LANGUAGE c VOLATILE PARALLEL RESTRICTED AS 'MODULE_PATHNAME', 'dx_unit_keep_shard';
COMMENT ON FUNCTION dx._unit_keep_shard(anyelement, oid, tid, int4, text) IS 'internal: whether a row of a shard is among its unit''s kept rows, by the shard''s unit profile (placed by the dxpriv analyzer only)';
