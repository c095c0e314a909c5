//! `import` (extension): replays a portable export archive into the served store.
//!
//! Like the admin operations it takes no idempotency key (re-running a merge is idempotent
//! by content: identical records are skipped) and leaves no replay record, but it does
//! advance `commit_seq` by the number of events it adds; the result reports the new value.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::protocol::purge::{ImportInput, ImportMode, ImportResult};
use crate::service::{Output, Service, ServiceError};
use crate::store::portable::RECORD_FILES;
use crate::store::portable::import::ImportReport;

pub(super) fn import(service: &Service, input: ImportInput) -> Result<Output, ServiceError> {
    if input.source.trim().is_empty() {
        return Err(ServiceError::invalid("source must not be empty"));
    }
    let source = PathBuf::from(&input.source);
    if !source.is_absolute() {
        return Err(ServiceError::invalid(format!(
            "import source must be an absolute path as seen by the daemon, got {}",
            input.source
        )));
    }
    let report = service.store().import(&source, input.mode, false)?;
    // Imported revisions may sit below the vocabulary's high-water mark: rebuild it.
    service.vocabulary().invalidate();
    Output::read(import_result(&input.source, input.mode, &report))
}

/// The wire form of an import report.
pub(crate) fn import_result(source: &str, mode: ImportMode, report: &ImportReport) -> ImportResult {
    let counts = |values: &[u64]| {
        Value::Object(
            RECORD_FILES
                .iter()
                .zip(values)
                .map(|(file, n)| (file.record_type.to_owned(), Value::from(*n)))
                .collect::<Map<_, _>>(),
        )
    };
    ImportResult {
        source: source.to_owned(),
        mode,
        format_version: report.format_version,
        source_last_commit_seq: report.source_last_commit_seq,
        imported: counts(&report.imported),
        unchanged: counts(&report.unchanged),
        skipped_replay_records: report.skipped_replays,
        blob_bytes_read: report.blob_bytes_read,
        last_commit_seq: report.last_commit_seq,
    }
}
