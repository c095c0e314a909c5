//! `doctor`, `verify`, `backup.create`, `reindex`, `instructions` and `schema`.
//!
//! None of these is a logical memory mutation: they take no idempotency key, advance no
//! `commit_seq` and leave no replay record.

use std::path::{Path, PathBuf};

use crate::paths::{BLOBS_DIR, BLOBS_TMP_DIR, DB_FILE, DB_WAL_FILE};
use crate::protocol::admin::{
    BackupCreateInput, BackupResult, DoctorInput, DoctorResult, InstructionsContent, InstructionsFormat,
    InstructionsInput, InstructionsResult, ReindexInput, ReindexResult, StoreOutage, VerifyInput, VerifyIssueDetail,
    VerifyResult,
};
use crate::protocol::meta::SchemaInput;
use crate::protocol::schema;
use crate::service::{Output, STORE_UNAVAILABLE_REASON, Service, ServiceError};
use crate::store::pg::ProbeError;
use crate::store::verify::VerifyReport;
use crate::{fsutil, instructions, timefmt};

/// How long `doctor` waits for a PostgreSQL store before reporting it unavailable: the whole
/// answer stays within a second whatever the database does.
pub(crate) const DOCTOR_STORE_BUDGET: std::time::Duration = std::time::Duration::from_millis(750);

/// `doctor`'s `status` while the store answers.
pub const DOCTOR_OK: &str = "ok";

pub(super) fn doctor(service: &Service, _: DoctorInput) -> Result<Output, ServiceError> {
    let store = service.store();
    let discovery = &service.runtime().discovery;
    let data_dir = store.data_dir();
    let mut store_outage = None;
    let (last_commit_seq, schema_version, database_bytes, (blob_bytes, blob_count)) = match store.postgres() {
        None => (
            store.last_commit_seq()?,
            store.schema_version()?,
            database_bytes(data_dir),
            blob_usage(&data_dir.join(BLOBS_DIR)),
        ),
        Some(pg) => {
            let stats = match pg.stats_within(DOCTOR_STORE_BUDGET) {
                Ok(stats) => stats,
                Err(ProbeError::Failed(message)) => return Err(ServiceError::Internal(message)),
                Err(ProbeError::Outage(outage)) => {
                    store_outage = Some(StoreOutage {
                        reason: STORE_UNAVAILABLE_REASON.into(),
                        message: outage.message,
                        since: outage.since,
                        duration_ms: u64::try_from(outage.duration.as_millis()).unwrap_or(u64::MAX),
                    });
                    pg.health().last_stats().unwrap_or_default()
                }
            };
            (
                stats.last_commit_seq,
                stats.schema_version,
                stats.database_bytes,
                (stats.blob_bytes, stats.blob_count),
            )
        }
    };
    let semantic = semantic_status(service, store_outage.is_none());
    Output::read(DoctorResult {
        status: match store_outage {
            None => DOCTOR_OK.into(),
            Some(_) => STORE_UNAVAILABLE_REASON.into(),
        },
        running: true,
        daemon_pid: service.runtime().daemon_pid.unwrap_or_else(std::process::id),
        authoritative_store: store.kind().authoritative.into(),
        retrieval_mode: store.kind().retrieval_mode.into(),
        last_commit_seq: last_commit_seq.max(0),
        data_dir: data_dir.display().to_string(),
        schema_version: schema_version.max(0),
        database_bytes,
        blob_bytes,
        blob_count,
        disk_free_bytes: fsutil::disk_free_bytes(data_dir).ok(),
        version: env!("CARGO_PKG_VERSION").into(),
        binary_version: discovery
            .binary_version
            .clone()
            .unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
        lifecycle_owner: discovery.lifecycle_owner.into(),
        store_outage,
        semantic: Some(semantic),
    })
}

/// `doctor`'s semantic status, with the stored vectors' coverage when the store answers.
fn semantic_status(service: &Service, store_answers: bool) -> crate::protocol::meta::SemanticStatus {
    let mut status = service.runtime().semantic.describe();
    if store_answers {
        match service.vector_coverage() {
            Ok(coverage) => {
                status.vectors = coverage.map(|c| crate::protocol::meta::VectorCoverage {
                    covered: c.covered,
                    total: c.total,
                });
            }
            Err(error) => tracing::warn!(%error, "the semantic coverage could not be read"),
        }
    }
    status
}

