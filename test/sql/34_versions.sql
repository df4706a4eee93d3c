-- Versions: the installed version and the update path from the released 0.1.0
-- (sql/upgrade/dxpriv--0.1.0--0.2.0.sql, installed by make install; scripts/test-upgrade.sh runs it).
SELECT extversion FROM pg_extension WHERE extname = 'dxpriv';
SELECT source, target, path FROM pg_extension_update_paths('dxpriv') WHERE path IS NOT NULL ORDER BY 1, 2;
SELECT default_version FROM pg_available_extensions WHERE name = 'dxpriv';
