//! `verify`: read-only consistency checks of the database, the full-text projection and the
//! content store, on both backends.
//!
//! This module holds what both backends share: the report ([`VerifyReport`], [`Issue`]), the
//! stable issue kinds ([`kind`]), the collector that caps the list at [`MAX_ISSUES`], and the
//! checks written against [`Db`] (schema version recorded in `meta`, commit sequence, heads,
//! full-text rows, semantic vectors, relations, conflict cases, claim evidence, and the content
//! of one artifact revision). Each backend adds its own around them: [`sqlite`] (`PRAGMA`
//! checks, the FTS5 tables and the filesystem CAS) and [`pg`] (the search tables and the
//! blobs in the database). [`Store::verify`](super::Store::verify) picks the backend.
//!
//! Checks run on one read snapshot, so concurrent writes never produce false reports: a blob
//! published after the snapshot is at worst an unreferenced one (a warning, not an issue).
//! A check that cannot even run (for example because a table is missing) becomes an issue
//! of kind `check_failed` instead of aborting the others.
//!
//! **Invariant:** nothing here or in the backends' parts writes. The caller passes a
//! read-only connection inside one snapshot; content is only listed and read.

use std::collections::HashMap;

use super::claim::evidence_from_json;
use super::db::Db;
use super::error::StoreResult;
use crate::blob::{self, BlobError, Digest, Encoding};

pub mod pg;
pub mod sqlite;

pub use sqlite::verify;

/// Stable, machine-readable issue kinds.
pub mod kind {
    /// A check could not run at all; the detail names the check and the error.
    pub const CHECK_FAILED: &str = "check_failed";
    /// `PRAGMA integrity_check` reported a problem.
    pub const DATABASE_INTEGRITY: &str = "database_integrity";
    /// `PRAGMA foreign_key_check` reported a dangling reference.
    pub const FOREIGN_KEY: &str = "foreign_key";
    /// The schema version is not the one this binary writes.
    pub const SCHEMA_VERSION: &str = "schema_version";
    /// `commit_state`, `max(events.commit_seq)` and `count(events)` disagree.
    pub const COMMIT_SEQUENCE: &str = "commit_sequence";
    /// An artifact or claim head does not point at its own newest revision.
    pub const HEAD_REVISION: &str = "head_revision";
    /// A revision has no full-text row.
    pub const FTS_MISSING: &str = "fts_missing";
    /// A revision has more than one full-text row.
    pub const FTS_DUPLICATE: &str = "fts_duplicate";
    /// A full-text row belongs to no revision.
    pub const FTS_ORPHAN: &str = "fts_orphan";
    /// A semantic vector belongs to a purged, unknown or no longer current revision.
    pub const VECTOR_STRAY: &str = "vector_stray";
    /// A relation endpoint does not exist.
    pub const RELATION_ENDPOINT: &str = "relation_endpoint";
    /// A conflict case contradicts its relation, its revisions or the claims' lifecycle.
    pub const CONFLICT_CASE: &str = "conflict_case";
    /// A conflict case's event history does not match the case.
    pub const CONFLICT_EVENTS: &str = "conflict_events";
    /// A claim revision's evidence is malformed, dangling or out of bounds.
    pub const CLAIM_EVIDENCE: &str = "claim_evidence";
    /// A revision's `blob_hash` is not a valid digest.
    pub const BLOB_HASH: &str = "blob_hash";
    /// A referenced CAS object does not exist.
    pub const BLOB_MISSING: &str = "blob_missing";
    /// Inline or CAS bytes cannot be decoded, or do not match their digest or size.
    pub const BLOB_CORRUPT: &str = "blob_corrupt";
    /// A CAS object exists but cannot be read.
    pub const BLOB_UNREADABLE: &str = "blob_unreadable";
    /// The CAS directory holds something that is not a well-placed object.
    pub const CAS_UNEXPECTED: &str = "cas_unexpected";
    /// More issues were found than are reported.
    pub const TRUNCATED: &str = "issues_truncated";
}

