-- The same semantic projection as the embedded store's migration 5: one int8 unit vector
-- per window of every current revision, keyed by the revision `seq` and the model digest.
-- A bytea column: at this size a scan needs no vector index.
CREATE TABLE IF NOT EXISTS semantic_vectors (
    entity     TEXT COLLATE "C" NOT NULL CHECK (entity IN ('artifact', 'claim')),
    seq        BIGINT NOT NULL,
    part       BIGINT NOT NULL CHECK (part >= 0),
    model      TEXT COLLATE "C" NOT NULL,
    start_byte BIGINT NOT NULL,
    end_byte   BIGINT NOT NULL,
    vector     BYTEA NOT NULL,
    PRIMARY KEY (entity, seq, part)
);
