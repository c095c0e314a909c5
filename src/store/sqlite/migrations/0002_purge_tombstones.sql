-- Memoree storage, schema 2: provable erasure (`artifact.purge`, `claim.purge`).
-- Append-only: never edit an applied migration; add a new numbered file instead.
--
-- A purge erases the content of every revision of one artifact or claim and leaves a
-- tombstone: one `purges` row (who, when, why, what the physical erasure removed) and one
-- `purged_revisions` row per erased revision (its number and the size and BLAKE3 digest of
-- the erased bytes). The revision rows themselves stay, so history, citations and the
-- commit sequence remain coherent; their content columns are blanked and `purged` is set.
--
-- History stays immutable for every other write path. The immutability triggers of 0001 on
-- revisions, events and replay records are replaced by triggers with exactly one exception
-- each: an update that only erases content, of a row whose tombstone already exists. No
-- DELETE on those tables is ever allowed. Tombstones themselves are immutable except for
-- the two columns that record the completion of the physical erasure.

ALTER TABLE artifact_revisions ADD COLUMN purged INTEGER NOT NULL DEFAULT 0 CHECK (purged IN (0, 1));
ALTER TABLE claim_revisions ADD COLUMN purged INTEGER NOT NULL DEFAULT 0 CHECK (purged IN (0, 1));

-- One row per purged entity. `workspace_id`..`component` are the purging request's ambient
-- context; `citing_json` lists the claim revisions that cited a purged artifact when it was
-- purged; `erasure_json` says what the physical erasure removed; `erased` is set once the
-- database has been rewritten and its WAL truncated (a purge interrupted before that is
-- completed when the store is next opened, or by purging again).
CREATE TABLE purges (
    entity_id     TEXT PRIMARY KEY,
    entity_type   TEXT NOT NULL CHECK (entity_type IN ('artifact', 'claim')),
    reason        TEXT NOT NULL,
    actor         TEXT,
    workspace_id  TEXT NOT NULL,
    project_id    TEXT NOT NULL,
    task_id       TEXT,
    component     TEXT,
    purged_at     TEXT NOT NULL,
    commit_seq    INTEGER NOT NULL UNIQUE,
    citing_json   TEXT NOT NULL,
    erasure_json  TEXT NOT NULL,
    erased        INTEGER NOT NULL DEFAULT 0 CHECK (erased IN (0, 1))
) STRICT;

-- One row per erased revision: `size_bytes` and `blake3` describe the erased content (the
-- artifact bytes, or the claim statement as UTF-8); `erased_fields` names every column
-- that was blanked, comma-separated.
CREATE TABLE purged_revisions (
    revision_id     TEXT PRIMARY KEY,
    entity_id       TEXT NOT NULL REFERENCES purges (entity_id),
    revision_number INTEGER NOT NULL CHECK (revision_number > 0),
    size_bytes      INTEGER NOT NULL CHECK (size_bytes >= 0),
    blake3          TEXT NOT NULL,
    erased_fields   TEXT NOT NULL,
    UNIQUE (entity_id, revision_number)
) STRICT;

DROP TRIGGER artifact_revisions_are_immutable;
CREATE TRIGGER artifact_revisions_are_immutable BEFORE UPDATE ON artifact_revisions
WHEN NOT (
    OLD.purged = 0 AND NEW.purged = 1
    AND EXISTS (SELECT 1 FROM purged_revisions p WHERE p.revision_id = OLD.id AND p.entity_id = OLD.artifact_id)
    AND NEW.seq = OLD.seq AND NEW.id = OLD.id AND NEW.artifact_id = OLD.artifact_id
    AND NEW.revision_number = OLD.revision_number AND NEW.media_type = OLD.media_type
    AND NEW.blob_hash = OLD.blob_hash AND NEW.blob_size = OLD.blob_size
    AND NEW.body_indexed = OLD.body_indexed AND NEW.actor IS OLD.actor
    AND NEW.created_at = OLD.created_at AND NEW.commit_seq = OLD.commit_seq
    AND NEW.title = '' AND NEW.inline_blob IS NULL AND NEW.inline_encoding = 0 AND NEW.provenance_json = '{}'
)
BEGIN SELECT RAISE(ABORT, 'artifact revisions are immutable'); END;

