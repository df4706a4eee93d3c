-- Attribute privacy (MECHANISMS.md §6; README "Attribute privacy"): a DBA-declared policy that hides
-- a distribution parameter of a table (the mean of a protected attribute), the releases
-- dx.attr_avg / dx.attr_sum (APGM, charged to the separate attribute-privacy budget),
-- dx.explain_attribute, and the Wasserstein calibration for small declared models.

-- One row per protected attribute (secret) of a table, under one declared data-model family:
-- * gaussian (APGM, §6.3-6.5): the mean of column `attribute` is hidden within any set of means of
--   diameter `diameter`, for every model of the declared Gaussian family (`attributes` and
--   `covariances`, k matrices of m x m flattened row-major); optionally the DBA asserts that the
--   Gaussian approximates the data within eta-approximate max-divergence approximation_lambda
--   (Theorem 3: releases then carry and spend (epsilon + 2 lambda, e^lambda delta + eta)).
-- * bayesian_network (APMQM, §6.6): `attribute` is a sensitive node of the declared network over
--   `attributes` (`edges`: parent, child, parent, child, ...); `quilts` (comma-separated members)
--   and `influences` are the declared (or computed from declared parameter tables) max-influences
--   e(X_Q | X_attribute); pure epsilon (delta 0).
-- * binary_conditional (Wasserstein, §6.7): `attributes` = {released, attribute}, both 0/1 columns;
--   `theta` = {p1 low, p1 high, p2 low, p2 high, grid step}; the protected count is hidden within
--   windows of diameter * n; pure epsilon (delta 0).
-- Every release spends (epsilon, delta) of the attribute-privacy budget; with record_privacy it also
-- carries the table's d_X-private noise.
CREATE TABLE dx.attribute_policies (
	relid regclass NOT NULL REFERENCES dx.protected_tables (relid) ON DELETE CASCADE,
	attribute name NOT NULL,
	diameter float8 NOT NULL,
	model jsonb NOT NULL,
	family text NOT NULL DEFAULT 'gaussian',
	attributes name[] NOT NULL,
	covariances float8[] NOT NULL DEFAULT '{}',
	edges name[] NOT NULL DEFAULT '{}',
	quilts text[] NOT NULL DEFAULT '{}',
	influences float8[] NOT NULL DEFAULT '{}',
	theta float8[] NOT NULL DEFAULT '{}',
	approximation_lambda float8 NOT NULL DEFAULT 0,
	approximation_eta float8 NOT NULL DEFAULT 0,
	epsilon float8 NOT NULL,
	delta float8 NOT NULL,
	calibration text NOT NULL DEFAULT 'analytic',
	record_privacy boolean NOT NULL DEFAULT true,
	created_at timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (relid, attribute),
	CONSTRAINT diameter_valid CHECK (diameter >= 0 AND diameter < 'Infinity'::float8),
	CONSTRAINT family_valid CHECK (family IN ('gaussian', 'bayesian_network', 'binary_conditional')),
	CONSTRAINT epsilon_valid CHECK (epsilon > 0 AND epsilon < 'Infinity'::float8),
	CONSTRAINT delta_valid CHECK (CASE WHEN family = 'gaussian' THEN delta > 0 AND delta < 1 ELSE delta = 0 END),
	CONSTRAINT approximation_valid CHECK (approximation_lambda >= 0 AND approximation_lambda < 'Infinity'::float8
		AND approximation_eta >= 0 AND approximation_eta < 1 AND (family = 'gaussian'
		OR (approximation_lambda = 0 AND approximation_eta = 0))),
	CONSTRAINT calibration_valid CHECK (calibration IN ('analytic', 'classical'))
);
COMMENT ON TABLE dx.attribute_policies IS 'attribute-privacy policies: protected attribute, secret diameter, declared data model (gaussian, bayesian_network or binary_conditional) and per-release epsilon and delta (owner-only)';
REVOKE ALL ON dx.attribute_policies FROM PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('dx.attribute_policies', '');

-- Checks a parsed Gaussian model against rel (C, core/attribute_privacy.h): every attribute a
-- distinct column of rel of a numeric type, `matrices` covariances of m x m entries (flattened
-- row-major), each finite, symmetric and positive semi-definite. Raises 22023 with a hint.
CREATE FUNCTION dx._check_gaussian_model(rel regclass, attributes name[], covariances float8[], matrices int)
RETURNS void LANGUAGE c STRICT STABLE AS 'MODULE_PATHNAME', 'dx_check_gaussian_model';
REVOKE EXECUTE ON FUNCTION dx._check_gaussian_model(regclass, name[], float8[], int) FROM PUBLIC;

