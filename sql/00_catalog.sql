-- dxpriv catalog: policies, protected columns, budgets and the ledger (schema dx).
\echo Use "CREATE EXTENSION dxpriv" to load this file. \quit

-- One row per protected table: the presence distance d(x, ⊥) per unit of epsilon, the per-query
-- epsilon cap and the per-query delta the owner allows for (epsilon, delta) noise (0: pure epsilon).
CREATE TABLE dx.protected_tables (
	relid regclass PRIMARY KEY,
	presence float8 NOT NULL,
	created_at timestamptz NOT NULL DEFAULT now(),
	per_query_cap float8,
	delta float8 NOT NULL DEFAULT 0,
	CONSTRAINT presence_positive CHECK (presence > 0 AND presence <> 'NaN'::float8),
	CONSTRAINT per_query_cap_valid CHECK (per_query_cap > 0 AND per_query_cap < 'Infinity'::float8),
	CONSTRAINT delta_valid CHECK (delta >= 0 AND delta <= 0.001)
);
COMMENT ON TABLE dx.protected_tables IS 'tables protected by dxpriv, with their presence distance, per-query epsilon cap and per-query delta';

-- One row per declared column: its domain and its metric (JSON, validated by dx.set_column).
CREATE TABLE dx.protected_columns (
	relid regclass NOT NULL REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	column_name name NOT NULL,
	domain jsonb NOT NULL,
	metric jsonb NOT NULL,
	PRIMARY KEY (relid, column_name)
);
COMMENT ON TABLE dx.protected_columns IS 'declared domain and metric of each column an analyst may reference';

-- Privacy budget of a role on a protected table, in units of epsilon, and its delta budget (the
-- total delta that (epsilon, delta) queries may spend; 0: pure-epsilon queries only). `spent` and
-- `delta_spent` are what the current period has spent: with a refresh interval, periods start at
-- refresh_anchor + k * refresh and a period that has ended counts as spent = delta_spent = 0 (the
-- ledger worker resets the row lazily, at the first charge of the new period). Without refresh, the
-- single period starts when the budget was granted. The attr_* columns are the separate
-- attribute-privacy budget (sql/55_attribute.sql: dx.grant_attribute_budget), spent only by
-- dx.attr_avg / dx.attr_sum and refreshed with the same periods.
CREATE TABLE dx.budget_grants (
	role regrole NOT NULL,
	relid regclass NOT NULL REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	granted float8 NOT NULL,
	spent float8 NOT NULL DEFAULT 0,
	delta_granted float8 NOT NULL DEFAULT 0,
	delta_spent float8 NOT NULL DEFAULT 0,
	refresh interval,
	refresh_anchor timestamptz NOT NULL DEFAULT now(),
	period_start timestamptz NOT NULL DEFAULT now(),
	period_end timestamptz,
	attr_granted float8 NOT NULL DEFAULT 0,
	attr_spent float8 NOT NULL DEFAULT 0,
	attr_delta_granted float8 NOT NULL DEFAULT 0,
	attr_delta_spent float8 NOT NULL DEFAULT 0,
	PRIMARY KEY (role, relid),
	CONSTRAINT granted_valid CHECK (granted >= 0 AND granted < 'Infinity'::float8),
	CONSTRAINT spent_valid CHECK (spent >= 0 AND spent < 'Infinity'::float8),
	CONSTRAINT delta_granted_valid CHECK (delta_granted >= 0 AND delta_granted <= 1),
	CONSTRAINT delta_spent_valid CHECK (delta_spent >= 0 AND delta_spent < 'Infinity'::float8),
	CONSTRAINT period_valid CHECK ((refresh IS NULL) = (period_end IS NULL)),
	CONSTRAINT attr_granted_valid CHECK (attr_granted >= 0 AND attr_granted < 'Infinity'::float8),
	CONSTRAINT attr_spent_valid CHECK (attr_spent >= 0 AND attr_spent < 'Infinity'::float8),
	CONSTRAINT attr_delta_granted_valid CHECK (attr_delta_granted >= 0 AND attr_delta_granted <= 1),
	CONSTRAINT attr_delta_spent_valid CHECK (attr_delta_spent >= 0 AND attr_delta_spent < 'Infinity'::float8)
);
COMMENT ON TABLE dx.budget_grants IS 'granted and spent epsilon and delta per role and protected table, with refresh periods';

-- Every charged query: who, which table, what it cost (epsilon and delta), with which noise and
-- from which budget ('d_x', or 'attribute' for the attribute-privacy releases).
-- Written only by the ledger worker, in its own committed transaction; rows are never updated or
-- deleted.
CREATE TABLE dx.ledger (
	id bigserial PRIMARY KEY,
	at timestamptz NOT NULL DEFAULT clock_timestamp(),
	role regrole NOT NULL,
	relid regclass NOT NULL,
	fingerprint text NOT NULL,
	query text,
	mechanism text NOT NULL,
	epsilon float8 NOT NULL,
	delta float8 NOT NULL DEFAULT 0,
	scales float8[] NOT NULL,
	pid integer,
	session_role regrole,
	period_start timestamptz,
	budget text NOT NULL DEFAULT 'd_x',
	CONSTRAINT budget_valid CHECK (budget IN ('d_x', 'attribute'))
);
COMMENT ON TABLE dx.ledger IS 'one row per charged query and protected table (append-only)';

