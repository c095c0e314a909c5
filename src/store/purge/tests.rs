use std::path::Path;

use rusqlite::Connection;

use super::*;
use crate::protocol::claim::ClaimType;
use crate::store::artifact::{self, BlobRef, NewRevision};
use crate::store::claim::{self, EvidenceRef, NewClaimRevision};
use crate::store::revisioned;
use crate::store::test_seed::{TestStore, owner};
use crate::store::tombstone::kind;

const SECRET: &str = "zq7secretTOKENc0ffee9d2b71e4a5f";

fn purge_now(store: &Store, kind: EntityKind, entity_id: &str) -> Tombstone {
    let blobs = store.blobs().unwrap().clone();
    let request = PurgeRequest {
        kind,
        entity_id: entity_id.to_owned(),
        reason: "test purge".to_owned(),
        actor: Some("tester".to_owned()),
        purged_by: owner(),
    };
    store
        .exclusive(move |conn| {
            with_secure_delete(conn, || in_transaction(conn, |tx| purge(tx, &request)))?;
            scrub(conn, &blobs, &request.entity_id)?;
            Ok(tombstone::load(conn, &request.entity_id)?.unwrap())
        })
        .unwrap()
}

fn revise(t: &TestStore, current: &artifact::ArtifactRow, bytes: &[u8]) -> artifact::ArtifactRow {
    let blob = if bytes.len() <= crate::protocol::limits::INLINE_BLOB_MAX_BYTES {
        BlobRef::inline(bytes)
    } else {
        BlobRef::external(t.store.blobs().unwrap().put(bytes).unwrap(), bytes.len() as u64)
    };
    let new = NewRevision {
        title: format!("revised {SECRET}"),
        media_type: "text/plain; charset=utf-8".to_owned(),
        content: bytes.to_vec(),
        blob,
        provenance_json: format!("{{\"note\":\"{SECRET}\"}}"),
        actor: None,
        vectors: None,
    };
    let current = current.clone();
    t.store
        .write(move |tx| revisioned::revise::<artifact::Artifacts>(tx, &current, &new).map(|(row, _)| row))
        .unwrap()
}

fn cite(t: &TestStore, row: &artifact::ArtifactRow, statement: String) -> claim::ClaimRow {
    let new = NewClaimRevision {
        statement,
        confidence: None,
        evidence: vec![EvidenceRef {
            artifact_id: row.artifact_id.clone(),
            revision_id: row.revision_id.clone(),
            start_byte: Some(0),
            end_byte: Some(4),
        }],
        actor: None,
        vectors: None,
    };
    t.store
        .write(move |tx| claim::assert(tx, &owner(), ClaimType::Fact, &new, None, None).map(|(row, _)| row))
        .unwrap()
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Every regular file below `dir` whose bytes contain `needle`.
fn files_holding(dir: &Path, needle: &[u8]) -> Vec<String> {
    let mut hits = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            hits.extend(files_holding(&path, needle));
        } else if let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|w| w == needle)
        {
            hits.push(path.display().to_string());
        }
    }
    hits
}

#[test]
fn purging_an_artifact_erases_every_revision_from_rows_index_and_cas_and_keeps_a_tombstone() {
    let t = TestStore::new();
    let first = t.put(&format!("note {SECRET}"), format!("inline {SECRET} body").as_bytes());
    let large = format!("large {SECRET} ").repeat(2_000);
    let second = revise(&t, &first, large.as_bytes());
    let citing = cite(&t, &first, "note says inline".to_owned());
    let digest = Digest::parse(&second.blob_hash).unwrap();
    assert!(t.store.blobs().unwrap().contains(&digest));

    let tombstone = purge_now(&t.store, EntityKind::Artifact, &first.artifact_id);
    assert!(tombstone.erased, "{tombstone:?}");
    assert_eq!(tombstone.revisions.len(), 2);
    let key = t.store.read(|conn| tombstone::key(Db::Sqlite(conn))).unwrap();
    assert_eq!(
        tombstone.revisions[1].blake3,
        tombstone::keyed_digest(&key, &second.blob_hash)
    );
    assert_ne!(tombstone.revisions[1].blake3, second.blob_hash);
    assert_eq!(tombstone.revisions[1].size_bytes, large.len() as u64);
    assert_eq!(tombstone.citing[0]["claim_id"], citing.claim_id.as_str());
    assert_eq!(tombstone.erasure["removed_blobs"], 1);
    assert_eq!(tombstone.erasure["removed_index_rows"], 2);
    assert!(!t.store.blobs().unwrap().contains(&digest));

    let raw = t.raw();
    assert_eq!(
        count(
            &raw,
            "SELECT count(*) FROM artifact_revisions WHERE purged = 1 AND title = '' AND inline_blob IS NULL AND provenance_json = '{}'"
        ),
        2
    );
    assert_eq!(count(&raw, "SELECT count(*) FROM artifact_fts"), 0);
    raw.execute_batch("CREATE VIRTUAL TABLE temp.terms USING fts5vocab(main, artifact_fts, 'row')")
        .unwrap();
    assert_eq!(
        count(&raw, "SELECT count(*) FROM temp.terms"),
        0,
        "erased terms left the index b-tree"
    );
    let head = artifact::head(&raw, &first.artifact_id).unwrap();
    assert_eq!(
        (head.status.as_str(), head.forgotten_reason.as_deref()),
        ("forgotten", Some("purged"))
    );
    assert!(matches!(
        head.read_content(t.store.blobs().unwrap()),
        Err(StoreError::Purged { .. })
    ));

    let report = t.store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.issues);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(files_holding(&t.data_dir(), SECRET.as_bytes()).is_empty());
}

