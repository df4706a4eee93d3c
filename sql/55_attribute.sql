-- Attribute privacy (MECHANISMS.md §6; README "Attribute privacy"): a DBA-declared policy that hides
-- a distribution parameter of a table (the mean of a protected attribute), the releases
-- dx.attr_avg / dx.attr_sum (APGM, charged to the separate attribute-privacy budget),
-- dx.explain_attribute, and the Wasserstein calibration for small declared models.

-- One row per protected attribute (secret) of a table: the mean of column `attribute` is hidden
-- within any set of means of diameter `diameter`, for every data model of the declared Gaussian
-- family (`model`: attribute names and covariance matrices, kept parsed in `attributes` and
-- `covariances`, k matrices of m x m flattened row-major). Every release spends (epsilon, delta) of
-- the attribute-privacy budget; with record_privacy it also carries the table's d_X-private noise.
CREATE TABLE dx.attribute_policies (
	relid regclass NOT NULL REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	attribute name NOT NULL,
	diameter float8 NOT NULL,
	model jsonb NOT NULL,
	attributes name[] NOT NULL,
	covariances float8[] NOT NULL,
	epsilon float8 NOT NULL,
	delta float8 NOT NULL,
	calibration text NOT NULL DEFAULT 'analytic',
	record_privacy boolean NOT NULL DEFAULT true,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (relid, attribute),
	CONSTRAINT diameter_valid CHECK (diameter >= 0 AND diameter < 'Infinity'::float8),
	CONSTRAINT epsilon_valid CHECK (epsilon > 0 AND epsilon < 'Infinity'::float8),
	CONSTRAINT delta_valid CHECK (delta > 0 AND delta < 1),
	CONSTRAINT calibration_valid CHECK (calibration IN ('analytic', 'classical'))
);
COMMENT ON TABLE dx.attribute_policies IS 'attribute-privacy policies: protected attribute, secret diameter, declared Gaussian data model and per-release epsilon and delta (owner-only)';
REVOKE ALL ON dx.attribute_policies FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('dx.attribute_policies', '');

-- Checks a parsed Gaussian model against rel (C, core/attribute_privacy.h): every attribute a
-- distinct column of rel of a numeric type, `matrices` covariances of m x m entries (flattened
-- row-major), each finite, symmetric and positive semi-definite. Raises 22023 with a hint.
CREATE FUNCTION dx._check_gaussian_model(rel regclass, attributes name[], covariances float8[], matrices int)
RETURNS void LANGUAGE c STRICT STABLE AS 'MODULE_PATHNAME', 'dx_check_gaussian_model';
REVOKE EXECUTE ON FUNCTION dx._check_gaussian_model(regclass, name[], float8[], int) FROM PUBLIC;

-- Parses {"family": "gaussian", "attributes": [...], "covariance": [[...], ...]} or the same with
-- "covariances": [matrix, ...] (Theta: one N(mu, V) per matrix, any mean) and checks it for rel.
CREATE FUNCTION dx._parse_attribute_model(rel regclass, model jsonb, OUT attributes name[], OUT covariances float8[])
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	hint constant text := 'Write {"family": "gaussian", "attributes": ["col1", "col2"], "covariance": [[v11, v12], '
	                      '[v21, v22]]}, or "covariances": [matrix, ...] for several models.';
	matrices jsonb;
	k int;