-- Checks a declared Bayesian network against rel and the sensitive attribute (C): attributes are
-- distinct columns of rel, edges ([parent, child] flattened) join declared attributes without a
-- cycle, the sensitive attribute is declared, every quilt names declared attributes other than the
-- sensitive one, influences are >= 0 (not NaN; +Infinity marks an unusable quilt). 22023 with a hint.
CREATE FUNCTION dx._check_network_model(rel regclass, attribute name, attributes name[], edges name[], quilts text[],
	influences float8[])
RETURNS void LANGUAGE c STRICT STABLE AS 'MODULE_PATHNAME', 'dx_check_network_model';
REVOKE EXECUTE ON FUNCTION dx._check_network_model(regclass, name, name[], name[], text[], float8[]) FROM PUBLIC;

-- Definition 8 on a declared parameter table (core max_influence): rows = values of the sensitive
-- parameter, each row the law P(phi_Q = k | phi_i = a) (flattened row-major, `rows` rows).
CREATE FUNCTION dx._max_influence(rows int, probabilities float8[])
RETURNS float8 LANGUAGE c STRICT IMMUTABLE AS 'MODULE_PATHNAME', 'dx_max_influence';
REVOKE EXECUTE ON FUNCTION dx._max_influence(int, float8[]) FROM PUBLIC;

-- Checks a binary conditional model (C): both columns of rel, numeric and distinct, theta = {p1
-- low, p1 high, p2 low, p2 high, step} valid (core validate_binary_conditional). 22023 with a hint.
CREATE FUNCTION dx._check_binary_model(rel regclass, attributes name[], theta float8[])
RETURNS void LANGUAGE c STRICT STABLE AS 'MODULE_PATHNAME', 'dx_check_binary_model';
REVOKE EXECUTE ON FUNCTION dx._check_binary_model(regclass, name[], float8[]) FROM PUBLIC;

-- Parses a data model for the protected `attribute` of rel and checks it (see dx.attribute_policies):
--   {"family": "gaussian", "attributes": [...], "covariance": [[...], ...]} or "covariances": [matrix,
--     ...], optionally "approximation": {"lambda": l, "eta": e};
--   {"family": "bayesian_network", "attributes": [...], "edges": [[parent, child], ...],
--     "influences": {"<member>,<member>": e or [[P(phi_Q | phi_attribute = a)], ...], ...}};
--   {"family": "binary_conditional", "released": column, "p1": [low, high], "p2": [low, high], "grid": step}.
CREATE FUNCTION dx._parse_attribute_model(rel regclass, model jsonb, OUT attributes name[], OUT covariances float8[],
	OUT family text, OUT edges name[], OUT quilts text[], OUT influences float8[], OUT theta float8[],
	OUT approximation_lambda float8, OUT approximation_eta float8)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	hint constant text := 'Write {"family": "gaussian", "attributes": ["col1", "col2"], "covariance": [[v11, v12], '
	                      '[v21, v22]]}, or "covariances": [matrix, ...] for several models.';
	net_hint constant text := 'Write {"family": "bayesian_network", "attributes": ["a", "b", "c"], "edges": [["a", "b"]], '
	                          '"influences": {"b": 0.2, "b,c": 0.1}}: max-influences of quilts of the protected attribute.';
	bin_hint constant text := 'Write {"family": "binary_conditional", "released": "col", "p1": [0.4, 0.6], '
	                          '"p2": [0.4, 0.6], "grid": 0.01}: p1 = P(col = 1 | protected = 1), p2 = P(col = 1 | protected = 0).';
	matrices jsonb;
	k int;
	q record;