#[test]
fn purging_a_claim_erases_every_statement_and_the_reasons_that_may_quote_it() {
    let t = TestStore::new();
    let source = t.put("source", b"plain source text");
    let claim = cite(&t, &source, format!("the key is {SECRET}"));
    let retracted = claim.clone();
    t.store
        .write(move |tx| revisioned::close::<claim::Claims>(tx, &retracted, &format!("leaked {SECRET}")).map(drop))
        .unwrap();
    let tombstone = purge_now(&t.store, EntityKind::Claim, &claim.claim_id);
    assert!(tombstone.erased);
    let key = t.store.read(|conn| tombstone::key(Db::Sqlite(conn))).unwrap();
    assert_eq!(
        tombstone.revisions[0].blake3,
        tombstone::keyed_digest(&key, &Digest::of(format!("the key is {SECRET}").as_bytes()).to_hex())
    );
    assert_eq!(tombstone.erasure["scrubbed_event_payloads"], 1);
    let raw = t.raw();
    let row = claim::head(&raw, &claim.claim_id).unwrap();
    assert_eq!(
        (row.statement.as_str(), row.retraction_reason.as_deref()),
        ("", Some("purged"))
    );
    assert!(row.purged);
    assert!(t.store.verify().unwrap().is_ok());
    assert!(files_holding(&t.data_dir(), SECRET.as_bytes()).is_empty());
}

#[test]
fn history_stays_immutable_for_every_write_but_the_erasure_of_a_tombstoned_revision() {
    let t = TestStore::new();
    let row = t.put("keep", b"kept bytes");
    let raw = t.raw();
    for sql in [
        "UPDATE artifact_revisions SET title = '', inline_blob = NULL, inline_encoding = 0, provenance_json = '{}', purged = 1",
        "UPDATE artifact_revisions SET title = 'changed'",
        "DELETE FROM artifact_revisions",
        "UPDATE events SET payload_json = '{}'",
        "DELETE FROM events",
    ] {
        let error = raw.execute(sql, []).unwrap_err().to_string();
        assert!(
            error.contains("immutable") || error.contains("append-only"),
            "{sql}: {error}"
        );
    }
    let purged = purge_now(&t.store, EntityKind::Artifact, &row.artifact_id);
    for sql in [
        "UPDATE artifact_revisions SET purged = 0",
        "UPDATE artifact_revisions SET title = 'back'",
        "DELETE FROM artifact_revisions",
        "DELETE FROM purged_revisions",
        "DELETE FROM purges",
        "UPDATE purges SET reason = 'rewritten'",
        "UPDATE purged_revisions SET size_bytes = 0",
    ] {
        let error = raw.execute(sql, []).unwrap_err().to_string();
        assert!(
            error.contains("immutable") || error.contains("permanent"),
            "{sql}: {error}"
        );
    }
    assert_eq!(purged.commit_seq, 2);
}

#[test]
fn content_shared_with_a_live_revision_stays_and_is_reported() {
    let t = TestStore::new();
    let shared = vec![b's'; 40_000];
    let doomed = t.put("doomed", &shared);
    let live = t.put("live", &shared);
    let tombstone = purge_now(&t.store, EntityKind::Artifact, &doomed.artifact_id);
    assert_eq!(tombstone.erasure["removed_blobs"], 0);
    assert_eq!(tombstone.erasure["retained_shared_blobs"], 1);
    assert_eq!(tombstone.erasure["shared_content_revisions"], 1);
    assert_eq!(live.read_content(t.store.blobs().unwrap()).unwrap(), shared);
    assert!(t.store.verify().unwrap().is_ok());
}