BEGIN
	IF model IS NULL OR jsonb_typeof(model) <> 'object' THEN
		RAISE EXCEPTION 'data model must be a JSON object' USING ERRCODE = '22023', HINT = hint;
	END IF;
	IF EXISTS (SELECT 1 FROM jsonb_object_keys(model) key WHERE key NOT IN ('family', 'attributes', 'covariance', 'covariances')) THEN
		RAISE EXCEPTION 'data model has an unknown key' USING ERRCODE = '22023', HINT = hint;
	END IF;
	IF model->>'family' IS DISTINCT FROM 'gaussian' THEN
		RAISE EXCEPTION 'data model family must be "gaussian"' USING ERRCODE = '22023',
			HINT = 'Only multivariate Gaussian models are supported by dx.attr_avg and dx.attr_sum.';
	END IF;
	IF jsonb_typeof(model->'attributes') IS DISTINCT FROM 'array' OR jsonb_array_length(model->'attributes') = 0
	   OR EXISTS (SELECT 1 FROM jsonb_array_elements(model->'attributes') e WHERE jsonb_typeof(e) <> 'string') THEN
		RAISE EXCEPTION 'data model attributes must be a non-empty array of column names' USING ERRCODE = '22023', HINT = hint;
	END IF;
	attributes := ARRAY(SELECT e::name FROM jsonb_array_elements_text(model->'attributes') WITH ORDINALITY AS t(e, i) ORDER BY i);
	IF (model ? 'covariance') = (model ? 'covariances') THEN
		RAISE EXCEPTION 'data model needs exactly one of "covariance" and "covariances"' USING ERRCODE = '22023', HINT = hint;
	END IF;
	matrices := CASE WHEN model ? 'covariance' THEN jsonb_build_array(model->'covariance') ELSE model->'covariances' END;
	IF jsonb_typeof(matrices) <> 'array' OR jsonb_array_length(matrices) = 0
	   OR EXISTS (SELECT 1 FROM jsonb_array_elements(matrices) m WHERE jsonb_typeof(m) <> 'array'
	              OR EXISTS (SELECT 1 FROM jsonb_array_elements(m) r WHERE jsonb_typeof(r) <> 'array'
	                         OR EXISTS (SELECT 1 FROM jsonb_array_elements(r) x WHERE jsonb_typeof(x) <> 'number'))) THEN
		RAISE EXCEPTION 'covariances must be matrices of numbers' USING ERRCODE = '22023', HINT = hint;
	END IF;
	IF EXISTS (SELECT 1 FROM jsonb_array_elements(matrices) m WHERE jsonb_array_length(m) <> cardinality(attributes)
	           OR EXISTS (SELECT 1 FROM jsonb_array_elements(m) r WHERE jsonb_array_length(r) <> cardinality(attributes))) THEN
		RAISE EXCEPTION 'every covariance must be a % x % matrix, one row and column per attribute',
			cardinality(attributes), cardinality(attributes) USING ERRCODE = '22023', HINT = hint;
	END IF;
	k := jsonb_array_length(matrices);
	covariances := ARRAY(
		SELECT x::text::float8
		FROM jsonb_array_elements(matrices) WITH ORDINALITY AS mm(m, mi),
		     jsonb_array_elements(mm.m) WITH ORDINALITY AS rr(r, ri),
		     jsonb_array_elements(rr.r) WITH ORDINALITY AS xx(x, xi)
		ORDER BY mi, ri, xi);
	PERFORM dx._check_gaussian_model(rel, attributes, covariances, k);
END $$;
REVOKE EXECUTE ON FUNCTION dx._parse_attribute_model(regclass, jsonb) FROM PUBLIC;

