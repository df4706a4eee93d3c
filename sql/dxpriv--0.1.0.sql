-- dxpriv catalog: policies, protected columns, budgets and the ledger (schema dx).
\echo Use "CREATE EXTENSION dxpriv" to load this file. \quit

-- One row per protected table: the presence distance d(x, ⊥) per unit of epsilon.
CREATE TABLE dx.protected_tables (
	relid regclass PRIMARY KEY,
	presence float8 NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	CONSTRAINT presence_positive CHECK (presence > 0 AND presence <> 'NaN'::float8)
);
COMMENT ON TABLE dx.protected_tables IS 'tables protected by dxpriv, with their presence distance';

-- One row per declared column: its domain and its metric (JSON, validated by dx.set_column).
CREATE TABLE dx.protected_columns (
	relid regclass NOT NULL REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	column_name name NOT NULL,
	domain jsonb NOT NULL,
	metric jsonb NOT NULL,
	PRIMARY KEY (relid, column_name)
);
COMMENT ON TABLE dx.protected_columns IS 'declared domain and metric of each column an analyst may reference';

-- Privacy budget of a role on a protected table, in units of epsilon.
CREATE TABLE dx.budget_grants (
	role regrole NOT NULL,
	relid regclass NOT NULL REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	granted float8 NOT NULL,
	spent float8 NOT NULL DEFAULT 0,
	PRIMARY KEY (role, relid),
	CONSTRAINT granted_valid CHECK (granted >= 0 AND granted < 'Infinity'::float8),
	CONSTRAINT spent_valid CHECK (spent >= 0 AND spent < 'Infinity'::float8)
);
COMMENT ON TABLE dx.budget_grants IS 'granted and spent epsilon per role and protected table';

-- Every charged query: who, which table, what it cost and with which noise.
CREATE TABLE dx.ledger (
	id bigserial PRIMARY KEY,
	at timestamptz NOT NULL DEFAULT clock_timestamp(),
	role regrole NOT NULL,
	relid regclass NOT NULL,
	fingerprint text NOT NULL,
	query text,
	mechanism text NOT NULL,
	epsilon float8 NOT NULL,
	scales float8[] NOT NULL
);
COMMENT ON TABLE dx.ledger IS 'one row per charged query and protected table';

-- Granted, spent and remaining budget per role and table.
CREATE VIEW dx.budgets AS
	SELECT g.role, g.relid AS "table", g.granted, g.spent,
	       greatest(g.granted - g.spent, 0) AS remaining
	FROM dx.budget_grants g
	WHERE pg_catalog.pg_has_role(g.role, 'USAGE')
	   OR pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = g.relid), 'USAGE');
COMMENT ON VIEW dx.budgets IS 'granted, spent and remaining epsilon per role and protected table (own roles and owned tables only)';

SELECT pg_catalog.pg_extension_config_dump('dx.protected_tables', '');
SELECT pg_catalog.pg_extension_config_dump('dx.protected_columns', '');
SELECT pg_catalog.pg_extension_config_dump('dx.budget_grants', '');
SELECT pg_catalog.pg_extension_config_dump('dx.ledger', '');
SELECT pg_catalog.pg_extension_config_dump('dx.ledger_id_seq', '');

REVOKE ALL ON ALL TABLES IN SCHEMA dx FROM PUBLIC;
GRANT USAGE ON SCHEMA dx TO PUBLIC;
-- DBA interface: protecting tables, declaring columns, granting budgets.

-- Validates a domain/metric pair for a column type; raises a descriptive error when invalid.
CREATE FUNCTION dx._validate_column(column_type regtype, domain jsonb, metric jsonb)
RETURNS void LANGUAGE c STRICT STABLE AS 'MODULE_PATHNAME', 'dx_validate_column';

-- Forces cached plans that read rel to be re-analysed (policy changed).
CREATE FUNCTION dx._invalidate(rel regclass)
RETURNS void LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_invalidate';

-- Raises unless the calling role (outside any SECURITY DEFINER function) owns rel or is superuser.
CREATE FUNCTION dx._check_owner(rel regclass) RETURNS void
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'dx_check_owner';

