-- Keyed tombstone digests (issue 28); see the embedded store's migration 0003. The key is 256
-- bits from two version-4 UUIDs (pg_strong_random; 244 random bits), created once, here.
CREATE TABLE store_secrets (
    name  TEXT COLLATE "C" PRIMARY KEY,
    value TEXT COLLATE "C" NOT NULL
);
INSERT INTO store_secrets (name, value)
    VALUES ('tombstone_key', replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
CREATE TRIGGER store_secrets_are_permanent BEFORE UPDATE OR DELETE ON store_secrets
    FOR EACH ROW EXECUTE FUNCTION memoree_refuse('store secrets are permanent');
CREATE TRIGGER store_secrets_are_never_truncated BEFORE TRUNCATE ON store_secrets
    FOR EACH STATEMENT EXECUTE FUNCTION memoree_refuse('store secrets are permanent');

DROP TRIGGER purged_revisions_are_immutable ON purged_revisions;
ALTER TABLE purged_revisions ADD COLUMN content_blake3 TEXT COLLATE "C";
UPDATE purged_revisions SET content_blake3 = blake3;