#[test]
fn a_blob_pinned_by_a_concurrent_write_survives_and_the_erasure_stays_incomplete() {
    let t = TestStore::new();
    let bytes = vec![b'p'; 30_000];
    let doomed = t.put("doomed", &bytes);
    let (digest, pin) = t.store.blobs().unwrap().put_pinned(&bytes).unwrap();
    let tombstone = purge_now(&t.store, EntityKind::Artifact, &doomed.artifact_id);
    assert!(!tombstone.erased);
    assert_eq!(tombstone.erasure["retained_pinned_blobs"], 1);
    assert!(t.store.blobs().unwrap().contains(&digest));
    assert!(t.store.verify().unwrap().has(kind::PURGE_INCOMPLETE));
    drop(pin);
    assert_eq!(t.store.resume_purges().unwrap(), vec![doomed.artifact_id.to_string()]);
    assert!(!t.store.blobs().unwrap().contains(&digest));
    assert!(t.store.verify().unwrap().is_ok());
}

#[test]
fn an_interrupted_erasure_is_finished_when_the_store_is_opened() {
    let t = TestStore::new();
    let row = t.put("interrupted", format!("body {SECRET}").as_bytes());
    let request = PurgeRequest {
        kind: EntityKind::Artifact,
        entity_id: row.artifact_id.to_string(),
        reason: "crash".to_owned(),
        actor: None,
        purged_by: owner(),
    };
    t.store
        .exclusive(move |conn| in_transaction(conn, |tx| purge(tx, &request)).map(drop))
        .unwrap();
    let report = t.store.verify().unwrap();
    assert!(report.has(kind::PURGE_INCOMPLETE), "{:?}", report.issues);
    let data = t.data_dir();
    t.store.shutdown();
    let reopened = Store::open(&data).unwrap();
    assert!(reopened.has_purges());
    assert!(reopened.verify().unwrap().is_ok());
    assert!(
        reopened
            .read(|conn| tombstone::load(conn, &row.artifact_id))
            .unwrap()
            .unwrap()
            .erased
    );
    reopened.shutdown();
    assert!(files_holding(&data, SECRET.as_bytes()).is_empty());
}

#[test]
fn a_reader_holding_an_old_snapshot_leaves_the_erasure_incomplete_until_it_is_finished() {
    let t = TestStore::new();
    let row = t.put("held", format!("held {SECRET}").as_bytes());
    let reader = t.raw();
    reader.execute_batch("BEGIN").unwrap();
    assert_eq!(count(&reader, "SELECT count(*) FROM artifacts"), 1);
    let tombstone = purge_now(&t.store, EntityKind::Artifact, &row.artifact_id);
    assert!(!tombstone.erased, "the WAL cannot be truncated under an open snapshot");
    assert_eq!(tombstone.erasure["wal_truncated"], false);
    assert!(t.store.verify().unwrap().has(kind::PURGE_INCOMPLETE));
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    assert_eq!(t.store.resume_purges().unwrap(), vec![row.artifact_id.to_string()]);
    assert!(t.store.verify().unwrap().is_ok());
    assert!(files_holding(&t.data_dir(), SECRET.as_bytes()).is_empty());
}