-- Declares (or replaces) the protection of one attribute of a protected table. The table's row
-- count must be public (presence 'Infinity'): the attribute-privacy model is one of n-record tables.
CREATE FUNCTION dx.protect_attribute(rel regclass, attribute name, diameter float8, model jsonb,
	epsilon float8 DEFAULT 0.5, delta float8 DEFAULT 1e-5, calibration text DEFAULT 'analytic',
	record_privacy boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	parsed record;
	presence float8;
BEGIN
	PERFORM dx._check_owner(rel);
	SELECT p.presence INTO presence FROM dx.protected_tables p WHERE p.relid = rel;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table "%" is not protected', rel USING ERRCODE = '22023',
			HINT = 'Call dx.protect_table first.';
	END IF;
	IF presence <> 'Infinity'::float8 THEN
		RAISE EXCEPTION 'attribute privacy needs a public row count on table "%"', rel USING ERRCODE = '22023',
			HINT = 'The attribute-privacy model describes tables of n records: protect the table with presence '
			       '''Infinity'' (dx.protect_table(rel, ''Infinity'')); value changes stay d_X-protected.';
	END IF;
	IF attribute IS NULL THEN
		RAISE EXCEPTION 'attribute must not be null' USING ERRCODE = '22004', HINT = 'Name the protected column.';
	END IF;
	IF diameter IS NULL OR diameter = 'NaN'::float8 OR diameter < 0 OR diameter = 'Infinity'::float8 THEN
		RAISE EXCEPTION 'secret diameter must be finite and non-negative, got %', diameter USING ERRCODE = '22023',
			HINT = 'The diameter is the largest difference between two values of the attribute''s mean to be hidden.';
	END IF;
	IF epsilon IS NULL OR epsilon = 'NaN'::float8 OR epsilon <= 0 OR epsilon = 'Infinity'::float8 THEN
		RAISE EXCEPTION 'epsilon must be positive and finite, got %', epsilon USING ERRCODE = '22023',
			HINT = 'Every attribute release spends this epsilon from the attribute-privacy budget.';
	END IF;
	IF delta IS NULL OR delta = 'NaN'::float8 OR delta <= 0 OR delta >= 1 THEN
		RAISE EXCEPTION 'delta must lie strictly between 0 and 1, got %', delta USING ERRCODE = '22023',
			HINT = 'The Gaussian mechanism needs a delta; use for example 1e-5.';
	END IF;
	IF calibration IS NULL OR calibration NOT IN ('analytic', 'classical') THEN
		RAISE EXCEPTION 'calibration must be ''analytic'' or ''classical''' USING ERRCODE = '22023',
			HINT = '''analytic'' (default) is exact for every epsilon; ''classical'' is the seed''s sqrt(2 ln(1.25/delta)) rule, epsilon < 1.';
	END IF;
	IF calibration = 'classical' AND epsilon >= 1 THEN
		RAISE EXCEPTION 'classical calibration requires epsilon below 1' USING ERRCODE = '22023',
			HINT = 'Use calibration => ''analytic''.';
	END IF;
	IF record_privacy IS NULL THEN
		RAISE EXCEPTION 'record_privacy must not be null' USING ERRCODE = '22004',
			HINT = 'true: releases also carry the table''s d_X-private noise; false: attribute privacy only.';
	END IF;
	parsed := dx._parse_attribute_model(rel, model);
	IF NOT attribute = ANY (parsed.attributes) THEN
		RAISE EXCEPTION 'attribute "%" is not an attribute of the model', attribute USING ERRCODE = '22023',
			HINT = 'List the protected column in the model''s "attributes".';
	END IF;
	INSERT INTO dx.attribute_policies AS a (relid, attribute, diameter, model, attributes, covariances, epsilon,
		delta, calibration, record_privacy)
	VALUES (rel, attribute, diameter, model, parsed.attributes, parsed.covariances, epsilon, delta, calibration,
		record_privacy)
	ON CONFLICT ON CONSTRAINT attribute_policies_pkey DO UPDATE SET
		diameter = excluded.diameter, model = excluded.model, attributes = excluded.attributes,
		covariances = excluded.covariances, epsilon = excluded.epsilon, delta = excluded.delta,
		calibration = excluded.calibration, record_privacy = excluded.record_privacy, created_at = now();
END $$;
COMMENT ON FUNCTION dx.protect_attribute(regclass, name, float8, jsonb, float8, float8, text, boolean) IS
'declares that the mean of a column is hidden within the given diameter, for the declared Gaussian data model (attribute privacy)';

-- Removes the protection of one attribute (or of every attribute when attribute is NULL).
CREATE FUNCTION dx.unprotect_attribute(rel regclass, attribute name DEFAULT NULL)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_owner(rel);
	DELETE FROM dx.attribute_policies a WHERE a.relid = rel
		AND (unprotect_attribute.attribute IS NULL OR a.attribute = unprotect_attribute.attribute);
	IF NOT FOUND THEN
		RAISE EXCEPTION 'table "%" has no such attribute-privacy policy', rel USING ERRCODE = '22023',
			HINT = 'See dx.attribute_policies.';
	END IF;
END $$;
COMMENT ON FUNCTION dx.unprotect_attribute(regclass, name) IS 'removes attribute-privacy policies of a table';

-- Sets a role's attribute-privacy budget on a table: the epsilon and delta its attribute releases
-- may spend in total, or per period of the table grant's refresh interval. Separate from the d_X
-- budget of dx.grant_budget (a grant row with d_X budget 0 is created when there is none).
-- What was spent is never refunded.
CREATE FUNCTION dx.grant_attribute_budget(role regrole, rel regclass, epsilon float8, delta float8 DEFAULT 1e-4)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	PERFORM dx._check_grant(role, rel, epsilon,
		'Grant for example 2.0; every attribute release spends its policy''s epsilon from this budget.');
	IF delta IS NULL OR delta = 'NaN'::float8 OR delta < 0 OR delta > 1 THEN
		RAISE EXCEPTION 'budget delta must be between 0 and 1, got %', delta USING ERRCODE = '22023',
			HINT = 'Grant for example 1e-4: every attribute release spends its policy''s delta from this budget.';
	END IF;
	INSERT INTO dx.budget_grants AS g (role, relid, granted, attr_granted, attr_delta_granted)
	VALUES (role, rel, 0, epsilon, delta)
	ON CONFLICT ON CONSTRAINT budget_grants_pkey DO UPDATE SET
		attr_granted = excluded.attr_granted, attr_delta_granted = excluded.attr_delta_granted;
END $$;
COMMENT ON FUNCTION dx.grant_attribute_budget(regrole, regclass, float8, float8) IS
'sets the attribute-privacy budget (epsilon, delta) of a role on a protected table';

-- Releases: the mean or the sum of a declared column with the APGM noise of the table's
-- attribute policies (and the d_X noise with record_privacy), charged before the answer leaves.
CREATE FUNCTION dx.attr_avg(rel regclass, col name) RETURNS float8
LANGUAGE c STRICT VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'dx_attr_avg';
CREATE FUNCTION dx.attr_sum(rel regclass, col name) RETURNS float8
LANGUAGE c STRICT VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'dx_attr_sum';
COMMENT ON FUNCTION dx.attr_avg(regclass, name) IS 'attribute-private mean of a declared column (APGM; attribute-privacy budget)';
COMMENT ON FUNCTION dx.attr_sum(regclass, name) IS 'attribute-private sum of a declared column (APGM; attribute-privacy budget)';

-- The aggregate spelling, SELECT dx.attr_avg(col), dx.attr_sum(col) FROM t: markers that the
-- analyzer replaces by the calls above (src/pg/planner/attr_rewrite.h); a marker that reaches the
-- executor (query not analysed) raises an error.
CREATE AGGREGATE dx.attr_avg("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
CREATE AGGREGATE dx.attr_sum("any") (SFUNC = dx._marker_transfn, STYPE = internal,
	FINALFUNC = dx._marker_sum_finalfn, PARALLEL = SAFE);
COMMENT ON AGGREGATE dx.attr_avg("any") IS 'attribute-private mean of a declared column of the table in FROM (same as dx.attr_avg(table, column))';
COMMENT ON AGGREGATE dx.attr_sum("any") IS 'attribute-private sum of a declared column of the table in FROM (same as dx.attr_sum(table, column))';

-- What dx.attr_avg / dx.attr_sum (kind 'avg' or 'sum') would add and protect, without spending:
-- one row per protected attribute and one for the d_X component.
CREATE FUNCTION dx.explain_attribute(rel regclass, col name, kind text DEFAULT 'avg')
RETURNS TABLE (component text, protects text, diameter float8, epsilon float8, delta float8, sensitivity float8,
               data_variance float8, noise_sd float8, binding boolean, ci95_half_width float8, budget text)
LANGUAGE c STRICT VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'dx_explain_attribute';
COMMENT ON FUNCTION dx.explain_attribute(regclass, name, text) IS
'noise of an attribute release per protected attribute (APGM sensitivity, credited data variance, noise standard deviation) and its d_X component, without spending';

-- Wasserstein mechanism (§6.7) for small declared models: conditionals is a JSON array of models,
-- each an array (one entry per secret) of laws [P(F = 0), P(F = 1), ...]; returns W / epsilon,
-- the scale of the Laplace noise. Computation only: reads no table, charges nothing.
CREATE FUNCTION dx._wasserstein_scale(law_lengths int[], laws_per_model int[], probabilities float8[], epsilon float8)
RETURNS float8 LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_wasserstein_scale';
REVOKE EXECUTE ON FUNCTION dx._wasserstein_scale(int[], int[], float8[], float8) FROM PUBLIC;
CREATE FUNCTION dx.wasserstein_scale(conditionals jsonb, epsilon float8) RETURNS float8
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF jsonb_typeof(conditionals) <> 'array'
	   OR EXISTS (SELECT 1 FROM jsonb_array_elements(conditionals) m WHERE jsonb_typeof(m) <> 'array'
	              OR EXISTS (SELECT 1 FROM jsonb_array_elements(m) l WHERE jsonb_typeof(l) <> 'array'
	                         OR EXISTS (SELECT 1 FROM jsonb_array_elements(l) p WHERE jsonb_typeof(p) <> 'number'))) THEN
		RAISE EXCEPTION 'conditionals must be an array of models, each an array of laws of numbers' USING ERRCODE = '22023',
			HINT = 'Write for example [[[0.5, 0.5], [0.25, 0.75]]]: one model with two secrets.';
	END IF;
	RETURN dx._wasserstein_scale(
		ARRAY(SELECT jsonb_array_length(l) FROM jsonb_array_elements(conditionals) WITH ORDINALITY AS mm(m, mi),
		      jsonb_array_elements(mm.m) WITH ORDINALITY AS ll(l, li) ORDER BY mi, li),
		ARRAY(SELECT jsonb_array_length(m) FROM jsonb_array_elements(conditionals) WITH ORDINALITY AS mm(m, mi) ORDER BY mi),
		ARRAY(SELECT p::text::float8 FROM jsonb_array_elements(conditionals) WITH ORDINALITY AS mm(m, mi),
		      jsonb_array_elements(mm.m) WITH ORDINALITY AS ll(l, li),
		      jsonb_array_elements(ll.l) WITH ORDINALITY AS pp(p, pi) ORDER BY mi, li, pi),
		epsilon);
END $$;
COMMENT ON FUNCTION dx.wasserstein_scale(jsonb, float8) IS
'Laplace scale W/epsilon of the Wasserstein mechanism: W the largest infinity-Wasserstein distance between the laws of F under two secrets of a declared model';

-- Attribute-private Markov quilt mechanism (§6.6) for a count over a declared Bayesian network:
-- the Laplace scale per sensitive attribute (Algorithm 3) and the quilt that gives it. network:
-- {"attributes": [names], "edges": [[parent, child], ...]}; influences: {"<sensitive>": {"<q1>,<q2>":
-- e, ...}} (declared max-influences e_Theta(X_Q | X_i) of quilts, by comma-separated member names);
-- a count whose predicate reads the queried attributes changes by at most `records` when any of
-- them changes (Delta_S F = records for S not empty). Computation only: reads no table.
CREATE FUNCTION dx._markov_quilt_scale(attributes text[], edges text[], sensitive text[], queried text[],
	influence_attributes text[], influence_quilts text[], influence_values float8[], records float8, epsilon float8)
RETURNS TABLE (sensitive_attribute text, scale float8, quilt text[], nearby text[], influence float8)
LANGUAGE c STRICT IMMUTABLE PARALLEL SAFE AS 'MODULE_PATHNAME', 'dx_markov_quilt_scale';
REVOKE EXECUTE ON FUNCTION dx._markov_quilt_scale(text[], text[], text[], text[], text[], text[], float8[], float8, float8) FROM PUBLIC;
CREATE FUNCTION dx.markov_quilt_scale(network jsonb, sensitive text[], queried text[], influences jsonb,
	records float8, epsilon float8)
RETURNS TABLE (sensitive_attribute text, scale float8, quilt text[], nearby text[], influence float8)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	hint constant text := 'Write {"attributes": ["a", "b", "c"], "edges": [["a", "b"], ["b", "c"]]} and influences '
	                      '{"a": {"b": 0.1, "b,c": 0.2}}.';
BEGIN
	IF jsonb_typeof(network) <> 'object' OR jsonb_typeof(network->'attributes') IS DISTINCT FROM 'array'
	   OR EXISTS (SELECT 1 FROM jsonb_array_elements(network->'attributes') a WHERE jsonb_typeof(a) <> 'string')
	   OR (network ? 'edges' AND (jsonb_typeof(network->'edges') <> 'array'
	       OR EXISTS (SELECT 1 FROM jsonb_array_elements(network->'edges') e WHERE jsonb_typeof(e) <> 'array'
	                  OR jsonb_array_length(e) <> 2
	                  OR EXISTS (SELECT 1 FROM jsonb_array_elements(e) x WHERE jsonb_typeof(x) <> 'string'))))
	   OR EXISTS (SELECT 1 FROM jsonb_object_keys(network) k WHERE k NOT IN ('attributes', 'edges')) THEN
		RAISE EXCEPTION 'network must be {"attributes": [names], "edges": [[parent, child], ...]}' USING ERRCODE = '22023', HINT = hint;
	END IF;
	IF jsonb_typeof(influences) <> 'object'
	   OR EXISTS (SELECT 1 FROM jsonb_each(influences) i WHERE jsonb_typeof(i.value) <> 'object'
	              OR EXISTS (SELECT 1 FROM jsonb_each(i.value) q WHERE jsonb_typeof(q.value) <> 'number')) THEN
		RAISE EXCEPTION 'influences must map sensitive attributes to {"quilt members": max-influence}' USING ERRCODE = '22023', HINT = hint;
	END IF;
	RETURN QUERY SELECT * FROM dx._markov_quilt_scale(
		ARRAY(SELECT a FROM jsonb_array_elements_text(network->'attributes') WITH ORDINALITY AS t(a, i) ORDER BY i),
		ARRAY(SELECT x FROM jsonb_array_elements(coalesce(network->'edges', '[]')) WITH ORDINALITY AS e(e, ei),
		      jsonb_array_elements_text(e.e) WITH ORDINALITY AS xx(x, xi) ORDER BY ei, xi),
		sensitive, queried,
		ARRAY(SELECT i.key FROM jsonb_each(influences) i, jsonb_each(i.value) q ORDER BY i.key, q.key),
		ARRAY(SELECT q.key FROM jsonb_each(influences) i, jsonb_each(i.value) q ORDER BY i.key, q.key),
		ARRAY(SELECT q.value::text::float8 FROM jsonb_each(influences) i, jsonb_each(i.value) q ORDER BY i.key, q.key),
		records, epsilon);
END $$;
COMMENT ON FUNCTION dx.markov_quilt_scale(jsonb, text[], text[], jsonb, float8, float8) IS
'Laplace scale of the attribute-private Markov quilt mechanism for a count over a declared Bayesian network, per sensitive attribute, with its best quilt';
