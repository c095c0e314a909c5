//! Replay records for idempotent mutations.
//!
//! A record binds a namespaced key to the fingerprint of the request that created it and
//! the result it produced. Checking and recording happen inside the mutation's own
//! transaction on the single writer, so concurrent retries of one key cannot both apply.

use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;

use super::Tx;
use super::error::{StoreError, StoreResult};

/// The identity of one logical mutation.
#[derive(Clone, Debug)]
pub struct IdempotencyKey {
    /// `<32 hex of the scope namespace>:<caller key>`.
    pub scoped_key: String,
    /// BLAKE3 hex of the canonical request.
    pub fingerprint: String,
    /// The operation's wire name.
    pub operation: &'static str,
}

/// A previously recorded mutation result.
#[derive(Clone, Debug)]
pub struct Replay {
    pub result: Value,
    pub commit_seq: i64,
}

/// Looks the key up: `Ok(Some)` for an identical replay, `IdempotencyConflict` when the key
/// was used for a different request.
pub fn check(conn: &Connection, key: &IdempotencyKey) -> StoreResult<Option<Replay>> {
    let found: Option<(String, String, String, i64)> = conn
        .prepare_cached(
            "SELECT request_hash, operation, replay_json, commit_seq FROM idempotency WHERE scoped_key = ?1",
        )?
        .query_row([&key.scoped_key], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .optional()?;
    match found {
        None => Ok(None),
        Some((hash, operation, response, commit_seq)) => {
            if hash != key.fingerprint || operation != key.operation {
                return Err(StoreError::IdempotencyConflict {
                    scoped_key: key.scoped_key.clone(),
                });
            }
            Ok(Some(Replay {
                result: serde_json::from_str(&response)?,
                commit_seq,
            }))
        }
    }
}

/// Records the result of a fresh mutation under its key.
pub fn record(tx: &Tx<'_>, key: &IdempotencyKey, result: &Value, commit_seq: i64) -> StoreResult<()> {
    tx.conn()
        .prepare_cached(
            "INSERT INTO idempotency (scoped_key, request_hash, operation, replay_json, commit_seq, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            key.scoped_key,
            key.fingerprint,
            key.operation,
            result.to_string(),
            commit_seq,
            tx.now_db()
        ])?;
    Ok(())
}