/// Issues reported in full; the rest are counted in one `issues_truncated` issue.
pub const MAX_ISSUES: usize = 1000;

/// One problem found by [`verify`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub kind: &'static str,
    /// The entity, revision, blob or path concerned, if any.
    pub entity: Option<String>,
    pub detail: String,
}

impl Issue {
    /// The one-line form: `<kind>: <entity>: <detail>`.
    pub fn line(&self) -> String {
        match &self.entity {
            Some(entity) => format!("{}: {entity}: {}", self.kind, self.detail),
            None => format!("{}: {}", self.kind, self.detail),
        }
    }
}

/// What [`verify`] checked and found.
#[derive(Clone, Debug, Default)]
pub struct VerifyReport {
    pub schema_version: i64,
    pub last_commit_seq: i64,
    pub checked_artifact_revisions: u64,
    pub checked_claim_revisions: u64,
    pub checked_external_blobs: u64,
    pub issues: Vec<Issue>,
    pub warnings: Vec<String>,
}

impl VerifyReport {
    /// True when no issue was found.
    pub fn is_ok(&self) -> bool {
        self.issues.is_empty()
    }

    /// Whether any issue has this kind.
    pub fn has(&self, kind: &str) -> bool {
        self.issues.iter().any(|issue| issue.kind == kind)
    }
}

/// Collects issues, keeping at most [`MAX_ISSUES`].
struct Findings {
    report: VerifyReport,
    suppressed: u64,
}

impl Findings {
    fn issue(&mut self, kind: &'static str, entity: Option<String>, detail: impl Into<String>) {
        if self.report.issues.len() >= MAX_ISSUES {
            self.suppressed += 1;
            return;
        }
        self.report.issues.push(Issue {
            kind,
            entity,
            detail: detail.into(),
        });
    }

    fn about(&mut self, kind: &'static str, entity: impl Into<String>, detail: impl Into<String>) {
        self.issue(kind, Some(entity.into()), detail);
    }

    /// Runs one check; a check that fails to run is itself an issue.
    fn check(&mut self, name: &str, f: impl FnOnce(&mut Findings) -> StoreResult<()>) {
        if let Err(error) = f(self) {
            self.issue(kind::CHECK_FAILED, None, format!("{name}: {error}"));
        }
    }
}

/// The checks both backends make on their tables: the commit sequence, heads, the full-text
/// projection (`search` names the artifact and claim tables and their revision key column),
/// relations, conflict cases and claim evidence.
fn check_records(db: Db<'_>, findings: &mut Findings, search: (&str, &str, &str)) {
    let (artifact_search, claim_search, key) = search;
    findings.check("commit sequence", |f| check_commit_sequence(db, f));
    findings.check("heads", |f| check_heads(db, f));
    findings.check("artifact fts", |f| {
        check_fts(db, f, "artifact_revisions", artifact_search, key).map(|n| f.report.checked_artifact_revisions = n)
    });
    findings.check("claim fts", |f| {
        check_fts(db, f, "claim_revisions", claim_search, key).map(|n| f.report.checked_claim_revisions = n)
    });
    findings.check("semantic vectors", |f| {
        for (entity, seq, why) in super::vectors::strays(db)? {
            f.about(kind::VECTOR_STRAY, format!("{entity} revision seq {seq}"), why);
        }
        Ok(())
    });
    findings.check("relations", |f| check_relations(db, f));
    findings.check("conflict cases", |f| check_conflicts(db, f));
    findings.check("claim evidence", |f| check_evidence(db, f));
}

impl Findings {
    fn new() -> Findings {
        Findings {
            report: VerifyReport::default(),
            suppressed: 0,
        }
    }

    /// The report, with the count of issues not listed.
    fn finish(self) -> VerifyReport {
        let mut report = self.report;
        if self.suppressed > 0 {
            report.issues.push(Issue {
                kind: kind::TRUNCATED,
                entity: None,
                detail: format!("{} more issues were found and not listed", self.suppressed),
            });
        }
        report
    }
}

