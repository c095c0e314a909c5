-- Memoree protocol v1 storage, schema 1. Append-only: never edit an applied migration;
-- add 0002_*.sql instead.
--
-- Authoritative state lives in ordinary STRICT tables. Revisions, events, relations and
-- conflict events are immutable (triggers below). The FTS5 tables are a derived projection
-- keyed by revision rowid and can be rebuilt from revisions and the CAS.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

-- The single monotonic commit sequence. Each logical mutation takes exactly one value
-- inside its own transaction and appends exactly one `events` row with it.
CREATE TABLE commit_state (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    commit_seq INTEGER NOT NULL CHECK (commit_seq >= 0)
) STRICT;
INSERT INTO commit_state (id, commit_seq) VALUES (1, 0);

-- `event_id` (a fresh ULID) is unique by construction and never looked up, so it has no
-- index; `commit_seq` is the key. Payload shapes are listed in ARCHITECTURE.md (Events).
CREATE TABLE events (
    commit_seq   INTEGER PRIMARY KEY,
    event_id     TEXT NOT NULL,
    event_type   TEXT NOT NULL,
    entity_type  TEXT NOT NULL,
    entity_id    TEXT NOT NULL,
    revision_id  TEXT,
    actor        TEXT,
    payload_json TEXT NOT NULL,
    created_at   TEXT NOT NULL
) STRICT;

CREATE TABLE artifacts (
    id                  TEXT PRIMARY KEY,
    workspace_id        TEXT NOT NULL,
    project_id          TEXT NOT NULL,
    task_id             TEXT,
    component           TEXT,
    kind                TEXT NOT NULL,
    current_revision_id TEXT NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('active', 'forgotten')),
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    forgotten_reason    TEXT
) STRICT;
CREATE INDEX artifacts_by_scope ON artifacts (workspace_id, project_id, task_id);

CREATE TABLE artifact_revisions (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    artifact_id     TEXT NOT NULL REFERENCES artifacts (id),
    revision_number INTEGER NOT NULL CHECK (revision_number > 0),
    title           TEXT NOT NULL,
    media_type      TEXT NOT NULL,
    blob_hash       TEXT NOT NULL,
    blob_size       INTEGER NOT NULL CHECK (blob_size >= 0),
    -- Content up to the inline threshold, as stored: `inline_encoding` 0 is the raw bytes,
    -- 1 one raw DEFLATE stream of them. `blob_hash` and `blob_size` always describe the raw
    -- bytes. NULL for content in the CAS, whose objects describe their own encoding.
    inline_blob     BLOB,
    inline_encoding INTEGER NOT NULL DEFAULT 0 CHECK (inline_encoding IN (0, 1)),
    body_indexed    INTEGER NOT NULL CHECK (body_indexed IN (0, 1)),
    provenance_json TEXT NOT NULL,
    actor           TEXT,
    created_at      TEXT NOT NULL,
    commit_seq      INTEGER NOT NULL UNIQUE,
    UNIQUE (artifact_id, revision_number),
    CHECK (inline_blob IS NOT NULL OR inline_encoding = 0)
) STRICT;
-- External (CAS) blobs only: backup and verify enumerate them.
CREATE INDEX artifact_revisions_by_external_blob ON artifact_revisions (blob_hash) WHERE inline_blob IS NULL;

CREATE TABLE claims (
    id                  TEXT PRIMARY KEY,
    workspace_id        TEXT NOT NULL,
    project_id          TEXT NOT NULL,
    task_id             TEXT,
    component           TEXT,
    claim_type          TEXT NOT NULL CHECK (claim_type IN
        ('fact', 'decision', 'constraint', 'preference', 'procedure', 'observation')),
    current_revision_id TEXT NOT NULL,
    -- `conflicted` is never stored: it is derived from open conflict cases.
    status              TEXT NOT NULL CHECK (status IN ('active', 'superseded', 'retracted')),
    valid_from          TEXT,
    valid_until         TEXT,
    created_at          TEXT NOT NULL,
    updated_at          TEXT NOT NULL,
    retraction_reason   TEXT,
    CHECK (valid_from IS NULL OR valid_until IS NULL OR valid_from < valid_until)
) STRICT;
CREATE INDEX claims_by_scope ON claims (workspace_id, project_id, task_id);

CREATE TABLE claim_revisions (
    seq             INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    claim_id        TEXT NOT NULL REFERENCES claims (id),
    revision_number INTEGER NOT NULL CHECK (revision_number > 0),
    statement       TEXT NOT NULL,
    confidence      REAL CHECK (confidence IS NULL OR (confidence >= 0.0 AND confidence <= 1.0)),
    evidence_json   TEXT NOT NULL,
    actor           TEXT,
    created_at      TEXT NOT NULL,
    commit_seq      INTEGER NOT NULL UNIQUE,
    UNIQUE (claim_id, revision_number)
) STRICT;

