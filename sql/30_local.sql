-- Local model (MECHANISMS.md §4): randomisers applied where a value is collected, reconstruction of
-- the value distribution from the reports (IBU), and the Kantorovich distance between distributions.
-- These functions read no protected table and charge no budget: the randomiser's output is the
-- private report, and IBU / Kantorovich are post-processing of reports that are already private.

CREATE FUNCTION dx.geometric_randomize(value int, lo int, hi int, epsilon float8) RETURNS int
LANGUAGE c STRICT VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_geometric_randomize';
COMMENT ON FUNCTION dx.geometric_randomize(int, int, int, float8) IS
'truncated geometric randomiser: clamp(value + two-sided geometric noise, lo, hi); epsilon*|x-x''|-private';

CREATE FUNCTION dx.krr_randomize(value int, lo int, hi int, epsilon float8) RETURNS int
LANGUAGE c STRICT VOLATILE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_krr_randomize';
COMMENT ON FUNCTION dx.krr_randomize(int, int, int, float8) IS
'k-ary randomized response on lo..hi: keeps value w.p. e^eps/(e^eps+k-1), else a uniform other value; epsilon-LDP';

CREATE FUNCTION dx.kantorovich(p float8[], q float8[]) RETURNS float8
LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_kantorovich';
COMMENT ON FUNCTION dx.kantorovich(float8[], float8[]) IS
'Kantorovich (earth mover''s) distance between two distributions over the same ordered values 0..n-1';

-- dx.ibu support functions: the state counts the reports of each value (exact, mergeable); the
-- final function runs the iterative Bayesian update.
CREATE FUNCTION dx._ibu_transfn(internal, int, int, int, float8, text, int) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_ibu_transfn';
CREATE FUNCTION dx._ibu_combinefn(internal, internal) RETURNS internal
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_ibu_combinefn';
CREATE FUNCTION dx._ibu_serialize(internal) RETURNS bytea
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_ibu_serialize';
CREATE FUNCTION dx._ibu_deserialize(bytea, internal) RETURNS internal
LANGUAGE c STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_ibu_deserialize';
CREATE FUNCTION dx._ibu_finalfn(internal) RETURNS float8[]
LANGUAGE c PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_ibu_finalfn';
COMMENT ON FUNCTION dx._ibu_transfn(internal, int, int, int, float8, text, int) IS
'counts one report of dx.ibu (the first row fixes and validates the parameters)';
COMMENT ON FUNCTION dx._ibu_combinefn(internal, internal) IS 'adds the report counts of two dx.ibu states';
COMMENT ON FUNCTION dx._ibu_serialize(internal) IS 'self-describing serialisation of a dx.ibu state';
COMMENT ON FUNCTION dx._ibu_deserialize(bytea, internal) IS 'inverse of dx._ibu_serialize';
COMMENT ON FUNCTION dx._ibu_finalfn(internal) IS 'runs the iterative Bayesian update on the counted reports';

CREATE AGGREGATE dx.ibu(reported int, lo int, hi int, epsilon float8, mechanism text, iterations int) (
	SFUNC = dx._ibu_transfn, STYPE = internal, FINALFUNC = dx._ibu_finalfn,
	COMBINEFUNC = dx._ibu_combinefn, SERIALFUNC = dx._ibu_serialize,
	DESERIALFUNC = dx._ibu_deserialize, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.ibu(int, int, int, float8, text, int) IS
'estimated distribution of the true values lo..hi from reports of dx.geometric_randomize (''geometric'') or dx.krr_randomize (''krr''), by iterative Bayesian update';
