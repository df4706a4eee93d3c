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