/// A schema-1 database (before tombstones) with one external and one inline artifact.
fn schema_one_store(dir: &Path) {
    std::fs::create_dir_all(dir.join("blobs")).unwrap();
    let blobs = crate::blob::BlobStore::open(dir.join("blobs")).unwrap();
    let large = vec![b'L'; 20_000];
    let digest = blobs.put(&large).unwrap();
    let conn = Connection::open(dir.join(crate::store::DB_FILE)).unwrap();
    conn.execute_batch(include_str!("../sqlite/migrations/0001_init.sql"))
        .unwrap();
    conn.execute_batch(
        "PRAGMA user_version = 1;
         INSERT INTO meta (key, value) VALUES ('schema_version', '1');
         UPDATE commit_state SET commit_seq = 2;",
    )
    .unwrap();
    let small = BlobRef::inline(b"old inline note");
    let inline = small.inline.as_ref().unwrap();
    for (seq, (id, rev, hash, size, stored, encoding)) in [
        ("art_A", "arev_A", digest.to_hex(), large.len(), None, 0),
        (
            "art_B",
            "arev_B",
            small.digest.to_hex(),
            15,
            Some(inline.stored.clone()),
            inline.encoding.code(),
        ),
    ]
    .into_iter()
    .enumerate()
    {
        let seq = seq as i64 + 1;
        conn.execute(
            "INSERT INTO artifacts VALUES (?1, 'w', 'p', NULL, NULL, 'note', ?2, 'active', '2026-01-01T00:00:00.000000000Z',
                 '2026-01-01T00:00:00.000000000Z', NULL)",
            rusqlite::params![id, rev],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO artifact_revisions (seq, id, artifact_id, revision_number, title, media_type, blob_hash, blob_size,
                 inline_blob, inline_encoding, body_indexed, provenance_json, actor, created_at, commit_seq)
             VALUES (?1, ?2, ?3, 1, 'old', 'text/plain', ?4, ?5, ?6, ?7, 1, '{}', NULL, '2026-01-01T00:00:00.000000000Z', ?1)",
            rusqlite::params![seq, rev, id, hash, size as i64, stored, encoding],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO artifact_fts (rowid, title, body) VALUES (?1, 'old', 'old body')",
            [seq],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO events VALUES (?1, ?2, 'artifact.put', 'artifact', ?3, ?4, NULL, '{}', '2026-01-01T00:00:00.000000000Z')",
            rusqlite::params![seq, format!("evt_{seq}"), id, rev],
        )
        .unwrap();
    }
}

#[test]
fn a_schema_one_store_migrates_to_tombstones_and_its_old_backup_restores() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old");
    schema_one_store(&old);
    let restored = dir.path().join("restored");
    let report = crate::store::restore::restore(&old, &restored).unwrap();
    assert_eq!(report.restored_external_blobs, 1);
    let store = Store::open(&old).unwrap();
    assert_eq!(
        store.read(crate::store::schema_version).unwrap(),
        crate::store::SCHEMA_VERSION
    );
    assert!(!store.has_purges());
    let verified = store.verify().unwrap();
    assert!(verified.is_ok(), "{:?}", verified.issues);
    let tombstone = purge_now(&store, EntityKind::Artifact, "art_A");
    assert!(
        tombstone.erased && tombstone.erasure["removed_blobs"] == 1,
        "{tombstone:?}"
    );
    assert!(store.verify().unwrap().is_ok());
    store.shutdown();
    let restored = Store::open(&restored).unwrap();
    assert!(restored.verify().unwrap().is_ok());
    restored.shutdown();
}

#[test]
fn storing_an_erased_statement_again_cannot_confirm_it_against_the_tombstone() {
    let t = TestStore::new();
    let guess = format!("the vault code is {SECRET}");
    let source = t.put("secret note", guess.as_bytes());
    let claim = cite(&t, &source, guess.clone());
    let artifact_tombstone = purge_now(&t.store, EntityKind::Artifact, &source.artifact_id);
    let claim_tombstone = purge_now(&t.store, EntityKind::Claim, &claim.claim_id);
    // The guesser stores the guess again and compares what it can see.
    let again = t.put("guess", guess.as_bytes());
    let plain = Digest::of(guess.as_bytes()).to_hex();
    assert_eq!(again.blob_hash, plain);
    for digest in [
        &artifact_tombstone.revisions[0].blake3,
        &claim_tombstone.revisions[0].blake3,
    ] {
        assert_ne!(digest, &plain, "a tombstone digest confirms the guess");
    }
    // The purged revision reads with the keyed digest, not the plain one.
    let raw = t.raw();
    let history = artifact::head(&raw, &source.artifact_id).unwrap();
    assert_eq!(history.blob_hash, artifact_tombstone.revisions[0].blake3);
    // Two stores key differently.
    let other = TestStore::new();
    let (mine, theirs) = (
        t.store.read(|conn| tombstone::key(Db::Sqlite(conn))).unwrap(),
        other.store.read(|conn| tombstone::key(Db::Sqlite(conn))).unwrap(),
    );
    assert_ne!(mine, theirs);
    assert!(t.store.verify().unwrap().is_ok());
}

