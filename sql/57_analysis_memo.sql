-- Policy version (analysis memo, src/pg/planner/analysis_memo.h): every write to a table of the policy is
-- noted in dx.contents_changes under relid 0 (no table has it), so a statement's snapshot sees a new
-- policy version after any committed change of a declaration, an analyst or a public table.
DO $$
DECLARE
	t text;
BEGIN
	FOREACH t IN ARRAY ARRAY['protected_tables', 'protected_columns', 'protected_column_groups', 'public_tables',
	                         'privacy_units', 'analysts', 'attribute_policies'] LOOP
		EXECUTE format('CREATE TRIGGER dx_contents_0 AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dx.%I '
		               'FOR EACH STATEMENT EXECUTE FUNCTION dx._note_contents_change(0)', t);
		EXECUTE format('ALTER TABLE dx.%I ENABLE ALWAYS TRIGGER dx_contents_0', t);
	END LOOP;
END $$;

-- How many statements this backend answered from the analysis memo (tests; superuser only).
CREATE FUNCTION dx._analysis_memo_hits() RETURNS bigint LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_analysis_memo_hits';
REVOKE EXECUTE ON FUNCTION dx._analysis_memo_hits() FROM PUBLIC;

-- How many statements this backend answered from the shared analysis memo, i.e. from an analysis
-- another session made (tests; superuser only).
CREATE FUNCTION dx._shared_memo_hits() RETURNS bigint LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_shared_memo_hits';
REVOKE EXECUTE ON FUNCTION dx._shared_memo_hits() FROM PUBLIC;
