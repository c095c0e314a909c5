-- Retrieval v3 (issue 27): the semantic projection. With a model installed, every current
-- revision of an artifact (its title plus body windows) and of a claim (its statement) has
-- one int8 unit vector per window, keyed by the revision `seq` like the FTS rowid, and by
-- the digest of the model that wrote it. Disposable: `reindex` rebuilds it, purge deletes a
-- revision's rows, export leaves it out, and a missing row only costs query-time embedding.
CREATE TABLE IF NOT EXISTS semantic_vectors (
    entity     TEXT NOT NULL CHECK (entity IN ('artifact', 'claim')),
    seq        INTEGER NOT NULL,
    part       INTEGER NOT NULL CHECK (part >= 0),
    model      TEXT NOT NULL,
    start_byte INTEGER NOT NULL,
    end_byte   INTEGER NOT NULL,
    vector     BLOB NOT NULL,
    PRIMARY KEY (entity, seq, part)
) STRICT, WITHOUT ROWID;