#[test]
fn a_store_with_plain_tombstone_digests_migrates_to_keyed_ones_that_verify_checks() {
    let t = TestStore::new();
    let row = t.put("note", format!("inline {SECRET}").as_bytes());
    let plain = row.blob_hash.clone();
    purge_now(&t.store, EntityKind::Artifact, &row.artifact_id);
    let data_dir = t.data_dir();
    t.store.shutdown();
    // Back to schema 2: plain digests, no key.
    t.raw()
        .execute_batch(
            "DROP TRIGGER purged_revisions_are_immutable;
             UPDATE purged_revisions SET blake3 = content_blake3;
             ALTER TABLE purged_revisions DROP COLUMN content_blake3;
             DROP TABLE store_secrets;
             CREATE TRIGGER purged_revisions_are_immutable BEFORE UPDATE ON purged_revisions
             BEGIN SELECT RAISE(ABORT, 'purge tombstones are permanent'); END;
             PRAGMA user_version = 2;
             UPDATE meta SET value = '2' WHERE key = 'schema_version';",
        )
        .unwrap();
    let legacy = t
        .raw()
        .query_row("SELECT blake3 FROM purged_revisions", [], |r| r.get::<_, String>(0))
        .unwrap();
    assert_eq!(legacy, plain);

    let store = Store::open(&data_dir).unwrap();
    let key = store.read(|conn| tombstone::key(Db::Sqlite(conn))).unwrap();
    let tombstone = store
        .read(|conn| tombstone::load(conn, &row.artifact_id))
        .unwrap()
        .unwrap();
    assert_eq!(tombstone.revisions[0].blake3, tombstone::keyed_digest(&key, &plain));
    assert!(store.verify().unwrap().is_ok());
    // The rewrite happened once; tombstones are immutable again.
    let raw = Connection::open(data_dir.join(crate::store::DB_FILE)).unwrap();
    assert!(
        raw.execute("UPDATE purged_revisions SET blake3 = content_blake3", [])
            .is_err()
    );
    // A tombstone whose digest does not match the key is a verify finding.
    raw.execute_batch(
        "DROP TRIGGER purged_revisions_are_immutable; UPDATE purged_revisions SET blake3 = content_blake3;",
    )
    .unwrap();
    assert!(store.verify().unwrap().has(kind::TOMBSTONE));
    store.shutdown();
}

#[test]
fn a_postgresql_store_with_plain_tombstone_digests_migrates_to_keyed_ones() {
    use crate::service::{Runtime, Service};

    let Some(cluster) = crate::testkit::postgres::TestCluster::start() else {
        return;
    };
    let url = cluster.create_store_database();
    let database = url.split_once("@/").unwrap().1.split('?').next().unwrap().to_owned();
    let dir = tempfile::tempdir().unwrap();
    let service = Service::new(Store::open_postgres(&url, dir.path()).unwrap(), Runtime::default());
    let call = |op: &str, key: &str, input: serde_json::Value| {
        let response = service.handle_value(
            serde_json::json!({"v": 1, "request_id": "req_pg", "op": op, "idempotency_key": key, "input": input,
                               "context": {"workspace_id": "wsp_pg", "project_id": "prj_pg"}}),
            "req_transport",
        );
        assert!(response.ok, "{op}: {:?}", response.error);
        response.result.unwrap()
    };
    let put = call(
        "artifact.put",
        "put",
        serde_json::json!({"kind": "note", "title": "t", "content": {"type": "text", "data": format!("pg {SECRET}")}}),
    );
    let artifact_id = put["artifact_id"].as_str().unwrap().to_owned();
    let plain = put["blob_hash"].as_str().unwrap().to_owned();
    let purged = call(
        "artifact.purge",
        "purge",
        serde_json::json!({"artifact_id": artifact_id, "reason": "test"}),
    );
    assert_ne!(purged["revisions"][0]["blake3"], plain.as_str());
    service.store().shutdown();
    drop(service);
    // Back to schema 1: plain digests, no key.
    cluster.psql_in(
        &database,
        "DROP TRIGGER purged_revisions_are_immutable ON purged_revisions;
         UPDATE purged_revisions SET blake3 = content_blake3;
         ALTER TABLE purged_revisions DROP COLUMN content_blake3;
         DROP TABLE store_secrets;
         CREATE TRIGGER purged_revisions_are_immutable BEFORE UPDATE ON purged_revisions
             FOR EACH ROW EXECUTE FUNCTION memoree_refuse('purge tombstones are permanent');
         DELETE FROM memoree_schema WHERE version >= 2;
         UPDATE meta SET value = '1' WHERE key = 'schema_version';",
    );
    assert_eq!(
        cluster.psql_in(&database, "SELECT blake3 FROM purged_revisions").trim(),
        plain
    );

    let store = Store::open_postgres(&url, dir.path()).unwrap();
    let (key, tombstone) = store
        .read_db(|db| Ok((tombstone::key(db)?, tombstone::load(db, &artifact_id)?.unwrap())))
        .unwrap();
    assert_eq!(tombstone.revisions[0].blake3, tombstone::keyed_digest(&key, &plain));
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.issues);
    store.shutdown();
}