/// The schema version `db` reports (`version`) against the one this binary writes
/// (`expected`) and the copy recorded in `meta`; shared by both backends' `verify`.
fn check_schema_version(db: Db<'_>, version: i64, expected: i64, f: &mut Findings) -> StoreResult<()> {
    f.report.schema_version = version;
    if version != expected {
        f.issue(
            kind::SCHEMA_VERSION,
            None,
            format!("database schema version is {version}; this binary writes {expected}"),
        );
    }
    let recorded: Option<String> =
        db.query_opt("SELECT value FROM meta WHERE key = 'schema_version'", &[], |r| r.get(0))?;
    if recorded.as_deref() != Some(super::schema_tag(version).as_str()) {
        f.issue(
            kind::SCHEMA_VERSION,
            None,
            format!("meta.schema_version is {recorded:?}, but the database reports {version}"),
        );
    }
    // Every schema this binary writes names its owner (`store::schema_tag`).
    let format: Option<String> =
        db.query_opt("SELECT value FROM meta WHERE key = 'store_format'", &[], |r| r.get(0))?;
    if version == expected && format.as_deref() != Some(super::STORE_FORMAT) {
        f.issue(
            kind::SCHEMA_VERSION,
            None,
            format!("meta.store_format is {format:?}, not {:?}", super::STORE_FORMAT),
        );
    }
    Ok(())
}

