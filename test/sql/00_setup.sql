-- Setup: the extension, tables with deterministic data, roles.
CREATE EXTENSION dxpriv;
SELECT extversion FROM pg_extension WHERE extname = 'dxpriv';

CREATE TABLE people (
	id int PRIMARY KEY,
	age int,
	sex text,
	native text,
	income numeric,
	visit date,
	note text
);
INSERT INTO people
SELECT i,
	CASE WHEN i = 1 THEN 150 WHEN i = 2 THEN -3 WHEN i = 3 THEN NULL ELSE 18 + (i * 7) % 60 END,
	CASE WHEN i % 2 = 0 THEN 'M' WHEN i = 5 THEN 'X' ELSE 'F' END,
	CASE WHEN i % 3 = 0 THEN 'N' ELSE 'Y' END,
	(i * 37) % 1000 * 10,
	date '2024-01-01' + (i * 13) % 366,
	'row ' || i
FROM generate_series(1, 1000) AS i;

CREATE ROLE dx_regress_analyst;
CREATE ROLE dx_regress_other;
GRANT SELECT ON people TO dx_regress_analyst, dx_regress_other;

-- err(q): runs q and returns its SQLSTATE, message and hint (every bad input must have an errcode, a
-- lowercase message and a hint), or 'no error'. Used by the test files that list bad inputs.
CREATE FUNCTION public.err(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	msg text;
	hint text;
BEGIN
	EXECUTE q;
	RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
	GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
	RETURN SQLSTATE || ': ' || msg || CASE WHEN hint <> '' THEN ' | ' || hint ELSE '' END;
END $$;