-- Refuses UPDATE, DELETE and TRUNCATE of the ledger, whoever asks.
CREATE FUNCTION dx._ledger_append_only() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	RAISE EXCEPTION 'dx.ledger is append-only' USING ERRCODE = '42501',
		HINT = 'Ledger rows record privacy budget already spent; they cannot be changed or removed.';
END $$;
CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON dx.ledger
	FOR EACH ROW EXECUTE FUNCTION dx._ledger_append_only();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON dx.ledger
	FOR EACH STATEMENT EXECUTE FUNCTION dx._ledger_append_only();
-- (ddlhold) fired also under session_replication_role = replica: the ledger is the durable record
-- of what was spent, whoever writes it and however.
ALTER TABLE dx.ledger ENABLE ALWAYS TRIGGER ledger_append_only;
ALTER TABLE dx.ledger ENABLE ALWAYS TRIGGER ledger_no_truncate;

-- The budget period of a grant that contains `at`: [anchor + k*refresh, anchor + (k+1)*refresh)
-- for the k >= 0 that fits (k = 0 before the anchor); (anchor, NULL) without refresh.
CREATE FUNCTION dx._period(anchor timestamptz, refresh interval, at timestamptz,
	OUT period_start timestamptz, OUT period_end timestamptz)
LANGUAGE plpgsql STABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	k bigint;
BEGIN
	IF refresh IS NULL THEN
		period_start := anchor;
		period_end := NULL;
		RETURN;
	END IF;
	k := greatest(floor(extract(epoch FROM at - anchor) / extract(epoch FROM refresh)), 0)::bigint;
	-- calendar intervals (months, days across DST changes) are not fixed lengths: adjust k
	WHILE k > 0 AND anchor + refresh * k > at LOOP
		k := k - 1;
	END LOOP;
	WHILE anchor + refresh * (k + 1) <= at LOOP
		k := k + 1;
	END LOOP;
	period_start := anchor + refresh * k;
	period_end := anchor + refresh * (k + 1);
END $$;

-- Granted, spent and remaining epsilon per role and table in the current period, with the refresh
-- interval and the table's per-query cap; then the same for delta, with the table's per-query delta
-- (appended last, so that the epsilon columns keep their positions); then the attribute-privacy
-- budget's epsilon and delta (granted, spent, remaining).
-- A security barrier: a reader's own WHERE functions (even cheap leaky ones) only see the rows the
-- filter below admits: the reader's roles, and the grants on tables the reader owns.
CREATE VIEW dx.budgets WITH (security_barrier) AS
	SELECT g.role, g.relid AS "table", g.granted, cur.spent,
	       greatest(g.granted - cur.spent, 0) AS remaining,
	       g.refresh, cur.period_start, cur.period_end, p.per_query_cap,
	       g.delta_granted, cur.delta_spent,
	       greatest(g.delta_granted - cur.delta_spent, 0) AS delta_remaining,
	       p.delta AS per_query_delta,
	       g.attr_granted, cur.attr_spent,
	       greatest(g.attr_granted - cur.attr_spent, 0) AS attr_remaining,
	       g.attr_delta_granted, cur.attr_delta_spent,
	       greatest(g.attr_delta_granted - cur.attr_delta_spent, 0) AS attr_delta_remaining
	FROM dx.budget_grants g
	JOIN dx.protected_tables p ON p.relid = g.relid
	CROSS JOIN LATERAL (
		SELECT CASE WHEN g.period_end <= now() THEN 0::float8 ELSE g.spent END AS spent,
		       CASE WHEN g.period_end <= now() THEN 0::float8 ELSE g.delta_spent END AS delta_spent,
		       CASE WHEN g.period_end <= now() THEN 0::float8 ELSE g.attr_spent END AS attr_spent,
		       CASE WHEN g.period_end <= now() THEN 0::float8 ELSE g.attr_delta_spent END AS attr_delta_spent,
		       CASE WHEN g.period_end <= now() THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_start
		            ELSE g.period_start END AS period_start,
		       CASE WHEN g.period_end <= now() THEN (dx._period(g.refresh_anchor, g.refresh, now())).period_end
		            ELSE g.period_end END AS period_end
	) cur
	WHERE pg_catalog.pg_has_role(g.role, 'USAGE')
	   OR pg_catalog.pg_has_role((SELECT pc.relowner FROM pg_catalog.pg_class pc WHERE pc.oid = g.relid), 'USAGE');
COMMENT ON VIEW dx.budgets IS 'granted, spent and remaining epsilon and delta in the current period, refresh interval, per-query cap and per-query delta per role and protected table, then the same for the attribute-privacy budget (own roles and owned tables only)';

SELECT pg_catalog.pg_extension_config_dump('dx.protected_tables', '');
SELECT pg_catalog.pg_extension_config_dump('dx.protected_columns', '');
SELECT pg_catalog.pg_extension_config_dump('dx.budget_grants', '');
SELECT pg_catalog.pg_extension_config_dump('dx.ledger', '');
SELECT pg_catalog.pg_extension_config_dump('dx.ledger_id_seq', '');

REVOKE ALL ON ALL TABLES IN SCHEMA dx FROM PUBLIC;
GRANT USAGE ON SCHEMA dx TO PUBLIC;