CREATE TABLE relations (
    seq           INTEGER PRIMARY KEY,
    id            TEXT NOT NULL UNIQUE,
    source_type   TEXT NOT NULL CHECK (source_type IN ('artifact', 'claim')),
    source_id     TEXT NOT NULL,
    relation      TEXT NOT NULL CHECK (relation IN
        ('derived_from', 'supports', 'contradicts', 'supersedes', 'references', 'duplicates')),
    target_type   TEXT NOT NULL CHECK (target_type IN ('artifact', 'claim')),
    target_id     TEXT NOT NULL,
    metadata_json TEXT NOT NULL,
    workspace_id  TEXT NOT NULL,
    project_id    TEXT NOT NULL,
    task_id       TEXT,
    component     TEXT,
    created_at    TEXT NOT NULL,
    commit_seq    INTEGER NOT NULL UNIQUE,
    UNIQUE (source_type, source_id, relation, target_type, target_id)
) STRICT;
CREATE INDEX relations_by_source ON relations (source_type, source_id, commit_seq);
CREATE INDEX relations_by_target ON relations (target_type, target_id, commit_seq);

CREATE TABLE conflict_cases (
    case_sequence      INTEGER PRIMARY KEY AUTOINCREMENT,
    case_id            TEXT NOT NULL UNIQUE,
    relation_id        TEXT NOT NULL REFERENCES relations (id),
    source_claim_id    TEXT NOT NULL,
    source_revision_id TEXT NOT NULL,
    target_claim_id    TEXT NOT NULL,
    target_revision_id TEXT NOT NULL,
    state              TEXT NOT NULL CHECK (state IN ('open', 'stale', 'resolved')),
    state_reason       TEXT,
    opened_at          TEXT NOT NULL,
    updated_at         TEXT NOT NULL,
    opened_commit_seq  INTEGER NOT NULL,
    UNIQUE (relation_id, source_revision_id, target_revision_id)
) STRICT;
-- At most one open case per contradiction relation.
CREATE UNIQUE INDEX conflict_cases_one_open_per_relation
    ON conflict_cases (relation_id) WHERE state = 'open';
CREATE INDEX conflict_cases_by_source ON conflict_cases (source_claim_id, state);
CREATE INDEX conflict_cases_by_target ON conflict_cases (target_claim_id, state);

CREATE TABLE conflict_events (
    seq                  INTEGER PRIMARY KEY,
    event_id             TEXT NOT NULL UNIQUE,
    case_id              TEXT NOT NULL REFERENCES conflict_cases (case_id),
    event_type           TEXT NOT NULL CHECK (event_type IN ('opened', 'stale', 'resolved')),
    source_revision_id   TEXT NOT NULL,
    target_revision_id   TEXT NOT NULL,
    reason               TEXT NOT NULL,
    operation_commit_seq INTEGER NOT NULL,
    created_at           TEXT NOT NULL
) STRICT;
CREATE INDEX conflict_events_by_case ON conflict_events (case_id);

-- Replay records for idempotent mutations, keyed by the namespaced key. `replay_json` is a
-- compact recipe (the revision or relation produced, plus the lifecycle fields as they were)
-- from which the original acknowledgement is rebuilt exactly. WITHOUT ROWID: the only access
-- is by key, so the key is stored once (in the primary-key b-tree) instead of twice.
CREATE TABLE idempotency (
    scoped_key    TEXT PRIMARY KEY,
    request_hash  TEXT NOT NULL,
    operation     TEXT NOT NULL,
    replay_json   TEXT NOT NULL,
    commit_seq    INTEGER NOT NULL,
    created_at    TEXT NOT NULL
) STRICT, WITHOUT ROWID;

-- Derived full-text projection. Contentless: the text lives once, in the revision rows
-- and the CAS; the FTS rowid is the revision `seq`.
CREATE VIRTUAL TABLE artifact_fts USING fts5 (
    title, body,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);
CREATE VIRTUAL TABLE claim_fts USING fts5 (
    statement,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 2'
);

-- Immutability of history.
CREATE TRIGGER artifact_revisions_are_immutable BEFORE UPDATE ON artifact_revisions
BEGIN SELECT RAISE(ABORT, 'artifact revisions are immutable'); END;
CREATE TRIGGER artifact_revisions_are_never_deleted BEFORE DELETE ON artifact_revisions
BEGIN SELECT RAISE(ABORT, 'artifact revisions are immutable'); END;
CREATE TRIGGER claim_revisions_are_immutable BEFORE UPDATE ON claim_revisions
BEGIN SELECT RAISE(ABORT, 'claim revisions are immutable'); END;
CREATE TRIGGER claim_revisions_are_never_deleted BEFORE DELETE ON claim_revisions
BEGIN SELECT RAISE(ABORT, 'claim revisions are immutable'); END;
CREATE TRIGGER events_are_immutable BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER events_are_never_deleted BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;
CREATE TRIGGER relations_are_immutable BEFORE UPDATE ON relations
BEGIN SELECT RAISE(ABORT, 'relations are immutable'); END;
CREATE TRIGGER relations_are_never_deleted BEFORE DELETE ON relations
BEGIN SELECT RAISE(ABORT, 'relations are immutable'); END;
CREATE TRIGGER conflict_events_are_immutable BEFORE UPDATE ON conflict_events
BEGIN SELECT RAISE(ABORT, 'conflict events are append-only'); END;
CREATE TRIGGER conflict_events_are_never_deleted BEFORE DELETE ON conflict_events
BEGIN SELECT RAISE(ABORT, 'conflict events are append-only'); END;
CREATE TRIGGER conflict_cases_are_never_deleted BEFORE DELETE ON conflict_cases
BEGIN SELECT RAISE(ABORT, 'conflict cases are audit history'); END;
CREATE TRIGGER idempotency_records_are_immutable BEFORE UPDATE ON idempotency
BEGIN SELECT RAISE(ABORT, 'idempotency records are immutable'); END;
