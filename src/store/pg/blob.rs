//! Blobs in PostgreSQL: content-addressed by BLAKE3 over the raw bytes, deduplicated by the
//! `blobs` primary key, stored as [`CHUNK_BYTES`] chunks in `blob_chunks`.
//!
//! A blob is written in its own short transaction before the mutation that cites it (as a
//! filesystem CAS object is made durable before the citing commit), so a front end keeps no
//! blob state of its own and two front ends writing the same content store it once: the
//! second insert finds the first (or waits for it and then finds it). Every read re-hashes.
//!
//! **Invariants:** a `blobs` row exists only together with all of its chunks (one
//! transaction); a read returns bytes whose size and BLAKE3 match what the caller expects,
//! or an integrity error, never other data.

use super::PgConn;
use crate::blob::{self, BlobError, Digest};
use crate::store::error::{StoreError, StoreResult};
use crate::timefmt;

/// Bytes per stored chunk (the last chunk may be shorter).
pub const CHUNK_BYTES: usize = 1 << 20;

/// Stores `bytes` (once per distinct content) and returns their digest. Runs its own
/// transaction on `conn`, which must not be inside one.
pub fn put(conn: &PgConn, bytes: &[u8]) -> StoreResult<Digest> {
    let digest = Digest::of(bytes);
    conn.batch("BEGIN")?;
    let written = insert(conn, &digest, bytes);
    match written {
        Ok(()) => conn.batch("COMMIT")?,
        Err(e) => {
            let _ = conn.batch("ROLLBACK");
            return Err(e);
        }
    }
    Ok(digest)
}

/// Stores `bytes` under `digest` (their BLAKE3, which the caller computed) unless it is
/// stored already, inside the caller's transaction: a blob row and its chunks appear
/// together when that transaction commits, or not at all.
pub fn insert(conn: &PgConn, digest: &Digest, bytes: &[u8]) -> StoreResult<()> {
    let hash = digest.to_hex();
    let chunks = bytes.len().div_ceil(CHUNK_BYTES) as i64;
    let inserted = conn.execute(
        "INSERT INTO blobs (hash, size, chunks, created_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT (hash) DO NOTHING",
        &[&hash, &(bytes.len() as i64), &chunks, &timefmt::to_db(&timefmt::now())],
    )?;
    if inserted == 0 {
        // Stored before (or by a concurrent writer whose transaction we waited for).
        return Ok(());
    }
    for (idx, chunk) in bytes.chunks(CHUNK_BYTES).enumerate() {
        conn.execute(
            "INSERT INTO blob_chunks (hash, idx, data) VALUES (?1, ?2, ?3)",
            &[&hash, &(idx as i64), &chunk],
        )?;
    }
    Ok(())
}

/// Whether the blob is stored.
pub fn contains(conn: &PgConn, digest: &Digest) -> StoreResult<bool> {
    Ok(conn
        .query_opt("SELECT 1 FROM blobs WHERE hash = ?1", &[&digest.to_hex()])?
        .is_some())
}

/// Reads the blob, checking its recorded and actual size and its digest against the caller's
/// expectation.
pub fn get(conn: &PgConn, digest: &Digest, expected_size: u64) -> StoreResult<Vec<u8>> {
    let hash = digest.to_hex();
    let Some(row) = conn.query_opt("SELECT size, chunks FROM blobs WHERE hash = ?1", &[&hash])? else {
        return Err(BlobError::Missing { digest: hash }.into());
    };
    let (size, chunks): (i64, i64) = (row.get(0), row.get(1));
    if size as u64 != expected_size {
        return Err(BlobError::SizeMismatch {
            digest: hash,
            expected: expected_size,
            actual: size as u64,
        }
        .into());
    }
    let rows = conn.query(
        "SELECT idx, data FROM blob_chunks WHERE hash = ?1 ORDER BY idx",
        &[&hash],
    )?;
    if rows.len() as i64 != chunks {
        return Err(StoreError::Integrity(format!(
            "blob {hash} has {} of its {chunks} chunks",
            rows.len()
        )));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    for (expected_idx, row) in rows.iter().enumerate() {
        let idx: i64 = row.get(0);
        if idx != expected_idx as i64 {
            return Err(StoreError::Integrity(format!(
                "blob {hash} is missing chunk {expected_idx}"
            )));
        }
        bytes.extend_from_slice(row.get::<_, &[u8]>(1));
    }
    blob::check(digest, expected_size, &bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::super::tests::fresh_store;
    use super::*;

    #[test]
    fn a_blob_is_chunked_deduplicated_and_read_back_exactly() {
        let Some((_cluster, store)) = fresh_store() else { return };
        let conn = store.connection().unwrap();
        let bytes: Vec<u8> = (0..(2 * CHUNK_BYTES + 123)).map(|i| (i * 7 % 251) as u8).collect();
        let digest = put(&conn, &bytes).unwrap();
        assert_eq!(digest, Digest::of(&bytes));
        assert_eq!(put(&conn, &bytes).unwrap(), digest, "the same content is stored once");
        let counts = conn
            .query_one(
                "SELECT (SELECT count(*) FROM blobs), (SELECT count(*) FROM blob_chunks)",
                &[],
            )
            .unwrap();
        assert_eq!((counts.get::<_, i64>(0), counts.get::<_, i64>(1)), (1, 3));
        assert!(contains(&conn, &digest).unwrap());
        assert_eq!(get(&conn, &digest, bytes.len() as u64).unwrap(), bytes);
        let empty = put(&conn, b"").unwrap();
        assert_eq!(get(&conn, &empty, 0).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn a_corrupted_or_missing_blob_is_an_integrity_error_never_other_bytes() {
        let Some((_cluster, store)) = fresh_store() else { return };
        let conn = store.connection().unwrap();
        let bytes = vec![42u8; CHUNK_BYTES + 1];
        let digest = put(&conn, &bytes).unwrap();
        assert!(matches!(
            get(&conn, &digest, 5),
            Err(StoreError::Blob(BlobError::SizeMismatch { .. }))
        ));
        assert!(matches!(
            get(&conn, &Digest::of(b"absent"), 6),
            Err(StoreError::Blob(BlobError::Missing { .. }))
        ));
        // Chunks are immutable, so corruption has to bypass the triggers.
        conn.batch("SET session_replication_role = replica").unwrap();
        conn.execute(
            "UPDATE blob_chunks SET data = ?1 WHERE hash = ?2 AND idx = 1",
            &[&b"x".as_slice(), &digest.to_hex()],
        )
        .unwrap();
        conn.batch("SET session_replication_role = origin").unwrap();
        assert!(matches!(
            get(&conn, &digest, bytes.len() as u64),
            Err(StoreError::Blob(BlobError::DigestMismatch { .. }))
        ));
    }
}
