-- The Citus surface as analysts see it (issue 13; src/pg/analyst/citus_surface.cpp). Nothing here
-- names a Citus object statically: in a database without Citus these functions exist but are never
-- put in place of anything.

-- The Citus table whose shard rel is (pg_dist_shard; the shard's name ends in _<shardid> and it
-- lives in the table's schema), or NULL (not a shard, or no Citus). Shards sit on the coordinator
-- when it holds shards (citus_set_node_property(..., 'shouldhaveshards', true)) or local tables.
CREATE FUNCTION dx._citus_logical_relation(rel oid) RETURNS oid
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	sid bigint;
	logical oid;
BEGIN
	IF pg_catalog.to_regclass('pg_catalog.pg_dist_shard') IS NULL THEN
		RETURN NULL;
	END IF;
	SELECT substring(c.relname FROM '_([0-9]+)$')::bigint INTO sid FROM pg_catalog.pg_class c WHERE c.oid = rel;
	IF sid IS NULL THEN
		RETURN NULL;
	END IF;
	EXECUTE 'SELECT s.logicalrelid::oid FROM pg_catalog.pg_dist_shard s
	         JOIN pg_catalog.pg_class l ON l.oid = s.logicalrelid
	         JOIN pg_catalog.pg_class c ON c.oid = $1
	         WHERE s.shardid = $2 AND c.relnamespace = l.relnamespace'
		INTO logical USING rel, sid;
	RETURN logical;
END $$;
REVOKE ALL ON FUNCTION dx._citus_logical_relation(oid) FROM PUBLIC;

-- dx._holds_protected_rows (40_analysts.sql) with Citus shards: a shard of a protected table (or
-- of a partition of one), its indexes and TOAST hold protected rows too.
CREATE OR REPLACE FUNCTION dx._holds_protected_rows(rel oid) RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
WITH RECURSIVE base(relid) AS (
	SELECT rel
	UNION SELECT i.indrelid FROM pg_catalog.pg_index i WHERE i.indexrelid = rel
	UNION SELECT c.oid FROM pg_catalog.pg_class c WHERE c.reltoastrelid = rel
	UNION SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_index i ON i.indrelid = c.reltoastrelid
	      WHERE i.indexrelid = rel
), shards(relid) AS (
	SELECT relid FROM base
	UNION ALL SELECT dx._citus_logical_relation(b.relid) FROM base b
), up(relid) AS (
	SELECT relid FROM shards WHERE relid IS NOT NULL
	UNION SELECT h.inhparent FROM pg_catalog.pg_inherits h JOIN up ON h.inhrelid = up.relid
)
SELECT EXISTS (SELECT 1 FROM up JOIN dx.protected_tables p ON p.relid::oid = up.relid) $$;

-- Put in place of Citus's citus_relation_size, citus_table_size, citus_total_relation_size and
-- citus_shard_sizes in analysts' statements (also inside the views citus_tables and citus_shards):
-- Citus's answer, called as the caller, except NULL where it measures protected rows.
CREATE FUNCTION dx.analyst_citus_relation_size(regclass) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_citus_size';
CREATE FUNCTION dx.analyst_citus_table_size(regclass) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_citus_size';
CREATE FUNCTION dx.analyst_citus_total_relation_size(regclass, boolean DEFAULT true) RETURNS bigint
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_analyst_citus_size';
CREATE FUNCTION dx.analyst_citus_shard_sizes(OUT shard_id integer, OUT size bigint) RETURNS SETOF record
LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_analyst_citus_shard_sizes';
