//! Test helpers: a temporary store seeded through the store's own write path.

use std::path::{Path, PathBuf};

use rusqlite::Connection;

use super::artifact::{self, ArtifactRow, BlobRef, NewRevision};
use super::claim::{self, ClaimRow, EvidenceRef, NewClaimRevision};
use super::scope::Owner;
use super::{DB_FILE, Store};
use crate::blob::Digest;
use crate::protocol::limits;

/// A store in a temporary directory.
pub(crate) struct TestStore {
    pub dir: tempfile::TempDir,
    pub store: Store,
}

pub(crate) fn owner() -> Owner {
    Owner {
        workspace_id: "wsp_test".to_owned(),
        project_id: "prj_test".to_owned(),
        task_id: None,
        component: None,
    }
}

impl TestStore {
    pub fn new() -> TestStore {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("data")).unwrap();
        TestStore { dir, store }
    }

    pub fn data_dir(&self) -> PathBuf {
        self.store.data_dir().to_path_buf()
    }

    /// A second, writable connection for tampering with the database behind the store.
    pub fn raw(&self) -> Connection {
        Connection::open(self.store.data_dir().join(DB_FILE)).unwrap()
    }

    /// Stores `bytes` as a text artifact, inline or in the CAS like the service does.
    pub fn put(&self, title: &str, bytes: &[u8]) -> ArtifactRow {
        let blob = if bytes.len() <= limits::INLINE_BLOB_MAX_BYTES {
            BlobRef::inline(bytes)
        } else {
            BlobRef::external(self.store.blobs().unwrap().put(bytes).unwrap(), bytes.len() as u64)
        };
        let new = NewRevision {
            title: title.to_owned(),
            media_type: "text/plain; charset=utf-8".to_owned(),
            content: bytes.to_vec(),
            blob,
            provenance_json: "{}".to_owned(),
            actor: None,
            vectors: None,
        };
        self.store
            .write(move |tx| artifact::put(tx, &owner(), "note", &new).map(|(row, _)| row))
            .unwrap()
    }

    /// Stores `bytes` (above the inline threshold) as a CAS object compressed when that pays,
    /// as a binary that compresses CAS objects would.
    pub fn put_compressed_external(&self, title: &str, bytes: &[u8]) -> ArtifactRow {
        assert!(bytes.len() > limits::INLINE_BLOB_MAX_BYTES);
        let blob = BlobRef::external(
            self.store.blobs().unwrap().put_object(bytes, true).unwrap(),
            bytes.len() as u64,
        );
        let new = NewRevision {
            title: title.to_owned(),
            media_type: "text/plain; charset=utf-8".to_owned(),
            content: bytes.to_vec(),
            blob,
            provenance_json: "{}".to_owned(),
            actor: None,
            vectors: None,
        };
        self.store
            .write(move |tx| artifact::put(tx, &owner(), "note", &new).map(|(row, _)| row))
            .unwrap()
    }

    /// Asserts a fact citing `[start, end)` of `evidence`.
    pub fn assert_claim(&self, statement: &str, evidence: &ArtifactRow, span: (u64, u64)) -> ClaimRow {
        let new = NewClaimRevision {
            statement: statement.to_owned(),
            confidence: Some(0.9),
            evidence: vec![EvidenceRef {
                artifact_id: evidence.artifact_id.clone(),
                revision_id: evidence.revision_id.clone(),
                start_byte: Some(span.0),
                end_byte: Some(span.1),
            }],
            actor: None,
            vectors: None,
        };
        self.store
            .write(move |tx| {
                claim::assert(tx, &owner(), crate::protocol::claim::ClaimType::Fact, &new, None, None)
                    .map(|(row, _)| row)
            })
            .unwrap()
    }

    /// The CAS path of an external revision's blob.
    pub fn blob_path(&self, row: &ArtifactRow) -> PathBuf {
        self.store
            .blobs()
            .unwrap()
            .path_of(&Digest::parse(&row.blob_hash).unwrap())
    }
}

/// Seeds a store with inline and external artifacts, a revision and cited claims.
pub(crate) fn seeded() -> (TestStore, Vec<ArtifactRow>, Vec<ClaimRow>) {
    let t = TestStore::new();
    let small = t.put("Small note", b"SQLite is authoritative; the CAS holds large blobs.");
    let large_text = "external blob content that is larger than the inline threshold. ".repeat(400);
    let large = t.put("Large note", large_text.as_bytes());
    let other = t.put("Another note", b"Lexical search comes first.");
    let claims = vec![
        t.assert_claim("SQLite is authoritative", &small, (0, 6)),
        t.assert_claim("Large blobs live in the CAS", &large, (0, 13)),
    ];
    (t, vec![small, large, other], claims)
}

/// Every file under `dir` with its bytes, except SQLite's shared-memory index (which
/// readers legitimately touch).
pub(crate) fn snapshot_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        for entry in std::fs::read_dir(&next).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                out.push((path.clone(), Vec::new()));
                pending.push(path);
            } else if !path.to_string_lossy().ends_with("-shm") {
                out.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}