-- Protects a table: its rows are only released through d_X-private aggregates.
CREATE FUNCTION dx.protect_table(rel regclass, presence float8 DEFAULT 1.0)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	IF presence IS NULL OR presence = 'NaN'::float8 OR presence <= 0 THEN
		RAISE EXCEPTION 'presence distance must be positive, got %', presence USING ERRCODE = '22023',
			HINT = 'Use 1.0 for standard add/remove-one-row privacy, or ''Infinity'' when the row count is public.';
	END IF;
	IF (SELECT relkind FROM pg_class WHERE oid = rel) NOT IN ('r', 'p') THEN
		RAISE EXCEPTION '"%" is not a table', rel USING ERRCODE = '42809',
			HINT = 'Only ordinary and partitioned tables can be protected.';
	END IF;
	INSERT INTO dx.protected_tables (relid, presence) VALUES (rel, presence)
	ON CONFLICT ON CONSTRAINT protected_tables_pkey DO UPDATE SET presence = excluded.presence;
	PERFORM dx._invalidate(rel);
END $$;

-- Removes a table's policy, declared columns and budgets (the ledger is kept).
CREATE FUNCTION dx.unprotect_table(rel regclass)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	DELETE FROM dx.protected_tables WHERE relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'See dx.protected_tables for the protected tables.';
	END IF;
	PERFORM dx._invalidate(rel);
END $$;

-- Declares (or replaces) the domain and metric of one column of a protected table.
CREATE FUNCTION dx.set_column(rel regclass, column_name name, domain jsonb, metric jsonb)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	col_type regtype;
BEGIN
	PERFORM dx._check_owner(rel);
	IF NOT EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid = rel) THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'Call dx.protect_table first.';
	END IF;
	SELECT a.atttypid::regtype INTO col_type FROM pg_attribute a
	WHERE a.attrelid = rel AND a.attname = set_column.column_name AND a.attnum > 0 AND NOT a.attisdropped;
	IF col_type IS NULL THEN
		RAISE EXCEPTION 'column "%" of table "%" does not exist', set_column.column_name, rel
			USING ERRCODE = '42703', HINT = 'Check the column name; names are case-sensitive when quoted.';
	END IF;
	IF domain IS NULL OR metric IS NULL THEN
		RAISE EXCEPTION 'domain and metric must not be null' USING ERRCODE = '22004',
			HINT = 'Pass for example ''{"min":0,"max":120}'' and ''{"type":"absolute","scale":10}''.';
	END IF;
	PERFORM dx._validate_column(col_type, domain, metric);
	INSERT INTO dx.protected_columns AS c (relid, column_name, domain, metric)
	VALUES (rel, set_column.column_name, domain, metric)
	ON CONFLICT ON CONSTRAINT protected_columns_pkey DO UPDATE SET domain = excluded.domain, metric = excluded.metric;
	PERFORM dx._invalidate(rel);
END $$;

-- Removes a column declaration: analysts can no longer reference the column.
CREATE FUNCTION dx.unset_column(rel regclass, column_name name)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	DELETE FROM dx.protected_columns c WHERE c.relid = rel AND c.column_name = unset_column.column_name;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'column "%" of table "%" is not declared', unset_column.column_name, rel
			USING ERRCODE = '22023', HINT = 'See dx.protected_columns for the declared columns.';
	END IF;
	PERFORM dx._invalidate(rel);
END $$;

-- Sets the total epsilon a role may spend on a protected table (spent budget is never reset).
CREATE FUNCTION dx.grant_budget(role regrole, rel regclass, epsilon float8)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	IF role IS NULL THEN
		RAISE EXCEPTION 'role must not be null' USING ERRCODE = '22004', HINT = 'Pass a role name such as ''analyst''.';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM dx.protected_tables p WHERE p.relid = rel) THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'Call dx.protect_table first.';
	END IF;
	IF epsilon IS NULL OR epsilon = 'NaN'::float8 OR epsilon <= 0 OR epsilon = 'Infinity'::float8 THEN
		RAISE EXCEPTION 'budget epsilon must be positive and finite, got %', epsilon USING ERRCODE = '22023',
			HINT = 'Grant for example 1.0; every query spends its epsilon from this budget.';
	END IF;
	INSERT INTO dx.budget_grants AS g (role, relid, granted) VALUES (role, rel, epsilon)
	ON CONFLICT ON CONSTRAINT budget_grants_pkey DO UPDATE SET granted = excluded.granted;
END $$;

-- Stops further spending by a role on a table; what was spent stays recorded.
CREATE FUNCTION dx.revoke_budget(role regrole, rel regclass)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	UPDATE dx.budget_grants g SET granted = g.spent WHERE g.role = revoke_budget.role AND g.relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'role "%" has no budget on table "%"', role, rel USING ERRCODE = '22023',
			HINT = 'See dx.budgets for the granted budgets.';
	END IF;
END $$;

