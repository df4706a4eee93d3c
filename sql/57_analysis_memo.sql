-- Policy version (analysis memo, src/pg/planner/analysis_memo.h): every write to a table of the policy is
-- noted in dx.contents_changes under the oid of dx.protected_tables, so a statement's snapshot
-- sees a new policy version after any committed change of a declaration, an analyst or a public table.
DO $$
DECLARE
	t text;
	key oid := 'dx.protected_tables'::regclass::oid;
BEGIN
	FOREACH t IN ARRAY ARRAY['protected_tables', 'protected_columns', 'protected_column_groups', 'public_tables',
	                         'privacy_units', 'analysts', 'attribute_policies'] LOOP
		EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON dx.%I '
		               'FOR EACH STATEMENT EXECUTE FUNCTION dx._note_contents_change(%s)', 'dx_contents_' || key, t, key);
		EXECUTE format('ALTER TABLE dx.%I ENABLE ALWAYS TRIGGER %I', t, 'dx_contents_' || key);
	END LOOP;
END $$;

-- How many statements this backend answered from the analysis memo (tests; superuser only).
CREATE FUNCTION dx._analysis_memo_hits() RETURNS bigint LANGUAGE c STRICT VOLATILE AS 'MODULE_PATHNAME', 'dx_analysis_memo_hits';
REVOKE EXECUTE ON FUNCTION dx._analysis_memo_hits() FROM PUBLIC;