/// The database file plus its WAL.
fn database_bytes(data_dir: &Path) -> u64 {
    [DB_FILE, DB_WAL_FILE]
        .iter()
        .filter_map(|name| std::fs::metadata(data_dir.join(name)).ok())
        .map(|meta| meta.len())
        .sum()
}

/// Bytes and count of published CAS objects (the writers' scratch directory excluded).
fn blob_usage(root: &Path) -> (u64, u64) {
    let (bytes, count) = fsutil::dir_size(root).unwrap_or((0, 0));
    let (tmp_bytes, tmp_count) = fsutil::dir_size(&root.join(BLOBS_TMP_DIR)).unwrap_or((0, 0));
    (bytes.saturating_sub(tmp_bytes), count.saturating_sub(tmp_count))
}

pub(super) fn verify(service: &Service, _: VerifyInput) -> Result<Output, ServiceError> {
    let mut report = service.store().verify()?;
    let coverage = service.vector_coverage()?;
    if let Some(c) = coverage
        && c.covered < c.total
    {
        report.warnings.push(format!(
            "semantic vectors: {} of {} current revisions have none of the loaded model yet (the daemon projects them in the background; reindex rebuilds them all)",
            c.total - c.covered,
            c.total
        ));
    }
    let mut result = verify_result(&report);
    result.semantic_vectors = coverage.map(|c| crate::protocol::meta::VectorCoverage {
        covered: c.covered,
        total: c.total,
    });
    Output::read(result)
}

/// The wire form of a verification report.
pub(crate) fn verify_result(report: &VerifyReport) -> VerifyResult {
    VerifyResult {
        ok: report.is_ok(),
        schema_version: report.schema_version.max(0),
        last_commit_seq: report.last_commit_seq.max(0),
        checked_artifact_revisions: report.checked_artifact_revisions,
        checked_claim_revisions: report.checked_claim_revisions,
        checked_external_blobs: report.checked_external_blobs,
        issues: report.issues.iter().map(|issue| issue.line()).collect(),
        warnings: report.warnings.clone(),
        issue_details: report
            .issues
            .iter()
            .map(|issue| VerifyIssueDetail {
                kind: issue.kind.into(),
                entity: issue.entity.clone(),
                detail: issue.detail.clone(),
            })
            .collect(),
        semantic_vectors: None,
    }
}

pub(super) fn backup_create(service: &Service, input: BackupCreateInput) -> Result<Output, ServiceError> {
    if input.destination.trim().is_empty() {
        return Err(ServiceError::invalid("destination must not be empty"));
    }
    let destination = PathBuf::from(&input.destination);
    if !destination.is_absolute() {
        return Err(ServiceError::invalid(format!(
            "backup destination must be an absolute path as seen by the daemon, got {}",
            input.destination
        )));
    }
    let report = service.store().backup(&destination)?;
    Output::read(BackupResult {
        destination: report.destination.display().to_string(),
        database: report.database.display().to_string(),
        blobs: report.blobs.display().to_string(),
        commit_seq: report.commit_seq,
        copied_external_blobs: report.copied_external_blobs,
        created_at: timefmt::to_wire(&report.created_at),
    })
}

pub(super) fn reindex(service: &Service, _: ReindexInput) -> Result<Output, ServiceError> {
    let report = service.store().reindex()?;
    service.vocabulary().invalidate();
    // The semantic projection is rebuilt too, from scratch, with the loaded model.
    let projected_revisions = match service.runtime().semantic.embedder() {
        Some(_) => {
            service
                .store()
                .write(|tx| crate::store::vectors::drop_all(tx.db(), None))?;
            Some(service.catch_up_vectors()?)
        }
        None => None,
    };
    Output::read(ReindexResult {
        reindexed_artifact_revisions: report.artifact_revisions,
        reindexed_claim_revisions: report.claim_revisions,
        removed_orphan_rows: report.removed_orphan_rows,
        last_commit_seq: report.last_commit_seq.max(0),
        projected_revisions,
    })
}

pub(super) fn instructions(input: InstructionsInput) -> Result<Output, ServiceError> {
    let content = match input.format {
        InstructionsFormat::Json => InstructionsContent::Document(Box::new(instructions::document())),
        InstructionsFormat::Markdown | InstructionsFormat::AgentsMd | InstructionsFormat::ClaudeMd => {
            InstructionsContent::Markdown(instructions::markdown())
        }
    };
    Output::read(InstructionsResult {
        format: input.format,
        content,
    })
}

pub(super) fn schema(_: SchemaInput) -> Result<Output, ServiceError> {
    Output::read(schema::bundle())
}
