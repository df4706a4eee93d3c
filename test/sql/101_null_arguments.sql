-- 101: dx functions called with NULL or odd arguments end in an ERROR with an errcode, a lowercase
-- message and a hint, never in a crash of the backend (which restarts every session of the cluster).
-- Each case crashed or hung the backend before its fix; test/e2e/test_null_arguments.py calls every
-- dx function this way, generated from pg_proc.
SET client_min_messages = warning;
SELECT count(*) AS ledger_rows_before FROM dx.ledger \gset

-- A. a relation that does not exist (regclass 0, a dropped table's oid): dx.top_k read its name as
--    NULL (quote_identifier(NULL): SIGSEGV); refused with 42P01, nothing charged.
SELECT err($$SELECT * FROM dx.top_k(0::regclass, 'a', 1, 1.0)$$);
SELECT err($$SELECT * FROM dx.top_k(0::regclass, 'r', 0, 1.0, 'r', '{}')$$);
CREATE TABLE nullarg_gone (a int);
SELECT 'nullarg_gone'::regclass::oid AS gone_oid \gset
DROP TABLE nullarg_gone;
SELECT regexp_replace(err(format('SELECT * FROM dx.top_k(%s::oid::regclass, %L, 1, 1.0)', :gone_oid, 'a')),
                      'oid [0-9]+', 'oid N');
-- the same relations in the other entry points that name a table (errors, no crash)
SELECT regexp_replace(err($$SELECT dx.release_mwem(0::regclass, ARRAY['a'], 'marginals:1', 0.5, 'nullarg_w')$$),
                      'oid [0-9]+', 'oid N');
SELECT regexp_replace(err($$SELECT * FROM dx.release_synthetic_error(0::regclass, ARRAY['a'], 'marginals:1', 0.5)$$),
                      'oid [0-9]+', 'oid N');
SELECT count(*) - :ledger_rows_before AS charged FROM dx.ledger;

-- B. dx._max_influence(2^31 - 1, '{}'): an empty array "divides" into any number of empty rows; it
--    built 2^31 of them (37 s, deaf to statement_timeout); now every row needs a value.
SET statement_timeout = '20s';
SELECT err($$SELECT dx._max_influence(2147483647, '{}'::float8[])$$);
SELECT err($$SELECT dx._max_influence(3, '{0.5, 0.5}'::float8[])$$);
SELECT dx._max_influence(2, '{0.5, 0.5, 0.25, 0.75}'::float8[]) > 0 AS still_computed;
RESET statement_timeout;

-- C. the per-point table of dx._weigh and its variants NULL (fixed in f470f7c, kept here): 22023.
SELECT err($$SELECT dx._weigh(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)$$);
SELECT err($$SELECT dx._weigh_int(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)$$);
SELECT err($$SELECT dx._weigh_cached(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)$$);
SELECT err($$SELECT dx._weigh_int_cached(NULL::bytea, 'r', 5, 0::float8, 10::float8, 1::float8)$$);
SELECT err($$SELECT dx._weigh_units(NULL::bytea, 'r', 1.0::float8, 5, 0::float8, 10::float8, 1::float8)$$);
SELECT err($$SELECT dx._weigh_units_cached(NULL::bytea, 'r', 1.0::float8, 5, 0::float8, 10::float8, 1::float8)$$);

RESET client_min_messages;