DROP TRIGGER claim_revisions_are_immutable;
CREATE TRIGGER claim_revisions_are_immutable BEFORE UPDATE ON claim_revisions
WHEN NOT (
    OLD.purged = 0 AND NEW.purged = 1
    AND EXISTS (SELECT 1 FROM purged_revisions p WHERE p.revision_id = OLD.id AND p.entity_id = OLD.claim_id)
    AND NEW.seq = OLD.seq AND NEW.id = OLD.id AND NEW.claim_id = OLD.claim_id
    AND NEW.revision_number = OLD.revision_number AND NEW.confidence IS OLD.confidence
    AND NEW.evidence_json = OLD.evidence_json AND NEW.actor IS OLD.actor
    AND NEW.created_at = OLD.created_at AND NEW.commit_seq = OLD.commit_seq
    AND NEW.statement = ''
)
BEGIN SELECT RAISE(ABORT, 'claim revisions are immutable'); END;

-- Event payloads of a purged entity may lose their `reason` (forget and retract reasons are
-- caller text that may quote the erased content); nothing else about an event changes.
DROP TRIGGER events_are_immutable;
CREATE TRIGGER events_are_immutable BEFORE UPDATE ON events
WHEN NOT (
    EXISTS (SELECT 1 FROM purges p WHERE p.entity_type = OLD.entity_type AND p.entity_id = OLD.entity_id)
    AND NEW.commit_seq = OLD.commit_seq AND NEW.event_id = OLD.event_id AND NEW.event_type = OLD.event_type
    AND NEW.entity_type = OLD.entity_type AND NEW.entity_id = OLD.entity_id
    AND NEW.revision_id IS OLD.revision_id AND NEW.actor IS OLD.actor AND NEW.created_at = OLD.created_at
    AND NEW.payload_json = json_remove(OLD.payload_json, '$.reason')
)
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

-- Replay records naming a purged revision may lose the lifecycle `reason` they carry.
DROP TRIGGER idempotency_records_are_immutable;
CREATE TRIGGER idempotency_records_are_immutable BEFORE UPDATE ON idempotency
WHEN NOT (
    EXISTS (SELECT 1 FROM purged_revisions p WHERE p.revision_id IN (
        json_extract(OLD.replay_json, '$.artifact_revision'), json_extract(OLD.replay_json, '$.claim_revision')))
    AND NEW.scoped_key = OLD.scoped_key AND NEW.request_hash = OLD.request_hash
    AND NEW.operation = OLD.operation AND NEW.commit_seq = OLD.commit_seq AND NEW.created_at = OLD.created_at
    AND NEW.replay_json = json_remove(OLD.replay_json, '$.reason')
)
BEGIN SELECT RAISE(ABORT, 'idempotency records are immutable'); END;

CREATE TRIGGER purges_are_never_deleted BEFORE DELETE ON purges
BEGIN SELECT RAISE(ABORT, 'purge tombstones are permanent'); END;
CREATE TRIGGER purges_keep_their_facts BEFORE UPDATE ON purges
WHEN NOT (
    NEW.entity_id = OLD.entity_id AND NEW.entity_type = OLD.entity_type AND NEW.reason = OLD.reason
    AND NEW.actor IS OLD.actor AND NEW.workspace_id = OLD.workspace_id AND NEW.project_id = OLD.project_id
    AND NEW.task_id IS OLD.task_id AND NEW.component IS OLD.component AND NEW.purged_at = OLD.purged_at
    AND NEW.commit_seq = OLD.commit_seq AND NEW.citing_json = OLD.citing_json
)
BEGIN SELECT RAISE(ABORT, 'purge tombstones are permanent'); END;
CREATE TRIGGER purged_revisions_are_immutable BEFORE UPDATE ON purged_revisions
BEGIN SELECT RAISE(ABORT, 'purge tombstones are permanent'); END;
CREATE TRIGGER purged_revisions_are_never_deleted BEFORE DELETE ON purged_revisions
BEGIN SELECT RAISE(ABORT, 'purge tombstones are permanent'); END;
