-- dx._group_key_int (issue 23, keyfuse): dx._group_key(dx._weigh_int(table, layout, <columns>),
-- values) in one call, the form in which a grouped statement's GROUP BY keys are computed in its
-- row source (dxpriv.keys_in_scan = on). Called directly (as a superuser), it returns what the pair
-- returns on every value, NULL and outside values included, and refuses what the pair refuses.
-- A table over an enumerated column {M,F} whose points are the group indexes 0 and 1:
CREATE TEMP TABLE t AS SELECT '\x500110000200000000000000030000000000000000000000000000f03f0100000002000000'::bytea AS tab;
SELECT v,
       dx._group_key(dx._weigh_int(tab, 'e', v, '{M,F}'::text[]), '{male,female}'::text[]) AS pair,
       dx._group_key_int(tab, 'e', '{male,female}'::text[], v, '{M,F}'::text[]) AS fused,
       dx._group_key_int(tab, 'e', '{10,20}'::int[], v, '{M,F}'::text[]) AS fused_int
FROM t, (VALUES ('M'), ('F'), ('X'), (NULL)) AS r(v) ORDER BY v NULLS LAST;
-- a NULL value per group, a NULL array (dx._group_key is strict), a NULL table
SELECT dx._group_key_int(tab, 'e', ARRAY['a', NULL], 'F'::text, '{M,F}'::text[]) IS NULL AS null_value,
       dx._group_key_int(tab, 'e', NULL::text[], 'F'::text, '{M,F}'::text[]) IS NULL AS null_values,
       dx._group_key_int(NULL, 'e', '{a,b}'::text[], 'F'::text, '{M,F}'::text[]) IS NULL AS null_table
FROM t;
-- refused like the pair: a group index outside the values, a multi-dimensional array, a forged table
SELECT dx._group_key_int(tab, 'e', '{a}'::text[], 'F'::text, '{M,F}'::text[]) FROM t;
SELECT dx._group_key_int(tab, 'e', '{{a,b},{c,d}}'::text[], 'F'::text, '{M,F}'::text[]) FROM t;
SELECT dx._group_key_int('\x00'::bytea, 'e', '{a,b}'::text[], 'F'::text, '{M,F}'::text[]);
-- an analyst may execute it (rewritten statements run as the analyst), like dx._group_key
SELECT has_function_privilege('public', 'dx._group_key_int(bytea, text, anyarray, "any")', 'EXECUTE') AS executable;
SELECT provolatile, proparallel, proisstrict FROM pg_proc WHERE oid = 'dx._group_key_int'::regproc;
