//! What an import does differently on PostgreSQL: its temporary tables, the search rows of
//! the revisions it added, and which server errors mean an invalid record.

use crate::progress::Progress;
use crate::store::error::StoreResult;
use crate::store::pg::PgConn;
use crate::store::reindex;

/// The import's temporary tables (archive `commit_seq` → store `commit_seq`, and the store's
/// event ids), created in its transaction and dropped at its end (or rolled back with it).
pub(super) const TEMP_TABLES: &str = "
    CREATE TEMP TABLE IF NOT EXISTS import_seq (old BIGINT PRIMARY KEY, new BIGINT NOT NULL);
    DELETE FROM pg_temp.import_seq;
    CREATE TEMP TABLE IF NOT EXISTS import_events (event_id TEXT COLLATE \"C\" PRIMARY KEY, commit_seq BIGINT NOT NULL);
    DELETE FROM pg_temp.import_events;
    INSERT INTO pg_temp.import_events SELECT event_id, commit_seq FROM public.events;";

/// Whether a server error is about the data written (a constraint, a value the column
/// refuses): the archive's record is invalid, not the store.
pub(super) fn is_record_error(error: &postgres::Error) -> bool {
    error
        .code()
        .is_some_and(|code| code.code().starts_with("23") || code.code().starts_with("22"))
}

/// Writes the search row of every live revision that has none (the ones the import added),
/// with the text the write path indexes.
pub(super) fn index_new_revisions(conn: &PgConn) -> StoreResult<()> {
    let mut progress = Progress::hidden("import: search rows", 0);
    reindex::pg::index_missing(conn, &mut progress).map(drop)
}
