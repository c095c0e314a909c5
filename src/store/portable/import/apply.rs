//! Applying one record of each type: look the key up, skip an identical record, report a
//! collision, or insert the record with its `commit_seq` fields translated (see the parent
//! module).

use std::fs::File;
use std::io::{self, Read};

use serde_json::Value;

use super::super::records::{
    self, ArtifactRecord, ArtifactRevisionRecord, ClaimRecord, ClaimRevisionRecord, ConflictCaseRecord,
    ConflictEventRecord, EventRecord, RelationRecord, ReplayRecord, TombstoneRecord, db_time, db_time_opt,
};
use super::super::{ArchiveError, BLOBS_DIR};
use super::{Importer, Presence, presence};
use crate::blob::Digest;
use crate::protocol::limits;
use crate::store::artifact::BlobRef;
use crate::store::db::Db;
use crate::store::error::{StoreError, StoreResult};
use crate::store::pg;

impl Importer<'_> {
    pub(super) fn event(&mut self, record: EventRecord) -> StoreResult<Presence> {
        if record.commit_seq <= self.last_event_seq {
            return Err(
                ArchiveError::Malformed(format!("event {} is out of commit_seq order", record.event_id)).into(),
            );
        }
        self.last_event_seq = record.commit_seq;
        let existing_seq: Option<i64> = self.db.query_opt(
            "SELECT commit_seq FROM import_events WHERE event_id = ?1",
            &[&record.event_id],
            |r| r.get(0),
        )?;
        let existing = match existing_seq {
            Some(seq) => records::one(self.db, records::EVENT_SELECT, "e.commit_seq", &seq, records::event)?,
            None => None,
        };
        if let Some(existing) = existing {
            let mapped = existing.commit_seq;
            let same = EventRecord {
                commit_seq: mapped,
                ..record.clone()
            } == existing;
            // A different event under this id is mapped too, so later records still
            // resolve; the collision refuses the import anyway.
            self.map_seq(record.commit_seq, mapped)?;
            return Ok(if same { Presence::Same } else { Presence::Different });
        }
        self.next_seq += 1;
        self.map_seq(record.commit_seq, self.next_seq)?;
        self.db.execute(
            "INSERT INTO events (commit_seq, event_id, event_type, entity_type, entity_id, revision_id, actor, payload_json, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            &[
                &self.next_seq,
                &record.event_id,
                &record.event_type,
                &record.entity_type,
                &record.entity_id,
                &record.revision_id,
                &record.actor,
                &record.payload.to_string(),
                &db_time(&record.created_at, "event created_at")?,
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn artifact(&mut self, record: ArtifactRecord) -> StoreResult<Presence> {
        let existing = records::one(
            self.db,
            records::ARTIFACT_SELECT,
            "a.id",
            &record.artifact_id,
            records::artifact,
        )?;
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        let c = &record.context;
        self.db.execute(
            "INSERT INTO artifacts (id, workspace_id, project_id, task_id, component, kind, current_revision_id, status,
                 created_at, updated_at, forgotten_reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            &[
                &record.artifact_id,
                &c.workspace_id,
                &c.project_id,
                &c.task_id,
                &c.component,
                &record.kind,
                &record.current_revision_id,
                &record.status,
                &db_time(&record.created_at, "artifact created_at")?,
                &db_time(&record.updated_at, "artifact updated_at")?,
                &record.forgotten_reason,
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn artifact_revision(&mut self, mut record: ArtifactRevisionRecord) -> StoreResult<Presence> {
        record.commit_seq = self.seq(record.commit_seq, &format!("artifact revision {}", record.revision_id))?;
        let existing = records::one(
            self.db,
            records::ARTIFACT_REVISION_SELECT,
            "r.id",
            &record.revision_id,
            records::artifact_revision,
        )?;
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        let digest = Digest::parse(&record.blob_hash).ok_or_else(|| {
            ArchiveError::Malformed(format!(
                "artifact revision {} has an invalid blob_hash",
                record.revision_id
            ))
        })?;
        let (inline, encoding): (Option<Vec<u8>>, i64) = if record.purged {
            if !record.title.is_empty() || record.provenance != Value::Object(Default::default()) {
                return Err(ArchiveError::Malformed(format!(
                    "purged artifact revision {} still carries a title or provenance",
                    record.revision_id
                ))
                .into());
            }
            (None, 0)
        } else {
            let bytes = self.blob(&digest, record.size_bytes, &record.revision_id)?;
            if bytes.len() <= limits::INLINE_BLOB_MAX_BYTES {
                let inline = BlobRef::inline(&bytes)
                    .inline
                    .map(|i| (i.stored, i64::from(i.encoding.code())));
                let (stored, code) = inline.unwrap_or_default();
                (Some(stored), code)
            } else {
                match (self.blobs, self.db) {
                    (Some(blobs), _) => {
                        if !blobs.contains(&digest) {
                            self.created.push(digest);
                        }
                        blobs.put(&bytes)?;
                    }
                    // In the import's own transaction: a failure leaves no blob behind.
                    (None, Db::Postgres(conn)) => {
                        pg::blob::insert(conn, &digest, &bytes)?;
                    }
                    (None, Db::Sqlite(_)) => {
                        return Err(StoreError::Internal("no CAS to import blobs into".to_owned()));
                    }
                }
                (None, 0)
            }
        };
        self.db.execute(
            "INSERT INTO artifact_revisions (id, artifact_id, revision_number, title, media_type, blob_hash, blob_size,
                 inline_blob, inline_encoding, body_indexed, provenance_json, actor, created_at, commit_seq, purged)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
            &[
                &record.revision_id,
                &record.artifact_id,
                &record.revision_number,
                &record.title,
                &record.media_type,
                &record.blob_hash,
                &(record.size_bytes as i64),
                &inline,
                &encoding,
                &i64::from(record.body_indexed),
                &record.provenance.to_string(),
                &record.actor,
                &db_time(&record.created_at, "artifact revision created_at")?,
                &record.commit_seq,
                &i64::from(record.purged),
            ],
        )?;
        Ok(Presence::New)
    }

    /// Reads and verifies one blob file of the archive.
    pub(super) fn blob(&mut self, digest: &Digest, size: u64, revision: &str) -> StoreResult<Vec<u8>> {
        let hex = digest.to_hex();
        let path = self.archive.join(BLOBS_DIR).join(&hex[..2]).join(&hex);
        if size > limits::MAX_ARTIFACT_BYTES as u64 {
            return Err(
                ArchiveError::Malformed(format!("artifact revision {revision} is larger than any artifact")).into(),
            );
        }
        let bytes = match File::open(&path) {
            Ok(file) => {
                let mut bytes = Vec::with_capacity(size as usize);
                file.take(size + 1).read_to_end(&mut bytes)?;
                bytes
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(ArchiveError::Damaged(format!(
                    "the blob of artifact revision {revision} ({hex}) is missing"
                ))
                .into());
            }
            Err(e) => return Err(e.into()),
        };
        if bytes.len() as u64 != size || Digest::of(&bytes) != *digest {
            return Err(ArchiveError::Damaged(format!(
                "blob {hex} does not match its name or the size of artifact revision {revision}"
            ))
            .into());
        }
        self.report.blob_bytes_read += size;
        Ok(bytes)
    }

    pub(super) fn claim(&mut self, record: ClaimRecord) -> StoreResult<Presence> {
        let existing = records::one(self.db, records::CLAIM_SELECT, "c.id", &record.claim_id, records::claim)?;
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        let c = &record.context;
        self.db.execute(
            "INSERT INTO claims (id, workspace_id, project_id, task_id, component, claim_type, current_revision_id, status,
                 valid_from, valid_until, created_at, updated_at, retraction_reason)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            &[
                &record.claim_id,
                &c.workspace_id,
                &c.project_id,
                &c.task_id,
                &c.component,
                &record.claim_type,
                &record.current_revision_id,
                &record.status,
                &db_time_opt(record.valid_from.as_deref(), "claim valid_from")?,
                &db_time_opt(record.valid_until.as_deref(), "claim valid_until")?,
                &db_time(&record.created_at, "claim created_at")?,
                &db_time(&record.updated_at, "claim updated_at")?,
                &record.retraction_reason,
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn claim_revision(&mut self, mut record: ClaimRevisionRecord) -> StoreResult<Presence> {
        record.commit_seq = self.seq(record.commit_seq, &format!("claim revision {}", record.revision_id))?;
        let existing = records::one(
            self.db,
            records::CLAIM_REVISION_SELECT,
            "r.id",
            &record.revision_id,
            records::claim_revision,
        )?;
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        if record.purged && !record.statement.is_empty() {
            return Err(ArchiveError::Malformed(format!(
                "purged claim revision {} still carries its statement",
                record.revision_id
            ))
            .into());
        }
        self.db.execute(
            "INSERT INTO claim_revisions (id, claim_id, revision_number, statement, confidence, evidence_json, actor,
                 created_at, commit_seq, purged)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            &[
                &record.revision_id,
                &record.claim_id,
                &record.revision_number,
                &record.statement,
                &record.confidence,
                &record.evidence.to_string(),
                &record.actor,
                &db_time(&record.created_at, "claim revision created_at")?,
                &record.commit_seq,
                &i64::from(record.purged),
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn relation(&mut self, mut record: RelationRecord) -> StoreResult<Presence> {
        record.commit_seq = self.seq(record.commit_seq, &format!("relation {}", record.relation_id))?;
        let existing = records::one(
            self.db,
            records::RELATION_SELECT,
            "rel.id",
            &record.relation_id,
            records::relation,
        )?;
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        let duplicate: Option<String> = self.db.query_opt(
            "SELECT id FROM relations WHERE source_type = ?1 AND source_id = ?2 AND relation = ?3 AND target_type = ?4
                   AND target_id = ?5",
            &[
                &record.source_type,
                &record.source_id,
                &record.relation,
                &record.target_type,
                &record.target_id,
            ],
            |r| r.get(0),
        )?;
        if duplicate.is_some() {
            return Ok(Presence::Different);
        }
        let c = &record.context;
        self.db.execute(
            "INSERT INTO relations (id, source_type, source_id, relation, target_type, target_id, metadata_json, workspace_id,
                 project_id, task_id, component, created_at, commit_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            &[
                &record.relation_id,
                &record.source_type,
                &record.source_id,
                &record.relation,
                &record.target_type,
                &record.target_id,
                &record.metadata.to_string(),
                &c.workspace_id,
                &c.project_id,
                &c.task_id,
                &c.component,
                &db_time(&record.created_at, "relation created_at")?,
                &record.commit_seq,
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn conflict_case(&mut self, mut record: ConflictCaseRecord) -> StoreResult<Presence> {
        record.opened_commit_seq = self.seq(record.opened_commit_seq, &format!("conflict case {}", record.case_id))?;
        let existing = records::one(
            self.db,
            records::CONFLICT_CASE_SELECT,
            "cc.case_id",
            &record.case_id,
            records::conflict_case,
        )?;
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        if record.state == "open" {
            let open: bool = self.db.query_one(
                "SELECT EXISTS (SELECT 1 FROM conflict_cases WHERE relation_id = ?1 AND state = 'open')",
                &[&record.relation_id],
                |r| r.get(0),
            )?;
            if open {
                return Ok(Presence::Different);
            }
        }
        self.db.execute(
            "INSERT INTO conflict_cases (case_id, relation_id, source_claim_id, source_revision_id, target_claim_id,
                 target_revision_id, state, state_reason, opened_at, updated_at, opened_commit_seq)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            &[
                &record.case_id,
                &record.relation_id,
                &record.source_claim_id,
                &record.source_revision_id,
                &record.target_claim_id,
                &record.target_revision_id,
                &record.state,
                &record.state_reason,
                &db_time(&record.opened_at, "conflict case opened_at")?,
                &db_time(&record.updated_at, "conflict case updated_at")?,
                &record.opened_commit_seq,
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn conflict_event(&mut self, mut record: ConflictEventRecord) -> StoreResult<Presence> {
        record.operation_commit_seq = self.seq(
            record.operation_commit_seq,
            &format!("conflict event {}", record.event_id),
        )?;
        let existing = records::one(
            self.db,
            records::CONFLICT_EVENT_SELECT,
            "ce.event_id",
            &record.event_id,
            records::conflict_event,
        )?;
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        self.db.execute(
            "INSERT INTO conflict_events (event_id, case_id, event_type, source_revision_id, target_revision_id, reason,
                 operation_commit_seq, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            &[
                &record.event_id,
                &record.case_id,
                &record.event_type,
                &record.source_revision_id,
                &record.target_revision_id,
                &record.reason,
                &record.operation_commit_seq,
                &db_time(&record.created_at, "conflict event created_at")?,
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn replay(&mut self, mut record: ReplayRecord) -> StoreResult<Presence> {
        record.commit_seq = self.seq(record.commit_seq, "a replay record")?;
        let existing = records::one(
            self.db,
            records::REPLAY_SELECT,
            "i.scoped_key",
            &record.scoped_key,
            records::replay,
        )?;
        match presence(existing, &record) {
            Presence::New => {}
            Presence::Same => return Ok(Presence::Same),
            Presence::Different => {
                // The store's own binding of this key wins; the archive's request can no
                // longer be replayed here, which is what a second store's key means.
                self.report.skipped_replays += 1;
                return Ok(Presence::Same);
            }
        }
        self.db.execute(
            "INSERT INTO idempotency (scoped_key, request_hash, operation, replay_json, commit_seq, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            &[
                &record.scoped_key,
                &record.request_hash,
                &record.operation,
                &record.recipe.to_string(),
                &record.commit_seq,
                &db_time(&record.created_at, "replay created_at")?,
            ],
        )?;
        Ok(Presence::New)
    }

    pub(super) fn tombstone(&mut self, mut record: TombstoneRecord) -> StoreResult<Presence> {
        record.commit_seq = self.seq(record.commit_seq, &format!("the tombstone of {}", record.entity_id))?;
        let existing = match records::one(
            self.db,
            records::TOMBSTONE_SELECT,
            "p.entity_id",
            &record.entity_id,
            records::tombstone,
        )? {
            Some(mut existing) => {
                existing.revisions = records::tombstone_revisions(self.db, &existing.entity_id)?;
                // The physical erasure report describes the store that did the erasing.
                existing.erasure = record.erasure.clone();
                Some(existing)
            }
            None => None,
        };
        let presence = presence(existing, &record);
        if !matches!(presence, Presence::New) {
            return Ok(presence);
        }
        let p = &record.purged_by;
        // This store never held the erased bytes, so its erasure is complete.
        self.db.execute(
            "INSERT INTO purges (entity_id, entity_type, reason, actor, workspace_id, project_id, task_id, component,
                 purged_at, commit_seq, citing_json, erasure_json, erased)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, 1)",
            &[
                &record.entity_id,
                &record.entity_type,
                &record.reason,
                &record.actor,
                &p.workspace_id,
                &p.project_id,
                &p.task_id,
                &p.component,
                &db_time(&record.purged_at, "tombstone purged_at")?,
                &record.commit_seq,
                &record.citing.to_string(),
                &record.erasure.to_string(),
            ],
        )?;
        for revision in &record.revisions {
            self.db.execute(
                "INSERT INTO purged_revisions (revision_id, entity_id, revision_number, size_bytes, blake3, erased_fields)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                &[
                    &revision.revision_id,
                    &record.entity_id,
                    &revision.revision_number,
                    &(revision.size_bytes as i64),
                    &revision.blake3,
                    &revision.erased_fields,
                ],
            )?;
        }
        Ok(Presence::New)
    }
}