fn check_commit_sequence(db: Db<'_>, f: &mut Findings) -> StoreResult<()> {
    let state: i64 = db.query_one("SELECT commit_seq FROM commit_state WHERE id = 1", &[], |r| r.get(0))?;
    let (max, count): (i64, i64) =
        db.query_one("SELECT coalesce(max(commit_seq), 0), count(*) FROM events", &[], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    f.report.last_commit_seq = state.max(0);
    if state != max || max != count {
        f.issue(
            kind::COMMIT_SEQUENCE,
            None,
            format!("commit_state is {state}, the newest event is {max} and there are {count} events; all three must be equal"),
        );
    }
    Ok(())
}

fn check_heads(db: Db<'_>, f: &mut Findings) -> StoreResult<()> {
    for (entity, revisions, owner) in [
        ("artifacts", "artifact_revisions", "artifact_id"),
        ("claims", "claim_revisions", "claim_id"),
    ] {
        let sql = format!(
            "SELECT e.id, e.current_revision_id,
                    (SELECT r.revision_number FROM {revisions} r WHERE r.id = e.current_revision_id AND r.{owner} = e.id),
                    (SELECT max(r.revision_number) FROM {revisions} r WHERE r.{owner} = e.id)
             FROM {entity} e"
        );
        db.for_each(&sql, &[], |row| {
            let id: String = row.get(0)?;
            let head: String = row.get(1)?;
            let head_number: Option<i64> = row.get(2)?;
            let newest: Option<i64> = row.get(3)?;
            match head_number {
                None => f.about(
                    kind::HEAD_REVISION,
                    id,
                    format!("current revision {head:?} is not one of its own revisions"),
                ),
                Some(number) if Some(number) != newest => f.about(
                    kind::HEAD_REVISION,
                    id,
                    format!(
                        "current revision {head} is number {number}, but revision {} exists",
                        newest.unwrap_or(0)
                    ),
                ),
                Some(_) => {}
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// Every revision has exactly one FTS row (rowid = revision seq) and every FTS row has a
/// revision. Returns the number of revisions checked.
fn check_fts(db: Db<'_>, f: &mut Findings, revisions: &str, fts: &str, key: &str) -> StoreResult<u64> {
    // A purged revision has no index row (its content is erased); one it still had would be
    // reported as an orphan.
    let seqs = column_i64(
        db,
        &format!("SELECT seq FROM {revisions} WHERE purged = 0 ORDER BY seq"),
    )?;
    let rows = column_i64(db, &format!("SELECT {key} FROM {fts} ORDER BY {key}"))?;
    let revision_of = |seq: i64| -> StoreResult<String> {
        Ok(db
            .query_opt(&format!("SELECT id FROM {revisions} WHERE seq = ?1"), &[&seq], |r| {
                r.get(0)
            })?
            .unwrap_or_else(|| format!("{revisions} seq {seq}")))
    };
    let (mut i, mut j) = (0, 0);
    while i < seqs.len() || j < rows.len() {
        match (seqs.get(i), rows.get(j)) {
            (Some(&seq), Some(&row)) if seq == row => {
                let mut extra = 0;
                while rows.get(j + 1) == Some(&row) {
                    extra += 1;
                    j += 1;
                }
                if extra > 0 {
                    f.about(
                        kind::FTS_DUPLICATE,
                        revision_of(seq)?,
                        format!("indexed {} times in {fts}", extra + 1),
                    );
                }
                i += 1;
                j += 1;
            }
            (Some(&seq), row) if row.is_none_or(|&row| seq < row) => {
                f.about(kind::FTS_MISSING, revision_of(seq)?, format!("has no {fts} row"));
                i += 1;
            }
            (_, Some(&row)) => {
                f.about(
                    kind::FTS_ORPHAN,
                    format!("{fts} rowid {row}"),
                    format!("no {revisions} row has seq {row}"),
                );
                j += 1;
            }
            (_, None) => break,
        }
    }
    Ok(seqs.len() as u64)
}

fn column_i64(db: Db<'_>, sql: &str) -> StoreResult<Vec<i64>> {
    db.query_all(sql, &[], |r| r.get(0))
}

/// Rows of `(entity, detail)` produced by one SQL query.
fn pairs(db: Db<'_>, sql: &str) -> StoreResult<Vec<(String, String)>> {
    db.query_all(sql, &[], |r| Ok((r.get(0)?, r.get(1)?)))
}

fn check_relations(db: Db<'_>, f: &mut Findings) -> StoreResult<()> {
    for end in ["source", "target"] {
        let sql = format!(
            "SELECT rel.id, rel.{end}_type || ' ' || rel.{end}_id FROM relations rel
             WHERE (rel.{end}_type = 'artifact' AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.id = rel.{end}_id))
                OR (rel.{end}_type = 'claim' AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.id = rel.{end}_id))"
        );
        for (relation, missing) in pairs(db, &sql)? {
            f.about(
                kind::RELATION_ENDPOINT,
                relation,
                format!("{end} {missing} does not exist"),
            );
        }
    }
    Ok(())
}

fn check_conflicts(db: Db<'_>, f: &mut Findings) -> StoreResult<()> {
    let case_rules: &[(&str, &str)] = &[
        (
            "the relation is not a claim-to-claim contradicts edge between the case's claims",
            "SELECT cc.case_id FROM conflict_cases cc LEFT JOIN relations rel ON rel.id = cc.relation_id
             WHERE rel.id IS NULL OR rel.relation != 'contradicts' OR rel.source_type != 'claim'
                OR rel.target_type != 'claim' OR rel.source_id != cc.source_claim_id OR rel.target_id != cc.target_claim_id",
        ),
        (
            "a frozen revision does not belong to its claim",
            "SELECT cc.case_id FROM conflict_cases cc
             WHERE NOT EXISTS (SELECT 1 FROM claim_revisions r WHERE r.id = cc.source_revision_id AND r.claim_id = cc.source_claim_id)
                OR NOT EXISTS (SELECT 1 FROM claim_revisions r WHERE r.id = cc.target_revision_id AND r.claim_id = cc.target_claim_id)",
        ),
        (
            "the open case does not freeze the current revisions of two active claims",
            "SELECT cc.case_id FROM conflict_cases cc
             LEFT JOIN claims s ON s.id = cc.source_claim_id LEFT JOIN claims t ON t.id = cc.target_claim_id
             WHERE cc.state = 'open' AND (s.id IS NULL OR t.id IS NULL OR s.status != 'active' OR t.status != 'active'
                OR s.current_revision_id != cc.source_revision_id OR t.current_revision_id != cc.target_revision_id)",
        ),
    ];
    for (detail, sql) in case_rules {
        for case_id in column_text(db, sql)? {
            f.about(kind::CONFLICT_CASE, case_id, *detail);
        }
    }
    let relation_rules: &[(&str, &str)] = &[
        (
            "more than one open case",
            "SELECT relation_id FROM conflict_cases WHERE state = 'open' GROUP BY relation_id HAVING count(*) > 1",
        ),
        (
            "a live contradiction between two active claims has no open case",
            "SELECT rel.id FROM relations rel JOIN claims s ON s.id = rel.source_id JOIN claims t ON t.id = rel.target_id
             WHERE rel.relation = 'contradicts' AND rel.source_type = 'claim' AND rel.target_type = 'claim'
               AND s.status = 'active' AND t.status = 'active'
               AND NOT EXISTS (SELECT 1 FROM conflict_cases cc WHERE cc.relation_id = rel.id AND cc.state = 'open')",
        ),
    ];
    for (detail, sql) in relation_rules {
        for relation_id in column_text(db, sql)? {
            f.about(kind::CONFLICT_CASE, relation_id, *detail);
        }
    }
    let event_rules: &[(&str, &str)] = &[
        (
            "the case has no opened event",
            "SELECT cc.case_id FROM conflict_cases cc
             WHERE NOT EXISTS (SELECT 1 FROM conflict_events e WHERE e.case_id = cc.case_id AND e.event_type = 'opened')",
        ),
        (
            "an event names revisions other than the case's",
            "SELECT DISTINCT cc.case_id FROM conflict_cases cc JOIN conflict_events e ON e.case_id = cc.case_id
             WHERE e.source_revision_id != cc.source_revision_id OR e.target_revision_id != cc.target_revision_id",
        ),
        (
            "the case state has no matching lifecycle event",
            "SELECT cc.case_id FROM conflict_cases cc
             WHERE (cc.state = 'stale' AND NOT EXISTS (SELECT 1 FROM conflict_events e WHERE e.case_id = cc.case_id AND e.event_type = 'stale'))
                OR (cc.state = 'resolved' AND NOT EXISTS (SELECT 1 FROM conflict_events e WHERE e.case_id = cc.case_id AND e.event_type = 'resolved'))
                OR (cc.state = 'open' AND EXISTS (SELECT 1 FROM conflict_events e WHERE e.case_id = cc.case_id AND e.event_type != 'opened'))",
        ),
    ];
    for (detail, sql) in event_rules {
        for case_id in column_text(db, sql)? {
            f.about(kind::CONFLICT_EVENTS, case_id, *detail);
        }
    }
    Ok(())
}

fn column_text(db: Db<'_>, sql: &str) -> StoreResult<Vec<String>> {
    db.query_all(sql, &[], |r| r.get(0))
}

fn check_evidence(db: Db<'_>, f: &mut Findings) -> StoreResult<()> {
    let size_of = |artifact: &str, revision: &str| -> StoreResult<Option<i64>> {
        db.query_opt(
            "SELECT blob_size FROM artifact_revisions WHERE artifact_id = ?1 AND id = ?2",
            &[&artifact, &revision],
            |r| r.get(0),
        )
    };
    db.for_each(
        "SELECT id, evidence_json FROM claim_revisions ORDER BY seq",
        &[],
        |row| {
            let revision: String = row.get(0)?;
            let json: String = row.get(1)?;
            let Some(evidence) = evidence_from_json(&json) else {
                f.about(
                    kind::CLAIM_EVIDENCE,
                    revision,
                    "evidence_json is not a list of locators",
                );
                return Ok(());
            };
            for (index, locator) in evidence.iter().enumerate() {
                let size = size_of(locator.artifact_id.as_str(), locator.revision_id.as_str())?;
                let Some(size) = size else {
                    f.about(
                        kind::CLAIM_EVIDENCE,
                        revision.clone(),
                        format!(
                            "evidence[{index}] cites missing artifact {} revision {}",
                            locator.artifact_id, locator.revision_id
                        ),
                    );
                    continue;
                };
                let bad_span = match (locator.start_byte, locator.end_byte) {
                    (None, None) => None,
                    (Some(start), Some(end)) if start < end && end <= size as u64 => None,
                    (start, end) => Some(format!(
                        "evidence[{index}] span {start:?}..{end:?} is invalid for a {size}-byte revision"
                    )),
                };
                if let Some(detail) = bad_span {
                    f.about(kind::CLAIM_EVIDENCE, revision.clone(), detail);
                }
            }
            Ok(())
        },
    )
}

/// One referenced CAS object: its size and the first revision citing it.
struct Referenced {
    size: u64,
    revision: String,
}

/// Checks one live artifact revision's content: inline bytes are decoded and re-hashed; an
/// external blob is recorded in `external` (its first citing revision and size).
fn check_revision_blob(
    f: &mut Findings,
    external: &mut HashMap<Digest, Referenced>,
    revision: String,
    hash: String,
    size: i64,
    inline: Option<(Vec<u8>, i64)>,
) {
    let size = size.max(0) as u64;
    let Some(digest) = Digest::parse(&hash) else {
        f.about(
            kind::BLOB_HASH,
            revision,
            format!("blob_hash {hash:?} is not a BLAKE3 hex digest"),
        );
        return;
    };
    {
        match inline {
            Some((stored, code)) => {
                let checked = match Encoding::from_code(code) {
                    Some(encoding) => blob::decode_inline(encoding, &stored, &digest, size).map(|_| ()),
                    None => Err(BlobError::Undecodable {
                        digest: digest.to_hex(),
                        detail: format!("unknown inline encoding {code}"),
                    }),
                };
                if let Err(error) = checked {
                    f.about(kind::BLOB_CORRUPT, revision, format!("inline content: {error}"));
                }
            }
            None => match external.get(&digest) {
                Some(seen) if seen.size != size => f.about(
                    kind::BLOB_CORRUPT,
                    revision,
                    format!(
                        "records {size} bytes for blob {digest}, but revision {} records {}",
                        seen.revision, seen.size
                    ),
                ),
                Some(_) => {}
                None => {
                    external.insert(digest, Referenced { size, revision });
                }
            },
        }
    }
}

fn report_blob_error(f: &mut Findings, digest: &Digest, cited_by: &str, error: BlobError) {
    let kind = match &error {
        BlobError::Missing { .. } => kind::BLOB_MISSING,
        BlobError::DigestMismatch { .. } | BlobError::SizeMismatch { .. } | BlobError::Undecodable { .. } => {
            kind::BLOB_CORRUPT
        }
        _ => kind::BLOB_UNREADABLE,
    };
    f.about(kind, digest.to_hex(), format!("{error} (cited by {cited_by})"));
}

impl super::Store {
    /// Runs [`verify`] on one read snapshot of this store.
    pub fn verify(&self) -> StoreResult<VerifyReport> {
        match &self.inner.backend {
            super::Backend::Sqlite(backend) => self.read(|conn| sqlite::verify(conn, backend.blobs.root())),
            super::Backend::Postgres(store) => store.read(pg::verify),
        }
    }
}

/// The first few issues of a failed verification, for an error message.
pub(crate) fn summarize(report: &VerifyReport) -> String {
    const SHOWN: usize = 3;
    let mut lines: Vec<String> = report.issues.iter().take(SHOWN).map(|issue| issue.line()).collect();
    if report.issues.len() > SHOWN {
        lines.push(format!("and {} more", report.issues.len() - SHOWN));
    }
    lines.join("; ")
}

#[cfg(test)]
mod tests;
