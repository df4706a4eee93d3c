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
-- workload text[]: one WHERE predicate per query over the chosen columns, evaluated on the declared
-- domain points (never on rows): the query counts the rows where it holds.
CREATE FUNCTION dx.release_mwem(source regclass, columns text[], workload text[], epsilon float8, target name,
                                iterations int DEFAULT NULL, average boolean DEFAULT true)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_mwem';
COMMENT ON FUNCTION dx.release_mwem(regclass, text[], text[], float8, name, int, boolean) IS 'd_X-private MWEM synthetic histogram of declared columns over a workload of WHERE predicates, written to a new table; charges epsilon once';

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
CREATE FUNCTION dx.release_smalldb(source regclass, columns text[], workload text[], epsilon float8, target name,
                                   size int DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_smalldb';
COMMENT ON FUNCTION dx.release_smalldb(regclass, text[], text[], float8, name, int) IS 'd_X-private small-database release over WHERE predicates for tiny universes, written to a new table; charges epsilon once';

-- Group release (issue 25): each round selects a query group (a marginal table, a block of
-- disjoint predicates, or a block given by `groups`: one group number per workload query) with the
-- d_X exponential mechanism, by expected improvement (AIM), and measures all its cells at once with
-- the allocation of direct answers; the histogram is fitted to every measurement. rounds NULL: the
-- documented rule (every group measured once, jointly, when selection cannot pay). Charges epsilon
-- once to the caller's budget on source before reading it; a cancelled release stays charged.
CREATE FUNCTION dx.release_synthetic(source regclass, columns text[], workload text, epsilon float8, target name,
                                     rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic';
CREATE FUNCTION dx.release_synthetic(source regclass, columns text[], workload float8[], epsilon float8, target name,
                                     rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic';
CREATE FUNCTION dx.release_synthetic(source regclass, columns text[], workload text[], epsilon float8, target name,
                                     rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS regclass LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic';
COMMENT ON FUNCTION dx.release_synthetic(regclass, text[], text, float8, name, int, int[]) IS 'd_X-private synthetic histogram that measures whole marginal tables per round (AIM-style selection), written to a new table; charges epsilon once';
COMMENT ON FUNCTION dx.release_synthetic(regclass, text[], float8[], float8, name, int, int[]) IS 'd_X-private synthetic histogram that measures whole groups of weight vectors per round, written to a new table; charges epsilon once';
COMMENT ON FUNCTION dx.release_synthetic(regclass, text[], text[], float8, name, int, int[]) IS 'd_X-private synthetic histogram that measures whole groups of WHERE predicates per round, written to a new table; charges epsilon once';

-- The expected error of dx.release_synthetic per workload query before spending anything: the
-- Laplace scale, RMSE and 95% half-width of its measurement in the release, and the same for
-- direct answers (one GROUP BY statement per group at epsilon / groups; dx.last_release's numbers).
-- Reads no row and charges nothing.
CREATE FUNCTION dx.release_synthetic_error(source regclass, columns text[], workload text, epsilon float8,
                                           rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS TABLE (query int, label text, grp int, group_count int, release_rounds int, joint boolean, noise_scale float8, rmse float8,
               ci95_half_width float8, direct_noise_scale float8, direct_rmse float8, direct_ci95_half_width float8)
LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic_error';
CREATE FUNCTION dx.release_synthetic_error(source regclass, columns text[], workload float8[], epsilon float8,
                                           rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS TABLE (query int, label text, grp int, group_count int, release_rounds int, joint boolean, noise_scale float8, rmse float8,
               ci95_half_width float8, direct_noise_scale float8, direct_rmse float8, direct_ci95_half_width float8)
LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic_error';
CREATE FUNCTION dx.release_synthetic_error(source regclass, columns text[], workload text[], epsilon float8,
                                           rounds int DEFAULT NULL, groups int[] DEFAULT NULL)
RETURNS TABLE (query int, label text, grp int, group_count int, release_rounds int, joint boolean, noise_scale float8, rmse float8,
               ci95_half_width float8, direct_noise_scale float8, direct_rmse float8, direct_ci95_half_width float8)
LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_release_synthetic_error';
COMMENT ON FUNCTION dx.release_synthetic_error(regclass, text[], text, float8, int, int[]) IS 'expected noise of dx.release_synthetic and of direct answers per workload query (K-way marginals); free';
COMMENT ON FUNCTION dx.release_synthetic_error(regclass, text[], float8[], float8, int, int[]) IS 'expected noise of dx.release_synthetic and of direct answers per workload query (weight vectors); free';
COMMENT ON FUNCTION dx.release_synthetic_error(regclass, text[], text[], float8, int, int[]) IS 'expected noise of dx.release_synthetic and of direct answers per workload query (WHERE predicates); free';

-- Median-mechanism sessions (MECHANISMS.md §7): the kept set, the sparse-vector threshold and the
-- answers of an interactive session over a workload, so that it survives reconnects. `state` is
-- secret (it holds the current noisy threshold): superusers only, like the ledger. `charges` counts
-- the session's ledger rows (fingerprint 'median:<id>'); a session whose state does not match the
-- ledger (a charged answer whose state change was lost) refuses every further query.
CREATE TABLE dx.median_sessions (
	id bigserial PRIMARY KEY,
	opened_at timestamptz NOT NULL DEFAULT clock_timestamp(),
	role regrole NOT NULL,
	source regclass NOT NULL,
	columns name[] NOT NULL,
	workload text NOT NULL,
	weights float8[],
	epsilon_hard float8 NOT NULL,
	alpha float8 NOT NULL,
	size int NOT NULL,
	max_hard int NOT NULL,
	hard int NOT NULL DEFAULT 0,
	answered int NOT NULL DEFAULT 0,
	charges int NOT NULL,
	status text NOT NULL DEFAULT 'open',
	state bytea NOT NULL,
	CONSTRAINT status_valid CHECK (status IN ('open', 'exhausted', 'aborted'))
);
COMMENT ON TABLE dx.median_sessions IS 'median-mechanism sessions: workload, parameters, hard-query count, status and secret state';
SELECT pg_catalog.pg_extension_config_dump('dx.median_sessions', '');
SELECT pg_catalog.pg_extension_config_dump('dx.median_sessions_id_seq', '');
REVOKE ALL ON dx.median_sessions FROM PUBLIC;

CREATE VIEW dx.my_median_sessions WITH (security_barrier) AS
	SELECT s.id, s.opened_at, s.role, s.source, s.columns, s.workload, s.epsilon_hard, s.alpha, s.size, s.max_hard,
	       s.hard, s.answered, s.status
	FROM dx.median_sessions s
	WHERE pg_catalog.pg_has_role(s.role, 'USAGE');
COMMENT ON VIEW dx.my_median_sessions IS 'the median-mechanism sessions of the current role (without their secret state)';
GRANT SELECT ON dx.my_median_sessions TO PUBLIC;

-- Opens a session over a workload ('marginals:K' or a float8[][] of weight vectors) of declared
-- columns: charges epsilon_hard / 2 (the first sparse-vector run) plus epsilon_hard / 2 for the row
-- count when it is not public; returns the session id. alpha: target accuracy as a fraction of the
-- row count; size: the candidate databases' row count (NULL: SmallDB's default, capped); max_hard:
-- abort after that many hard queries (NULL: min(|Q|, 20 m ln|X|), Roth & Roughgarden's rule).
CREATE FUNCTION dx.median_session_open(source regclass, columns text[], workload text, epsilon_hard float8,
                                       alpha float8 DEFAULT 0.05, size int DEFAULT NULL, max_hard int DEFAULT NULL)
RETURNS bigint LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_median_session_open';
CREATE FUNCTION dx.median_session_open(source regclass, columns text[], workload float8[], epsilon_hard float8,
                                       alpha float8 DEFAULT 0.05, size int DEFAULT NULL, max_hard int DEFAULT NULL)
RETURNS bigint LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_median_session_open';
COMMENT ON FUNCTION dx.median_session_open(regclass, text[], text, float8, float8, int, int) IS 'opens a median-mechanism session over K-way marginals; charges the first sparse-vector run';
COMMENT ON FUNCTION dx.median_session_open(regclass, text[], float8[], float8, float8, int, int) IS 'opens a median-mechanism session over weight vectors; charges the first sparse-vector run';
CREATE FUNCTION dx.median_session_open(source regclass, columns text[], workload text[], epsilon_hard float8,
                                       alpha float8 DEFAULT 0.05, size int DEFAULT NULL, max_hard int DEFAULT NULL)
RETURNS bigint LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_median_session_open';
COMMENT ON FUNCTION dx.median_session_open(regclass, text[], text[], float8, float8, int, int) IS 'opens a median-mechanism session over WHERE predicates (evaluated once, on the declared points); charges the first sparse-vector run';

-- Answers workload query number `query` (1-based) of a session of the current role: easy queries
-- from the kept set (free), hard ones with d_X Laplace noise (charged epsilon_hard); an answered
-- query is returned again for free. Outside a transaction block only.
CREATE FUNCTION dx.median_session_query(session bigint, query int,
	OUT answer float8, OUT hard boolean, OUT epsilon float8, OUT reused boolean, OUT status text)
RETURNS record LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_median_session_query';
COMMENT ON FUNCTION dx.median_session_query(bigint, int) IS 'answers one workload query of a median-mechanism session (easy: free; hard: charged)';

-- The workload of a session: query numbers, labels and the answers given so far (no data read).
CREATE FUNCTION dx.median_session_queries(session bigint)
RETURNS TABLE (query int, label text, answer float8, hard boolean)
LANGUAGE c VOLATILE STRICT AS 'MODULE_PATHNAME', 'dx_median_session_queries';
COMMENT ON FUNCTION dx.median_session_queries(bigint) IS 'the workload queries of a median-mechanism session with the answers given so far';

-- Top-k (issue 24): the k most frequent declared values of a column, ranked, by the exponential
-- mechanism's top-k under d_X (k peeling rounds at epsilon / k each; doc/mechanisms.md "Top-k
-- under d_X"). condition: an optional WHERE predicate over column_name and condition_columns,
-- evaluated on the declared points. Returns values only, never a count. Charges epsilon once to
-- the caller's budget on source before reading it.
CREATE FUNCTION dx.top_k(source regclass, column_name text, k int, epsilon float8, condition text DEFAULT NULL,
                         condition_columns text[] DEFAULT NULL)
RETURNS TABLE (rank int, value text) LANGUAGE c VOLATILE AS 'MODULE_PATHNAME', 'dx_top_k';
COMMENT ON FUNCTION dx.top_k(regclass, text, int, float8, text, text[]) IS 'd_X-private top-k most frequent declared values of a column (exponential mechanism, one-shot top-k); charges epsilon once';
