//! The shared tail of every mutation: record the acknowledgement under its idempotency key,
//! or hand back the original acknowledgement on an identical replay.

use serde::Serialize;
use serde_json::Value;

use crate::protocol::artifact::MutationResult;
use crate::service::Written;
use crate::store::idempotency::{self, IdempotencyKey, Replay};
use crate::store::{StoreError, StoreResult, Tx};

/// Records a fresh mutation's acknowledgement (`created: true`).
pub(crate) fn record<T: Serialize>(
    tx: &Tx<'_>,
    key: &IdempotencyKey,
    record: T,
    commit_seq: i64,
) -> StoreResult<Written> {
    record_as(tx, key, record, commit_seq, true)
}

/// Records the acknowledgement of a request that found its effect already in place (an
/// identical relation re-put under a new key): the original record and `commit_seq`,
/// `created: false`. Binding the key keeps a later replay of it stable.
pub(crate) fn record_unchanged<T: Serialize>(
    tx: &Tx<'_>,
    key: &IdempotencyKey,
    record: T,
    original_commit_seq: i64,
) -> StoreResult<Written> {
    record_as(tx, key, record, original_commit_seq, false)
}

fn record_as<T: Serialize>(
    tx: &Tx<'_>,
    key: &IdempotencyKey,
    record: T,
    commit_seq: i64,
    created: bool,
) -> StoreResult<Written> {
    let result = serde_json::to_value(MutationResult {
        record,
        commit_seq,
        created,
    })
    .map_err(StoreError::Json)?;
    idempotency::record(tx, key, &result, commit_seq)?;
    Ok(Written { result, commit_seq })
}

/// The original acknowledgement of a replayed mutation, marked `created: false`.
pub(crate) fn replayed(replay: Replay) -> Written {
    let mut result = replay.result;
    if let Value::Object(map) = &mut result {
        map.insert("created".to_owned(), Value::Bool(false));
    }
    Written {
        result,
        commit_seq: replay.commit_seq,
    }
}

/// Checks for a replay of `key` inside the mutation's transaction.
pub(crate) fn check(tx: &Tx<'_>, key: &IdempotencyKey) -> StoreResult<Option<Written>> {
    Ok(idempotency::check(tx.conn(), key)?.map(replayed))
}
