-- The same store identity as the embedded store's migration 4: `meta.schema_version` holds
-- `memoree-N` (written by the migration runner) and `store_format` names the owner. The
-- schema version itself is tracked in `memoree_schema`.
INSERT INTO meta (key, value) VALUES ('store_format', 'memoree')
ON CONFLICT (key) DO UPDATE SET value = excluded.value;