BEGIN
	IF model IS NULL OR jsonb_typeof(model) <> 'object' THEN
		RAISE EXCEPTION 'data model must be a JSON object' USING ERRCODE = '22023', HINT = hint;
	END IF;
	family := model->>'family';
	covariances := '{}'; edges := '{}'; quilts := '{}'; influences := '{}'; theta := '{}';
	approximation_lambda := 0; approximation_eta := 0;
	IF family = 'bayesian_network' THEN
		IF EXISTS (SELECT 1 FROM jsonb_object_keys(model) key WHERE key NOT IN ('family', 'attributes', 'edges', 'influences')) THEN
			RAISE EXCEPTION 'bayesian network model has an unknown key' USING ERRCODE = '22023', HINT = net_hint;
		END IF;
		IF jsonb_typeof(model->'attributes') IS DISTINCT FROM 'array' OR jsonb_array_length(model->'attributes') = 0
		   OR EXISTS (SELECT 1 FROM jsonb_array_elements(model->'attributes') e WHERE jsonb_typeof(e) <> 'string') THEN
			RAISE EXCEPTION 'data model attributes must be a non-empty array of column names' USING ERRCODE = '22023', HINT = net_hint;
		END IF;
		IF (model ? 'edges') AND (jsonb_typeof(model->'edges') <> 'array'
		    OR EXISTS (SELECT 1 FROM jsonb_array_elements(model->'edges') e WHERE jsonb_typeof(e) <> 'array'
		               OR jsonb_array_length(e) <> 2
		               OR EXISTS (SELECT 1 FROM jsonb_array_elements(e) x WHERE jsonb_typeof(x) <> 'string'))) THEN
			RAISE EXCEPTION 'network edges must be pairs [parent, child] of attribute names' USING ERRCODE = '22023', HINT = net_hint;
		END IF;
		IF jsonb_typeof(model->'influences') IS DISTINCT FROM 'object' THEN
			RAISE EXCEPTION 'network influences must map quilts to max-influences' USING ERRCODE = '22023', HINT = net_hint;
		END IF;
		attributes := ARRAY(SELECT e::name FROM jsonb_array_elements_text(model->'attributes') WITH ORDINALITY AS t(e, i) ORDER BY i);
		edges := ARRAY(SELECT x::name FROM jsonb_array_elements(coalesce(model->'edges', '[]')) WITH ORDINALITY AS e(e, ei),
		               jsonb_array_elements_text(e.e) WITH ORDINALITY AS xx(x, xi) ORDER BY ei, xi);
		FOR q IN SELECT i.key, i.value FROM jsonb_each(model->'influences') i ORDER BY i.key LOOP
			quilts := quilts || q.key;
			IF jsonb_typeof(q.value) = 'number' THEN
				influences := influences || (q.value::text::float8);
			ELSIF jsonb_typeof(q.value) = 'array' AND jsonb_array_length(q.value) >= 2
			      AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(q.value) r WHERE jsonb_typeof(r) <> 'array'
			                      OR jsonb_array_length(r) <> jsonb_array_length(q.value->0)
			                      OR EXISTS (SELECT 1 FROM jsonb_array_elements(r) x WHERE jsonb_typeof(x) <> 'number')) THEN
				-- a declared parameter table: rows P(phi_Q | phi_attribute = a), computed by Definition 8
				influences := influences || dx._max_influence(jsonb_array_length(q.value),
					ARRAY(SELECT x::text::float8 FROM jsonb_array_elements(q.value) WITH ORDINALITY AS rr(r, ri),
					      jsonb_array_elements(rr.r) WITH ORDINALITY AS xx(x, xi) ORDER BY ri, xi));
			ELSE
				RAISE EXCEPTION 'the max-influence of quilt "%" must be a number or a parameter table', q.key
					USING ERRCODE = '22023', HINT = 'Give e(X_Q | X_i) >= 0, or rows [P(phi_Q = k | phi_i = a), ...], one row per value a, of equal length.';
			END IF;
		END LOOP;
		RETURN;
	ELSIF family = 'binary_conditional' THEN
		IF EXISTS (SELECT 1 FROM jsonb_object_keys(model) key WHERE key NOT IN ('family', 'released', 'p1', 'p2', 'grid')) THEN
			RAISE EXCEPTION 'binary conditional model has an unknown key' USING ERRCODE = '22023', HINT = bin_hint;
		END IF;
		IF jsonb_typeof(model->'released') IS DISTINCT FROM 'string' THEN
			RAISE EXCEPTION 'binary conditional model needs the released column' USING ERRCODE = '22023', HINT = bin_hint;
		END IF;
		IF jsonb_typeof(model->'grid') IS DISTINCT FROM 'number'
		   OR EXISTS (SELECT 1 FROM (VALUES (model->'p1'), (model->'p2')) v(r) WHERE jsonb_typeof(r) IS DISTINCT FROM 'array'
		              OR jsonb_array_length(r) <> 2
		              OR EXISTS (SELECT 1 FROM jsonb_array_elements(r) x WHERE jsonb_typeof(x) <> 'number')) THEN
			RAISE EXCEPTION 'binary conditional model needs ranges "p1", "p2" and a numeric "grid"' USING ERRCODE = '22023', HINT = bin_hint;
		END IF;
		attributes := ARRAY[(model->>'released')::name];
		theta := ARRAY[(model->'p1'->>0)::float8, (model->'p1'->>1)::float8, (model->'p2'->>0)::float8,
		               (model->'p2'->>1)::float8, (model->>'grid')::float8];
		RETURN;
	ELSIF family IS DISTINCT FROM 'gaussian' THEN
		RAISE EXCEPTION 'data model family must be "gaussian", "bayesian_network" or "binary_conditional"' USING ERRCODE = '22023',
			HINT = 'gaussian: APGM (dx.attr_avg, dx.attr_sum); bayesian_network: Markov quilt mechanism; binary_conditional: Wasserstein mechanism.';
	END IF;
	IF EXISTS (SELECT 1 FROM jsonb_object_keys(model) key WHERE key NOT IN ('family', 'attributes', 'covariance', 'covariances', 'approximation')) THEN
		RAISE EXCEPTION 'data model has an unknown key' USING ERRCODE = '22023', HINT = hint;
	END IF;
	IF model ? 'approximation' THEN
		IF jsonb_typeof(model->'approximation') <> 'object'
		   OR EXISTS (SELECT 1 FROM jsonb_object_keys(model->'approximation') key WHERE key NOT IN ('lambda', 'eta'))
		   OR jsonb_typeof(model->'approximation'->'lambda') IS DISTINCT FROM 'number'
		   OR jsonb_typeof(model->'approximation'->'eta') IS DISTINCT FROM 'number' THEN
			RAISE EXCEPTION 'approximation must be {"lambda": number, "eta": number}' USING ERRCODE = '22023',
				HINT = 'The DBA asserts the eta-approximate max-divergence between the data''s conditional laws and the Gaussian model is at most lambda (Theorem 3).';
		END IF;
		approximation_lambda := (model->'approximation'->>'lambda')::float8;
		approximation_eta := (model->'approximation'->>'eta')::float8;
		IF NOT (approximation_lambda >= 0 AND approximation_lambda < 'Infinity'::float8) OR NOT (approximation_eta >= 0 AND approximation_eta < 1) THEN
			RAISE EXCEPTION 'approximation lambda must be finite and non-negative and eta in [0, 1)' USING ERRCODE = '22023',
				HINT = 'Releases then spend (epsilon + 2 lambda, e^lambda delta + eta).';
		END IF;
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
-- delta: the Gaussian family's per-release delta (NULL: 1e-5); the pure-epsilon families
-- (bayesian_network, binary_conditional) take no delta (NULL or 0).
CREATE FUNCTION dx.protect_attribute(rel regclass, attribute name, diameter float8, model jsonb,
	epsilon float8 DEFAULT 0.5, delta float8 DEFAULT NULL, calibration text DEFAULT 'analytic',
	record_privacy boolean DEFAULT true)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
	parsed record;
	attrs name[];
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
	IF calibration IS NULL OR calibration NOT IN ('analytic', 'classical') THEN
		RAISE EXCEPTION 'calibration must be ''analytic'' or ''classical''' USING ERRCODE = '22023',
			HINT = '''analytic'' (default) is exact for every epsilon; ''classical'' is the seed''s sqrt(2 ln(1.25/delta)) rule, epsilon < 1.';
	END IF;
	IF record_privacy IS NULL THEN
		RAISE EXCEPTION 'record_privacy must not be null' USING ERRCODE = '22004',
			HINT = 'true: releases also carry the table''s d_X-private noise; false: attribute privacy only.';
	END IF;
	parsed := dx._parse_attribute_model(rel, model);
	attrs := parsed.attributes;
	IF parsed.family = 'gaussian' THEN
		delta := coalesce(delta, 1e-5);
		IF delta = 'NaN'::float8 OR delta <= 0 OR delta >= 1 THEN
			RAISE EXCEPTION 'delta must lie strictly between 0 and 1, got %', delta USING ERRCODE = '22023',
				HINT = 'The Gaussian mechanism needs a delta; use for example 1e-5.';
		END IF;
		IF calibration = 'classical' AND epsilon >= 1 THEN
			RAISE EXCEPTION 'classical calibration requires epsilon below 1' USING ERRCODE = '22023',
				HINT = 'Use calibration => ''analytic''.';
		END IF;
		IF exp(parsed.approximation_lambda) * delta + parsed.approximation_eta >= 1 THEN
			RAISE EXCEPTION 'the approximation leaves no meaningful delta' USING ERRCODE = '22023',
				HINT = 'Releases would spend e^lambda * delta + eta >= 1: declare a smaller lambda or eta.';
		END IF;
	ELSE
		IF coalesce(delta, 0) <> 0 THEN
			RAISE EXCEPTION 'the % family is pure epsilon: delta must be 0 or omitted', parsed.family USING ERRCODE = '22023',
				HINT = 'The Markov quilt and Wasserstein mechanisms add Laplace noise and spend no delta.';
		END IF;
		delta := 0;
		IF calibration <> 'analytic' THEN
			RAISE EXCEPTION 'calibration applies to the gaussian family only' USING ERRCODE = '22023',
				HINT = 'Omit calibration for the Laplace-based families.';
		END IF;
	END IF;
	IF parsed.family = 'binary_conditional' THEN
		IF attrs[1] = attribute THEN
			RAISE EXCEPTION 'the released column must differ from the protected attribute' USING ERRCODE = '22023',
				HINT = 'The model describes a released 0/1 column given the protected 0/1 column; the protected column can be released too.';
		END IF;
		attrs := attrs || attribute;
		PERFORM dx._check_binary_model(rel, attrs, parsed.theta);
	ELSIF NOT attribute = ANY (attrs) THEN
		RAISE EXCEPTION 'attribute "%" is not an attribute of the model', attribute USING ERRCODE = '22023',
			HINT = 'List the protected column in the model''s "attributes".';
	END IF;
	IF parsed.family = 'bayesian_network' THEN
		PERFORM dx._check_network_model(rel, attribute, attrs, parsed.edges, parsed.quilts, parsed.influences);
	END IF;
	INSERT INTO dx.attribute_policies AS a (relid, attribute, diameter, model, family, attributes, covariances, edges,
		quilts, influences, theta, approximation_lambda, approximation_eta, epsilon, delta, calibration, record_privacy)
	VALUES (rel, attribute, diameter, model, parsed.family, attrs, parsed.covariances, parsed.edges,
		parsed.quilts, parsed.influences, parsed.theta, parsed.approximation_lambda, parsed.approximation_eta, epsilon,
		delta, calibration, record_privacy)
	ON CONFLICT ON CONSTRAINT attribute_policies_pkey DO UPDATE SET
		diameter = excluded.diameter, model = excluded.model, family = excluded.family, attributes = excluded.attributes,
		covariances = excluded.covariances, edges = excluded.edges, quilts = excluded.quilts,
		influences = excluded.influences, theta = excluded.theta, approximation_lambda = excluded.approximation_lambda,
		approximation_eta = excluded.approximation_eta, epsilon = excluded.epsilon, delta = excluded.delta,
		calibration = excluded.calibration, record_privacy = excluded.record_privacy, created_at = now();
END $$;
COMMENT ON FUNCTION dx.protect_attribute(regclass, name, float8, jsonb, float8, float8, text, boolean) IS
'declares that a distribution parameter of a column is hidden (attribute privacy) under a declared data model: gaussian (APGM), bayesian_network (Markov quilt) or binary_conditional (Wasserstein)';

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

-- Releases: the mean or the sum of a declared column with the noise of every attribute policy of
-- the table (APGM Gaussian, Markov quilt Laplace, Wasserstein Laplace; independent noises add)
-- and the d_X noise with record_privacy, charged before the answer leaves.
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
-- one row per protected attribute (component apgm, markov_quilt or wasserstein; epsilon and delta
-- as charged, i.e. with a §6.5 approximation; noise_sd, scale and binding of its family's noise)
-- and one for the d_X component.
CREATE FUNCTION dx.explain_attribute(rel regclass, col name, kind text DEFAULT 'avg')
RETURNS TABLE (component text, protects text, diameter float8, epsilon float8, delta float8, sensitivity float8,
               data_variance float8, noise_sd float8, binding boolean, ci95_half_width float8, budget text,
               noise text, scale float8, quilt text)
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

-- dx.attr_count(rel, condition): the number of rows where a condition on declared columns holds
-- (NULL: every row), with the attribute-private Markov quilt mechanism of the table's
-- bayesian_network policies (other families refuse). The condition is evaluated on the declared
-- domain points, never on a row; the table is read by dxpriv's own count of row lookups.
CREATE FUNCTION dx.attr_count(rel regclass, condition text DEFAULT NULL) RETURNS float8
LANGUAGE c VOLATILE PARALLEL UNSAFE AS 'MODULE_PATHNAME', 'dx_attr_count';
COMMENT ON FUNCTION dx.attr_count(regclass, text) IS 'attribute-private count of the rows where a condition holds (Markov quilt mechanism; attribute-privacy budget)';
