-- Coexistence with the reference implementation (issue 29). The reference opens
-- `memoree.sqlite3` in the same default data directory and migrates any store whose
-- `meta.schema_version` parses as an integer from 1 to 5 (after a snapshot, with its own
-- DDL). From this migration on, `meta.schema_version` holds `memoree-N` (written by the
-- migration runner), which it refuses before writing anything, and `store_format` names the
-- owner. The schema version itself stays in `PRAGMA user_version`.
INSERT OR REPLACE INTO meta (key, value) VALUES ('store_format', 'memoree');
