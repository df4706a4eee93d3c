-- Synthetic releases (issue 14): d_X-private MWEM and SmallDB histograms over the declared
-- universe of chosen columns, written to a new table owned by the caller, and their catalog.

-- One row per release: who made it, from which table and columns, into which table, with which
-- mechanism and epsilon; `details` holds the workload, the iteration count (MWEM) or database
-- size (SmallDB), the released row count, the per-step epsilons and the policy (presence, and each
-- column's domain and metric) the release was made under. Written by dxpriv only.
CREATE TABLE dx.releases (
	id bigserial PRIMARY KEY,
	at timestamptz NOT NULL DEFAULT clock_timestamp(),
	role regrole NOT NULL,
	source regclass NOT NULL,
	target regclass NOT NULL,
	columns name[] NOT NULL,
	mechanism text NOT NULL,
	epsilon float8 NOT NULL,
	details jsonb NOT NULL
);
COMMENT ON TABLE dx.releases IS 'synthetic releases (MWEM, SmallDB): source, columns, target table, epsilon, workload, iterations and policy';
SELECT pg_catalog.pg_extension_config_dump('dx.releases', '');
SELECT pg_catalog.pg_extension_config_dump('dx.releases_id_seq', '');
REVOKE ALL ON dx.releases FROM PUBLIC;

-- The releases of the current role (and the roles it belongs to) and those made from tables it owns.
CREATE VIEW dx.my_releases WITH (security_barrier) AS
	SELECT r.id, r.at, r.role, r.source, r.target, r.columns, r.mechanism, r.epsilon,
	       (r.details ->> 'iterations')::int AS iterations, r.details ->> 'workload' AS workload, r.details
	FROM dx.releases r
	WHERE pg_catalog.pg_has_role(r.role, 'USAGE')
	   OR pg_catalog.pg_has_role((SELECT pc.relowner FROM pg_catalog.pg_class pc WHERE pc.oid = r.source), 'USAGE');
COMMENT ON VIEW dx.my_releases IS 'synthetic releases made by the current role or from tables it owns';
GRANT SELECT ON dx.my_releases TO PUBLIC;

-- MWEM (MECHANISMS.md §3.11): workload 'marginals:K' (all K-way marginals of the columns) or a
-- float8[][] of weight vectors (one row per query, one weight per universe point); iterations NULL:
-- the default T* of §3.11; average => false writes the last iterate instead of the average of
-- the iterates (post-processing of the same measurements; usually more accurate). Charges epsilon once to the caller's budget on source before reading it.
CREATE FUNCTION dx.release_mwem(source regclass, columns text[], workload text, epsilon float8, target name,
                                iterations int DEFAULT NULL, average boolean DEFAULT true)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_mwem';
CREATE FUNCTION dx.release_mwem(source regclass, columns text[], workload float8[], epsilon float8, target name,
                                iterations int DEFAULT NULL, average boolean DEFAULT true)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_mwem';
COMMENT ON FUNCTION dx.release_mwem(regclass, text[], text, float8, name, int, boolean) IS 'd_X-private MWEM synthetic histogram of declared columns over a workload of K-way marginals, written to a new table; charges epsilon once';
COMMENT ON FUNCTION dx.release_mwem(regclass, text[], float8[], float8, name, int, boolean) IS 'd_X-private MWEM synthetic histogram of declared columns over a workload of weight vectors, written to a new table; charges epsilon once';

-- SmallDB (MECHANISMS.md §3.10) for tiny universes: size NULL: Theorem 6's database size, lowered
-- to fit the candidate cap (1e6 small databases); beyond it, an error.
CREATE FUNCTION dx.release_smalldb(source regclass, columns text[], workload text, epsilon float8, target name,
                                   size int DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_smalldb';
CREATE FUNCTION dx.release_smalldb(source regclass, columns text[], workload float8[], epsilon float8, target name,
                                   size int DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_smalldb';
COMMENT ON FUNCTION dx.release_smalldb(regclass, text[], text, float8, name, int) IS 'd_X-private small-database release over K-way marginals for tiny universes, written to a new table; charges epsilon once';
COMMENT ON FUNCTION dx.release_smalldb(regclass, text[], float8[], float8, name, int) IS 'd_X-private small-database release over weight vectors for tiny universes, written to a new table; charges epsilon once';
