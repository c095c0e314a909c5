//! Keeping the semantic projection (`store::vectors`) caught up with the current revisions
//! when the service has a model: the write path projects every new revision itself, so a
//! gap only follows an install on an existing store, an import, a restore or a `reindex`.
//!
//! [`Service::catch_up_vectors`] embeds what is missing in batches, outside any write
//! transaction, and writes each batch in one short job that skips revisions no longer
//! current (revised or purged meanwhile). The daemon runs it on a background thread
//! ([`spawn_catch_up`]); `reindex` runs it to completion; coverage is reported by
//! `doctor` and `verify` (store-wide counts; `capabilities` answers restricted grants, so
//! it carries none).

use std::sync::mpsc;
use std::time::Duration;

use super::Service;
use crate::protocol::relation::EntityType;
use crate::semantic::Embedder;
use crate::store::vectors::{self, Coverage, Projection};
use crate::store::{StoreResult, artifact, claim};

/// Revisions embedded per write job.
const BATCH: usize = 64;
/// How often the daemon's catch-up thread looks for revisions without vectors.
const POLL: Duration = Duration::from_secs(10);
/// Polls between two walks of every revision (the others walk only new revisions).
const FULL_WALK_EVERY: u64 = 60;

impl Service {
    /// The share of current revisions with vectors of the loaded model (`None` without one).
    pub fn vector_coverage(&self) -> StoreResult<Option<Coverage>> {
        let Some(embedder) = self.runtime().semantic.embedder() else {
            return Ok(None);
        };
        let key = embedder.projection_key().to_owned();
        self.store().read_db(|db| vectors::coverage(db, &key)).map(Some)
    }

    /// Projects every current revision that has no vectors of the loaded model, and drops
    /// rows another model (or windowing) wrote; returns how many revisions it projected.
    pub fn catch_up_vectors(&self) -> StoreResult<u64> {
        self.catch_up_vectors_after(&mut [0, 0])
    }

    /// [`Service::catch_up_vectors`] over the revisions past `cursors` (the revision `seq`
    /// each table's walk has passed: artifacts, claims), leaving them where the walk ended;
    /// from `[0, 0]` it also drops rows of another model. Revisions are numbered in commit
    /// order, so a later walk from the cursors sees every revision written since.
    pub fn catch_up_vectors_after(&self, cursors: &mut [i64; 2]) -> StoreResult<u64> {
        let Some(embedder) = self.runtime().semantic.embedder().cloned() else {
            return Ok(0);
        };
        let key = embedder.projection_key().to_owned();
        if *cursors == [0, 0] {
            let stale = self.store().write({
                let key = key.clone();
                move |tx| vectors::drop_all(tx.db(), Some(&key))
            })?;
            if stale > 0 {
                tracing::info!(rows = stale, "dropped semantic vectors of another model");
            }
        }
        let mut projected = 0;
        let mut open = [true, true];
        while open.iter().any(|o| *o) {
            let batch = self.next_batch(&embedder, &key, cursors, &mut open)?;
            if batch.is_empty() {
                continue;
            }
            projected += batch.len() as u64;
            self.store().write(move |tx| {
                for (entity, seq, projection) in &batch {
                    if vectors::is_current(tx.db(), *entity, *seq)? {
                        vectors::replace(tx.db(), *entity, *seq, projection)?;
                    }
                }
                Ok(())
            })?;
        }
        Ok(projected)
    }

    /// Up to [`BATCH`] revisions without vectors past the cursors of the tables still
    /// `open`, embedded; moves the cursors past what it examined and closes a table whose
    /// walk reached its end.
    fn next_batch(
        &self,
        embedder: &Embedder,
        key: &str,
        cursors: &mut [i64; 2],
        open: &mut [bool; 2],
    ) -> StoreResult<Vec<(EntityType, i64, Projection)>> {
        let blobs = self.store().blob_source();
        self.store().read_db(|db| {
            let mut batch = Vec::new();
            let walk = |entity: EntityType, cursor: &mut i64, open: &mut bool| -> StoreResult<Vec<(i64, String)>> {
                if !*open {
                    return Ok(Vec::new());
                }
                let step = vectors::missing(db, entity, key, *cursor, BATCH)?;
                *cursor = step.next;
                *open = !step.exhausted;
                Ok(step.revisions)
            };
            let ([artifacts, claims], [artifacts_open, claims_open]) = (cursors, open);
            for (seq, revision) in walk(EntityType::Artifact, artifacts, artifacts_open)? {
                let Some(row) = artifact::get_revision(db, &revision)? else {
                    continue;
                };
                let body = artifact::is_indexable_media_type(&row.media_type)
                    .then(|| row.read_content(blobs))
                    .transpose()?
                    .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
                batch.push((
                    EntityType::Artifact,
                    seq,
                    embedder.project_artifact(&row.title, body.as_deref()),
                ));
            }
            for (seq, revision) in walk(EntityType::Claim, claims, claims_open)? {
                if let Some(row) = claim::get_revision(db, &revision)? {
                    batch.push((EntityType::Claim, seq, embedder.project_claim(&row.statement)));
                }
            }
            Ok(batch)
        })
    }
}

/// Starts the daemon's catch-up thread when the service has a model: it catches up at once,
/// then looks again every 10 seconds (an import or restore may have added revisions), until
/// the returned sender is dropped.
pub fn spawn_catch_up(service: &Service) -> Option<mpsc::Sender<()>> {
    service.runtime().semantic.embedder()?;
    let service = service.clone();
    let (stop, stopped) = mpsc::channel::<()>();
    let spawned = std::thread::Builder::new()
        .name("memoree-vectors".to_owned())
        .spawn(move || {
            // Each poll walks only the revisions written since the last (a full walk every
            // FULL_WALK_EVERY polls, and after an error).
            let mut cursors = [0, 0];
            for poll in 0u64.. {
                if poll % FULL_WALK_EVERY == 0 {
                    cursors = [0, 0];
                }
                match service.catch_up_vectors_after(&mut cursors) {
                    Ok(0) => {}
                    Ok(projected) => tracing::info!(projected, "semantic vectors caught up"),
                    Err(error) => {
                        cursors = [0, 0];
                        tracing::warn!(%error, "semantic vectors could not catch up");
                    }
                }
                if !matches!(stopped.recv_timeout(POLL), Err(mpsc::RecvTimeoutError::Timeout)) {
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => Some(stop),
        Err(error) => {
            tracing::warn!(%error, "the semantic catch-up thread did not start");
            None
        }
    }
}