GRANT SELECT ON dx.budgets TO PUBLIC;
-- Aggregates. The dx.count/dx.sum aggregates an analyst writes are markers: the query analyzer
-- validates the query, computes the sensitivity and replaces them by the internal noisy
-- aggregates below. A marker that reaches the executor (query not validated) raises an error.

CREATE FUNCTION dx._marker_transfn(internal, "any") RETURNS internal
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_transfn';
CREATE FUNCTION dx._marker_transfn(internal, "any", float8) RETURNS internal
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_transfn';
CREATE FUNCTION dx._marker_star_transfn(internal) RETURNS internal
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_transfn';
CREATE FUNCTION dx._marker_count_finalfn(internal) RETURNS bigint
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';
CREATE FUNCTION dx._marker_sum_finalfn(internal) RETURNS float8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_marker_finalfn';

CREATE AGGREGATE dx.count(*) (SFUNC = dx._marker_star_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.count("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.count("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_count_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.sum("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.sum("any", float8) (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.count(*) IS 'd_X-private row count at the session epsilon (dxpriv.epsilon)';
COMMENT ON AGGREGATE dx.count("any") IS 'd_X-private count of non-null values at the session epsilon';
COMMENT ON AGGREGATE dx.count("any", float8) IS 'd_X-private count of non-null values at the given epsilon';
COMMENT ON AGGREGATE dx.sum("any") IS 'd_X-private sum at the session epsilon';
COMMENT ON AGGREGATE dx.sum("any", float8) IS 'd_X-private sum at the given epsilon';

-- Internal noisy linear aggregate: exact grid-unit partial sums, noise in the final function.
-- Arguments: weight, grid, noise scale, epsilon, protected table, charge id (all but the weight
-- are constants placed by the analyzer; they travel in the state for parallel and Citus plans).
CREATE FUNCTION dx._linear_transfn(internal, float8, float8, float8, float8, oid, bigint) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_transfn';
CREATE FUNCTION dx._linear_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_combinefn';
CREATE FUNCTION dx._linear_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_serialize';
CREATE FUNCTION dx._linear_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_deserialize';
CREATE FUNCTION dx._linear_count_finalfn(internal) RETURNS bigint
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_count_finalfn';
CREATE FUNCTION dx._linear_sum_finalfn(internal) RETURNS float8
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_linear_sum_finalfn';
COMMENT ON FUNCTION dx._linear_transfn(internal, float8, float8, float8, float8, oid, bigint) IS 'adds one row''s weight in grid units';
COMMENT ON FUNCTION dx._linear_combinefn(internal, internal) IS 'adds two exact partial states';
COMMENT ON FUNCTION dx._linear_serialize(internal) IS 'self-describing serialisation of a partial state';
COMMENT ON FUNCTION dx._linear_deserialize(bytea, internal) IS 'inverse of dx._linear_serialize';

CREATE AGGREGATE dx._noisy_count(float8, float8, float8, float8, oid, bigint) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_count_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
CREATE AGGREGATE dx._noisy_sum(float8, float8, float8, float8, oid, bigint) (
	SFUNC = dx._linear_transfn, STYPE = internal,
	FINALFUNC = dx._linear_sum_finalfn, FINALFUNC_MODIFY = READ_WRITE,
	COMBINEFUNC = dx._linear_combinefn, SERIALFUNC = dx._linear_serialize,
	DESERIALFUNC = dx._linear_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx._noisy_count(float8, float8, float8, float8, oid, bigint) IS 'internal: placed by the dxpriv analyzer only';
COMMENT ON AGGREGATE dx._noisy_sum(float8, float8, float8, float8, oid, bigint) IS 'internal: placed by the dxpriv analyzer only';

-- Data-independent mapping of column values into their declared domains (placed by the analyzer).
CREATE FUNCTION dx._clamp_range(anyelement, float8, float8, float8) RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_clamp_range';
CREATE FUNCTION dx._clamp_enum(anyelement, text[]) RETURNS anyelement
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_clamp_enum';
-- 1 for a non-null value, 0 for null: the per-row weight of count(expr).
CREATE FUNCTION dx._indicator("any") RETURNS float8
LANGUAGE c IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_indicator';
COMMENT ON FUNCTION dx._clamp_range(anyelement, float8, float8, float8) IS 'maps a value to the nearest point of a declared range domain';
COMMENT ON FUNCTION dx._clamp_enum(anyelement, text[]) IS 'maps a value to itself if declared, else to the first declared value';
COMMENT ON FUNCTION dx._indicator("any") IS '1 when the argument is not null, else 0';
