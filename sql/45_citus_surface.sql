-- The Citus surface as analysts see it (issue 13; src/pg/analyst/citus_surface.cpp). Nothing here
-- names a Citus object statically: in a database without Citus these functions exist but are never
-- put in place of anything. (dx._citus_logical_relation and the shard-aware
-- dx._holds_protected_rows are in 40_analysts.sql.)

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
