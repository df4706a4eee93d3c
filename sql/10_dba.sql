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

-- Takes every privilege on rel away from the analyst roles (they reach it only through dxpriv).
CREATE FUNCTION dx._revoke_from_analysts(rel regclass) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	r regrole;
BEGIN
	IF to_regclass('dx.analysts') IS NULL THEN
		RETURN;
	END IF;
	FOR r IN EXECUTE 'SELECT role FROM dx.analysts' LOOP
		EXECUTE format('REVOKE ALL ON TABLE %s FROM %I', rel, r::text);
	END LOOP;
END $$;

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
	PERFORM dx._revoke_from_analysts(rel);
	PERFORM dx._invalidate(rel);
	PERFORM dx._invalidate('dx.protected_tables'::regclass);
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
	PERFORM dx._invalidate('dx.protected_tables'::regclass);
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
