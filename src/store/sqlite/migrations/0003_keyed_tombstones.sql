-- Keyed tombstone digests (issue 28). A tombstone's `blake3` becomes BLAKE3 keyed with this
-- store's own secret (`store_secrets.tombstone_key`, 256 random bits) over the hex digest of
-- the erased bytes, so storing a guessed statement again cannot confirm an erased secret.
-- `content_blake3` keeps the plain digest inside this database, where the scrub and `verify`
-- need it to find CAS objects; it is never exported, and an imported tombstone has none. The
-- key never leaves the store (exports and PostgreSQL backups carry the keyed digests only).
CREATE TABLE store_secrets (
    name  TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
INSERT INTO store_secrets (name, value) VALUES ('tombstone_key', lower(hex(randomblob(32))));
CREATE TRIGGER store_secrets_are_permanent BEFORE UPDATE ON store_secrets
BEGIN SELECT RAISE(ABORT, 'store secrets are permanent'); END;
CREATE TRIGGER store_secrets_are_never_deleted BEFORE DELETE ON store_secrets
BEGIN SELECT RAISE(ABORT, 'store secrets are permanent'); END;

-- Existing tombstones: the plain digest moves to `content_blake3`; the migration then rewrites
-- `blake3` to its keyed form (in Rust, `tombstone::rekey_legacy`) and restores the
-- immutability trigger.
DROP TRIGGER purged_revisions_are_immutable;
ALTER TABLE purged_revisions ADD COLUMN content_blake3 TEXT;
UPDATE purged_revisions SET content_blake3 = blake3;
