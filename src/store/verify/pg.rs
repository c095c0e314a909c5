//! `verify` on a PostgreSQL store: the checks of the embedded store that apply there, through
//! [`Db`], with the same issue kinds and report.
//!
//! What differs: there is no `PRAGMA integrity_check` (the server enforces foreign keys and
//! checks constraints on every write), the full-text projection is `artifact_search` and
//! `claim_search` keyed by `seq`, and external blobs live in `blobs`/`blob_chunks`: each
//! referenced blob is read chunk by chunk and re-hashed against its BLAKE3 digest and size,
//! and blobs no live revision cites are checked too and reported as a warning.
//!
//! **Invariant:** nothing here writes; the caller passes a connection inside one snapshot
//! (a `REPEATABLE READ` transaction).

use std::collections::HashMap;

use super::{Findings, Referenced, VerifyReport, check_records, check_revision_blob, kind, report_blob_error};
use crate::blob::{BlobError, Digest};
use crate::progress::Progress;
use crate::store::db::Db;
use crate::store::error::{StoreError, StoreResult};
use crate::store::pg::{self, PgConn};

/// Artifact revisions read per page while checking their content.
const PAGE: i64 = 256;

/// Verifies the PostgreSQL store behind `conn` (inside one snapshot transaction).
pub fn verify(conn: &PgConn) -> StoreResult<VerifyReport> {
    let db = Db::Postgres(conn);
    let mut findings = Findings::new();
    findings.check("schema version", |f| check_schema(conn, f));
    check_records(db, &mut findings, ("artifact_search", "claim_search", "seq"));
    findings.check("blobs", |f| check_blobs(conn, f));
    findings.check("tombstones", |f| {
        let mut found = crate::store::tombstone::row_checks(db)?;
        found.extend(crate::store::tombstone::pg_content_checks(db)?);
        for (kind, entity, detail) in found {
            f.about(kind, entity, detail);
        }
        Ok(())
    });
    Ok(findings.finish())
}

fn check_schema(conn: &PgConn, f: &mut Findings) -> StoreResult<()> {
    super::check_schema_version(Db::Postgres(conn), pg::schema_version(conn)?, pg::SCHEMA_VERSION, f)
}

fn check_blobs(conn: &PgConn, f: &mut Findings) -> StoreResult<()> {
    let db = Db::Postgres(conn);
    let total: i64 = db.query_one("SELECT count(*) FROM artifact_revisions WHERE purged = 0", &[], |r| {
        r.get(0)
    })?;
    let mut progress = Progress::new("verify: artifact revisions", total.max(0) as u64);
    let mut external: HashMap<Digest, Referenced> = HashMap::new();
    let mut after = 0i64;
    loop {
        let rows = db.query_all(
            "SELECT seq, id, blob_hash, blob_size, inline_blob, inline_encoding FROM artifact_revisions
             WHERE purged = 0 AND seq > ?1 ORDER BY seq LIMIT ?2",
            &[&after, &PAGE],
            |r| {
                let inline = match r.get::<Option<Vec<u8>>>(4)? {
                    Some(stored) => Some((stored, r.get::<i64>(5)?)),
                    None => None,
                };
                Ok((r.get::<i64>(0)?, r.get(1)?, r.get(2)?, r.get::<i64>(3)?, inline))
            },
        )?;
        let Some(last) = rows.last() else { break };
        after = last.0;
        for (_, revision, hash, size, inline) in rows {
            progress.inc(1);
            check_revision_blob(f, &mut external, revision, hash, size, inline);
        }
    }
    drop(progress);
    let stored: Vec<(String, i64)> = db.query_all("SELECT hash, size FROM blobs ORDER BY hash", &[], |r| {
        Ok((r.get(0)?, r.get(1)?))
    })?;
    let mut progress = Progress::new("verify: external blobs", stored.len().max(external.len()) as u64);
    let mut referenced: Vec<(&Digest, &Referenced)> = external.iter().collect();
    referenced.sort_by_key(|(digest, _)| digest.to_hex());
    for (digest, cited) in referenced {
        progress.inc(1);
        f.report.checked_external_blobs += 1;
        if let Err(error) = pg::blob::get(conn, digest, cited.size) {
            report(f, digest, &cited.revision, error);
        }
    }
    let mut unreferenced = 0;
    for (hash, size) in stored {
        let Some(digest) = Digest::parse(&hash) else {
            f.about(kind::BLOB_HASH, hash, "a stored blob's hash is not a BLAKE3 hex digest");
            continue;
        };
        if external.contains_key(&digest) {
            continue;
        }
        progress.inc(1);
        unreferenced += 1;
        if let Err(error) = pg::blob::get(conn, &digest, size.max(0) as u64) {
            report(f, &digest, "no revision", error);
        }
    }
    if unreferenced > 0 {
        f.report.warnings.push(format!(
            "{unreferenced} stored blobs are not referenced by any revision (left by interrupted writes; harmless)"
        ));
    }
    Ok(())
}

/// A blob read error as an issue: blob errors by their kind, a missing or misnumbered chunk
/// as corruption; anything else (the connection failing) stops the check.
fn report(f: &mut Findings, digest: &Digest, cited_by: &str, error: StoreError) {
    match error {
        StoreError::Blob(error) => report_blob_error(f, digest, cited_by, error),
        StoreError::Integrity(detail) => report_blob_error(
            f,
            digest,
            cited_by,
            BlobError::Undecodable {
                digest: digest.to_hex(),
                detail,
            },
        ),
        other => f.about(
            kind::BLOB_UNREADABLE,
            digest.to_hex(),
            format!("{other} (cited by {cited_by})"),
        ),
    }
}
